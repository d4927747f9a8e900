//! `tenant list`: each tenant the cluster holds (its Namespaces, labelled
//! `toolkit.fluxcd.io/tenant` by us and by `flux create tenant` alike), with the repo its
//! Kustomizations sync, what they applied and whether they are healthy, as `status` reads them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use serde::Serialize;

use super::args::TenantListRequest;
use super::layout::TENANT_LABEL;
use crate::change::Target;
use crate::cli::OutputFormat;
use crate::cluster::Cluster;
use crate::error::Result;
use crate::output::Printer;
use crate::output::table::Table;
use crate::readers::{self, AppState, AppStatus, Scope, shorten_revision};

/// One tenant; `-o json|yaml` prints a list of these (docs/output.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantRow {
    /// The team.
    pub name: String,
    /// Its namespaces.
    pub namespaces: Vec<String>,
    /// The repo its Kustomizations sync (the first found); `None` without one.
    pub repo: Option<String>,
    /// What its Kustomizations applied (distinct).
    pub revisions: Vec<String>,
    /// The worst state of its Kustomizations: failing, progressing, suspended, ready; `None`
    /// when it syncs nothing.
    pub state: Option<String>,
    /// Why it is not ready: the first failing Kustomization's message, prefixed with its namespace.
    pub message: Option<String>,
}

impl crate::output::Kind for TenantRow {
    const KIND: &'static str = "Tenant";
}

/// `tenant list`: returns the text to print.
pub async fn list(request: &TenantListRequest, target: &Target, printer: &Printer) -> Result<String> {
    let cluster = Cluster::connect(&target.connection, printer).await?;
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let selector = match &request.labels {
        Some(labels) => format!("{TENANT_LABEL},{labels}"),
        None => TENANT_LABEL.to_string(),
    };
    let labelled = namespaces
        .list_metadata(&ListParams::default().labels(&selector))
        .await
        .map_err(|error| cluster.error(error))?;
    let mut teams: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for namespace in labelled.items {
        let (Some(name), Some(team)) =
            (namespace.metadata.name, namespace.metadata.labels.and_then(|mut labels| labels.remove(TENANT_LABEL)))
        else {
            continue;
        };
        teams.entry(team).or_default().push(name);
    }
    if let Some(wanted) = &request.namespace {
        teams.retain(|_, namespaces| namespaces.contains(wanted));
    }
    let report = readers::collect(&cluster, &Scope::All).await?;
    for forbidden in &report.forbidden {
        printer.warning(&format!("not allowed to read the Flux objects of {forbidden}"));
    }
    let rows: Vec<TenantRow> = teams
        .into_iter()
        .map(|(team, namespaces)| {
            let synced: Vec<&AppStatus> =
                report.tenants.iter().filter(|row| row.tenant.as_deref() == Some(team.as_str())).collect();
            row(team, namespaces, &synced)
        })
        .collect();
    if rows.is_empty() && matches!(request.format, OutputFormat::Table | OutputFormat::Wide) {
        printer.detail("no tenants found");
    }
    render(&rows, request.format, request.headers)
}

/// A tenant's row from its namespaces and the Kustomizations it syncs.
pub fn row(name: String, namespaces: Vec<String>, synced: &[&AppStatus]) -> TenantRow {
    let severity = |state: AppState| match state {
        AppState::Failing => 3,
        AppState::Progressing => 2,
        AppState::Suspended => 1,
        AppState::Ready => 0,
    };
    let worst = synced.iter().max_by_key(|row| severity(row.state));
    let mut revisions: Vec<String> = synced.iter().filter_map(|row| row.applied_revision.clone()).collect();
    revisions.sort();
    revisions.dedup();
    TenantRow {
        name,
        namespaces,
        repo: synced.iter().find_map(|row| row.source_url.clone()),
        revisions,
        state: worst.map(|row| row.state.word().to_string()),
        message: worst
            .filter(|row| row.state != AppState::Ready)
            .and_then(|row| row.message.as_ref().map(|message| format!("{}: {message}", row.namespace))),
    }
}

/// The rows as a table (`NAME NAMESPACES REPO READY REVISION MESSAGE`), or data. No `-o name`: a
/// tenant is no one object `kubectl get` could take.
pub fn render(rows: &[TenantRow], format: OutputFormat, headers: bool) -> Result<String> {
    match format {
        OutputFormat::Json | OutputFormat::Yaml => crate::output::render_structured(&crate::output::list(rows), format),
        _ => {
            let wide = format == OutputFormat::Wide;
            let mut table = Table::new(["NAME", "NAMESPACES", "REPO", "READY", "REVISION", "MESSAGE"]);
            for row in rows {
                let ready = match row.state.as_deref() {
                    Some("ready") => "True",
                    Some("failing") => "False",
                    Some(_) => "Unknown",
                    None => "-",
                };
                let revision = row.revisions.join(",");
                table.push([
                    row.name.clone(),
                    row.namespaces.join(","),
                    row.repo.clone().unwrap_or_else(|| "-".into()),
                    ready.to_string(),
                    match (revision.is_empty(), wide) {
                        (true, _) => "-".to_string(),
                        (false, true) => revision,
                        (false, false) => shorten_revision(&revision),
                    },
                    row.message.clone().unwrap_or_default(),
                ]);
            }
            Ok(table.render(headers))
        }
    }
}
