#!/usr/bin/env bash
# Install the PyPI packages the tests use as real clients nobody here wrote, each pinned by
# version and sha256 in tests/testenv/pypi/requirements.txt (`pip --require-hashes` refuses
# anything else):
#   mcp   the official Model Context Protocol SDK: tests/mcp/session.py drives
#         `kubectl gitops mcp` with it (tests/tests/it/mcp.rs).
# Into a virtual environment in a cache directory outside the repo, keyed by the requirements,
# this script and the Python that runs it.
#
# Usage: tests/testenv/build-pypi.sh
#   The last line of stdout is the cache directory; progress goes to stderr.
#   <dir>/bin/python     the environment's Python
#   <dir>/.complete      written last; when present the script exits at once
#
# Environment: as build.sh (TESTENV_CACHE_ROOT, XDG_CACHE_HOME).
# Needs: python3 with venv and pip, sha256sum, flock; the PyPI index when pip's cache lacks a package.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf '[pypi] %s\n' "$*" >&2; }
die() { printf '[pypi] error: %s\n' "$*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 not found in PATH"

python=$(python3 -c 'import sys; print(sys.version.split()[0])')
key=$( (cd "$here" && cat pypi/requirements.txt build-pypi.sh; echo "$python") | sha256sum | cut -c1-64)
cache_root=${TESTENV_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gitops/testenv}
dir=$cache_root/pypi-${key:0:12}

if [[ -f $dir/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

mkdir -p "$cache_root"
exec 9>"$dir.lock"
if ! flock -n 9; then
	log "another build-pypi.sh is installing into $dir; waiting for it"
	flock 9
fi
if [[ -f $dir/.complete ]]; then
	printf '%s\n' "$dir"
	exit 0
fi

log "installing into $dir (Python $python)"
rm -rf "$dir"
python3 -m venv "$dir" || die "python3 -m venv failed (Debian package python3-venv)"
# Wheels only: nothing is built, and no package's setup code runs.
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: \
	--no-deps -r "$here/pypi/requirements.txt" >&2 || die "pip install failed in $dir (a Python other than 3.11 needs its wheels' hashes in pypi/requirements.txt)"
"$dir/bin/python" -c 'import mcp, jsonschema' || die "the environment cannot import mcp"
touch "$dir/.complete"
log "done"
printf '%s\n' "$dir"
