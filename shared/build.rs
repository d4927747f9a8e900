//! Records the git commit the binaries are built from, for `--version` and `version`; and sets
//! `cfg(shared_fixtures_absent)` when ../shared/fixtures is not beside the checkout and `CI` is
//! unset, so that unit tests needing those fixtures are ignored (under CI they run, and fail
//! naming the missing file).

use std::process::Command;

include!("fixtures_cfg.rs");

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=GITOPS_GIT_COMMIT={commit}");
    for path in ["../.git/HEAD", "../.git/refs/heads"] {
        println!("cargo:rerun-if-changed={path}");
    }
    set_shared_fixtures_cfg();
}
