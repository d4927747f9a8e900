//! Each case is an attacker nobody else in the suite plays; each failed before its fix.

mod hosts;
