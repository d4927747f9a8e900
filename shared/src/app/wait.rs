//! `--wait` after a push: ask Flux to fetch now, then wait, on the watch engine `status --wait`
//! uses (`status::watch`: watches, no polling), until the cluster's sync has applied the pushed
//! commit and the app is Ready (add) or gone (remove). A failure that lasts the grace period ends
//! the wait as it ends `status --wait`.

use std::time::Duration;

use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;

use super::Context;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::api::{self, FluxKind};
use crate::flux::bootstrap::SYNC_NAME;
use crate::flux::status::FluxObject;
use crate::status::watch::{Followed, Limits, Selector, Triggers, Verdict, WAITING_REASONS, Waited, wait_until};

/// What the wait after a push follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    /// The config repo's sync, Kustomization `flux-system`: it must apply the pushed commit.
    Sync,
    /// The app's Kustomization or HelmRelease: Ready at its spec (add), or gone (remove).
    App,
}

/// One Flux kind in the Flux namespace, at the version the cluster serves.
struct Kind {
    kind: &'static FluxKind,
    resource: ApiResource,
    api: Api<DynamicObject>,
}

impl Kind {
    fn new(cluster: &Cluster, context: &Context, kind: &'static FluxKind) -> Option<Kind> {
        let version = context.versions.lookup(kind)?;
        let resource = kind.at(version);
        let api = Api::namespaced_with(cluster.client.clone(), &context.namespace, &resource);
        Some(Kind { kind, resource, api })
    }

    fn followed(&self, namespace: &str, name: &str) -> Followed {
        Followed {
            resource: self.resource.clone(),
            namespace: Some(namespace.to_string()),
            selector: Selector::Name(name.to_string()),
        }
    }
}

struct AfterPush<'a> {
    cluster: &'a Cluster,
    namespace: &'a str,
    app: &'a str,
    commit: &'a str,
    wants_ready: bool,
    syncs: Kind,
    /// The kinds the app may be: Kustomization and, when served, HelmRelease.
    releases: Vec<Kind>,
    triggers: Triggers,
}

impl AfterPush<'_> {
    fn name(&self, kind: &FluxKind, name: &str) -> String {
        format!("{} {}/{name}", kind.kind, self.namespace)
    }

    async fn judge_sync(&self) -> Result<Verdict> {
        let sync = self.syncs.api.get_opt(SYNC_NAME).await.map_err(|error| self.cluster.error(error))?;
        let Some(sync) = sync else {
            let why = format!("{} does not exist", self.name(&api::KUSTOMIZATION, SYNC_NAME));
            return Ok(Verdict::Waiting { why, healthy: false });
        };
        let applied = sync.last_applied_revision().unwrap_or_default();
        if applied.ends_with(self.commit) {
            return Ok(Verdict::Ready);
        }
        let attempted = sync.last_attempted_revision().unwrap_or_default();
        let name = self.name(&api::KUSTOMIZATION, SYNC_NAME);
        Ok(match sync.ready_condition() {
            Some(ready)
                if ready.is_false()
                    && attempted.ends_with(self.commit)
                    && !WAITING_REASONS.contains(&ready.reason()) =>
            {
                Verdict::Failing {
                    attempt: Some(attempted.to_string()),
                    why: format!("{name}: {}: {}", ready.reason(), ready.message()),
                }
            }
            _ => {
                let applied = if applied.is_empty() { "nothing yet" } else { applied };
                Verdict::Waiting {
                    why: format!("{name} applied {applied}, waiting for {}", short(self.commit)),
                    healthy: false,
                }
            }
        })
    }

    async fn judge_app(&self) -> Result<Verdict> {
        let mut found = None;
        for release in &self.releases {
            if let Some(object) = release.api.get_opt(self.app).await.map_err(|error| self.cluster.error(error))? {
                found = Some((release.kind, object));
            }
        }
        Ok(match (found, self.wants_ready) {
            (None, false) => Verdict::Ready,
            (Some((kind, _)), false) => {
                Verdict::Waiting { why: format!("{} is still there", self.name(kind, self.app)), healthy: false }
            }
            (None, true) => Verdict::Waiting { why: format!("app {} is not created yet", self.app), healthy: false },
            (Some((kind, object)), true) => {
                let current = object.is_current();
                let name = self.name(kind, self.app);
                match object.ready_condition() {
                    Some(ready) if current && ready.is_true() => Verdict::Ready,
                    Some(ready) if current && ready.is_false() && !WAITING_REASONS.contains(&ready.reason()) => {
                        Verdict::Failing {
                            attempt: object.last_attempted_revision().map(String::from),
                            why: format!("{name}: {}: {}", ready.reason(), ready.message()),
                        }
                    }
                    Some(ready) => Verdict::Waiting {
                        why: format!("{name}: {}: {}", ready.reason(), ready.message()),
                        healthy: false,
                    },
                    None => Verdict::Waiting { why: format!("{name} is not reconciled yet"), healthy: false },
                }
            }
        })
    }
}

