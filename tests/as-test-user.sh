#!/usr/bin/env bash
# Runs one test binary as an unprivileged user: `make test` gives it to cargo as the test runner
# (tests/run-tests.sh) when it runs as root under CI, so CI proves what users and GitHub runners
# need, that nothing in the tests needs root (sshd, Gitea, the API server, the browser).
#
# Usage: tests/as-test-user.sh BINARY [ARGS...]
#   GITOPS_TEST_USER   the user (default gitops-test; created, with a home, when missing)
#
# The user must reach the workspace, the built binaries and the test environment's caches: each
# directory on their paths that it cannot enter gets the search bit for others (o+x: enter, not
# list), said on stderr. That is a change to the machine, so only CI (as root) asks for it.
set -euo pipefail

user=${GITOPS_TEST_USER:-gitops-test}
# A shell that runs commands: the tests' sshd serves this user and runs each git command through
# the user's shell, which nologin refuses ("This account is currently not available"). The user
# has no password, so no one logs in as it.
if ! id -u "$user" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh "$user"
  echo "as-test-user: created the user $user for the tests" >&2
fi
shell=$(getent passwd "$user" | cut -d: -f7)
if [[ $shell == */nologin || $shell == */false ]]; then
  usermod --shell /bin/sh "$user"
  echo "as-test-user: $user's shell was $shell, which the tests' sshd cannot run git through: now /bin/sh" >&2
fi
home=$(getent passwd "$user" | cut -d: -f6)

as_user() { setpriv --reuid="$user" --regid="$user" --init-groups "$@"; }

# Every directory from / down to each path the tests read: enterable by the user.
reachable() {
  local path=$1 dir
  [[ -e $path ]] || return 0
  dir=$(cd "$(dirname "$path")" && pwd -P)/$(basename "$path")
  local walked=""
  IFS=/ read -ra parts <<<"${dir#/}"
  for part in "${parts[@]}"; do
    walked="$walked/$part"
    [[ -d $walked ]] || break
    if ! as_user test -x "$walked" 2>/dev/null; then
      chmod o+x "$walked"
      echo "as-test-user: $user may now enter $walked (o+x)" >&2
    fi
  done
}

workspace=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
for path in "$workspace" "$1" "${GITOPS_TESTENV_DIR:-}" "${GITOPS_FLUX_CLI_DIR:-}" "${GITOPS_FLUX_PREVIOUS_DIR:-}" \
  "${GITOPS_TOOLS_DIR:-}" "${GITOPS_GITEA_DIR:-}" "$workspace/../shared"; do
  [[ -n $path ]] && reachable "$path"
done

# The browser tests' screenshots, for people to look at, go under target/ as they do for anyone.
screenshots="$workspace/target/ui-screenshots"
install -d "$screenshots"
chown -R "$user:" "$screenshots"

exec setpriv --reuid="$user" --regid="$user" --init-groups \
  env HOME="$home" USER="$user" LOGNAME="$user" "$@"
