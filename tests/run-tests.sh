#!/usr/bin/env bash
# `make test`'s test run: every test target runs even when one fails (--no-fail-fast), the whole
# output is kept in a log file, and a summary of each test binary's result closes the run.
#
# Usage: tests/run-tests.sh [cargo test args...]
#   TEST_LOG           the log file (default target/test.log)
#   GITOPS_TEST_USER   as root, the unprivileged user the test binaries run as (tests/as-test-user.sh);
#                      under CI it defaults to gitops-test, so CI proves the tests need no root.
#                      `root` keeps them root.
set -uo pipefail
cd "$(dirname "$0")/.."

log=${TEST_LOG:-target/test.log}
mkdir -p "$(dirname "$log")"
started=$(date +%s)
# Each test's time: libtest's --report-time, which stable Rust keeps behind -Z unstable-options
# unless the test binary runs with RUSTC_BOOTSTRAP=1. Given to the test binaries alone, through
# cargo's runner: rustc never sees it, so nothing is rebuilt for it.
host=$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z-' 'A-Z_')
runner="env RUSTC_BOOTSTRAP=1"
test_user=${GITOPS_TEST_USER:-${CI:+gitops-test}}
if [[ $(id -u) == 0 && -n $test_user && $test_user != root ]]; then
  runner="$PWD/tests/as-test-user.sh $runner"
  export GITOPS_TEST_USER=$test_user
  echo "run-tests: the test binaries run as $test_user, not root" >&2
fi
export "CARGO_TARGET_${host}_RUNNER=$runner"
# Four tests at a time on two cores: the end-to-end tests spend much of their time waiting on
# the controllers, which more of them fill (docs/testing.md: on a fresh 2-core machine the phase
# took 931 s and 1,003 s two at a time, 866 s three at a time; session 28, 773 s four at a time
# where three took 786-876 s for nearly the same tests). RUST_TEST_THREADS overrides.
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-4}
${CARGO:-cargo} test --workspace --all-targets --no-fail-fast "$@" -- -Z unstable-options --report-time 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
elapsed=$(($(date +%s) - started))

# `Running <source> (<binary>)` opens a binary's output and `test result: …` closes it; a binary
# that died before its result line is reported as such. The end-to-end binary (tests/tests/it) holds
# one module per area; its areas are counted apart from the `test <area>::<name> ... ok` lines.
awk -v elapsed="$elapsed" -v logfile="$log" -v status="$status" '
  function close_binary() {
    if (name != "" && !closed) { printf "  %-46s %-8s %s\n", name, "NO RESULT", "(crashed or killed; see the log)"; crashed++ }
    closed = 1
  }
  /^ *Running / {
    close_binary()
    binary = $0; sub(/.*\(/, "", binary); sub(/\).*/, "", binary); sub(/.*\//, "", binary); sub(/-[0-9a-f]+$/, "", binary)
    source = $2
    name = binary " (" source ")"
    closed = 0
    split("", area_order); split("", area_passed); split("", area_failed); split("", area_ignored); areas = 0
    if (!header++) print "\ntest binaries:"
    next
  }
  /^test [a-z_0-9]+::[^ ]+ \.\.\. (ok|FAILED|ignored)/ {
    # --report-time ends the line with the time of the test: `<12.345s>`.
    secs = 0
    if (match($0, /<[0-9.]+s>$/)) secs = substr($0, RSTART + 1, RLENGTH - 3) + 0
    if (binary != "it") next
    area = $2; sub(/::.*/, "", area)
    if (!(area in area_passed)) { area_order[++areas] = area; area_passed[area] = 0; area_failed[area] = 0; area_ignored[area] = 0; area_secs[area] = 0 }
    if ($0 ~ / \.\.\. ok( <|$)/) area_passed[area]++; else if ($0 ~ / \.\.\. FAILED( <|$)/) area_failed[area]++; else area_ignored[area]++
    area_secs[area] += secs
    test_secs[$2] = secs
    next
  }
  /^test result: / {
    if (name == "" || closed) next
    line = $0
    match(line, /[0-9]+ passed/); p = substr(line, RSTART, RLENGTH) + 0
    match(line, /[0-9]+ failed/); f = substr(line, RSTART, RLENGTH) + 0
    match(line, /[0-9]+ ignored/); i = substr(line, RSTART, RLENGTH) + 0
    match(line, /finished in [0-9.]+s/); t = substr(line, RSTART + 12, RLENGTH - 12)
    printf "  %-46s %-8s %4d passed %3d failed %3d ignored  %8s\n", name, (f ? "FAILED" : "ok"), p, f, i, t
    for (k = 1; k <= areas; k++) {
      a = area_order[k]
      printf "    %-44s %-8s %4d passed %3d failed %3d ignored  %7.1fs of tests\n", a, (area_failed[a] ? "FAILED" : "ok"), area_passed[a], area_failed[a], area_ignored[a], area_secs[a]
    }
    passed += p; failed += f; ignored += i; closed = 1
  }
  END {
    close_binary()
    # The end-to-end tests that took longest (run two or more at a time, so they add up to more
    # than the wall time of the binary).
    n = 0
    for (t in test_secs) { names[++n] = t }
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (test_secs[names[j]] > test_secs[names[i]]) { x = names[i]; names[i] = names[j]; names[j] = x }
    if (n) print "\nslowest end-to-end tests:"
    for (i = 1; i <= n && i <= 15; i++) printf "  %7.1fs  %s\n", test_secs[names[i]], names[i]
    printf "\nfull log: %s (%d s)\n", logfile, elapsed
    if (crashed) printf "%d test binaries ended without a result\n", crashed
    if (status != 0 && failed == 0 && crashed == 0) print "cargo test failed before any test ran (a build error?); see the log"
    printf "summary: %d passed, %d failed, %d skipped\n", passed, failed + crashed, ignored
  }
' "$log"
exit "$status"
