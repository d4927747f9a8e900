//! See ../shared/fixtures_cfg.rs: `cfg(shared_fixtures_absent)` for tests that need ../shared.

include!("../shared/fixtures_cfg.rs");

fn main() {
    set_shared_fixtures_cfg();
}
