//! `component upgrade`'s flags, and the request they resolve into before anything is contacted.

use clap::Args;

use crate::change::{DeliverySettings, RepoSettings};
use crate::cli::{DeliveryArgs, RepoArgs};
use crate::error::{Error, Result};

/// `component upgrade`.
#[derive(Debug, Clone, Args)]
pub struct ComponentUpgradeArgs {
    /// The component (`kubectl gitops component list` shows them).
    pub name: String,

    /// A tag: of a git or OCI source, or of an artifact.
    ///
    /// The artifact tag to move to (`.spec.ref.tag` of its OCIRepository).
    #[arg(long)]
    pub tag: String,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// The clusters to change (repeatable); default: the current cluster.
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME")]
    pub clusters: Vec<String>,

    #[command(flatten)]
    pub repo: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// `component upgrade`.
#[derive(Debug, Clone)]
pub struct ComponentUpgradeRequest {
    /// The component, a valid name.
    pub name: String,
    /// The tag to move to, a valid OCI tag.
    pub tag: String,
    /// `--cluster-name`: the clusters to change; empty means the current one.
    pub clusters: Vec<String>,
    /// The config repo.
    pub repo: RepoSettings,
    /// The delivery.
    pub delivery: DeliverySettings,
}

impl ComponentUpgradeArgs {
    /// The request of `component upgrade`, checked before anything is contacted.
    pub fn request(&self) -> Result<ComponentUpgradeRequest> {
        crate::names::validate_name(&self.name, "component name")?;
        crate::oci::reference::validate_tag(&self.tag)?;
        for cluster in &self.clusters {
            crate::names::validate_name(cluster, "cluster name")?;
        }
        let delivery = self.delivery.settings()?;
        if delivery.wait {
            return Err(Error::usage(
                "component upgrade has no --wait yet",
                "follow the rollout with `kubectl gitops component list` (READY, REVISION)",
            ));
        }
        Ok(ComponentUpgradeRequest {
            name: self.name.clone(),
            tag: self.tag.clone(),
            clusters: self.clusters.clone(),
            repo: self.repo.settings()?,
            delivery,
        })
    }
}
