//! The fleet's matrix from each cluster's `status`: a row per app, a cell per cluster, what each
//! cluster runs of it and how it is. Built from reports already read, so it is plain data.

use serde::Serialize;

use crate::readers::{AppKind, AppState, AppStatus, Report};

/// What `fleet status` prints; `-o json|yaml` prints exactly this (docs/output.md).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    /// The clusters, in the order of the columns.
    pub clusters: Vec<FleetCluster>,
    /// The config repo's head commit, when it could be read (what `behind` compares with).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_head: Option<String>,
    /// `--rollout`: the commit whose rollout each cluster's `rollout` says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// One row per app (apps kubectl-gitops manages), by namespace and name.
    pub apps: Vec<FleetApp>,
    /// Counts over the matrix.
    pub summary: FleetSummary,
}

impl crate::output::Kind for FleetStatus {
    const KIND: &'static str = "FleetStatus";
}

/// One cluster: a kubeconfig context.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetCluster {
    /// The kubeconfig context.
    pub context: String,
    /// The cluster's name in the config repo (the fleet file's, else its install record's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its environment, from the fleet file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// Its directory in the config repo, e.g. `clusters/dev`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// It answered within `--timeout`.
    pub reachable: bool,
    /// Why not (unreachable, refused, no Flux).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The config repo revision its sync applied (`flux-system`'s lastAppliedRevision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_revision: Option<String>,
    /// Its sync applied another commit than the config repo's head.
    pub behind: bool,
    /// Its Flux version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flux_version: Option<String>,
    /// With `--rollout`: where that commit is in this cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<super::rollout::RolloutState>,
}

/// One app across the clusters.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetApp {
    pub namespace: String,
    pub name: String,
    /// kustomize, helm or oci (as the first cluster that runs it says).
    #[serde(rename = "type")]
    pub kind: AppKind,
    /// One cell per cluster, in the order of `clusters`.
    pub cells: Vec<FleetCell>,
    /// The clusters that run it do not all run the same version.
    pub differs: bool,
}

/// One app in one cluster.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetCell {
    /// The kubeconfig context.
    pub context: String,
    /// ready, failing, progressing, suspended; absent (not in that cluster); unknown (the
    /// cluster did not answer).
    pub state: CellState,
    /// What runs: a HelmRelease's chart version, a Kustomization's applied revision, else the
    /// ref its source follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why it is not ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An app's state in one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CellState {
    Ready,
    Failing,
    Progressing,
    Suspended,
    /// The cluster answered and does not run it.
    Absent,
    /// The cluster did not answer.
    Unknown,
}

impl CellState {
    fn of(state: AppState) -> CellState {
        match state {
            AppState::Ready => CellState::Ready,
            AppState::Failing => CellState::Failing,
            AppState::Progressing => CellState::Progressing,
            AppState::Suspended => CellState::Suspended,
        }
    }

    /// The word the table prints.
    pub fn word(self) -> &'static str {
        match self {
            CellState::Ready => "ready",
            CellState::Failing => "failing",
            CellState::Progressing => "progressing",
            CellState::Suspended => "suspended",
            CellState::Absent => "-",
            CellState::Unknown => "unknown",
        }
    }
}

/// Counts for the summary line and the exit code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetSummary {
    pub clusters: usize,
    pub unreachable: usize,
    /// Clusters whose sync is not at the config repo's head.
    pub behind: usize,
    pub apps: usize,
    /// Apps whose version is not the same everywhere they run.
    pub differing: usize,
    /// Cells failing or progressing.
    pub not_ready: usize,
}

/// A column of the matrix: a kubeconfig context, and what the fleet file says of its cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub context: String,
    /// The cluster's name in the fleet file (else its install record's, once it answers).
    pub name: Option<String>,
    /// Its environment in the fleet file.
    pub environment: Option<String>,
}

impl Column {
    /// A context the command line named: nothing known of it yet.
    pub fn of_context(context: &str) -> Column {
        Column { context: context.to_string(), name: None, environment: None }
    }
}

