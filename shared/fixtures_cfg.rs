// Included by the build scripts of `shared` and `tests` (a build script cannot import a crate's
// code): sets `cfg(shared_fixtures_absent)` when ../shared/fixtures is not beside the checkout
// and `CI` is unset, so that tests needing those fixtures are ignored and counted as ignored.
// Under CI they always run, and fail naming the missing file.
fn set_shared_fixtures_cfg() {
    println!("cargo::rustc-check-cfg=cfg(shared_fixtures_absent)");
    println!("cargo::rerun-if-env-changed=CI");
    // Read at run time: cargo may reuse a build script compiled for a checkout elsewhere.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    let root = std::path::Path::new(&manifest_dir).join("..");
    let fixtures = root.join("../shared/fixtures");
    // Only a path that exists is watched: cargo takes a missing one as changed at every build,
    // which rebuilt both crates at each cargo call of a clone without ../shared. One put there
    // later is noticed when the build scripts next run (`touch shared/build.rs tests/build.rs`).
    if fixtures.exists() {
        println!("cargo::rerun-if-changed={}", fixtures.display());
    }
    if !fixtures.is_dir() && std::env::var_os("CI").is_none() {
        println!("cargo::rustc-cfg=shared_fixtures_absent");
    }
}
