//! The cluster readers: what runs where, at which commit, healthy or not, and why, as `status`,
//! `app status`, `app history`, `fleet`, `metrics`, `drift`, the UI and MCP read it. No command
//! is here (their flags and runs are in [`crate::status`] and the others'), and none is used.
//!
//! One paginated LIST per Flux kind, the kinds listed concurrently, no per-object GET. Each
//! Kustomization and HelmRelease becomes one row, joined in memory with its source (and, for
//! Helm, its HelmChart), so the message shown is that of the first object in the chain that is
//! not ready. `--wait` and `--watch` keep the same objects current with one watch per kind
//! (live.rs), with the machinery `app status` waits and watches with (watch.rs).

mod app_history;
mod app_look;
pub(crate) mod app_reads;
pub(crate) mod app_report;
pub(crate) mod apps_query;
mod collect;
pub(crate) mod events;
pub mod ledger;
mod live;
pub(crate) mod pod_logs;
mod remember;
mod render;
pub(crate) mod tree;
pub(crate) mod watch;

use serde::Serialize;

pub use self::app_history::{AppHistory, app_history};
pub use self::app_look::{app_report, request_reconcile, set_suspended, wait_for_app};
pub(crate) use self::app_reads::served_apis;
pub use self::app_report::{
    AppEvent, AppReport, HistoryEntry, InventoryItem, LastDeployed, PodState, Workload, exit_code as app_exit_code,
};
pub use self::collect::{Scope, collect, collect_detected, collect_labelled};
pub(crate) use self::collect::{applies_the_config_repo, resource};
pub(crate) use self::live::Live;
pub use self::live::{wait_cluster, watch_cluster};
pub use self::remember::{HistoryKeeper, Ledgers};
pub(crate) use self::remember::{LEDGERS_PER_LOOK, histories, kept_fingerprints, remember_changed};
pub use self::render::{View, exit_code, render_table};
pub use self::tree::render_tree;
pub use self::watch::{Limits, WaitArgs, WaitRequest};
use crate::record::InstallRecord;

/// How an app is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AppKind {
    /// A Kustomization of a git (or bucket) source.
    Kustomize,
    /// A HelmRelease.
    Helm,
    /// A Kustomization of an OCIRepository.
    Oci,
}

/// Where an app stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AppState {
    /// Ready at the latest revision.
    Ready,
    /// Something in its chain reports Ready=False.
    Failing,
    /// Not reconciled yet, or reconciling.
    Progressing,
    /// `spec.suspend: true`.
    Suspended,
}

impl AppState {
    /// Every state, in the order filters offer them.
    pub const ALL: [AppState; 4] = [AppState::Ready, AppState::Failing, AppState::Progressing, AppState::Suspended];

    /// The word `-o json` prints (its serde name), the UI's filters take and its rows are styled by.
    pub fn word(self) -> &'static str {
        match self {
            AppState::Ready => "ready",
            AppState::Failing => "failing",
            AppState::Progressing => "progressing",
            AppState::Suspended => "suspended",
        }
    }
}

/// A Flux object in an app's chain, with its Ready condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    /// e.g. `GitRepository`.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `True`, `False` or `Unknown` (no Ready condition yet is `Unknown`).
    pub ready: String,
    /// The Ready condition's reason.
    pub reason: Option<String>,
    /// The Ready condition's message.
    pub message: Option<String>,
    /// What the object has: a source's artifact revision, a Kustomization's applied revision.
    pub revision: Option<String>,
    /// `spec.suspend`.
    pub suspended: bool,
}

/// One row: a Kustomization or HelmRelease and what it depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    /// Namespace of the Kustomization or HelmRelease.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// kustomize, helm or oci (not `kind`: that names a document, `status --watch`'s rows).
    #[serde(rename = "type")]
    pub kind: AppKind,
    /// ready, failing, progressing or suspended.
    pub state: AppState,
    /// The source URL, when the source was found.
    pub source_url: Option<String>,
    /// The source's ref (branch, tag, semver, commit, chart version).
    pub source_ref: Option<String>,
    /// What the source fetched.
    pub source_revision: Option<String>,
    /// What is running: a Kustomization's `lastAppliedRevision`; a HelmRelease's deployed chart version.
    pub applied_revision: Option<String>,
    /// When it last deployed successfully, RFC 3339.
    pub last_deployed: Option<String>,
    /// The message of the first object in the chain that is not ready (else the app's own).
    pub message: Option<String>,
    /// The chain, source first.
    pub objects: Vec<ObjectStatus>,
    /// The team, for a tenant's Kustomization or HelmRelease (label `toolkit.fluxcd.io/tenant`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// A platform app's (label `kubectl-gitops.io/tier=platform`); not shown, its section says it.
    #[serde(skip)]
    pub platform: bool,
    /// The fingerprint of the app's `status.history`, for keeping it in its ledger (not shown).
    #[serde(skip)]
    pub history_fingerprint: Option<String>,
    /// `spec.dependsOn`: the apps it waits for, `namespace/name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

