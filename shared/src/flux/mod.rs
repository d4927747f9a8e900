//! The Flux object model: which kinds exist, in which API groups, and which versions a cluster
//! serves (`api`); the bootstrap layout (`bootstrap`); and the objects we write, shaped the way
//! `flux create … --export` writes them (`objects`); and the typed view of their status (`status`).

pub mod api;
pub mod bootstrap;
pub mod components;
pub mod migrate;
pub mod objects;
pub mod reconcile;
pub mod release;
pub mod status;
pub mod storage;

/// The label `flux create tenant` puts on every object of a tenant: the team's name.
pub const TENANT_LABEL: &str = "toolkit.fluxcd.io/tenant";

/// The Flux release kubectl-gitops installs and tests against by default.
pub const PINNED_VERSION: &str = crate::dependencies::FLUX_VERSION;

/// The controllers of a default Flux installation, in the order `flux install` lists them.
pub const DEFAULT_COMPONENTS: [&str; 4] =
    ["source-controller", "kustomize-controller", "helm-controller", "notification-controller"];

/// Extra controllers `--components-extra` may add.
pub const EXTRA_COMPONENTS: [&str; 2] = ["image-reflector-controller", "image-automation-controller"];

/// Label Flux puts on its namespace and objects.
pub const PART_OF_LABEL: &str = "app.kubernetes.io/part-of";
/// Value of [`PART_OF_LABEL`] on Flux's objects.
pub const PART_OF_VALUE: &str = "flux";
/// Label with the Flux version on Flux's namespace.
pub const VERSION_LABEL: &str = "app.kubernetes.io/version";
/// Label naming the controller on each Flux Deployment.
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";

/// Maps a source-controller image tag to the Flux release line that ships it, for clusters
/// whose namespace has no version label. Only the minor line is known this way (`v2.9`), so
/// the caller marks the answer as guessed.
pub fn flux_line_from_source_controller(tag: &str) -> Option<String> {
    let version = tag.strip_prefix('v').unwrap_or(tag);
    let mut parts = version.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.split('-').next()?.parse().ok()?;
    // Since Flux v2.0 (source-controller v1.0) the minor numbers line up.
    (major == 1).then(|| format!("v2.{minor}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_controller_tags_map_to_flux_lines() {
        assert_eq!(flux_line_from_source_controller("v1.9.3").as_deref(), Some("v2.9"));
        assert_eq!(flux_line_from_source_controller("v1.3.0").as_deref(), Some("v2.3"));
        assert_eq!(flux_line_from_source_controller("v1.0.1").as_deref(), Some("v2.0"));
        assert_eq!(flux_line_from_source_controller("latest"), None);
        assert_eq!(flux_line_from_source_controller("v0.36.0"), None);
    }
}
