//! The listing every client reads: one set of watches for the whole server (the watches of
//! `status --watch`), published as a new [`Snapshot`] on each change. Fifty clients are fifty
//! receivers of one channel, not fifty watches.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::watch;

use crate::cluster::Cluster;
use crate::output::Printer;
use crate::readers::apps_query::Snapshot;
use crate::readers::ledger::AppId;
use crate::readers::{self, Live, Scope};

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
            let mut live = match Live::start(cluster.clone(), &scope, None, printer).await {
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
                    // Until the first listing is complete, pages say how far it is.
                    let progress = live.progress();
                    sender.send_if_modified(|snapshot| {
                        let first = !snapshot.listed && snapshot.error.is_none();
                        let news = first && snapshot.progress.as_deref() != Some(progress.as_str());
                        if news {
                            *snapshot = Arc::new(Snapshot { progress: Some(progress), ..Snapshot::starting() });
                        }
                        news
                    });
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
                Some(rows) => readers::histories(rows.iter()),
                None => readers::histories(snapshot.rows.iter().map(|row| &row.app)),
            };
            merged_up_to = Some(snapshot.revision);
            let known = match &mut kept {
                Some(known) => known,
                None => {
                    let namespace = match &snapshot.scope {
                        Scope::All => None,
                        Scope::Namespace(namespace) => Some(namespace.as_str()),
                    };
                    let Some(known) = readers::kept_fingerprints(&cluster, namespace, &printer).await else { return };
                    kept.insert(known)
                }
            };
            let stale = seen.iter().filter(|(app, fingerprint)| known.get(app) != Some(fingerprint)).count();
            for (app, fingerprint) in readers::remember_changed(&cluster, seen, known, &printer).await {
                known.insert(app, fingerprint);
            }
            if stale > readers::LEDGERS_PER_LOOK {
                // One look writes a bounded number; the next snapshot looks at every row again.
                merged_up_to = None;
            }
        }
    });
}
