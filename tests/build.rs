//! Sets `cfg(shared_fixtures_absent)` when ../shared/fixtures is not beside the checkout and
//! `CI` is unset: tests that need those fixtures are then ignored (and counted as ignored).
//! Under CI they always run, and fail naming the missing file.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(shared_fixtures_absent)");
    println!("cargo::rerun-if-env-changed=CI");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures");
    println!("cargo::rerun-if-changed={}", fixtures.display());
    if !fixtures.is_dir() && std::env::var_os("CI").is_none() {
        println!("cargo::rustc-cfg=shared_fixtures_absent");
    }
}
