//! Fixtures from `../shared` beside the checkout (never copied into the project). Tests that need
//! one skip, saying so, when it is absent.

use std::path::{Path, PathBuf};

/// A file under `../shared/fixtures/`, or `None` (with a "skipped" line) when it is absent.
pub fn shared(relative: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures").join(relative);
    if path.exists() {
        Some(path)
    } else {
        eprintln!("skipped: {} is absent (the ../shared fixtures are not beside this checkout)", path.display());
        None
    }
}

/// The real Flux v2.9.3 component manifests, as `flux bootstrap` committed them.
pub fn flux_components() -> Option<PathBuf> {
    shared("flux/gotk-components.yaml")
}
