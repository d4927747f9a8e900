//! The flux CLI compiled into this binary (the `embed-flux` feature; build.rs names it), written
//! to the cache on first use and run from there.

#[cfg(feature = "embed-flux")]
mod compiled {
    include!(concat!(env!("OUT_DIR"), "/embedded_flux.rs"));
}

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::release::{Release, verify_cached};
use crate::error::{Error, Result};

/// The embedded CLI and its sha256, when this binary carries one.
fn embedded() -> Option<(&'static [u8], &'static str)> {
    #[cfg(feature = "embed-flux")]
    {
        Some((compiled::BYTES, compiled::SHA256))
    }
    #[cfg(not(feature = "embed-flux"))]
    {
        None
    }
}

/// Whether this binary carries a flux CLI.
pub fn is_embedded() -> bool {
    embedded().is_some()
}

/// The embedded CLI in the cache of `release` (the pinned version): the verified copy already
/// there, else written now after its bytes were checked against the sha256 taken at build time.
/// `None` when this binary carries none.
pub fn extract(release: &Release) -> Result<Option<PathBuf>> {
    let Some((bytes, sha256)) = embedded() else {
        return Ok(None);
    };
    if let Some(path) = verify_cached(release) {
        return Ok(Some(path));
    }
    let actual: String = Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect();
    if actual != sha256 {
        return Err(Error::Untrusted {
            message: format!("the flux CLI inside this binary has sha256 {actual}, not {sha256}"),
            hint: "this kubectl-gitops binary is damaged; reinstall it".into(),
        });
    }
    release.store(bytes).map(Some)
}
