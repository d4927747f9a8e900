# Sourced by the demo scripts (tests/demo.sh, tests/demo-sockshop.sh): everything they print also
# goes to a log file, `step` shows each command as a user types it, and a failure ends with one
# line naming the step that failed and the log. Set `demo` (the script's name, for messages) and
# `log` (DEMO_LOG, else target/<demo>.log) first; needs `set -E` for the ERR trap.
mkdir -p "$(dirname "$log")"
exec > >(tee "$log") 2> >(tee -a "$log" >&2)
current_step="setting up"
step() {
  current_step="$*"
  if [[ -t 2 && -z ${NO_COLOR:-} ]]; then printf '\n\033[1m$ %s\033[0m\n' "$*" >&2; else printf '\n$ %s\n' "$*" >&2; fi
}
failed() { echo "$demo: error: \`$current_step\` failed (exit $1); full log: $log" >&2; }
trap 'failed $?' ERR
