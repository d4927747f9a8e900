//! The hostile suite: each case is an attacker nobody else in the suite plays, run against the
//! real binaries and the test environment, and each failed before its fix (issue #56).

mod preview;
