//! Runs a [`Plan`]'s steps in order. Every error names its step.

use crate::change::sync_wait;
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};

use super::{FluxAuth, Inspection, Plan, PlatformSide, Step};
use crate::apply::Applier;
use crate::cluster::Cluster;
use crate::cluster::FIELD_MANAGER;
use crate::error::{Error, Result};
use crate::flux::bootstrap::SYNC_NAME;
use crate::git::{Checkout, Workspace};
use crate::output::Printer;
use crate::provider::RepoRef;
use crate::publish::{self, Published};

/// What an executed install did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The commit Flux runs (pushed now, or already there).
    pub commit: Option<String>,
    /// Whether this run committed.
    pub committed: bool,
}

/// Runs the plan: commit and push first (so a failed push leaves the cluster untouched),
/// then apply, then wait.
pub async fn execute(
    cluster: &Cluster,
    plan: &Plan,
    inspection: Inspection,
    yes: bool,
    timeout: Duration,
    printer: &Printer,
) -> Result<Outcome> {
    // Check RBAC before pushing anything, so that a cluster we may not write to leaves the
    // repo untouched too.
    preflight(cluster, plan).await?;
    let checkout = inspection.checkout;
    let platform = inspection.platform;
    // The platform repo's commit this run pushed, which the platform layer must apply.
    let mut seeded: Option<String> = None;
    let mut outcome =
        Outcome { commit: checkout.as_ref().and_then(|checkout| checkout.files().head()), committed: false };
    let steps: Vec<(Step, String)> = plan.steps.iter().map(|step| (step.clone(), step.describe(plan))).collect();
    let total = steps.len();
    crate::plan::run_steps(&steps, async |number, step: &Step, words: &str| -> Result<()> {
        printer.step(&format!("{number}/{total} {words}"));
        match step {
            Step::UploadDeployKey => match &inspection.hosted {
                Some(hosted) => upload_key(hosted, &hosted.repo, plan, !plan.request.read_write_key).await,
                None => Ok(()),
            },
            Step::UploadPlatformDeployKey => match (&inspection.hosted, &platform) {
                // Read-only: Flux only reads the platform repo, whatever the config repo's key may do.
                (Some(hosted), Some(PlatformSide { hosted: Some(reference), .. })) => {
                    upload_key(hosted, reference, plan, true).await
                }
                _ => Ok(()),
            },
            Step::SeedPlatformRepo { message } => {
                let (Some(side), Some(planned)) = (platform.as_ref(), plan.platform.as_ref()) else {
                    return Err(Error::Internal("no clone of the platform repository to commit to".into()));
                };
                let wanted: BTreeMap<String, String> =
                    planned.files.iter().map(|file| (file.path.clone(), file.contents.clone())).collect();
                let on_head = |_: &Checkout, _: &mut BTreeMap<String, String>| Ok(());
                let writes = Writes { wanted: &wanted, on_head: &on_head };
                commit_files(&side.checkout, message, writes, &planned.repo.branch, timeout, printer).await?;
                seeded = side.checkout.files().head();
                Ok(())
            }
            Step::ConfirmDeployKey => confirm_deploy_key(plan, yes, printer),
            Step::CommitAndPush { message } => {
                let Some(checkout) = checkout.as_ref() else {
                    return Err(Error::Internal("no clone of the repository to commit to".into()));
                };
                let wanted: BTreeMap<String, String> =
                    plan.files.iter().map(|file| (file.path.clone(), file.contents.clone())).collect();
                let context = inspection.context.as_deref();
                let on_head = |head: &Checkout, wanted: &mut BTreeMap<String, String>| {
                    super::plan::fleet_file_on(head, &plan.request, context, wanted)
                };
                let writes = Writes { wanted: &wanted, on_head: &on_head };
                let committed = commit_files(checkout, message, writes, &plan.request.branch, timeout, printer).await?;
                outcome.committed = committed;
                outcome.commit = checkout.files().head();
                Ok(())
            }
            Step::StopSyncPruning | Step::MoveToLayers | Step::ResumeSyncPruning => {
                let (Some(checkout), Some(migration)) = (checkout.as_ref(), plan.migration.as_ref()) else {
                    return Err(Error::Internal("moving to the layers needs the clone and the plan".into()));
                };
                let path = &plan.request.path;
                let (files, message) = match step {
                    Step::StopSyncPruning => (
                        vec![migration.sync_without_pruning.clone()],
                        format!("Stop the sync's pruning while {path} moves to its layers"),
                    ),
                    Step::MoveToLayers => {
                        (migration.layers.clone(), format!("Move {path} to the platform, apps and tenants layers"))
                    }
                    _ => (vec![migration.sync.clone()], format!("Prune again in {path}, moved to its layers")),
                };
                let wanted: BTreeMap<String, String> = files.into_iter().collect();
                let on_head = |_: &Checkout, _: &mut BTreeMap<String, String>| Ok(());
                let writes = Writes { wanted: &wanted, on_head: &on_head };
                if commit_files(checkout, &message, writes, &plan.request.branch, timeout, printer).await? {
                    sync_wait::fetch_now(cluster, &plan.request.namespace, printer).await;
                }
                outcome.commit = checkout.files().head();
                let sha = outcome.commit.clone().unwrap_or_default();
                let request = &plan.request;
                // The sync alone: the move is safe once it applied the commit, whatever the layers do.
                let layers = false;
                let revisions =
                    sync_wait::Revisions::sync_only(&request.branch, &sha).or_later_of(&inspection.source.push_remote);
                sync_wait::until_synced(cluster, &request.namespace, &revisions, layers, timeout, printer).await
            }
            Step::ApplyComponents => Applier::new(cluster).apply_staged(&plan.components, timeout).await.map(drop),
            Step::ApplySecret => apply_secret(cluster, plan).await,
            Step::ApplySync => Applier::new(cluster).apply_staged(&plan.sync_objects, timeout).await.map(drop),
            Step::WaitReady => match &outcome.commit {
                Some(sha) => {
                    if outcome.committed || seeded.is_some() {
                        sync_wait::fetch_now(cluster, &plan.request.namespace, printer).await;
                    }
                    let layers = plan.adds_layers();
                    let platform =
                        plan.platform.as_ref().map(|platform| (platform.repo.branch.as_str(), seeded.as_deref()));
                    let revisions = sync_wait::Revisions::of(&plan.request.branch, sha, platform)
                        .or_later_of(&inspection.source.push_remote);
                    sync_wait::until_synced(cluster, &plan.request.namespace, &revisions, layers, timeout, printer)
                        .await
                }
                None => Ok(()),
            },
        }
    })
    .await?;
    Ok(outcome)
}

