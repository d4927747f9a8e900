//! The hostile suite: each case is an attacker nobody else in the suite plays, run against the
//! real binaries and the test environment, and each failed before its fix (issue #56). Attackers
//! played elsewhere: a local service replaying the UI's cookie (`browser::`, in the browser the
//! UI runs in), a registry's token realm on another host (`credentials::`). One attacker writes
//! the cluster's Secret: a known_hosts pattern built to backtrack (`known_hosts`).

mod hosts;
mod known_hosts;
mod preview;
