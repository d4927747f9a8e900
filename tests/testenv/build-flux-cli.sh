#!/usr/bin/env bash
# Build the real flux CLI (github.com/fluxcd/flux2/v2, ./cmd/flux) from its Go module, into a cache
# directory of its own keyed by the wrapper module under tests/testenv/flux-cli/ and this script.
# `make test` and `make demo` serve it as a Flux release on 127.0.0.1 (install downloads and verifies it)
# and compile it into the embed-flux build; `make bench` compares `kubectl gitops status` with its
# `flux get`. build.sh's cache key does not depend on it.
#
# Usage: tests/testenv/build-flux-cli.sh
#   The last line of stdout is the cache directory; progress goes to stderr.
#   <dir>/bin/flux             the CLI (`flux version --client` prints the module's version)
#   <dir>/manifests/           the install manifests generated into cmd/flux/manifests (see below)
#   <dir>/build-times.txt      wall time of each step, in seconds
#   <dir>/bin/.complete        written last; when present the script exits at once
#
# cmd/flux embeds generated install manifests (cmd/flux/manifests/*.yaml) that are not in the module
# zip, so a plain `go build` fails ("pattern manifests/*.yaml: no matching files found"). They are
# generated as upstream does, with its manifests/scripts/bundle.sh, in a writable copy of the module
# source that the wrapper is pointed at with a `replace`. bundle.sh builds manifests/bases/<controller>,
# which reference each controller's release assets on github.com; those are built here instead with
# `kubectl kustomize` from config/crd and config/manager of the controller's Go module at the same
# version (what the controllers' release workflows do), and `kustomize` is a shim for `kubectl kustomize`.
# The result differs from the published release assets in details; the CLI's `get` commands do not
# read them.
#
# Environment: as build.sh (TESTENV_CACHE_ROOT, XDG_CACHE_HOME, TESTENV_NICE).
# Needs: go, kubectl (for kustomize), sha256sum, flock; network access to the Go module proxy only when
# the module cache lacks a module.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wrapper=$here/flux-cli
flux_module=github.com/fluxcd/flux2/v2