/// Adds Flux's deploy key to `repo` on the provider, under the title `flux bootstrap` gives it.
async fn upload_key(hosted: &super::Hosted, repo: &RepoRef, plan: &Plan, read_only: bool) -> Result<()> {
    let FluxAuth::Ssh(key) = &plan.auth else { return Ok(()) };
    let request = &plan.request;
    let title = super::Hosted::deploy_key_title(&request.namespace, &request.branch, &request.path);
    hosted.provider.ensure_deploy_key(repo, &title, &key.public_openssh, read_only).await.map(drop).map_err(Error::from)
}

/// Makes the files install shares with other clusters (fleet.yaml) again on a newer head.
type OnHead<'a> = dyn Fn(&Checkout, &mut BTreeMap<String, String>) -> Result<()> + Sync + 'a;

/// What install writes: whole files, and how a newer head changes the ones it shares with others.
struct Writes<'a> {
    wanted: &'a BTreeMap<String, String>,
    on_head: &'a OnHead<'a>,
}

/// Commits the files of `wanted` that differ and pushes; on a newer head, the ones that still
/// differ are written again (install writes whole files: the request decides their contents, not
/// the head), the shared ones made again on it first. Whether a commit was made.
async fn commit_files(
    checkout: &Workspace,
    message: &str,
    writes: Writes<'_>,
    branch: &str,
    timeout: Duration,
    printer: &Printer,
) -> Result<bool> {
    let first = crate::plan::diff(&checkout.files(), writes.wanted, &[])?;
    let replan = |checkout: &Checkout| {
        let mut wanted = writes.wanted.clone();
        (writes.on_head)(checkout, &mut wanted)?;
        crate::plan::diff(checkout, &wanted, &[])
    };
    let author = crate::publish::author();
    let published = publish::commit_and_push(checkout, message, &author, first, &replan, timeout, printer).await?;
    if let Some(sha) = &checkout.files().head() {
        let sha = short(sha);
        let line = match published {
            Published::Commit(_) => format!("pushed {sha} to {branch}"),
            Published::MadeMeanwhile => format!("{branch} already holds these files (at {sha})"),
        };
        printer.done(&line);
    }
    Ok(matches!(published, Published::Commit(Some(_))))
}

