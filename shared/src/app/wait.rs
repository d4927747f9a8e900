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
    /// One Kustomization or HelmRelease: Ready at its spec (add), or gone (remove).
    Release(String, String),
}

/// What a change made, for the wait after its push: an app's release in the Flux namespace, or
/// a tenant's Kustomizations in its namespaces.
pub(crate) struct Awaited<'a> {
    /// `app` or `tenant`: what the title names.
    pub noun: &'a str,
    /// Its name.
    pub name: &'a str,
    /// The releases (namespace, name) to judge once the sync has applied the commit; none:
    /// the sync alone.
    pub objects: &'a [(String, String)],
    /// Ready (add), or gone (remove).
    pub wants_ready: bool,
}

/// One Flux kind, at the version the cluster serves.
struct Kind {
    kind: &'static FluxKind,
    resource: ApiResource,
}

impl Kind {
    fn new(context: &Context, kind: &'static FluxKind) -> Option<Kind> {
        let version = context.versions.lookup(kind)?;
        Some(Kind { kind, resource: kind.at(version) })
    }

    fn api(&self, cluster: &Cluster, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(cluster.client.clone(), namespace, &self.resource)
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
    /// The Flux namespace, where the sync is.
    namespace: &'a str,
    awaited: &'a Awaited<'a>,
    commit: &'a str,
    syncs: Kind,
    /// The kinds a release may be: Kustomization and, when served, HelmRelease.
    releases: Vec<Kind>,
    triggers: Triggers,
}

fn name(kind: &FluxKind, namespace: &str, name: &str) -> String {
    format!("{} {namespace}/{name}", kind.kind)
}

impl AfterPush<'_> {
    async fn judge_sync(&self) -> Result<Verdict> {
        let api = self.syncs.api(self.cluster, self.namespace);
        let sync = api.get_opt(SYNC_NAME).await.map_err(|error| self.cluster.error(error))?;
        let sync_name = name(&api::KUSTOMIZATION, self.namespace, SYNC_NAME);
        let Some(sync) = sync else {
            return Ok(Verdict::Waiting { why: format!("{sync_name} does not exist"), healthy: false });
        };
        let applied = sync.last_applied_revision().unwrap_or_default();
        if applied.ends_with(self.commit) {
            return Ok(Verdict::Ready);
        }
        let attempted = sync.last_attempted_revision().unwrap_or_default();
        Ok(match sync.ready_condition() {
            Some(ready)
                if ready.is_false()
                    && attempted.ends_with(self.commit)
                    && !WAITING_REASONS.contains(&ready.reason()) =>
            {
                Verdict::Failing {
                    attempt: Some(attempted.to_string()),
                    why: format!("{sync_name}: {}: {}", ready.reason(), ready.message()),
                }
            }
            _ => {
                let applied = if applied.is_empty() { "nothing yet" } else { applied };
                Verdict::Waiting {
                    why: format!("{sync_name} applied {applied}, waiting for {}", short(self.commit)),
                    healthy: false,
                }
            }
        })
    }

    async fn judge_release(&self, namespace: &str, release_name: &str) -> Result<Verdict> {
        let mut found = None;
        for release in &self.releases {
            let api = release.api(self.cluster, namespace);
            if let Some(object) = api.get_opt(release_name).await.map_err(|error| self.cluster.error(error))? {
                found = Some((release.kind, object));
            }
        }
        let awaited = self.awaited;
        Ok(match (found, awaited.wants_ready) {
            (None, false) => Verdict::Ready,
            (Some((kind, _)), false) => Verdict::Waiting {
                why: format!("{} is still there", name(kind, namespace, release_name)),
                healthy: false,
            },
            (None, true) => Verdict::Waiting {
                why: format!("{} {} is not created yet in {namespace}", awaited.noun, awaited.name),
                healthy: false,
            },
            (Some((kind, object)), true) => {
                let current = object.is_current();
                let name = name(kind, namespace, release_name);
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
        let applied = matches!(sync, Verdict::Ready);
        let mut parts = vec![(Part::Sync, sync)];
        for (namespace, release) in self.awaited.objects {
            // A release is judged once the sync has applied the commit: before, what the
            // cluster holds is the release as it was.
            let verdict = if applied {
                self.judge_release(namespace, release).await?
            } else {
                Verdict::Waiting { why: "the sync has not applied the commit yet".into(), healthy: false }
            };
            parts.push((Part::Release(namespace.clone(), release.clone()), verdict));
        }
        Ok(parts)
    }

    async fn changed(&mut self) {
        self.triggers.changed().await;
    }

    fn hint(&self) -> Option<String> {
        let shows = match self.awaited.noun {
            "app" => format!("`kubectl gitops app status {}`", self.awaited.name),
            noun => format!("`kubectl gitops {noun} list`"),
        };
        Some(format!("{shows} shows why; raise --timeout to wait longer"))
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

/// Waits for the sync to apply `commit`, then for what the change made to be Ready or gone.
pub(crate) async fn after_push(
    cluster: &Cluster,
    context: &Context,
    awaited: &Awaited<'_>,
    commit: &str,
    timeout: Duration,
) -> Result<()> {
    let (Some(sources), Some(syncs)) =
        (Kind::new(context, &api::GIT_REPOSITORY), Kind::new(context, &api::KUSTOMIZATION))
    else {
        return Err(Error::Internal("the cluster serves no GitRepository or Kustomization".into()));
    };
    let namespace = context.namespace.as_str();
    // Ask for a fetch now instead of at the next interval.
    for kind in [&sources, &syncs] {
        if let Err(error) = crate::flux::reconcile::request(&kind.api(cluster, namespace), SYNC_NAME).await {
            context
                .printer
                .warning(&format!("could not ask Flux to reconcile now: {}", crate::diagnostic::describe(&error)));
        }
    }
    let releases: Vec<Kind> =
        [&api::KUSTOMIZATION, &api::HELM_RELEASE].into_iter().filter_map(|kind| Kind::new(context, kind)).collect();
    let mut triggers = Triggers::new(cluster, context.printer);
    let mut followed = vec![syncs.followed(namespace, SYNC_NAME)];
    for (release_namespace, release) in awaited.objects {
        followed.extend(releases.iter().map(|kind| kind.followed(release_namespace, release)));
    }
    triggers.follow(followed);
    let (noun, what) = (awaited.noun, awaited.name);
    let title = match awaited.wants_ready {
        true => format!(
            "waiting for Kustomization {namespace}/{SYNC_NAME} to apply {} and {noun} {what} to be Ready",
            short(commit)
        ),
        false => format!(
            "waiting for Kustomization {namespace}/{SYNC_NAME} to apply {} and Flux to prune {noun} {what}",
            short(commit)
        ),
    };
    let mut waited = AfterPush { cluster, namespace, awaited, commit, syncs, releases, triggers };
    // It ends Ok only when every part is Ready; a failure or the timeout is an error.
    let limits = Limits { timeout, grace_period: crate::timeouts::GRACE_PERIOD };
    wait_until(&mut waited, &title, limits, &context.printer).await.map(drop)
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}
