//! The Flux component manifests a release is installed with: `--components-file`, else
//! `flux install --export` of the flux CLI of that release. `install` and `upgrade` obtain them
//! alike.

use crate::error::{Error, Result};
use crate::flux_cli;
use crate::output::Printer;

/// The Flux component manifests wanted: a Flux release, its namespace and controllers.
pub struct Components<'a> {
    /// `--components-file`: the manifests as given.
    pub file: Option<&'a std::path::Path>,
    /// `--flux-bin`: the flux CLI to generate them with.
    pub flux_bin: Option<std::path::PathBuf>,
    /// `--allow-unpinned-flux`: a release this build does not pin may run.
    pub allow_unpinned: bool,
    /// `--timeout`: a download of the CLI ends by then.
    pub deadline: std::time::Duration,
    /// The Flux release.
    pub version: &'a str,
    /// The Flux namespace.
    pub namespace: &'a str,
    /// The controllers.
    pub components: &'a [String],
}

/// The component manifests: `--components-file`, else `flux install --export` of the flux CLI of
/// the version asked for (flux_cli.rs: given, cached, embedded, or downloaded and verified; a
/// release this build does not pin only with `--allow-unpinned-flux`). `install` and `upgrade`
/// obtain them alike.
pub async fn flux_components(wanted: &Components<'_>, printer: &Printer) -> Result<String> {
    if let Some(path) = wanted.file {
        return std::fs::read_to_string(path).map_err(|error| {
            Error::usage(format!("cannot read --components-file {}: {error}", path.display()), "check the path")
        });
    }
    // Checked again here, where it selects a binary to run: it may come from the repo's record.
    let version: flux_cli::Tag = wanted.version.parse()?;
    let locator = flux_cli::Locator::new(wanted.flux_bin.clone())
        .with_sibling(crate::plugin::find("flux"))
        .allowing_unpinned(wanted.allow_unpinned)
        .with_download_deadline(wanted.deadline);
    let cli = locator.locate(&version, printer).await?;
    let output = cli
        .command()
        .args(["install", "--export", "--version", wanted.version, "--namespace", wanted.namespace])
        .arg(format!("--components={}", wanted.components.join(",")))
        .output()
        .map_err(|error| Error::io(format!("running {} install --export", cli.path.display()), error))?;
    if !output.status.success() {
        return Err(Error::usage(
            format!(
                "{} install --export failed: {}",
                cli.path.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            "pass --components-file with the output of `flux install --export` instead",
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