impl Waited for AfterPush<'_> {
    type Part = Part;

    async fn look(&mut self) -> Result<Vec<(Part, Verdict)>> {
        let sync = self.judge_sync().await?;
        // The app is judged once the sync has applied the commit: before, what the cluster holds
        // is the app as it was.
        let app = match sync {
            Verdict::Ready => self.judge_app().await?,
            _ => Verdict::Waiting { why: "the sync has not applied the commit yet".into(), healthy: false },
        };
        Ok(vec![(Part::Sync, sync), (Part::App, app)])
    }

    async fn changed(&mut self) {
        self.triggers.changed().await;
    }

    fn hint(&self) -> Option<String> {
        Some("`kubectl gitops app status NAME` shows why; raise --timeout to wait longer".into())
    }

    fn timed_out(&self, waiting: &[(&Part, &str)], timeout: Duration) -> Error {
        let why = waiting.iter().map(|(_, why)| *why).find(|why| !why.starts_with("the sync has not"));
        Error::Negative {
            message: format!(
                "not there yet after {}: {}",
                crate::duration::format(timeout),
                why.or(waiting.first().map(|(_, why)| *why)).unwrap_or("not reconciled yet")
            ),
            hint: self.hint(),
        }
    }
}

/// Waits for the sync to apply `commit`, then for the app to be Ready (`wants_ready`) or gone.
pub async fn after_push(
    cluster: &Cluster,
    context: &Context,
    app: &str,
    commit: &str,
    timeout: Duration,
    wants_ready: bool,
) -> Result<()> {
    let (Some(sources), Some(syncs)) =
        (Kind::new(cluster, context, &api::GIT_REPOSITORY), Kind::new(cluster, context, &api::KUSTOMIZATION))
    else {
        return Err(Error::Internal("the cluster serves no GitRepository or Kustomization".into()));
    };
    // Ask for a fetch now instead of at the next interval.
    for api in [&sources.api, &syncs.api] {
        if let Err(error) = crate::flux::reconcile::request(api, SYNC_NAME).await {
            context
                .printer
                .warning(&format!("could not ask Flux to reconcile now: {}", crate::diagnostic::describe(&error)));
        }
    }
    let namespace = context.namespace.as_str();
    let releases: Vec<Kind> = [&api::KUSTOMIZATION, &api::HELM_RELEASE]
        .into_iter()
        .filter_map(|kind| Kind::new(cluster, context, kind))
        .collect();
    let mut triggers = Triggers::new(cluster, context.printer);
    let mut followed = vec![syncs.followed(namespace, SYNC_NAME)];
    followed.extend(releases.iter().map(|release| release.followed(namespace, app)));
    triggers.follow(followed);
    let title = if wants_ready {
        format!(
            "waiting for Kustomization {namespace}/{SYNC_NAME} to apply {} and app {app} to be Ready",
            short(commit)
        )
    } else {
        format!(
            "waiting for Kustomization {namespace}/{SYNC_NAME} to apply {} and Flux to prune app {app}",
            short(commit)
        )
    };
    let mut waited = AfterPush { cluster, namespace, app, commit, wants_ready, syncs, releases, triggers };
    // It ends Ok only when every part is Ready; a failure or the timeout is an error.
    let limits = Limits { timeout, grace_period: crate::timeouts::GRACE_PERIOD };
    wait_until(&mut waited, &title, limits, &context.printer).await.map(drop)
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}
