#!/usr/bin/env bash
# Build the real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler), the Flux v2.9.3 controllers and kwok from Go modules, into a cache directory
# keyed by the wrapper modules under tests/testenv/go/ and this script.
#
# Usage: tests/testenv/build.sh
#   The last line of stdout is the cache directory; progress goes to stderr.
#   <dir>/bin/                 etcd kube-apiserver kube-controller-manager kube-scheduler
#                              source-controller kustomize-controller helm-controller
#                              notification-controller kwok
#   <dir>/crds/<controller>/   the controller's config/crd/bases/*.yaml
#   <dir>/kwok/stages.yaml     kwok's default "fast" stages (kwok exits with "no stages found"
#                              without a --config that holds Stage objects)
#   <dir>/versions.env         KEY=value lines (KUBE_VERSION, ETCD_VERSION, FLUX_VERSION, ...)
#   <dir>/build-times.txt      wall time of each `go build`, in seconds
#   <dir>/bin/.complete        written last; when present the script exits at once
#
# Environment:
#   XDG_CACHE_HOME / HOME     cache root is ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gitops/testenv
#   TESTENV_CACHE_ROOT        overrides that cache root
#   TESTENV_NICE              niceness of the go commands (default 10)
# The default GOCACHE/GOMODCACHE are used, so a rebuild after a version bump is incremental.
# Needs: go (>= the `go` line of the wrapper modules), sha256sum, flock; network access to the
# Go module proxy only when the module cache lacks a module.
set -euo pipefail

FLUX_VERSION=v2.9.3

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
godir=$here/go

log() { printf '[testenv] %s\n' "$*" >&2; }
die() { printf '[testenv] error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "go not found in PATH"

# Keep the build hermetic with respect to the caller's environment.
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
		find go -type f \( -name go.mod -o -name go.sum \) -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
		sha256sum build.sh
		go env GOVERSION GOOS GOARCH
	} | sha256sum | cut -c1-64
)
cache_root=${TESTENV_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gitops/testenv}
dir=$cache_root/${key:0:12}

