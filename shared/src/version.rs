//! `kubectl gitops version`: what we are, and what the cluster runs.

use serde::Serialize;

use crate::cluster::{Cluster, Connection};
use crate::detect::{self, ClusterState};
use crate::flux;
use crate::flux_cli::{Locator, Pin, Tag};

/// The plugin version and the commit it was built from, as `--version` prints it.
pub const VERSION_LINE: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("GITOPS_GIT_COMMIT"), ")");

/// The plugin's own build.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientVersion {
    /// The kubectl-gitops release.
    pub version: &'static str,
    /// The git commit it was built from.
    pub commit: &'static str,
    /// The Flux release `install` uses by default.
    pub pinned_flux_version: &'static str,
    /// Whether this build pins the sha256 of that release's checksums file; false in a
    /// development build, where a download is checked against the release's own file alone.
    pub flux_checksums_pinned: bool,
}

/// What the cluster runs, or why we could not tell.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerVersion {
    /// Whether the cluster answered.
    pub reachable: bool,
    /// Kubernetes version.
    pub kubernetes_version: Option<String>,
    /// Flux version, when installed.
    pub flux_version: Option<String>,
    /// Flux namespace, when installed.
    pub flux_namespace: Option<String>,
    /// Why the cluster did not answer.
    pub error: Option<String>,
}

/// Which flux CLI `kubectl gitops flux` and `install` would run, found without downloading.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FluxCliReport {
    /// The executable; `None` when it would be downloaded first.
    pub path: Option<String>,
    /// Its version, when known.
    pub version: Option<String>,
    /// Where it comes from: `flag`, `environment`, `cache`, `path`, or `download` (not yet here).
    pub origin: String,
    /// Where a download would come from, or why no CLI can be found.
    pub detail: Option<String>,
}

/// Everything `version` prints; `version --client` prints the client alone.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionReport {
    /// This build.
    pub client: ClientVersion,
    /// The flux CLI that would run. Absent with `--client`: finding it verifies the cached
    /// CLI's checksum, which costs more than the rest of the command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flux_cli: Option<FluxCliReport>,
    /// The cluster; absent with `--client`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerVersion>,
}

impl crate::output::Kind for VersionReport {
    const KIND: &'static str = "Version";
}

impl VersionReport {
    /// `version --client`: this build only, nothing read from the machine or the cluster, so it
    /// starts as fast as `--help` (docs/performance.md).
    pub fn client_only() -> VersionReport {
        VersionReport { client: client(), flux_cli: None, server: None }
    }
}

/// This build's version information.
pub fn client() -> ClientVersion {
    ClientVersion {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("GITOPS_GIT_COMMIT"),
        pinned_flux_version: flux::PINNED_VERSION,
        flux_checksums_pinned: matches!(Tag::pinned().pin(), Pin::Checksums(_)),
    }
}

/// Asks the cluster for its versions; never fails, the reason goes into `error`.
pub async fn report(connection: &Connection, printer: &crate::output::Printer) -> VersionReport {
    let unreachable = |error: String| ServerVersion {
        reachable: false,
        kubernetes_version: None,
        flux_version: None,
        flux_namespace: None,
        error: Some(error),
    };
    let server = match Cluster::connect(connection, printer).await {
        Err(error) => unreachable(error.to_string()),
        Ok(cluster) => match detect::detect(&cluster).await {
            Err(error) => unreachable(error.to_string()),
            Ok(found) if found.state == ClusterState::Unreachable => {
                unreachable(found.error.unwrap_or_else(|| "unreachable".into()))
            }
            Ok(found) => ServerVersion {
                reachable: true,
                kubernetes_version: found.kubernetes_version,
                flux_version: found.flux.as_ref().and_then(|f| f.version.clone()),
                flux_namespace: found.flux.map(|f| f.namespace),
                error: None,
            },
        },
    };
    VersionReport { client: client(), flux_cli: Some(flux_cli()), server: Some(server) }
}

/// The flux CLI the pinned version resolves to on this machine, without downloading it.
pub fn flux_cli() -> FluxCliReport {
    let locator = Locator::new(None);
    let pinned = Tag::pinned();
    match locator.find_local(&pinned) {
        Ok(Some(cli)) => FluxCliReport {
            path: Some(cli.path.display().to_string()),
            version: cli.version.map(|tag| tag.to_string()),
            origin: cli.origin.id().to_string(),
            detail: Some(cli.origin.describe().to_string()),
        },
        Ok(None) => FluxCliReport {
            path: None,
            version: Some(flux::PINNED_VERSION.to_string()),
            origin: "download".into(),
            detail: locator.release(&pinned).ok().map(|release| release.base_url),
        },
        Err(error) => {
            FluxCliReport { path: None, version: None, origin: "none".into(), detail: Some(error.to_string()) }
        }
    }
}

/// The human-readable form.
pub fn render_text(report: &VersionReport) -> String {
    let client = &report.client;
    let development = if client.flux_checksums_pinned {
        ""
    } else {
        " (development build: the sha256 of its checksums file is not pinned)"
    };
    let mut text = format!(
        "Client Version: v{} (commit {})\nPinned Flux Version: {}{development}\n",
        client.version, client.commit, client.pinned_flux_version
    );
    if let Some(cli) = &report.flux_cli {
        let detail = cli.detail.as_deref().unwrap_or_default();
        match (&cli.path, &cli.version) {
            (Some(path), Some(version)) => text.push_str(&format!("Flux CLI: {path} ({version}, {detail})\n")),
            (Some(path), None) => text.push_str(&format!("Flux CLI: {path} ({detail})\n")),
            (None, Some(version)) => {
                text.push_str(&format!("Flux CLI: {version}, downloaded and verified on first use from {detail}\n"))
            }
            (None, None) => text.push_str(&format!("Flux CLI: none ({detail})\n")),
        }
    }
    match &report.server {
        None => {}
        Some(server) if server.reachable => {
            let kubernetes = server.kubernetes_version.as_deref().unwrap_or("unknown");
            text.push_str(&format!("Server Version: {kubernetes}\n"));
            match (&server.flux_version, &server.flux_namespace) {
                (Some(version), Some(namespace)) => {
                    text.push_str(&format!("Flux Version: {version} (namespace {namespace})\n"))
                }
                (None, Some(namespace)) => text.push_str(&format!("Flux Version: unknown (namespace {namespace})\n")),
                _ => text.push_str("Flux Version: not installed\n"),
            }
        }
        Some(_) => text.push_str("Server Version: unreachable\n"),
    }
    text
}
