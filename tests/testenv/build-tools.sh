#!/usr/bin/env bash
# Build the Go tools the tests run (each wrapper module under tests/testenv/tools/ pins one) from
# their Go modules, into a cache directory keyed by the wrappers and this script:
#   krew        sigs.k8s.io/krew ./cmd/krew, the krew end-to-end test (tests/tests/it/krew.rs)
#   actionlint  github.com/rhysd/actionlint ./cmd/actionlint, `make lint` on .github/workflows
#   prometheus  github.com/prometheus/prometheus ./cmd/prometheus, and
#   promtool    ./cmd/promtool of the same module (one wrapper, tools/prometheus): the monitoring
#               end-to-end test (tests/tests/it/monitoring.rs). Without the web UI's assets
#               (upstream adds them with `-tags builtinassets`): the HTTP API is what the test uses.
#               Both without Prometheus' service discovery plugins (`-tags remove_all_sd`, its own
#               build tag): the test's targets are static and promtool only checks rules, and the
#               cloud SDKs were most of their build time (promtool with them: 341 s cold; with the
#               same tags as prometheus it reuses its compiled packages).
#   kube-state-metrics  k8s.io/kube-state-metrics/v2 (its main package is the module root): the
#               monitoring test runs it with the custom-resource-state config `monitoring install`
#               writes, so the alerts on gotk_resource_info have series to fire on.
#   helm        helm.sh/helm/v4 ./cmd/helm: the Helm engine Flux renders HelmReleases with; the diff
#               tests point `kubectl gitops diff` at it (KUBECTL_GITOPS_HELM) and compare its
#               rendering with `helm template`.
# Flags as upstream's release builds: krew `-tags netgo -ldflags "-w -X …version.gitTag=<tag>"`,
# actionlint `-ldflags "-s -w -X github.com/rhysd/actionlint.version=<tag>"`, prometheus and
# promtool and kube-state-metrics `-tags netgo -ldflags "-s -w -X
# github.com/prometheus/common/version.Version=<tag>"`, helm `-ldflags "-w -s -X
# helm.sh/helm/v4/internal/version.version=<tag>"`.
#
# Usage: tests/testenv/build-tools.sh
#   The last line of stdout is the cache directory; progress goes to stderr.
#   <dir>/bin/<tool>           each tool
#   <dir>/build-times.txt      wall time of each build, in seconds
#   <dir>/bin/.complete        written last; when present the script exits at once
#
# Environment: as build.sh (TESTENV_CACHE_ROOT, XDG_CACHE_HOME, TESTENV_NICE).
# Needs: go, sha256sum, flock; the Go module proxy only when the module cache lacks a module.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf '[tools] %s\n' "$*" >&2; }
die() { printf '[tools] error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "go not found in PATH"

export GOWORK=off
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export CGO_ENABLED=0
# No DWARF in the compiled packages: -ldflags=-s -w strips it from the binaries anyway, and
# not generating it makes a cold build about 8% faster and the Go build cache smaller.
export GOFLAGS='-mod=readonly -gcflags=all=-dwarf=false'
unset GOOS GOARCH GOARM GOAMD64 || true

# tool name, module, main package, extra go build arguments, ldflags (the version is appended to
# the last -X), and the wrapper module under tools/ when it is not the tool's name
prometheus_version="-s -w -X github.com/prometheus/common/version.Version="
tools=(
	"krew|sigs.k8s.io/krew|sigs.k8s.io/krew/cmd/krew|-tags netgo|-w -X sigs.k8s.io/krew/internal/version.gitTag="
	"actionlint|github.com/rhysd/actionlint|github.com/rhysd/actionlint/cmd/actionlint||-s -w -X github.com/rhysd/actionlint.version="
	"prometheus|github.com/prometheus/prometheus|github.com/prometheus/prometheus/cmd/prometheus|-tags netgo,remove_all_sd|$prometheus_version"
	"promtool|github.com/prometheus/prometheus|github.com/prometheus/prometheus/cmd/promtool|-tags netgo,remove_all_sd|${prometheus_version}|prometheus"
	"kube-state-metrics|k8s.io/kube-state-metrics/v2|k8s.io/kube-state-metrics/v2|-tags netgo|$prometheus_version"
	"helm|helm.sh/helm/v4|helm.sh/helm/v4/cmd/helm||-w -s -X helm.sh/helm/v4/internal/version.version="
)

key=$(
	cd "$here"
	{
		sha256sum tools/*/go.mod tools/*/go.sum build-tools.sh
		go env GOVERSION GOOS GOARCH
	} | sha256sum | cut -c1-64
)
cache_root=${TESTENV_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gitops/testenv}
dir=$cache_root/tools-${key:0:12}

if [[ -f $dir/bin/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

mkdir -p "$cache_root"
exec 9>"$dir.lock"
if ! flock -n 9; then
	log "another build-tools.sh is building $dir; waiting for it"
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
nice_level=${TESTENV_NICE:-10}
now() { date +%s.%N; }

for entry in "${tools[@]}"; do
	IFS='|' read -r name module package tags ldflags wrapper_name <<<"$entry"
	wrapper=$here/tools/${wrapper_name:-$name}
	[[ -f $wrapper/go.mod ]] || die "no wrapper module $wrapper"
	start=$(now)
	(cd "$wrapper" && nice -n "$nice_level" go mod download) || die "go mod download failed in $wrapper"
	version=$(cd "$wrapper" && go list -m -f '{{.Version}}' "$module")
	log "go build $name ($module@$version)"
	# shellcheck disable=SC2086 # tags is a word list on purpose
	(cd "$wrapper" && nice -n "$nice_level" go build -trimpath -buildvcs=false $tags -ldflags="$ldflags$version" \
		-o "$dir/bin/$name.tmp" "$package") || die "go build of $package failed"
	mv -f "$dir/bin/$name.tmp" "$dir/bin/$name"
	secs=$(awk -v a="$start" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')
	printf '%-18s %8ss  %s\n' "$name" "$secs" "$package@$version" >>"$dir/build-times.txt"
	log "  $name: ${secs}s, $(du -h "$dir/bin/$name" | cut -f1)"
done

"$dir/bin/krew" version >&2 || die "the built krew does not run"
"$dir/bin/actionlint" -version >&2 || die "the built actionlint does not run"
"$dir/bin/prometheus" --version >&2 || die "the built prometheus does not run"
"$dir/bin/promtool" --version >&2 || die "the built promtool does not run"
"$dir/bin/kube-state-metrics" version >&2 || die "the built kube-state-metrics does not run"
"$dir/bin/helm" version >&2 || die "the built helm does not run"
touch "$dir/bin/.complete"
log "done"
printf '%s\n' "$dir"
