#!/usr/bin/env bash
# Install the npm packages the tests use as real clients nobody here wrote, each pinned by version
# and sha512 integrity in tests/testenv/npm/package-lock.json (`npm ci` refuses anything else):
#   axe-core    the accessibility engine the browser tests inject into the UI's pages in Chromium
#               (tests/src/browser.rs, `Browser::accessibility_violations`).
# Into a cache directory outside the repo, keyed by the lock file and this script.
#
# Usage: tests/testenv/build-npm.sh
#   The last line of stdout is the cache directory; progress goes to stderr.
#   <dir>/node_modules/<package>/…   each package
#   <dir>/.complete                  written last; when present the script exits at once
#
# Environment: as build.sh (TESTENV_CACHE_ROOT, XDG_CACHE_HOME).
# Needs: npm (Debian package npm), sha256sum, flock; the npm registry when the npm cache lacks a package.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf '[npm] %s\n' "$*" >&2; }
die() { printf '[npm] error: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null || die "npm not found in PATH (Debian package npm: \`make deps\` installs it)"

key=$(cd "$here" && sha256sum npm/package.json npm/package-lock.json build-npm.sh | sha256sum | cut -c1-64)
cache_root=${TESTENV_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gitops/testenv}
dir=$cache_root/npm-${key:0:12}

if [[ -f $dir/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

mkdir -p "$cache_root"
exec 9>"$dir.lock"
if ! flock -n 9; then
	log "another build-npm.sh is installing into $dir; waiting for it"
	flock 9
fi
if [[ -f $dir/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

log "installing into $dir (npm $(npm --version))"
rm -rf "$dir"
mkdir -p "$dir"
cp "$here/npm/package.json" "$here/npm/package-lock.json" "$dir/"
# No install scripts: the packages are files the tests read, nothing here runs them.
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed in $dir"
[[ -f $dir/node_modules/axe-core/axe.min.js ]] || die "npm ci did not install axe-core"
touch "$dir/.complete"
log "done"
printf '%s\n' "$dir"
