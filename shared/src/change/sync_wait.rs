//! Install's wait: on the watch engine `status --wait` and `app add --wait` use (watches, no
//! polling), until the `flux-system` Kustomization has applied the installed commit and is Ready,
//! and every Flux Deployment is ready. A Flux that is still starting fails in many ways that heal
//! by themselves, so nothing but the timeout ends the wait; the timeout names what is not ready.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;

use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::api::{self, FluxKind};
use crate::flux::bootstrap::{LAYERS, Layer, SYNC_NAME};
use crate::flux::status::FluxObject;
use crate::flux::{PART_OF_LABEL, PART_OF_VALUE};
use crate::git::Remote;
use crate::git::workspace::LaterCommits;
use crate::output::Printer;
use crate::wait::{Followed, Limits, Selector, Triggers, Verdict, Waited, wait_until};

/// What install waits for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    /// Kustomization `flux-system` applied the installed commit and is Ready.
    Sync,
    /// A layer install wrote (`platform`, `apps`, `tenants`) applied it and is Ready.
    Layer(&'static str),
    /// Every Flux Deployment is ready (a Flux running outside Deployments has none).
    Controllers,
}

/// The revisions (`<branch>@sha1:<commit>`, as Flux writes them) install waits for.
#[derive(Clone)]
pub(crate) struct Revisions {
    /// The config repo's: the sync, and the layers that apply its lists.
    pub sync: String,
    /// The platform and tenants layers': the sync's, or the platform repo's commit this run
    /// pushed; `None` when they apply a platform repo install did not push to (Ready at whatever
    /// its branch holds).
    pub platform: Option<String>,
    /// The config repo's later commits: one of them applied holds ours too (another push landed
    /// after ours, and Flux fetched both at once). `None`: the pushed commit itself.
    pub later: Option<LaterCommits>,
}

impl Revisions {
    /// What a run waits for after it pushed `sha` to the config repo's `branch`, and, when it
    /// keeps its platform in a platform repo, `platform`: that repo's branch and the commit it
    /// pushed there (none: it did not push to it).
    pub fn of(branch: &str, sha: &str, platform: Option<(&str, Option<&str>)>) -> Revisions {
        let sync = format!("{branch}@sha1:{sha}");
        let platform = match platform {
            Some((branch, platform_sha)) => platform_sha.map(|sha| format!("{branch}@sha1:{sha}")),
            None => Some(sync.clone()),
        };
        Revisions { sync, platform, later: None }
    }

    /// The config repo's commit `sha` on `branch`, for a wait without the layers.
    pub fn sync_only(branch: &str, sha: &str) -> Revisions {
        let sync = format!("{branch}@sha1:{sha}");
        Revisions { platform: Some(sync.clone()), sync, later: None }
    }

    /// The same revisions, where a later commit of `remote`'s branch that holds ours will do.
    pub fn or_later_of(mut self, remote: &Remote) -> Revisions {
        if let Some((branch, sha)) = self.sync.split_once("@sha1:") {
            self.later = Some(LaterCommits::new(remote, branch, sha));
        }
        self
    }

    /// What `layer` must have applied; `None`: any revision.
    fn of_layer(&self, layer: Layer) -> Option<&str> {
        match layer.in_platform_repo {
            true => self.platform.as_deref(),
            false => Some(&self.sync),
        }
    }
}

struct AfterInstall<'a> {
    cluster: &'a Cluster,
    namespace: &'a str,
    /// What the sync and the layers must have applied.
    revisions: &'a Revisions,
    /// Asked which later commits hold ours ([`Revisions::later`]).
    later: Option<LaterCommits>,
    kustomizations: Api<DynamicObject>,
    repositories: Api<DynamicObject>,
    triggers: Triggers,
    /// What the sync applied when last looked at, for the timeout's message.
    applied: Option<String>,
    /// The object that holds the sync back and why, when last looked at.
    blocking: (String, String),
    /// The first Flux Deployment not ready, when last looked at.
    unready_controller: Option<String>,
    /// Whether the layers are waited for too (install wrote or moved them).
    layers: bool,
    /// The layers whose dependents were asked to reconcile once they were Ready at the revision.
    nudged: Vec<&'static str>,
}

