#!/usr/bin/env bash
# `make update-deps FLUX=vX.Y.Z`: move dependencies.toml's [flux] to another Flux release, where
# the internet is reachable, and say what changed.
#
# 1. Downloads the release's checksums file (KUBECTL_GITOPS_FLUX_RELEASE_URL overrides the URL,
#    as it does for kubectl-gitops) and writes the version, and its sha256 into the table of pinned
#    releases [flux.checksums_sha256], into dependencies.toml.
# 2. Points tests/testenv/flux-cli (the flux CLI the tests build) at the same version.
# 3. Prints the controller versions that release pins (from its go.mod on the Go module proxy)
#    beside the test environment's, which are moved by hand (their go.mod replace lines change).
#
# Environment: DEPS_FILE (default dependencies.toml), UPDATE_DEPS_SKIP_GO=1 skips step 2.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { printf 'error: %s\n' "$1" >&2; [[ $# -lt 2 ]] || printf 'hint: %s\n' "$2" >&2; exit 2; }

version=${1:-${FLUX:-}}
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "FLUX must be a Flux release tag, e.g. v2.9.5" "make update-deps FLUX=v2.9.5"
deps=${DEPS_FILE:-dependencies.toml}
[[ -f $deps ]] || die "$deps not found"

field() { sed -n "/^\[flux\]/,/^\[/ s/^$1 = \"\(.*\)\"/\1/p" "$deps" | head -n1; }
base=${KUBECTL_GITOPS_FLUX_RELEASE_URL:-$(field release_url)}
base=${base//\{version\}/$version}
checksums=$(field checksums)
checksums=${checksums//\{number\}/${version#v}}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 2 -o "$work/$checksums" "$base/$checksums" \
	|| { printf 'error: cannot download %s/%s\n' "$base" "$checksums" >&2; exit 4; }
sha=$(sha256sum "$work/$checksums" | cut -c1-64)

cp "$deps" "$work/before.toml"
sed -i "/^\[flux\]/,/^\[/ s/^version = \".*\"/version = \"$version\"/" "$deps"
# The release's line in [flux.checksums_sha256]: replaced when listed, else added first. Older
# pins stay (clusters that still run them).
if grep -q "^\"$version\" = " "$deps"; then
	sed -i "/^\[flux.checksums_sha256\]/,/^\[/ s/^\"$version\" = \".*\"/\"$version\" = \"$sha\"/" "$deps"
else
	sed -i "/^\[flux.checksums_sha256\]/a \"$version\" = \"$sha\"" "$deps"
fi
printf '%s:\n' "$deps"
diff -u "$work/before.toml" "$deps" | tail -n +3 || true

if [[ ${UPDATE_DEPS_SKIP_GO:-} != 1 ]]; then
	(cd tests/testenv/flux-cli && sed -i "s|^// Flux v[0-9.]* (github.com/fluxcd/flux2/v2|// Flux $version (github.com/fluxcd/flux2/v2|" go.mod \
		&& go get "github.com/fluxcd/flux2/v2@$version" >/dev/null && go mod tidy)
	printf 'tests/testenv/flux-cli: github.com/fluxcd/flux2/v2 %s\n' "$version"
fi

printf '\nthe controllers Flux %s pins (their API modules), and the test environment'"'"'s:\n' "$version"
mod=$(curl -fsSL "https://proxy.golang.org/github.com/fluxcd/flux2/v2/@v/$version.mod" 2>/dev/null || true)
for controller in source-controller kustomize-controller helm-controller notification-controller; do
	pinned=$(printf '%s\n' "$mod" | sed -n "s|^\s*github.com/fluxcd/$controller/api \(v[^ ]*\).*|\1|p" | head -n1)
	ours=$(sed -n "/module = \"github.com\/fluxcd\/$controller\"/{n;s/version = \"\(.*\)\"/\1/p}" "$deps")
	printf '  %-24s %-10s testenv %s\n' "$controller" "${pinned:-?}" "$ours"
done
