//! The listing every client reads: one set of watches for the whole server (the watches of
//! `status --watch`), published as a new [`Snapshot`] on each change. Fifty clients are fifty
//! receivers of one channel, not fifty watches.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::watch;

use super::query::{AppRow, changed_rows, sorted_rows};
use crate::cluster::Cluster;
use crate::deployments::ledger::AppId;
use crate::output::Printer;
use crate::status::{self, AppStatus, Live, Report, Scope};

/// How many past changes a snapshot keeps for streams that fell behind, and how many changed rows
/// in all at most.
const KEPT_CHANGES: usize = 8;
const KEPT_ROWS: usize = 1_000;

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
    /// The last changes that led here, oldest first: the revision each one made and the rows it
    /// changed (a deleted row with the message `deleted`). Worked out once here, not once per
    /// event stream; a stream that missed a snapshot or two sends what they changed too.
    pub(super) changes: Vec<(u64, Arc<Vec<AppStatus>>)>,
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
            changes: Vec::new(),
            forbidden: Vec::new(),
            scope: Scope::All,
            error: None,
        }
    }

    /// The snapshot of a complete listing after `last`; `None` when nothing changed since it.
    pub(super) fn next(last: &Snapshot, revision: u64, report: Report, scope: Scope) -> Option<Snapshot> {
        let forbidden = report.forbidden.clone();
        let rows = sorted_rows(report);
        // After a failed or unlisted snapshot there is nothing to compare with: streams resync.
        let mut changes = Vec::new();
        if last.listed {
            let changed = changed_rows(&last.rows, &rows);
            if changed.is_empty() && forbidden == last.forbidden && scope == last.scope {
                return None;
            }
            changes.clone_from(&last.changes);
            changes.push((revision, Arc::new(changed)));
            // Bounded by count and by rows, so that a change of every row is not kept eight times.
            while changes.len() > KEPT_CHANGES
                || changes.len() > 1 && changes.iter().map(|(_, rows)| rows.len()).sum::<usize>() > KEPT_ROWS
            {
                changes.remove(0);
            }
        }
        Some(Snapshot { revision, listed: true, rows, changes, forbidden, scope, error: None })
    }

    /// The rows changed since the snapshot `revision`, each once as it is now; `None` when this
    /// snapshot no longer knows (the stream fell too far behind, or the watches restarted).
    pub(crate) fn changed_since(&self, revision: u64) -> Option<Vec<AppStatus>> {
        if revision == self.revision {
            return Some(Vec::new());
        }
        let start = self.changes.iter().position(|(made, _)| *made == revision + 1)?;
        let mut changed = BTreeMap::new();
        for (_, rows) in &self.changes[start..] {
            for row in rows.iter() {
                changed.insert((row.namespace.clone(), row.name.clone(), row.kind), row.clone());
            }
        }
        Some(changed.into_values().collect())
    }
}

/// Starts the watches in the background and returns the channel their snapshots go to.
///
/// Every namespace is watched first. A user whose RBAC forbids listing cluster-wide, but who may
/// list in the namespace of their kubeconfig context, gets that namespace instead of an empty
/// page.
pub(crate) fn follow(cluster: Cluster, printer: Printer) -> watch::Receiver<Arc<Snapshot>> {
    let (sender, receiver) = watch::channel(Arc::new(Snapshot::starting()));
    keep_histories(cluster.clone(), printer, receiver.clone());
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
                let Some(snapshot) = Snapshot::next(&last, revision + 1, live.report(), scope.clone()) else {
                    continue;
                };
                drop(last);
                revision += 1;
                if sender.send(Arc::new(snapshot)).is_err() {
                    return;
                }
            }
        }
    });
    receiver
}

/// Keeps the deployment histories the watches see in the apps' ledgers (docs/history.md), in
/// the background: every row of the first complete listing, then the rows each change touched.
/// When the ledgers cannot be listed (RBAC), it stops; `-v` says why.
fn keep_histories(cluster: Cluster, printer: Printer, mut snapshots: watch::Receiver<Arc<Snapshot>>) {
    tokio::spawn(async move {
        let mut kept: Option<HashMap<AppId, String>> = None;
        let mut merged_up_to: Option<u64> = None;
        while snapshots.changed().await.is_ok() {
            let snapshot = Arc::clone(&snapshots.borrow_and_update());
            if !snapshot.listed {
                merged_up_to = None;
                continue;
            }
            let changed = merged_up_to.and_then(|revision| snapshot.changed_since(revision));
            let seen = match &changed {
                Some(rows) => status::histories(rows.iter()),
                None => status::histories(snapshot.rows.iter().map(|row| &row.app)),
            };
            merged_up_to = Some(snapshot.revision);
            let known = match &mut kept {
                Some(known) => known,
                None => {
                    let namespace = match &snapshot.scope {
                        Scope::All => None,
                        Scope::Namespace(namespace) => Some(namespace.as_str()),
                    };
                    let Some(known) = status::kept_fingerprints(&cluster, namespace, &printer).await else { return };
                    kept.insert(known)
                }
            };
            let stale = seen.iter().filter(|(app, fingerprint)| known.get(app) != Some(fingerprint)).count();
            for (app, fingerprint) in status::remember_changed(&cluster, seen, known, &printer).await {
                known.insert(app, fingerprint);
            }
            if stale > status::LEDGERS_PER_LOOK {
                // One look writes a bounded number; the next snapshot looks at every row again.
                merged_up_to = None;
            }
        }
    });
}
