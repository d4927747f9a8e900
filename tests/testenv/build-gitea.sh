#!/usr/bin/env bash
# Build Gitea, the real forge the provider tests run against (tests/tests/it/gitea/), from its Go
# module, into a cache directory keyed by the version and this script.
#
# The module proxy serves it as code.gitea.io/gitea, but its go.mod declares `module gitea.dev`, so
# no wrapper module can require it (go refuses the path mismatch). It is built as upstream builds
# it: as the main module, in a writable copy of the module's source, with its own go.mod, go.sum
# and replace lines. Upstream's defaults: no build tags (SQLite through modernc.org/sqlite, pure
# Go, so CGO_ENABLED=0), `-ldflags "-s -w -X main.Version=<version>"`. Without `bindata` Gitea
# reads its templates, options and locales from disk at run time, so the copy is kept (<dir>/src)
# for the tests to point Gitea at. The web UI's npm-built assets are not in the module and not
# needed: the tests use the REST API and git over HTTP and SSH.
#
# Usage: tests/testenv/build-gitea.sh
#   The last line of stdout is the cache directory; progress goes to stderr.
#   <dir>/bin/gitea            the server
#   <dir>/src                  its source (templates, options and locales read at run time)
#   <dir>/build-times.txt      wall time of the build, in seconds
#   <dir>/bin/.complete        written last; when present the script exits at once
#
# Environment: as build.sh (TESTENV_CACHE_ROOT, XDG_CACHE_HOME, TESTENV_NICE).
# Needs: go, sha256sum, flock; the Go module proxy only when the module cache lacks a module.
set -euo pipefail

module=code.gitea.io/gitea
version=v1.27.3
# What the cache is keyed by (with the Go version): edits elsewhere in this script do not rebuild.
recipe="$module@$version CGO_ENABLED=0 -trimpath -buildvcs=false -gcflags=all=-dwarf=false -ldflags=-s -w -X main.Version"

log() { printf '[gitea] %s\n' "$*" >&2; }
die() { printf '[gitea] error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "go not found in PATH"

export GOWORK=off
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export CGO_ENABLED=0
# No DWARF in the compiled packages: -ldflags=-s -w strips it from the binaries anyway, and
# not generating it makes a cold build about 8% faster and the Go build cache smaller.
export GOFLAGS='-mod=readonly -gcflags=all=-dwarf=false'
unset GOOS GOARCH GOARM GOAMD64 || true

key=$(
	{
		echo "$recipe"
		go env GOVERSION GOOS GOARCH
	} | sha256sum | cut -c1-64
)
cache_root=${TESTENV_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gitops/testenv}
dir=$cache_root/gitea-${key:0:12}

if [[ -f $dir/bin/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

mkdir -p "$cache_root"
exec 9>"$dir.lock"
if ! flock -n 9; then
	log "another build-gitea.sh is building $dir; waiting for it"
	flock 9
fi
if [[ -f $dir/bin/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

log "building $module@$version into $dir ($(go env GOVERSION))"
rm -rf "$dir"
mkdir -p "$dir/bin"
nice_level=${TESTENV_NICE:-10}
start=$(date +%s.%N)

source_dir=$(nice -n "$nice_level" go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -n $source_dir && -f $source_dir/go.mod ]] || die "go mod download $module@$version gave no source directory"
cp -r "$source_dir" "$dir/src"
chmod -R u+w "$dir/src"
(cd "$dir/src" && nice -n "$nice_level" go mod download) || die "go mod download of Gitea's dependencies failed"
log "go build (about 10 minutes cold on 2 cores)"
(cd "$dir/src" && nice -n "$nice_level" go build -trimpath -buildvcs=false \
	-ldflags="-s -w -X main.Version=${version#v}" -o "$dir/bin/gitea.tmp" .) || die "go build of Gitea failed"
mv -f "$dir/bin/gitea.tmp" "$dir/bin/gitea"
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
printf '%-12s %8ss  %s\n' gitea "$secs" "$module@$version" >"$dir/build-times.txt"
log "  gitea: ${secs}s, $(du -h "$dir/bin/gitea" | cut -f1)"

"$dir/bin/gitea" --version >&2 || die "the built gitea does not run"
touch "$dir/bin/.complete"
log "done"
printf '%s\n' "$dir"