impl crate::output::Kind for AppStatus {
    const KIND: &'static str = "AppStatus";
}

/// The Flux runtime the header describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Runtime {
    /// The Flux namespace.
    pub namespace: Option<String>,
    /// The Flux version.
    pub version: Option<String>,
    /// Each controller Deployment and whether it is ready.
    pub controllers: Vec<crate::detect::Controller>,
    /// Our install record: the config repo and branch.
    pub config: Option<InstallRecord>,
}

/// Counts for the summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// Rows shown, of every section.
    pub objects: usize,
    /// Ready.
    pub ready: usize,
    /// Failing.
    pub failing: usize,
    /// Progressing.
    pub progressing: usize,
    /// Suspended.
    pub suspended: usize,
}

/// Everything `status` prints; `-o json|yaml` prints exactly this (docs/output.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The Flux runtime.
    pub flux: Runtime,
    /// Platform apps (`platform add`: labelled `kubectl-gitops.io/tier=platform` too).
    pub platform: Vec<AppStatus>,
    /// Apps kubectl-gitops manages (labelled `app.kubernetes.io/managed-by=kubectl-gitops`).
    pub apps: Vec<AppStatus>,
    /// What tenants sync (labelled `toolkit.fluxcd.io/tenant`): each team's Kustomizations.
    pub tenants: Vec<AppStatus>,
    /// The config repo's own Kustomizations in the Flux namespace: the sync (`flux-system`) and
    /// the layers `install` writes (`platform`, `apps`, `tenants`). Not apps: they apply them.
    pub config_repo: Vec<AppStatus>,
    /// Other Kustomizations and HelmReleases.
    pub other_flux_objects: Vec<AppStatus>,
    /// Namespaces we were not allowed to read.
    pub forbidden: Vec<String>,
    /// Counts over every section.
    pub summary: Summary,
}

impl crate::output::Kind for Report {
    const KIND: &'static str = "Status";
}

impl Report {
    /// Keeps only rows that are not ready (`--failed-only`), recounting the summary over what is shown.
    pub fn failed_only(mut self) -> Report {
        let keep = |app: &AppStatus| matches!(app.state, AppState::Failing | AppState::Progressing);
        self.platform.retain(keep);
        self.apps.retain(keep);
        self.tenants.retain(keep);
        self.config_repo.retain(keep);
        self.other_flux_objects.retain(keep);
        self.summary = summarize(self.rows());
        self
    }

    /// Every row: platform apps, apps, tenants, the config repo's, other Flux objects.
    pub fn rows(&self) -> impl Iterator<Item = &AppStatus> {
        self.platform
            .iter()
            .chain(&self.apps)
            .chain(&self.tenants)
            .chain(&self.config_repo)
            .chain(&self.other_flux_objects)
    }
}

#[cfg(test)]
impl AppStatus {
    /// A row with its name, type and state and nothing else, for tests to fill in.
    pub(crate) fn bare(namespace: &str, name: &str, kind: AppKind, state: AppState) -> AppStatus {
        AppStatus {
            namespace: namespace.into(),
            name: name.into(),
            kind,
            state,
            source_url: None,
            source_ref: None,
            source_revision: None,
            applied_revision: None,
            last_deployed: None,
            message: None,
            objects: Vec::new(),
            tenant: None,
            platform: false,
            history_fingerprint: None,
            depends_on: Vec::new(),
        }
    }
}

#[cfg(test)]
impl Report {
    /// A report of these apps and config repo rows, with the install record `config`, for tests.
    pub(crate) fn of(apps: Vec<AppStatus>, config_repo: Vec<AppStatus>, config: Option<InstallRecord>) -> Report {
        let flux = Runtime { namespace: None, version: None, controllers: Vec::new(), config };
        let summary = summarize(apps.iter().chain(&config_repo));
        let (platform, tenants, other_flux_objects, forbidden) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        Report { flux, platform, apps, tenants, config_repo, other_flux_objects, forbidden, summary }
    }
}

/// Counts rows by state.
pub fn summarize<'a>(rows: impl Iterator<Item = &'a AppStatus>) -> Summary {
    let mut summary = Summary::default();
    for row in rows {
        summary.objects += 1;
        match row.state {
            AppState::Ready => summary.ready += 1,
            AppState::Failing => summary.failing += 1,
            AppState::Progressing => summary.progressing += 1,
            AppState::Suspended => summary.suspended += 1,
        }
    }
    summary
}

/// Shortens 40–128 character hex runs to 8, as `flux get` does: `main@sha1:696f056d`.
pub fn shorten_revision(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if (40..=128).contains(&run.len()) {
            out.push_str(&run[..8]);
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests;
