//! The Apps page's DORA panel: `metrics dora` over every app the server lists, worked out in the
//! background once a minute, one namespace at a time, so that no page waits for it and the
//! server never holds more than one namespace's histories (at 10,000 apps, all of them at once
//! weigh tens of megabytes).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::cluster::Cluster;
use crate::deployments::dora::Metrics;
use crate::readers::apps_query::Snapshot;

/// How often the panel's figures are worked out again.
const REFRESH: Duration = Duration::from_secs(60);

/// The figures of one round.
#[derive(Debug)]
pub(crate) struct Figures {
    /// The window, RFC 3339.
    pub(crate) since: String,
    pub(crate) until: String,
    /// Over every app of the namespaces read.
    pub(crate) overall: Metrics,
    /// The namespaces that could not be read, and why.
    pub(crate) unread: Vec<String>,
}

/// The panel: none before the first round, else the last round's figures or why there are none.
pub(crate) type Panel = Option<Arc<Result<Figures, String>>>;

/// Starts the rounds in the background, over the namespaces of the watches' latest listing, and
/// returns the channel their results go to.
pub(crate) fn follow(cluster: Cluster, mut snapshots: watch::Receiver<Arc<Snapshot>>) -> watch::Receiver<Panel> {
    let (sender, receiver) = watch::channel(None);
    tokio::spawn(async move {
        loop {
            let Some(namespaces) = listed_namespaces(&mut snapshots).await else { return };
            let figures = match crate::metrics::overall(&cluster, &namespaces).await {
                Ok((window, overall, unread)) => Ok(Figures { since: window.0, until: window.1, overall, unread }),
                Err(error) => Err(error.to_string()),
            };
            if sender.send(Some(Arc::new(figures))).is_err() {
                return;
            }
            tokio::time::sleep(REFRESH).await;
        }
    });
    receiver
}

/// The namespaces of the first complete listing (or the latest): the channel's guard is not held
/// across an await, so it is dropped here.
async fn listed_namespaces(snapshots: &mut watch::Receiver<Arc<Snapshot>>) -> Option<Vec<String>> {
    let snapshot = snapshots.wait_for(|snapshot| snapshot.listed || snapshot.error.is_some()).await.ok()?;
    Some(snapshot.rows.iter().map(|row| row.app.namespace.clone()).collect::<BTreeSet<_>>().into_iter().collect())
}
