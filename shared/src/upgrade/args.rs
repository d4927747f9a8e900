//! `kubectl gitops upgrade` flags, resolved into an [`UpgradeRequest`] before anything is
//! contacted.

use std::path::PathBuf;

use clap::Args;

use crate::change::{DeliverySettings, RepoSettings};
use crate::cli::{DeliveryArgs, RepoArgs};
use crate::error::{Error, Result};
use crate::flux::release::FluxVersion;

/// `upgrade`.
#[derive(Debug, Clone, Args)]
pub struct UpgradeArgs {
    /// The Flux release, vX.Y.Z (default: the one this kubectl-gitops pins).
    ///
    /// The release to move to. `--version`, as `flux install` spells it, is taken for it (with a
    /// warning) for one more release.
    #[arg(long, alias = "version", value_name = "VERSION")]
    pub flux_version: Option<String>,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// The clusters to upgrade (repeatable); default: the current cluster.
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME")]
    pub clusters: Vec<String>,

    /// Print the current, pinned and latest known versions and what an upgrade would change; change
    /// nothing. Exit 0 when up to date, 1 when an upgrade is available, 2 on bad input.
    #[arg(long, conflicts_with_all = ["dry_run", "wait", "pr", "auto_merge"])]
    pub check: bool,

    /// Allow moving more than one release line at once (v2.7 to v2.9); Flux supports one at a time.
    #[arg(long)]
    pub allow_skip: bool,

    /// Migrate every Flux manifest under the cluster's directory and apps/, not only those
    /// kubectl-gitops generated.
    #[arg(long)]
    pub all_manifests: bool,

    /// Flux component manifests to use instead of generating them (`flux install --export` output).
    ///
    /// The target's component manifests (`flux install --export` output) instead of generating them.
    #[arg(long, value_name = "FILE")]
    pub components_file: Option<PathBuf>,

    /// The flux CLI that generates the component manifests.
    ///
    /// The flux CLI that generates the component manifests (default: cached, embedded, or
    /// downloaded and verified, as install finds it).
    #[arg(long, value_name = "PATH")]
    pub flux_bin: Option<PathBuf>,

    /// Allow a Flux release this kubectl-gitops does not pin, checked only against its own checksums file.
    ///
    /// Run a Flux release this kubectl-gitops does not pin, checked only against its own
    /// checksums file.
    #[arg(long)]
    pub allow_unpinned_flux: bool,

    #[command(flatten)]
    pub repo: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// What `upgrade` was asked to do, checked.
#[derive(Debug, Clone)]
pub struct UpgradeRequest {
    /// The release to move to.
    pub target: FluxVersion,
    /// `--cluster-name`; empty means the current cluster.
    pub clusters: Vec<String>,
    /// `--check`.
    pub check: bool,
    /// `--allow-skip`.
    pub allow_skip: bool,
    /// `--all-manifests`.
    pub all_manifests: bool,
    /// `--components-file`.
    pub components_file: Option<PathBuf>,
    /// `--flux-bin`.
    pub flux_bin: Option<PathBuf>,
    /// `--allow-unpinned-flux`.
    pub allow_unpinned_flux: bool,
    /// The config repo.
    pub repo: RepoSettings,
    /// How the change is delivered.
    pub delivery: DeliverySettings,
}

impl UpgradeArgs {
    /// Checks the flags: a well-formed version of a release line this build knows.
    pub fn request(&self) -> Result<UpgradeRequest> {
        for cluster in &self.clusters {
            crate::names::validate_name(cluster, "cluster name")?;
        }
        Ok(UpgradeRequest {
            target: target_of(self.flux_version.as_deref())?,
            clusters: self.clusters.clone(),
            check: self.check,
            allow_skip: self.allow_skip,
            all_manifests: self.all_manifests,
            components_file: self.components_file.clone(),
            flux_bin: self.flux_bin.clone(),
            allow_unpinned_flux: self.allow_unpinned_flux,
            repo: self.repo.settings()?,
            delivery: self.delivery.settings()?,
        })
    }
}

impl UpgradeRequest {
    /// `upgrade --check [--flux-version VERSION]` as plain data (the MCP server's
    /// `flux_upgrade_check`): the version checked as the flag is, every other setting its default.
    pub fn check(flux_version: Option<&str>, repo: RepoSettings) -> Result<UpgradeRequest> {
        Ok(UpgradeRequest {
            target: target_of(flux_version)?,
            clusters: Vec::new(),
            check: true,
            allow_skip: false,
            all_manifests: false,
            components_file: None,
            flux_bin: None,
            allow_unpinned_flux: false,
            repo,
            delivery: crate::change::settings::delivery(false, None, false, false),
        })
    }
}

/// The release `--flux-version` names (default: the one this build pins), refused unless it is of
/// a release line this build knows.
fn target_of(flux_version: Option<&str>) -> Result<FluxVersion> {
    let target = match flux_version {
        Some(text) => text.parse::<FluxVersion>()?,
        None => FluxVersion::pinned(),
    };
    if !target.is_known() {
        return Err(Error::usage(
            format!(
                "unknown Flux version {target}: this kubectl-gitops knows the Flux releases up to {} (it pins {})",
                FluxVersion::pinned().line(),
                crate::flux::PINNED_VERSION
            ),
            "upgrade kubectl-gitops to move to a newer Flux line, or pass --flux-version with a release it knows",
        ));
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_asked_as_plain_data_is_checked_as_the_flag_is() {
        let repo = || RepoSettings::default();
        let pinned = UpgradeRequest::check(None, repo()).unwrap();
        assert!(pinned.check && pinned.clusters.is_empty());
        assert_eq!(pinned.target, FluxVersion::pinned());
        let unknown = UpgradeRequest::check(Some("v9.0.0"), repo()).unwrap_err().to_string();
        assert!(unknown.contains("unknown Flux version v9.0.0"), "{unknown}");
        assert!(UpgradeRequest::check(Some("latest"), repo()).is_err());
    }
}
