#!/usr/bin/env bash
# `make deps`: what building, testing and the demo need on this machine, checked in a second.
#
# Usage: tests/deps.sh check     list what is missing and how to get it; exit 1 if anything is
#        tests/deps.sh install   the same, then install the missing Debian packages with apt-get
#                                (Debian/Ubuntu, as root or through sudo); exit 1 if anything
#                                is still missing afterwards
#
# Environment (for tests of this script; a user needs none of it):
#   GITOPS_DEPS_PATH        where commands are looked up (default: $PATH plus /usr/sbin and /sbin)
#   GITOPS_DEPS_INSTALLER   the install command (default: apt-get); it gets `update` once, then
#                           `install -y <packages>`
#   GITOPS_DEPS_OS_RELEASE  the os-release file that says whether this is Debian or Ubuntu
#
# Every line it prints goes to stderr and starts with `deps:`; stdout stays empty.
set -euo pipefail

mode=${1:-check}
[[ $mode == check || $mode == install ]] || { echo "deps: usage: tests/deps.sh check|install" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
search_path=${GITOPS_DEPS_PATH:-$PATH:/usr/sbin:/sbin}
os_release=${GITOPS_DEPS_OS_RELEASE:-/etc/os-release}

# command, Debian package, what needs it
requirements=(
  "cargo||Rust toolchain (https://rustup.rs), to build kubectl-gitops"
  "cargo-fmt||rustfmt, for make lint (rustup component add rustfmt)"
  "cargo-clippy||clippy, for make lint (rustup component add clippy)"
  "cc|gcc|a C compiler, for libgit2 and libssh2"
  "make|make|the README's entry points"
  "pkg-config|pkg-config|finding OpenSSL for git's HTTPS transport"
  "go||Go, to build the test environment from Go modules"
  "kubectl||the real kubectl that runs the plugins"
  "git|git|the config repos of the tests and the demo"
  "curl|curl|readiness probes of the test environment"
  "openssl|openssl|the test environment's certificates"
  "python3|python3|the test environment's git smart-HTTP server"
  "sshd|openssh-server|the test environment's git server over SSH"
  "ssh-keygen|openssh-client|host and client keys of that git server"
  "docker-registry|docker-registry|the test environment's OCI registry"
  "unshare|util-linux|a private /run for sshd"
  "flock|util-linux|serialising builds of the test environment"
  "sha256sum|coreutils|the test environment's cache key"
  "tar|tar|Helm chart archives"
  "unzip|unzip|the previous Flux release's manifests (tests/testenv/build-flux-previous.sh)"
  "strip|binutils|the krew test's archive of the debug binaries"
  "man|man-db|the man pages' test (make install)"
  "chromium|chromium|the UI's browser tests (headless Chromium)"
  "chromedriver|chromium-driver|the UI's browser tests (WebDriver)"
  "npm|npm|the npm packages the browser tests inject (axe-core: tests/testenv/build-npm.sh)"
)

find_command() { PATH=$search_path command -v "$1" 2>/dev/null; }

missing_packages=()
missing_other=()
probe() {
  missing_packages=()
  missing_other=()
  local entry name package why
  for entry in "${requirements[@]}"; do
    IFS='|' read -r name package why <<<"$entry"
    find_command "$name" >/dev/null && continue
    # Another Chrome and chromedriver named for the browser tests (tests/src/browser.rs).
    [[ $name == chromium && -n ${GITOPS_CHROME:-} ]] && continue
    [[ $name == chromedriver && -n ${GITOPS_CHROMEDRIVER:-} ]] && continue
    if [[ -n $package ]]; then
      missing_packages+=("$package")
      echo "deps: missing $name ($why); Debian package $package" >&2
    else
      missing_other+=("$name")
      echo "deps: missing $name: $why" >&2
    fi
  done
  # The OpenSSL headers have no command: ask pkg-config, when there is one.
  if find_command pkg-config >/dev/null && ! PATH=$search_path pkg-config --exists openssl 2>/dev/null; then
    missing_packages+=("libssl-dev")
    echo "deps: missing the OpenSSL headers (git's HTTPS transport); Debian package libssl-dev" >&2
  fi
  # Python's JSON Schema validator, which checks every command's -o json (tests/src/schema.rs).
  if find_command python3 >/dev/null && ! PATH=$search_path python3 -c 'import jsonschema' 2>/dev/null; then
    missing_packages+=("python3-jsonschema")
    echo "deps: missing Python's jsonschema (the -o json schema checks); Debian package python3-jsonschema" >&2
  fi
  # Python's venv, which tests/testenv/build-pypi.sh makes the MCP tests' client in.
  if find_command python3 >/dev/null && ! PATH=$search_path python3 -c 'import venv, ensurepip' 2>/dev/null; then
    missing_packages+=("python3-venv")
    echo "deps: missing Python's venv (the MCP tests' Python SDK); Debian package python3-venv" >&2
  fi
  # The Go the test environment's modules ask for (their `go` line).
  local go_bin wanted have
  if go_bin=$(find_command go); then
    wanted=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$here"/testenv/go/*/go.mod | sort -V | tail -n1)
    have=$("$go_bin" env GOVERSION 2>/dev/null | sed 's/^go//')
    if [[ -n $wanted && -n $have && $(printf '%s\n%s\n' "$wanted" "$have" | sort -V | head -n1) != "$wanted" ]]; then
      missing_other+=("go>=$wanted")
      echo "deps: go $have is older than the $wanted the test environment's modules need" >&2
    fi
  fi
  if [[ -n ${missing_packages[*]} ]]; then
    mapfile -t missing_packages < <(printf '%s\n' "${missing_packages[@]}" | sort -u)
  fi
}

is_debian_like() {
  [[ -r $os_release ]] && grep -Eq '^(ID|ID_LIKE)=.*\b(debian|ubuntu)\b' "$os_release"
}

advice() {
  if ((${#missing_packages[@]})); then
    if is_debian_like; then
      echo "deps: hint: run \`make deps\` (apt-get install ${missing_packages[*]})" >&2
    else
      echo "deps: hint: install the equivalent of Debian's ${missing_packages[*]} with your package manager" >&2
    fi
  fi
  if ((${#missing_other[@]})); then
    echo "deps: hint: get ${missing_other[*]} from the upstream installers (rustup.rs, go.dev/dl, kubernetes.io/docs/tasks/tools); Debian's are too old or absent" >&2
  fi
}

probe
if ((${#missing_packages[@]} == 0 && ${#missing_other[@]} == 0)); then
  exit 0
fi
if [[ $mode == check || ${#missing_packages[@]} -eq 0 ]]; then
  advice
  exit 1
fi

if ! is_debian_like; then
  advice
  exit 1
fi
installer=(${GITOPS_DEPS_INSTALLER:-apt-get})
if [[ $(id -u) != 0 && -z ${GITOPS_DEPS_INSTALLER:-} ]]; then
  if command -v sudo >/dev/null; then
    installer=(sudo apt-get)
  else
    echo "deps: installing ${missing_packages[*]} needs root (no sudo here)" >&2
    advice
    exit 1
  fi
fi
echo "deps: installing ${missing_packages[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp "${TMPDIR:-/tmp}/kubectl-gitops-deps.XXXXXX.log")
if ! { "${installer[@]}" update -qq && "${installer[@]}" install -y -qq "${missing_packages[@]}"; } >"$log" 2>&1; then
  echo "deps: error: ${installer[*]} install ${missing_packages[*]} failed; its output is in $log" >&2
  exit 1
fi
rm -f "$log"
probe
if ((${#missing_packages[@]} || ${#missing_other[@]})); then
  advice
  exit 1
fi
echo "deps: all present" >&2