/// What one context answered: its report, or why it did not.
pub struct Reached {
    pub column: Column,
    pub report: std::result::Result<Report, String>,
}

/// The matrix of what each context answered, its columns in their order; `config_head` is the
/// config repo's head commit when it could be read.
pub fn build(reached: &[Reached], config_head: Option<&str>) -> FleetStatus {
    let clusters: Vec<FleetCluster> = reached.iter().map(|reached| cluster(reached, config_head)).collect();
    let mut keys: Vec<(String, String)> = reached
        .iter()
        .filter_map(|reached| reached.report.as_ref().ok())
        .flat_map(|report| report.apps.iter().map(|app| (app.namespace.clone(), app.name.clone())))
        .collect();
    keys.sort();
    keys.dedup();
    let apps: Vec<FleetApp> = keys.into_iter().map(|(namespace, name)| row(reached, namespace, name)).collect();
    let summary = FleetSummary {
        clusters: clusters.len(),
        unreachable: clusters.iter().filter(|cluster| !cluster.reachable).count(),
        behind: clusters.iter().filter(|cluster| cluster.behind).count(),
        apps: apps.len(),
        differing: apps.iter().filter(|app| app.differs).count(),
        not_ready: apps
            .iter()
            .flat_map(|app| &app.cells)
            .filter(|cell| matches!(cell.state, CellState::Failing | CellState::Progressing))
            .count(),
    };
    FleetStatus { clusters, config_head: config_head.map(String::from), commit: None, apps, summary }
}

fn cluster(reached: &Reached, config_head: Option<&str>) -> FleetCluster {
    let mut cluster = FleetCluster {
        context: reached.column.context.clone(),
        name: reached.column.name.clone(),
        environment: reached.column.environment.clone(),
        path: None,
        reachable: reached.report.is_ok(),
        error: reached.report.as_ref().err().cloned(),
        config_revision: None,
        behind: false,
        flux_version: None,
        rollout: None,
    };
    if let Ok(report) = &reached.report {
        let record = report.flux.config.as_ref();
        cluster.name = cluster.name.or_else(|| record.map(|record| record.cluster_name.clone()));
        cluster.path = record.map(|record| record.path.clone());
        cluster.flux_version = report.flux.version.clone();
        let sync = report.config_repo.iter().find(|row| row.name == crate::flux::bootstrap::SYNC_NAME);
        cluster.config_revision = sync.and_then(|sync| sync.applied_revision.clone());
        let applied = cluster.config_revision.as_deref().and_then(crate::names::full_commit);
        cluster.behind = config_head.is_some_and(|head| applied.as_deref() != Some(head));
    }
    cluster
}

fn row(reached: &[Reached], namespace: String, name: String) -> FleetApp {
    let mut kind = None;
    let cells: Vec<FleetCell> = reached
        .iter()
        .map(|reached| {
            let context = reached.column.context.clone();
            let unknown = |state| FleetCell { context: context.clone(), state, version: None, message: None };
            let Ok(report) = &reached.report else { return unknown(CellState::Unknown) };
            let Some(app) = report.apps.iter().find(|app| app.namespace == namespace && app.name == name) else {
                return unknown(CellState::Absent);
            };
            kind.get_or_insert(app.kind);
            let ready = app.state == AppState::Ready;
            FleetCell {
                context: context.clone(),
                state: CellState::of(app.state),
                version: version(app),
                message: if ready { None } else { app.message.clone() },
            }
        })
        .collect();
    let mut versions: Vec<&str> = cells
        .iter()
        .filter(|cell| !matches!(cell.state, CellState::Absent | CellState::Unknown))
        .map(|cell| cell.version.as_deref().unwrap_or_default())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    let differs = versions.len() > 1;
    FleetApp { namespace, name, kind: kind.unwrap_or(AppKind::Kustomize), cells, differs }
}

/// What an app runs, as compared across clusters: a HelmRelease's chart version, a
/// Kustomization's applied revision, else its source's ref.
fn version(app: &AppStatus) -> Option<String> {
    app.applied_revision.clone().or_else(|| app.source_ref.clone())
}
