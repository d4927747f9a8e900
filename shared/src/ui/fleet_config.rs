//! What the Fleet page knows of the config repo, read in the background: its head (a cluster
//! that has not applied it is behind) and its fleet file (each cluster's name, environment and
//! place), as `fleet status` reads them. The repo is the one the first followed cluster's install
//! record names, reached with the server's config repo flags and the trust rules of every command
//! that reads it. The head is asked again every [`LOOK_AGAIN`], and at once when a cluster applies
//! a commit that is not the head known; the fleet file is read again when the head moves.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::Server;
use crate::change::fleet::{FILE_NAME, FleetEntry, FleetFile};
use crate::change::{ConfigRepo, RepoSettings};
use crate::error::Result;
use crate::readers::apps_query::Snapshot;

/// How often the head is asked when nothing says it moved (as often as Flux looks by default).
const LOOK_AGAIN: Duration = Duration::from_secs(60);

/// The config repo as the last look saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FleetConfig {
    /// The head of the branch Flux follows; `None` when it could not be read.
    pub(super) head: Option<String>,
    /// The fleet file's clusters, in its order; empty when there is none.
    pub(super) clusters: Vec<FleetEntry>,
}

/// Starts looking at the config repo; `None` until the first look is done.
pub(super) fn follow(server: &Arc<Server>) -> watch::Receiver<Option<FleetConfig>> {
    let (sender, receiver) = watch::channel(None);
    let server = Arc::clone(server);
    tokio::spawn(async move {
        let settings = match server.repo.settings() {
            Ok(settings) => settings,
            Err(error) => {
                server.printer.warning(&format!("the Fleet page cannot read the config repo: {error}"));
                sender.send_replace(Some(FleetConfig::default()));
                return;
            }
        };
        if !listed(&server).await {
            return;
        }
        let mut repo: Option<ConfigRepo> = None;
        let mut known = FleetConfig::default();
        let mut told = None;
        loop {
            match look(&server, &settings, &mut repo, &known).await {
                Ok(seen) => {
                    known = seen;
                    told = None;
                }
                Err(error) => {
                    // Said once until it changes; the matrix is still worth showing.
                    let error = error.to_string();
                    if told.as_ref() != Some(&error) {
                        server.printer.warning(&format!(
                            "the Fleet page cannot read the config repo, so no cluster is marked behind: {error}"
                        ));
                    }
                    told = Some(error);
                }
            }
            sender.send_if_modified(|current| {
                let news = current.as_ref() != Some(&known);
                *current = Some(known.clone());
                news || current.is_none()
            });
            if !moved(&server, known.head.as_deref()).await {
                return;
            }
        }
    });
    receiver
}

/// One look: the head, and the fleet file again when the head moved.
async fn look(
    server: &Server,
    settings: &RepoSettings,
    repo: &mut Option<ConfigRepo>,
    known: &FleetConfig,
) -> Result<FleetConfig> {
    let repo = match repo {
        Some(repo) => repo,
        None => repo.insert(find_repo(server, settings).await?),
    };
    let head = crate::git::workspace::remote_head(&repo.remote, &repo.branch).await?;
    if head == known.head && head.is_some() {
        return Ok(known.clone());
    }
    let checkout = crate::change::clone(repo).await?;
    let clusters = match crate::plan::read(&checkout.files(), FILE_NAME)? {
        Some(text) => FleetFile::parse(&text)?.ordered().into_iter().cloned().collect(),
        None => Vec::new(),
    };
    Ok(FleetConfig { head, clusters })
}

/// The config repo, through the first followed cluster whose install record names one.
async fn find_repo(server: &Server, settings: &RepoSettings) -> Result<ConfigRepo> {
    let mut last = None;
    for view in &server.views {
        let recorded = view.snapshots.borrow().runtime.as_ref().is_some_and(|runtime| runtime.config.is_some());
        if !recorded {
            continue;
        }
        match crate::change::context(&view.target, settings, true, &server.printer).await {
            Ok(context) => return context.repo.ok_or_else(|| crate::error::Error::Internal("no config repo".into())),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| {
        crate::error::Error::usage(
            "no followed cluster has an install record naming its config repo (yet)",
            "install it with `kubectl gitops install`, or wait for its watches to list",
        )
    }))
}

/// Waits until the head may have moved: [`LOOK_AGAIN`] passed, or a cluster newly applied a
/// commit other than `head` (a cluster stuck behind does not make it look on every change).
/// False when the server stops.
async fn moved(server: &Server, head: Option<&str>) -> bool {
    let applied = |followed: &mut watch::Receiver<Arc<Snapshot>>| {
        followed.borrow_and_update().config_revision().and_then(crate::names::full_commit)
    };
    let mut snapshots: Vec<_> = server.views.iter().map(|view| view.snapshots.clone()).collect();
    let mut seen: Vec<Option<String>> = snapshots.iter_mut().map(applied).collect();
    let mut stopping = server.stopping.clone();
    let again = tokio::time::sleep(LOOK_AGAIN);
    tokio::pin!(again);
    loop {
        let changed = futures::future::select_all(snapshots.iter_mut().map(|followed| Box::pin(followed.changed())));
        tokio::select! {
            () = &mut again => return true,
            _ = stopping.wait_for(|stop| *stop) => return false,
            (changed, _, _) = changed => if changed.is_err() { return false },
        }
        let mut news = false;
        for (followed, seen) in snapshots.iter_mut().zip(&mut seen) {
            let now = applied(followed);
            news |= head.is_some() && now.is_some() && now != *seen && now.as_deref() != head;
            *seen = now;
        }
        if news {
            return true;
        }
    }
}

/// Waits until every followed cluster listed once (or could not): the repo is found through
/// their install records. False when the server stops.
pub(super) async fn listed(server: &Server) -> bool {
    let waits = server.views.iter().map(|view| {
        let mut snapshots = view.snapshots.clone();
        async move {
            let _ = snapshots.wait_for(|snapshot| snapshot.listed || snapshot.error.is_some()).await;
        }
    });
    let mut stopping = server.stopping.clone();
    tokio::select! {
        _ = futures::future::join_all(waits) => true,
        _ = stopping.wait_for(|stop| *stop) => false,
    }
}
