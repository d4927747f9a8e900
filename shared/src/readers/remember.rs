//! Keeping what Flux's `status.history` shows in the apps' ledgers (docs/history.md), on every
//! look: one app's (`app status`, `app history`) or, for `status` and the UI, every app whose
//! history changed since its ledger last merged it.

use std::collections::HashMap;

use futures::StreamExt;
use kube::Api;
use kube::api::DynamicObject;

use super::app_report::Gathered;
use super::collect::{key, resource};
use super::ledger::{self, AppId, Owner};
use super::{AppKind as RowKind, AppStatus, Report, Scope};
use crate::cluster::Cluster;
use crate::deployments::{self, AppKind, Deployment};
use crate::flux::api::{HELM_RELEASE, KUSTOMIZATION};
use crate::flux::status::FluxObject;
use crate::git::log::CommitInfo;
use crate::output::Printer;

/// At most this many ledgers are written by one look at many apps: the first `status` on a
/// cluster with thousands of apps stays quick, and the next looks catch up.
pub(crate) const LEDGERS_PER_LOOK: usize = 50;
/// Ledgers written at once.
const CONCURRENT_WRITES: usize = 8;

/// Whether a look at one app keeps what it sees in the app's ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ledgers {
    /// Merge Flux's history into the ledger, written (the CLI, the UI).
    Keep,
    /// Read the ledger and merge in memory; write nothing (an assistant's read-only tools).
    ReadOnly,
}

/// Keeps what Flux's `status.history` shows now, and the commits looked up, in the app's ledger
/// (docs/history.md), unless `ledgers` is read-only; returns every deployment kept, oldest
/// first. A ledger that cannot be read or written (RBAC, a conflict that kept coming back) does
/// not fail the look: what Flux shows is returned alone, with why it was not kept, for the
/// caller to say as loud as it matters to it.
pub(super) async fn remember(
    cluster: &Cluster,
    gathered: &Gathered,
    commits: &[CommitInfo],
    ledgers: Ledgers,
) -> (Vec<Deployment>, Option<String>) {
    let app = &gathered.app;
    let Some(kind) = AppKind::of(key(app).0.as_str()) else { return (Vec::new(), None) };
    let flux = deployments::from_flux(kind, app.data.pointer("/status/history"));
    let id = AppId { kind, namespace: app.namespace().to_string(), name: app.name().to_string() };
    let kept = match ledgers {
        Ledgers::Keep => ledger::record(cluster, &id, &owner_of(app), &flux, commits).await,
        Ledgers::ReadOnly => ledger::read(cluster, &id).await.map(|mut kept| {
            deployments::merge(&mut kept, &flux);
            deployments::attach_commits(&mut kept, commits);
            kept
        }),
    };
    match kept {
        Ok(kept) => (kept, None),
        Err(error) => {
            let why = format!(
                "cannot keep the deployment history in ConfigMap {}/{}: {error}",
                id.namespace,
                id.ledger_name()
            );
            let mut kept = Vec::new();
            deployments::merge(&mut kept, &flux);
            deployments::attach_commits(&mut kept, commits);
            (kept, Some(why))
        }
    }
}

/// Keeps the histories a `status` listing sees in the apps' ledgers, out of the listing's way:
/// the ledgers' fingerprints are listed (one metadata LIST) while the Flux objects are, and the
/// ledgers of apps whose history changed are written (a GET and a write each, at most
/// [`LEDGERS_PER_LOOK`]) while the output renders.
pub struct HistoryKeeper {
    cluster: Cluster,
    printer: Printer,
    kept: tokio::task::JoinHandle<Option<HashMap<AppId, String>>>,
}

impl HistoryKeeper {
    /// Starts listing the fingerprints of the ledgers in `scope`.
    pub fn start(cluster: &Cluster, scope: &Scope, printer: Printer) -> HistoryKeeper {
        let namespace = match scope {
            Scope::All => None,
            Scope::Namespace(namespace) => Some(namespace.clone()),
        };
        let listing = cluster.clone();
        let kept = tokio::spawn(async move { kept_fingerprints(&listing, namespace.as_deref(), &printer).await });
        HistoryKeeper { cluster: cluster.clone(), printer, kept }
    }

