//! An artifact's content pulled from a registry: its manifest, and its one content layer checked
//! against the manifest's digest and unpacked under limits.

use std::io::{BufReader, Seek};
use std::path::Path;

use crate::error::{Error, Result};
use crate::oci::extract::{self, Entry};
use crate::oci::limits::Limits;
use crate::oci::reference::OciUrl;
use crate::oci::registry::{Manifest, Registry};

/// The manifest and the checked entries of the artifact at `url`, under `limits`; with `output`,
/// its files unpacked there.
///
/// The layer streams to an unnamed temporary file (beside `output`, else in the temp directory),
/// gone when it is dropped, and is unpacked from there: nothing of it is held in memory whole.
pub async fn unpack(
    url: &OciUrl,
    registry: &Registry,
    limits: &Limits,
    output: Option<&Path>,
) -> Result<(Manifest, Vec<Entry>)> {
    let manifest = registry.manifest(url, limits.manifest).await?;
    let layer = manifest.content_layer(url)?;
    let dir = output.map_or_else(std::env::temp_dir, extract::parent_of);
    let io = |what: &str| {
        let context = format!("cannot {what} in {}", dir.display());
        move |source| Error::io(context, source)
    };
    std::fs::create_dir_all(&dir).map_err(io("create a directory"))?;
    let mut file = tempfile::tempfile_in(&dir).map_err(io("create a temporary file"))?;
    registry.blob_to(url, layer, limits.layer, file.try_clone().map_err(io("reopen a temporary file"))?).await?;
    file.rewind().map_err(io("read a temporary file"))?;
    let gunzipped = flate2::read::GzDecoder::new(BufReader::new(file));
    let entries = match output {
        Some(output) => extract::unpack(gunzipped, output, limits)?,
        None => extract::list(gunzipped, limits)?,
    };
    Ok((manifest, entries))
}
