//! The listing every client reads: one set of watches for the whole server (the reflectors of
//! `status --watch`), published as a new [`Snapshot`] on each change. Fifty clients are fifty
//! receivers of one channel, not fifty watches.

use std::sync::Arc;

use tokio::sync::watch;

use super::query::{AppRow, changed_rows, sorted_rows};
use crate::cluster::Cluster;
use crate::output::Printer;
use crate::status::{AppStatus, Live, Report, Scope};

/// The listing at one moment.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// Goes up by one on every change; pages carry it so that a reload can tell it is current.
    pub(crate) revision: u64,
    /// Every watch listed once; until then the rows are incomplete.
    pub(crate) listed: bool,
    /// The rows of `status`, sorted by namespace and name once per snapshot: every page, filter
    /// and live refresh cuts from these instead of sorting the listing again. The snapshot holds
    /// them and nothing else of the listing: at 10,000 apps a second copy costs megabytes.
    pub(crate) rows: Vec<AppRow>,
    /// The rows that changed since the listed snapshot `changed_since` (a deleted row with the
    /// message `deleted`): worked out once here, not once per event stream.
    pub(crate) changed: Vec<AppStatus>,
    pub(crate) changed_since: u64,
    /// What the user may not read, as `status` reports it.
    pub(crate) forbidden: Vec<String>,
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
            rows: Vec::new(),
            changed: Vec::new(),
            changed_since: 0,
            forbidden: Vec::new(),
            scope: Scope::All,
            error: None,
        }
    }

    /// The snapshot of a complete listing, after `last`.
    pub(super) fn listed(last: &Snapshot, revision: u64, report: Report, scope: Scope) -> Snapshot {
        let forbidden = report.forbidden.clone();
        let rows = sorted_rows(report);
        let changed = if last.listed { changed_rows(&last.rows, &rows) } else { Vec::new() };
        Snapshot { revision, listed: true, rows, changed, changed_since: last.revision, forbidden, scope, error: None }
    }

    /// The same listing as `last`: nothing to send.
    fn same_as(&self, last: &Snapshot) -> bool {
        last.listed && last.rows == self.rows && last.forbidden == self.forbidden && last.scope == self.scope
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
                if scope == Scope::All && live.app_kinds_forbidden() {
                    printer.detail(&format!(
                        "not allowed to list Flux objects in every namespace; watching namespace {}",
                        cluster.namespace
                    ));
                    scope = Scope::Namespace(cluster.namespace.clone());
                    break;
                }
                let last = Arc::clone(&sender.borrow());
                let snapshot = Snapshot::listed(&last, revision + 1, live.report(), scope.clone());
                drop(last);
                if snapshot.same_as(&sender.borrow()) {
                    continue;
                }
                revision += 1;
                if sender.send(Arc::new(snapshot)).is_err() {
                    return;
                }
            }
        }
    });
    receiver
}
