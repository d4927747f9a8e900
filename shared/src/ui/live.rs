//! The listing every client reads: one set of watches for the whole server (the reflectors of
//! `status --watch`), published as a new [`Snapshot`] on each change. Fifty clients are fifty
//! receivers of one channel, not fifty watches.

use std::sync::Arc;

use tokio::sync::watch;

use super::query::{AppRow, sorted_rows};
use crate::cluster::Cluster;
use crate::output::Printer;
use crate::status::{Live, Report, Runtime, Scope, Summary};

/// The listing at one moment.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// Goes up by one on every change; pages carry it so that a reload can tell it is current.
    pub(crate) revision: u64,
    /// Every watch listed once; until then the rows are incomplete.
    pub(crate) listed: bool,
    /// What the watches show, as `status` reports it.
    pub(crate) report: Report,
    /// Its rows sorted by namespace and name, once per snapshot: every page, filter and live
    /// refresh cuts from these instead of sorting the listing again.
    pub(crate) rows: Vec<AppRow>,
    /// Where the watches look: every namespace, or the user's own when that is all RBAC allows.
    pub(crate) scope: Scope,
    /// Why the watches could not start, when they could not.
    pub(crate) error: Option<String>,
}

impl Snapshot {
    pub(super) fn starting() -> Snapshot {
        Snapshot {
            revision: 0,
            listed: false,
            report: empty_report(),
            rows: Vec::new(),
            scope: Scope::All,
            error: None,
        }
    }

    /// The snapshot of a complete listing.
    pub(super) fn listed(revision: u64, report: Report, scope: Scope) -> Snapshot {
        Snapshot { revision, listed: true, rows: sorted_rows(&report), report, scope, error: None }
    }
}

/// Starts the watches in the background and returns the channel their snapshots go to.
///
/// Every namespace is watched first. A user whose RBAC forbids listing cluster-wide, but who may
/// list in the namespace of their kubeconfig context, gets that namespace instead of an empty
/// page.
pub(crate) fn follow(cluster: Cluster, printer: Printer) -> watch::Receiver<Arc<Snapshot>> {
    let (sender, receiver) = watch::channel(Arc::new(Snapshot::starting()));
    tokio::spawn(async move {
        let mut scope = Scope::All;
        let mut revision = 0;
        loop {
            let mut live = match Live::start(cluster.clone(), &scope, printer).await {
                Ok(live) => live,
                Err(error) => {
                    revision += 1;
                    let failed = Snapshot { revision, error: Some(error.to_string()), ..Snapshot::starting() };
                    let _ = sender.send(Arc::new(failed));
                    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                    continue;
                }
            };
            loop {
                live.update().await;
                if !live.listed() {
                    continue;
                }
                let report = live.report();
                if scope == Scope::All && live.app_kinds_forbidden() {
                    printer.detail(&format!(
                        "not allowed to list Flux objects in every namespace; watching namespace {}",
                        cluster.namespace
                    ));
                    scope = Scope::Namespace(cluster.namespace.clone());
                    break;
                }
                let unchanged = {
                    let last = sender.borrow();
                    last.listed && last.report == report
                };
                if unchanged {
                    continue;
                }
                revision += 1;
                let snapshot = Snapshot::listed(revision, report, scope.clone());
                if sender.send(Arc::new(snapshot)).is_err() {
                    return;
                }
            }
        }
    });
    receiver
}

/// No rows and no runtime yet.
fn empty_report() -> Report {
    Report {
        flux: Runtime { namespace: None, version: None, controllers: Vec::new(), config: None },
        apps: Vec::new(),
        other_flux_objects: Vec::new(),
        forbidden: Vec::new(),
        summary: Summary::default(),
    }
}
