//! Fixtures from `../shared` beside the checkout (never copied into the project).
//!
//! A test that needs one is marked `#[cfg_attr(shared_fixtures_absent, ignore = "…")]`: the
//! build script sets `shared_fixtures_absent` when ../shared/fixtures is missing and `CI` is
//! unset, so the test runner counts such tests as ignored. Under CI they run, and fail here,
//! naming the missing file.

use std::path::{Path, PathBuf};

/// A file under `../shared/fixtures/`; panics, naming it, when it is absent.
pub fn shared(relative: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures").join(relative);
    assert!(
        path.exists(),
        "the fixture {} is absent: the ../shared fixtures must be beside this checkout",
        path.display()
    );
    path
}