impl AfterInstall<'_> {
    async fn judge_sync(&mut self) -> Result<Verdict> {
        let kustomization = self.kustomizations.get_opt(SYNC_NAME).await.map_err(|error| self.cluster.error(error))?;
        let kustomization_name = format!("Kustomization {}/{SYNC_NAME}", self.namespace);
        self.applied = kustomization.as_ref().and_then(|k| k.last_applied_revision()).map(String::from);
        let ready = kustomization.as_ref().and_then(|k| k.ready_condition());
        if ready.as_ref().is_some_and(|r| r.is_true()) && self.holds_ours(self.applied.clone().as_deref()).await {
            return Ok(Verdict::Ready);
        }
        // The source first: while it cannot fetch, the Kustomization's own reason says little.
        let repository = self.repositories.get_opt(SYNC_NAME).await.map_err(|error| self.cluster.error(error))?;
        self.blocking = match (repository.as_ref().and_then(|r| r.ready_condition()), ready) {
            (Some(source), _) if !source.is_true() => (
                format!("GitRepository {}/{SYNC_NAME}", self.namespace),
                format!("{}: {}", source.reason(), source.message()),
            ),
            (_, Some(ready)) => (kustomization_name, format!("{}: {}", ready.reason(), ready.message())),
            (_, None) => (kustomization_name, "not reconciled yet (are the Flux controllers running?)".to_string()),
        };
        Ok(Verdict::Waiting { why: format!("{}: {}", self.blocking.0, self.blocking.1), healthy: false })
    }

    /// Whether `layer` applied the revision and is Ready. Once it is, the layers that depend on
    /// it are asked to reconcile ([`crate::flux::reconcile::request_dependents`]).
    async fn judge_layer(&mut self, layer: Layer) -> Result<Verdict> {
        let object = self.kustomizations.get_opt(layer.name).await.map_err(|error| self.cluster.error(error))?;
        let applied = object.as_ref().and_then(|object| object.last_applied_revision()).map(String::from);
        let applied_ours = match self.revisions.of_layer(layer) {
            None => true,
            // The config repo's commit, or a later one that holds it.
            Some(revision) if revision == self.revisions.sync => self.holds_ours(applied.as_deref()).await,
            Some(revision) => applied.as_deref() == Some(revision),
        };
        let at_revision = applied_ours
            && object.as_ref().is_some_and(|object| object.ready_condition().is_some_and(|ready| ready.is_true()));
        if at_revision {
            if !self.nudged.contains(&layer.name) {
                self.nudged.push(layer.name);
                let refused = crate::flux::reconcile::request_dependents(&self.kustomizations, layer.name).await;
                if let Some((_, error)) = refused.into_iter().next() {
                    return Err(self.cluster.error(error));
                }
            }
            return Ok(Verdict::Ready);
        }
        let why = match object.as_ref().and_then(|object| object.ready_condition()) {
            Some(ready) => format!("{}: {}", ready.reason(), ready.message()),
            None => "not reconciled yet".to_string(),
        };
        self.blocking = (format!("Kustomization {}/{}", self.namespace, layer.name), why.clone());
        Ok(Verdict::Waiting { why: format!("{}: {why}", self.blocking.0), healthy: false })
    }

    /// Whether `applied` is the config repo's commit install pushed, or a later one that holds it.
    async fn holds_ours(&mut self, applied: Option<&str>) -> bool {
        let Some(applied) = applied else { return false };
        if applied == self.revisions.sync {
            return true;
        }
        let branch = self.revisions.sync.split_once("@sha1:").map(|(branch, _)| branch);
        match (applied.split_once("@sha1:"), &mut self.later) {
            (Some((applied_branch, commit)), Some(later)) if Some(applied_branch) == branch => {
                later.contain_ours(commit).await
            }
            _ => false,
        }
    }

    async fn judge_controllers(&mut self) -> Result<Verdict> {
        let controllers = crate::detect::read_controllers(self.cluster, self.namespace).await?;
        self.unready_controller = controllers.into_iter().find(|c| !c.ready).map(|c| c.name);
        Ok(match &self.unready_controller {
            None => Verdict::Ready,
            Some(controller) => Verdict::Waiting {
                why: format!("waiting for Deployment {}/{controller}", self.namespace),
                healthy: false,
            },
        })
    }
}