/// Asks the API server (SelfSubjectAccessReview) whether we may apply what the plan applies.
async fn preflight(cluster: &Cluster, plan: &Plan) -> Result<()> {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let namespace = plan.request.namespace.as_str();
    let mut needed: Vec<(&str, &str, Option<&str>, &str)> = Vec::new();
    for step in &plan.steps {
        match step {
            Step::ApplyComponents => {
                needed.push(("apiextensions.k8s.io", "customresourcedefinitions", None, "the Flux CRDs"));
                needed.push(("", "namespaces", None, "the Flux namespace"));
                needed.push(("apps", "deployments", Some(namespace), "the Flux controllers"));
                needed.push(("rbac.authorization.k8s.io", "clusterrolebindings", None, "the Flux controllers' RBAC"));
            }
            Step::ApplySecret => needed.push(("", "secrets", Some(namespace), "the deploy key Secret")),
            Step::ApplySync => {
                needed.push(("source.toolkit.fluxcd.io", "gitrepositories", Some(namespace), "the GitRepository"));
                needed.push(("kustomize.toolkit.fluxcd.io", "kustomizations", Some(namespace), "the Kustomization"));
                needed.push(("", "configmaps", Some(namespace), "the install record"));
            }
            _ => {}
        }
    }
    let reviews: Api<SelfSubjectAccessReview> = Api::all(cluster.client.clone());
    for (group, resource, namespace, what) in needed {
        for verb in ["create", "patch"] {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        group: Some(group.to_string()),
                        resource: Some(resource.to_string()),
                        namespace: namespace.map(String::from),
                        verb: Some(verb.to_string()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            };
            let answer = reviews.create(&Default::default(), &review).await.map_err(|error| cluster.error(error))?;
            if !answer.status.is_some_and(|status| status.allowed) {
                let place = namespace.map(|ns| format!(" in namespace {ns}")).unwrap_or_default();
                return Err(Error::Forbidden {
                    message: format!(
                        "you may not {verb} {resource}{place} (needed for {what}); nothing was pushed or applied"
                    ),
                });
            }
        }
    }
    Ok(())
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

fn confirm_deploy_key(plan: &Plan, yes: bool, printer: &Printer) -> Result<()> {
    let FluxAuth::Ssh(key) = &plan.auth else { return Ok(()) };
    let question = format!(
        "Add this public key to {} as a read-only deploy key (Flux pulls with it):\n\n  {}\n\nIs it added?",
        plan.url, key.public_openssh
    );
    if printer.confirm(&question, yes)? {
        Ok(())
    } else {
        Err(Error::usage("the deploy key was not added", "add the key shown above to the git server, then re-run"))
    }
}

async fn apply_secret(cluster: &Cluster, plan: &Plan) -> Result<()> {
    let namespace = &plan.request.namespace;
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), namespace);
    let mut secret = plan.auth.secret(namespace, SYNC_NAME);
    // Server-side apply needs apiVersion and kind in the body.
    let mut body = serde_json::to_value(&mut secret).map_err(|error| Error::Internal(error.to_string()))?;
    body["apiVersion"] = "v1".into();
    body["kind"] = "Secret".into();
    secrets
        .patch(SYNC_NAME, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
        .await
        .map_err(|error| cluster.error(error))?;
    Ok(())
}
