//! `--wait` after a push: ask Flux to fetch now, then wait, on the watch engine `status --wait`
//! uses ([`crate::wait`]: watches, no polling), until the cluster's sync has applied the pushed
//! commit and the app is Ready (add) or gone (remove). A failure that lasts the grace period ends
//! the wait as it ends `status --wait`.

use std::time::Duration;

use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;

use super::context::Context;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::api::{self, FluxKind};
use crate::flux::bootstrap::{Layer, PLATFORM_SOURCE, SYNC_NAME};
use crate::flux::status::{FluxObject, WAITING_REASONS};
use crate::git::workspace::LaterCommits;
use crate::wait::{Followed, Limits, Selector, Triggers, Verdict, Waited, wait_until};

/// What the wait after a push follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    /// The config repo's sync, Kustomization `flux-system`, or the layer that applies the
    /// change's list (`apps`, `platform`, `tenants`): it must apply the pushed commit.
    Sync(&'static str),
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
    /// The layer whose list the change is in; a cluster directory laid out before the layers
    /// has none, and its sync applies the lists itself.
    pub layer: Option<Layer>,
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
    /// Whether the layer was asked to reconcile once the layer it depends on applied the commit.
    nudged: bool,
    /// The commit is the layer's own repository's (the platform repo): the layer applies it
    /// without the sync.
    own_repo: bool,
    /// Asked which later commits of the repo hold ours: one applied will do (another push
    /// landed after ours, and Flux fetched both at once).
    later: Option<LaterCommits>,
    printer: crate::output::Printer,
}

fn name(kind: &FluxKind, namespace: &str, name: &str) -> String {
    format!("{} {namespace}/{name}", kind.kind)
}