log() { printf '[flux-cli] %s\n' "$*" >&2; }
die() { printf '[flux-cli] error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "go not found in PATH"
command -v kubectl >/dev/null || die "kubectl not found in PATH (its kustomize generates the manifests)"

export GOWORK=off
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export CGO_ENABLED=0
# No DWARF in the compiled packages: -ldflags=-s -w strips it from the binaries anyway, and
# not generating it makes a cold build about 8% faster and the Go build cache smaller.
export GOFLAGS='-mod=readonly -gcflags=all=-dwarf=false'
unset GOOS GOARCH GOARM GOAMD64 || true

# ---- cache key -------------------------------------------------------------------------------
key=$(
	cd "$here"
	{
		sha256sum flux-cli/go.mod flux-cli/go.sum build-flux-cli.sh
		go env GOVERSION GOOS GOARCH
	} | sha256sum | cut -c1-64
)
cache_root=${TESTENV_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gitops/testenv}
dir=$cache_root/flux-cli-${key:0:12}

if [[ -f $dir/bin/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

mkdir -p "$cache_root"
exec 9>"$dir.lock"
if ! flock -n 9; then
	log "another build-flux-cli.sh is building $dir; waiting for it"
	flock 9
fi
if [[ -f $dir/bin/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

log "building into $dir ($(go env GOVERSION))"
rm -rf "$dir"
mkdir -p "$dir/bin"
: >"$dir/build-times.txt"
work=$dir/work
mkdir -p "$work"

nice_level=${TESTENV_NICE:-10}
gocmd() { nice -n "$nice_level" go "$@"; }
now() { date +%s.%N; }
step_time() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
total_start=$(now)

# ---- sources ---------------------------------------------------------------------------------
start=$(now)
(cd "$wrapper" && gocmd mod download) || die "go mod download failed in $wrapper"
version=$(cd "$wrapper" && go list -m -f '{{.Version}}' "$flux_module")
src=$(cd "$wrapper" && go list -m -f '{{.Dir}}' "$flux_module")
[[ -d $src/cmd/flux ]] || die "no cmd/flux in $src"
# The module cache is read-only; bundle.sh writes into cmd/flux/manifests.
cp -R "$src" "$work/flux2"
chmod -R u+w "$work/flux2"
printf '%-26s %8ss\n' "(go mod download)" "$(step_time "$start")" >>"$dir/build-times.txt"

# ---- manifests -------------------------------------------------------------------------------
start=$(now)
mkdir -p "$work/shim"
cat >"$work/shim/kustomize" <<'EOF'
#!/usr/bin/env bash
# bundle.sh calls `kustomize version` and `kustomize build DIR`.
case ${1:-} in
version) kubectl version --client | grep -i kustomize ;;
build) exec kubectl kustomize "$2" ;;
*) echo "kustomize shim: unsupported: $*" >&2; exit 1 ;;
esac
EOF
chmod +x "$work/shim/kustomize"

# Each base lists its controller's release assets, e.g.
#   https://github.com/fluxcd/source-controller/releases/download/v1.9.4/source-controller.crds.yaml
asset_re='^- https://github\.com/fluxcd/([a-z-]+)/releases/download/(v([0-9]+)\.[^/]+)/([a-z.-]+)$'
for base in "$work"/flux2/manifests/bases/*/; do
	kustomization=$base/kustomization.yaml
	while IFS= read -r line; do
		[[ $line =~ $asset_re ]] || continue
		repo=${BASH_REMATCH[1]} tag=${BASH_REMATCH[2]} major=${BASH_REMATCH[3]} asset=${BASH_REMATCH[4]}
		module=github.com/fluxcd/$repo
		((major >= 2)) && module=$module/v$major
		# Outside any module (GOFLAGS cleared): the controller module alone, checked against sum.golang.org.
		controller_dir=$(cd "$work" && GOFLAGS= gocmd mod download -json "$module@$tag" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || die "go mod download $module@$tag failed"
		[[ -d $controller_dir ]] || die "go mod download $module@$tag gave no directory"
		case $asset in
		*.crds.yaml) config=config/crd ;;
		*.deployment.yaml) config=config/manager ;;
		*) die "unexpected release asset $asset in $kustomization" ;;
		esac
		kubectl kustomize "$controller_dir/$config" >"$base/$asset" ||
			die "kubectl kustomize $module@$tag/$config failed"
		log "  $(basename "$base"): $asset from $module@$tag/$config"
	done <"$kustomization"
	# Point the base at the files next to it (kustomize loads nothing outside a kustomization's root).
	sed -i -E 's#^- https://github\.com/fluxcd/[a-z-]+/releases/download/[^/]+/([a-z.-]+)$#- \1#' "$kustomization"
	if grep -q 'https://' "$kustomization"; then die "a remote resource is left in $kustomization"; fi
done
PATH=$work/shim:$PATH bash "$work/flux2/manifests/scripts/bundle.sh" \
	"$work/flux2/manifests" "$work/flux2/cmd/flux/manifests" >&2 || die "bundle.sh failed"
cp -R "$work/flux2/cmd/flux/manifests" "$dir/manifests"
printf '%-26s %8ss\n' "(manifests)" "$(step_time "$start")" >>"$dir/build-times.txt"

# ---- binary ----------------------------------------------------------------------------------
# A copy of the wrapper, pointed at the copy with the manifests. The copy's go.mod is the module's
# own, so the build list (and go.sum) stay exactly those of the committed wrapper.
mkdir -p "$work/wrapper"
cp "$wrapper/go.mod" "$wrapper/go.sum" "$wrapper/tools.go" "$work/wrapper/"
(cd "$work/wrapper" && go mod edit -replace "$flux_module=../flux2")
start=$(now)
log "go build flux ($flux_module@$version)"
# Upstream's Makefile: CGO_ENABLED=0 go build -ldflags="-s -w -X main.VERSION=$(VERSION)".
(cd "$work/wrapper" &&
	gocmd build -trimpath -buildvcs=false -ldflags="-s -w -X main.VERSION=${version#v}" \
		-o "$dir/bin/flux.tmp" "$flux_module/cmd/flux") || die "go build of $flux_module/cmd/flux failed"
mv -f "$dir/bin/flux.tmp" "$dir/bin/flux"
printf '%-26s %8ss  %s\n' flux "$(step_time "$start")" "$flux_module/cmd/flux@$version" >>"$dir/build-times.txt"
log "  flux: $(step_time "$start")s, $(du -h "$dir/bin/flux" | cut -f1)"

rm -rf "$work"
"$dir/bin/flux" version --client >&2 || die "the built flux does not run"
printf '%-26s %8ss\n' "(total)" "$(step_time "$total_start")" >>"$dir/build-times.txt"
touch "$dir/bin/.complete"
log "done: $(tail -n1 "$dir/build-times.txt")"
printf '%s\n' "$dir"