impl Waited for AfterInstall<'_> {
    type Part = Part;

    async fn look(&mut self) -> Result<Vec<(Part, Verdict)>> {
        let sync = self.judge_sync().await?;
        let synced = matches!(sync, Verdict::Ready);
        let mut parts = vec![(Part::Sync, sync)];
        // The layers and the controllers are judged once the sync is done: it applies the
        // layers, and the controllers are what applies it.
        let layers = if self.layers { LAYERS.as_slice() } else { &[] };
        for &layer in layers {
            let verdict = match synced {
                true => self.judge_layer(layer).await?,
                false => Verdict::Waiting { why: "the sync is not done yet".into(), healthy: false },
            };
            parts.push((Part::Layer(layer.name), verdict));
        }
        let controllers = match synced {
            true => self.judge_controllers().await?,
            false => Verdict::Waiting { why: "the sync is not done yet".into(), healthy: false },
        };
        parts.push((Part::Controllers, controllers));
        Ok(parts)
    }

    async fn changed(&mut self) {
        self.triggers.changed().await;
    }

    fn hint(&self) -> Option<String> {
        Some(format!("kubectl -n {} describe kustomization {SYNC_NAME}; re-run install to resume", self.namespace))
    }

    fn timed_out(&self, waiting: &[(&Part, &str)], timeout: Duration) -> Error {
        let after = crate::duration::format(timeout);
        if waiting.iter().all(|(part, _)| **part == Part::Controllers)
            && let Some(controller) = &self.unready_controller
        {
            return Error::Negative {
                message: format!("Deployment {}/{controller} is not ready after {after}", self.namespace),
                hint: Some(format!("kubectl -n {} describe deployment {controller}", self.namespace)),
            };
        }
        let (object, why) = &self.blocking;
        Error::Negative {
            message: format!(
                "{object} is not Ready at {} after {after}: {why} (last applied: {})",
                self.revisions.sync,
                self.applied.as_deref().unwrap_or("nothing")
            ),
            hint: self.hint(),
        }
    }
}

fn flux_kind(cluster: &Cluster, namespace: &str, kind: &FluxKind, version: &str) -> (ApiResource, Api<DynamicObject>) {
    let resource = kind.at(version);
    let api = Api::namespaced_with(cluster.client.clone(), namespace, &resource);
    (resource, api)
}

/// After a push: asks the sync's GitRepository to fetch and the sync to apply now, not at the
/// repository's next interval (a minute).
pub(crate) async fn fetch_now(cluster: &Cluster, namespace: &str, printer: &Printer) {
    let (_, kustomizations) = flux_kind(cluster, namespace, &api::KUSTOMIZATION, "v1");
    let (_, repositories) = flux_kind(cluster, namespace, &api::GIT_REPOSITORY, "v1");
    crate::flux::reconcile::request_with_source((&repositories, SYNC_NAME), (&kustomizations, SYNC_NAME), printer)
        .await;
}

/// Waits until the `flux-system` Kustomization (and, with `layers`, each layer) has applied
/// `<branch>@sha1:<sha>` and is Ready and the Flux Deployments are ready; at the timeout, says
/// which object is not ready and why.
pub(crate) async fn until_synced(
    cluster: &Cluster,
    namespace: &str,
    revisions: &Revisions,
    layers: bool,
    timeout: Duration,
    printer: &Printer,
) -> Result<()> {
    // The versions install writes: the ones the embedded Flux release serves.
    let (kustomization_resource, kustomizations) = flux_kind(cluster, namespace, &api::KUSTOMIZATION, "v1");
    let (repository_resource, repositories) = flux_kind(cluster, namespace, &api::GIT_REPOSITORY, "v1");
    let deployments = ApiResource::erase::<Deployment>(&());
    let mut triggers = Triggers::new(cluster, *printer);
    let named = |resource: &ApiResource, name: &str| Followed {
        resource: resource.clone(),
        namespace: Some(namespace.to_string()),
        selector: Selector::Name(name.to_string()),
    };
    let layer_names = LAYERS.iter().filter(|_| layers).map(|layer| layer.name);
    let mut followed: Vec<Followed> =
        std::iter::once(SYNC_NAME).chain(layer_names).map(|name| named(&kustomization_resource, name)).collect();
    followed.push(named(&repository_resource, SYNC_NAME));
    followed.push(Followed {
        resource: deployments,
        namespace: Some(namespace.to_string()),
        selector: Selector::Labels(format!("{PART_OF_LABEL}={PART_OF_VALUE}")),
    });
    triggers.follow(followed);
    let title = format!("waiting for Kustomization {namespace}/{SYNC_NAME}");
    let kustomization_name = format!("Kustomization {namespace}/{SYNC_NAME}");
    let mut waited = AfterInstall {
        cluster,
        namespace,
        revisions,
        later: revisions.later.clone(),
        kustomizations,
        repositories,
        triggers,
        applied: None,
        blocking: (kustomization_name, "not reconciled yet (are the Flux controllers running?)".to_string()),
        unready_controller: None,
        layers,
        nudged: Vec::new(),
    };
    // The grace period never runs out: the wait never answers Failing.
    wait_until(&mut waited, &title, Limits { timeout, grace_period: timeout }, printer).await?;
    printer.done(&format!("Kustomization {namespace}/{SYNC_NAME} is Ready at {}", waited.revisions.sync));
    Ok(())
}
