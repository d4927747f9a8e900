//! The hostile suite: each case is an attacker nobody else in the suite plays, run against the
//! real binaries and the test environment, and each failed before its fix (issue #56). Attackers
//! played elsewhere: a local service replaying the UI's cookie (`browser::`, in the browser the
//! UI runs in), a registry's token realm on another host (`credentials::`).

mod hosts;
mod preview;