impl AfterPush<'_> {
    /// Whether Kustomization `sync_name` applied the commit. A layer that does not exist is a
    /// directory without layers: nothing to wait for.
    async fn judge_sync(&mut self, sync_name: &str) -> Result<Verdict> {
        let api = self.syncs.api(self.cluster, self.namespace);
        let sync = api.get_opt(sync_name).await.map_err(|error| self.cluster.error(error))?;
        let sync_name = name(&api::KUSTOMIZATION, self.namespace, sync_name);
        let Some(sync) = sync else {
            if self.awaited.layer.is_some_and(|layer| sync_name.ends_with(&format!("/{}", layer.name))) {
                return Ok(Verdict::Ready);
            }
            return Ok(Verdict::Waiting { why: format!("{sync_name} does not exist"), healthy: false });
        };
        let applied = sync.last_applied_revision().unwrap_or_default();
        if applied.ends_with(self.commit) {
            return Ok(Verdict::Ready);
        }
        if let (Some((_, commit)), Some(later)) = (applied.split_once("@sha1:"), &mut self.later)
            && sync.ready_condition().is_some_and(|ready| ready.is_true())
            && later.contain_ours(commit).await
        {
            return Ok(Verdict::Ready);
        }
        let attempted = sync.last_attempted_revision().unwrap_or_default();
        // The platform layer applies the commit, then waits for all of its services: one of them
        // failing its health check (not necessarily the change's) does not undo the apply. The
        // change's own release is judged next.
        if attempted.ends_with(self.commit)
            && sync.ready_condition().is_some_and(|ready| ready.reason() == HEALTH_CHECK_FAILED)
        {
            return Ok(Verdict::Ready);
        }
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

    /// Whether the layer `layer` depends on has applied the commit.
    async fn dependency_applied(&mut self, layer: Layer) -> Result<bool> {
        match layer.depends_on {
            Some(first) => Ok(matches!(self.judge_sync(first).await?, Verdict::Ready)),
            None => Ok(false),
        }
    }

    async fn judge_release(&mut self, namespace: &str, release_name: &str) -> Result<Verdict> {
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
        let mut parts = Vec::new();
        let mut applied = true;
        if !self.own_repo {
            let sync = self.judge_sync(SYNC_NAME).await?;
            applied = matches!(sync, Verdict::Ready);
            parts.push((Part::Sync(SYNC_NAME), sync));
        }
        if let Some(layer) = self.awaited.layer {
            // The layer applies the list once the sync applied its Kustomization.
            let verdict = match applied {
                true => self.judge_sync(layer.name).await?,
                false => Verdict::Waiting { why: "the sync has not applied the commit yet".into(), healthy: false },
            };
            applied = matches!(verdict, Verdict::Ready);
            // Flux retries a layer whose dependency was not at the commit yet only every 30 s
            // (--requeue-dependency): once the layer the others wait for applied it, ask each
            // of them now, this change's and its siblings (so that `status` right after shows
            // them at the commit too).
            let first = layer.depends_on.unwrap_or(layer.name);
            let first_applied = match layer.depends_on {
                Some(_) => self.dependency_applied(layer).await?,
                None => applied,
            };
            if !self.nudged && first_applied {
                self.nudged = true;
                let api = self.syncs.api(self.cluster, self.namespace);
                for (dependent, error) in crate::flux::reconcile::request_dependents(&api, first).await {
                    let why = crate::diagnostic::describe(&error);
                    self.printer.warning(&format!("could not ask Flux to reconcile {dependent} now: {why}"));
                }
            }
            parts.push((Part::Sync(layer.name), verdict));
        }
        for (namespace, release) in self.awaited.objects {
            // A release is judged once the sync (and its layer) applied the commit: before,
            // what the cluster holds is the release as it was.
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
            // "platform app" → `platform list`, "tenant" → `tenant list`.
            noun => format!("`kubectl gitops {} list`", noun.split(' ').next().unwrap_or(noun)),
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
    // A commit to the platform repo is fetched by its own GitRepository, and applied by the
    // change's layer without the sync.
    let pushed_to_platform_repo = context.repo.as_ref().is_some_and(|repo| repo.platform);
    let (source, applier) = match (pushed_to_platform_repo, awaited.layer) {
        (true, Some(layer)) => (PLATFORM_SOURCE, layer.name),
        _ => (SYNC_NAME, SYNC_NAME),
    };
    let (source_api, applier_api) = (sources.api(cluster, namespace), syncs.api(cluster, namespace));
    crate::flux::reconcile::request_with_source((&source_api, source), (&applier_api, applier), &context.printer).await;
    let releases: Vec<Kind> =
        [&api::KUSTOMIZATION, &api::HELM_RELEASE].into_iter().filter_map(|kind| Kind::new(context, kind)).collect();
    let mut triggers = Triggers::new(cluster, context.printer);
    let mut followed = vec![syncs.followed(namespace, applier)];
    let layers = awaited.layer.iter().flat_map(|layer| std::iter::once(layer.name).chain(layer.depends_on));
    for layer in layers.filter(|layer| *layer != applier) {
        followed.push(syncs.followed(namespace, layer));
    }
    for (release_namespace, release) in awaited.objects {
        followed.extend(releases.iter().map(|kind| kind.followed(release_namespace, release)));
    }
    triggers.follow(followed);
    let (noun, what) = (awaited.noun, awaited.name);
    let appliers = match awaited.layer {
        Some(layer) if applier != SYNC_NAME => format!("Kustomization {namespace}/{}", layer.name),
        Some(layer) => format!("Kustomizations {namespace}/{SYNC_NAME} and {namespace}/{}", layer.name),
        None => format!("Kustomization {namespace}/{SYNC_NAME}"),
    };
    let title = match awaited.wants_ready {
        true => format!("waiting for {appliers} to apply {} and {noun} {what} to be Ready", short(commit)),
        false => format!("waiting for {appliers} to apply {} and Flux to prune {noun} {what}", short(commit)),
    };
    let printer = context.printer;
    let own_repo = applier != SYNC_NAME;
    let later = context.repo.as_ref().map(|repo| LaterCommits::new(&repo.remote, &repo.branch, commit));
    let mut waited = AfterPush {
        cluster,
        namespace,
        awaited,
        commit,
        syncs,
        releases,
        triggers,
        nudged: false,
        own_repo,
        later,
        printer,
    };
    // It ends Ok only when every part is Ready; a failure or the timeout is an error.
    let limits = Limits { timeout, grace_period: crate::timeouts::GRACE_PERIOD };
    wait_until(&mut waited, &title, limits, &context.printer).await.map(drop)
}

/// The Ready reason of a Kustomization whose applied objects did not all become Ready in time.
const HEALTH_CHECK_FAILED: &str = "HealthCheckFailed";

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}