    /// Starts writing the ledgers whose app's history in `report` is new to them; await it
    /// before exiting.
    pub fn keep(self, report: &Report) -> tokio::task::JoinHandle<()> {
        let seen = histories(report.rows());
        let HistoryKeeper { cluster, printer, kept } = self;
        tokio::spawn(async move {
            if seen.is_empty() {
                kept.abort();
                return;
            }
            if let Ok(Some(kept)) = kept.await {
                remember_changed(&cluster, seen, &kept, &printer).await;
            }
        })
    }
}

/// The apps of `rows` with a history, and its fingerprint.
pub(crate) fn histories<'a>(rows: impl Iterator<Item = &'a AppStatus>) -> Vec<(AppId, String)> {
    rows.filter_map(|row| {
        let kind = if row.kind == RowKind::Helm { AppKind::HelmRelease } else { AppKind::Kustomization };
        let id = AppId { kind, namespace: row.namespace.clone(), name: row.name.clone() };
        Some((id, row.history_fingerprint.clone()?))
    })
    .collect()
}

/// The fingerprints the ledgers in `namespace` (all when `None`) merged last; `None` when they
/// cannot be listed (RBAC): then nothing is kept, and only `-v` says why.
pub(crate) async fn kept_fingerprints(
    cluster: &Cluster,
    namespace: Option<&str>,
    printer: &Printer,
) -> Option<HashMap<AppId, String>> {
    match ledger::fingerprints(cluster, namespace).await {
        Ok(kept) => Some(kept),
        Err(error) => {
            printer.detail(&format!("deployment histories not kept: cannot list their ConfigMaps: {error}"));
            None
        }
    }
}

/// Merges the history of each app in `seen` whose fingerprint is not the one its ledger has
/// (`kept`), at most [`LEDGERS_PER_LOOK`] of them; returns the apps merged, with their new
/// fingerprints. Failures are details (`-v`): keeping histories never fails a look.
pub(crate) async fn remember_changed(
    cluster: &Cluster,
    seen: Vec<(AppId, String)>,
    kept: &HashMap<AppId, String>,
    printer: &Printer,
) -> Vec<(AppId, String)> {
    let stale: Vec<(AppId, String)> = seen
        .into_iter()
        .filter(|(app, fingerprint)| kept.get(app) != Some(fingerprint))
        .take(LEDGERS_PER_LOOK)
        .collect();
    if stale.is_empty() {
        return Vec::new();
    }
    let served = match super::served_apis(cluster).await {
        Ok(served) => served,
        Err(error) => {
            printer.detail(&format!("deployment histories not kept: {error}"));
            return Vec::new();
        }
    };
    futures::stream::iter(stale)
        .map(|(app, fingerprint)| {
            let resource =
                resource(&served, if app.kind == AppKind::HelmRelease { &HELM_RELEASE } else { &KUSTOMIZATION });
            async move {
                let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), &app.namespace, &resource?);
                let object = api.get_opt(&app.name).await.ok().flatten()?;
                let flux = deployments::from_flux(app.kind, object.data.pointer("/status/history"));
                match ledger::record(cluster, &app, &owner_of(&object), &flux, &[]).await {
                    Ok(_) => Some((app, fingerprint)),
                    Err(error) => {
                        printer.detail(&format!("cannot keep the history of {}/{}: {error}", app.namespace, app.name));
                        None
                    }
                }
            }
        })
        .buffer_unordered(CONCURRENT_WRITES)
        .filter_map(std::future::ready)
        .collect()
        .await
}

/// The app object as the owner of its ledger.
fn owner_of(app: &DynamicObject) -> Owner {
    Owner {
        api_version: app.types.as_ref().map(|types| types.api_version.clone()).unwrap_or_default(),
        uid: app.metadata.uid.clone().unwrap_or_default(),
    }
}