if [[ -f $dir/bin/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

mkdir -p "$cache_root"
# Serialise concurrent invocations (e.g. several test binaries starting at once).
exec 9>"$dir.lock"
if ! flock -n 9; then
	log "another build.sh is building $dir; waiting for it"
	flock 9
fi
if [[ -f $dir/bin/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

log "building into $dir ($(go env GOVERSION), GOCACHE=$(go env GOCACHE))"
mkdir -p "$dir/bin" "$dir/crds"
: >"$dir/build-times.txt"

nice_level=${TESTENV_NICE:-10}
gocmd() { nice -n "$nice_level" go "$@"; }

# mod_field <wrapper> <module> <template>: a field of a module in a wrapper's build list.
mod_field() { (cd "$godir/$1" && go list -m -f "$3" "$2"); }

now() { date +%s.%N; }
total_start=$(now)

# build <wrapper> <package> <binary> [ldflags...]
build() {
	local wrapper=$1 pkg=$2 bin=$3
	shift 3
	local ldflags="-s -w${*:+ $*}"
	local start end secs
	log "go build $bin ($pkg)"
	start=$(now)
	(cd "$godir/$wrapper" &&
		gocmd build -trimpath -buildvcs=false -ldflags="$ldflags" -o "$dir/bin/$bin.tmp" "$pkg") ||
		die "go build of $pkg failed"
	mv -f "$dir/bin/$bin.tmp" "$dir/bin/$bin"
	end=$(now)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
	printf '%-26s %8ss  %s\n' "$bin" "$secs" "$pkg" >>"$dir/build-times.txt"
	log "  $bin: ${secs}s, $(du -h "$dir/bin/$bin" | cut -f1)"
}

# Make sure every module is present first, so download time is not counted as build time and a
# missing module fails early. -x would be noisy; errors are printed by go itself.
log "go mod download (no-op when the module cache is warm)"
dl_start=$(now)
for w in "$godir"/*/; do
	(cd "$w" && gocmd mod download) || die "go mod download failed in $w"
done
printf '%-26s %8ss  %s\n' "(go mod download)" "$(awk -v a="$dl_start" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')" "all wrapper modules" >>"$dir/build-times.txt"

# ---- versions --------------------------------------------------------------------------------
kube_version=$(mod_field kubernetes k8s.io/kubernetes '{{.Version}}')
kube_time=$(mod_field kubernetes k8s.io/kubernetes '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}')
etcd_version=$(mod_field etcd go.etcd.io/etcd/server/v3 '{{.Version}}')
source_version=$(mod_field source-controller github.com/fluxcd/source-controller '{{.Version}}')
kustomize_version=$(mod_field kustomize-controller github.com/fluxcd/kustomize-controller '{{.Version}}')
helm_version=$(mod_field helm-controller github.com/fluxcd/helm-controller '{{.Version}}')
notification_version=$(mod_field notification-controller github.com/fluxcd/notification-controller '{{.Version}}')
kwok_version=$(mod_field kwok sigs.k8s.io/kwok '{{.Version}}')

[[ $kube_version =~ ^v([0-9]+)\.([0-9]+)\. ]] || die "unexpected kubernetes version $kube_version"
kube_major=${BASH_REMATCH[1]}
kube_minor=${BASH_REMATCH[2]}

# ---- binaries --------------------------------------------------------------------------------
# Same -X flags as hack/lib/version.sh (kube::version::ldflags), for both version packages, so
# /version and --version report the real release instead of v0.0.0-master.
kube_ldflags=()
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=(
		"-X $pkg.gitVersion=$kube_version"
		"-X $pkg.gitMajor=$kube_major"
		"-X $pkg.gitMinor=$kube_minor"
		"-X $pkg.gitTreeState=clean"
		"-X $pkg.buildDate=$kube_time"
	)
done

build etcd go.etcd.io/etcd/server/v3 etcd
build kubernetes k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "${kube_ldflags[@]}"
build kubernetes k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "${kube_ldflags[@]}"
build kubernetes k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler "${kube_ldflags[@]}"
build source-controller github.com/fluxcd/source-controller source-controller
build kustomize-controller github.com/fluxcd/kustomize-controller kustomize-controller
build helm-controller github.com/fluxcd/helm-controller helm-controller
build notification-controller github.com/fluxcd/notification-controller notification-controller
build kwok sigs.k8s.io/kwok/cmd/kwok kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version"

# ---- CRDs ------------------------------------------------------------------------------------
for c in source-controller kustomize-controller helm-controller notification-controller; do
	src=$(mod_field "$c" "github.com/fluxcd/$c" '{{.Dir}}')/config/crd/bases
	[[ -d $src ]] || die "no CRDs in $src"
	rm -rf "$dir/crds/$c"
	mkdir -p "$dir/crds/$c"
	install -m 0644 "$src"/*.yaml "$dir/crds/$c/"
	log "CRDs of $c: $(cd "$dir/crds/$c" && ls | tr '\n' ' ')"
done

# ---- kwok stages ------------------------------------------------------------------------------
# The same set kwokctl uses by default (kustomize/stage/fast): node initialize, node heartbeat with
# lease (needs --node-lease-duration-seconds>0), pod ready/complete/delete.
kwok_dir=$(mod_field kwok sigs.k8s.io/kwok '{{.Dir}}')/kustomize/stage
mkdir -p "$dir/kwok"
{
	first=1
	for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
		pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
		[[ -f $kwok_dir/$f ]] || die "missing kwok stage $kwok_dir/$f"
		((first)) || echo ---
		first=0
		cat "$kwok_dir/$f"
	done
} >"$dir/kwok/stages.yaml"

# ---- metadata --------------------------------------------------------------------------------
cat >"$dir/versions.env" <<EOF
KUBE_VERSION=$kube_version
ETCD_VERSION=$etcd_version
FLUX_VERSION=$FLUX_VERSION
SOURCE_CONTROLLER_VERSION=$source_version
KUSTOMIZE_CONTROLLER_VERSION=$kustomize_version
HELM_CONTROLLER_VERSION=$helm_version
NOTIFICATION_CONTROLLER_VERSION=$notification_version
KWOK_VERSION=$kwok_version
GO_VERSION=$(go env GOVERSION)
CACHE_KEY=$key
EOF

printf '%-26s %8ss\n' "(total)" "$(awk -v a="$total_start" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')" >>"$dir/build-times.txt"
touch "$dir/bin/.complete"
log "done: $(tail -n1 "$dir/build-times.txt")"
printf '%s\n' "$dir"
