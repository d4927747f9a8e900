//! Runs a [`Plan`]'s steps in order. Every error names its step.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;

use super::{FluxAuth, Inspection, Plan, Step};
use crate::apply::{Applier, FIELD_MANAGER};
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::bootstrap::SYNC_NAME;
use crate::flux::status::FluxObject;
use crate::git::Checkout;
use crate::output::report;
use crate::output::style::{Stream, Style};

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
) -> Result<Outcome> {
    let style = Style::for_stream(Stream::Stderr);
    // Check RBAC before pushing anything, so that a cluster we may not write to leaves the
    // repo untouched too.
    preflight(cluster, plan).await?;
    let mut checkout = inspection.checkout;
    let mut outcome = Outcome { commit: checkout.as_ref().and_then(Checkout::head), committed: false };
    let total = plan.steps.len();
    for (index, step) in plan.steps.iter().enumerate() {
        let description = step.describe(plan);
        report::write_stderr(&format!("{}{}/{total} {description}\n", style.glyph("►"), index + 1));
        let result = match step {
            Step::UploadDeployKey => match (&inspection.hosted, &plan.auth) {
                (Some(hosted), FluxAuth::Ssh(key)) => {
                    let title = super::Hosted::deploy_key_title(
                        &plan.request.namespace,
                        &plan.request.branch,
                        &plan.request.path,
                    );
                    hosted
                        .provider
                        .ensure_deploy_key(&hosted.repo, &title, &key.public_openssh, !plan.request.read_write_key)
                        .await
                        .map(drop)
                        .map_err(Error::from)
                }
                _ => Ok(()),
            },
            Step::ConfirmDeployKey => confirm_deploy_key(plan, yes),
            Step::CommitAndPush { message } => {
                let Some(checkout) = checkout.as_mut() else {
                    return Err(Error::Internal("no clone of the repository to commit to".into()));
                };
                for file in plan.changed_files() {
                    checkout.write(&file.path, file.contents.as_bytes())?;
                }
                let author = super::author();
                // libgit2 blocks; let tokio move other tasks off this worker meanwhile.
                let pushed = tokio::task::block_in_place(|| -> Result<Option<String>> {
                    let sha = checkout.commit(message, &author)?;
                    checkout.push_with_retries(3)?;
                    Ok(sha)
                });
                pushed.map(|sha| {
                    outcome.committed = sha.is_some();
                    outcome.commit = checkout.head();
                    if let Some(sha) = &outcome.commit {
                        report::write_stderr(&format!(
                            "{}pushed {} to {}\n",
                            style.glyph("✔"),
                            short(sha),
                            plan.request.branch
                        ));
                    }
                })
            }
            Step::ApplyComponents => Applier::new(cluster).apply_staged(&plan.components, timeout).await.map(drop),
            Step::ApplySecret => apply_secret(cluster, plan).await,
            Step::ApplySync => Applier::new(cluster).apply_staged(&plan.sync_objects, timeout).await.map(drop),
            Step::WaitReady => match &outcome.commit {
                Some(sha) => wait_ready(cluster, plan, sha, timeout).await,
                None => Ok(()),
            },
        };
        result.map_err(|source| Error::Step {
            number: index + 1,
            total,
            step: description,
            source: Box::new(source),
        })?;
    }
    Ok(outcome)
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

fn confirm_deploy_key(plan: &Plan, yes: bool) -> Result<()> {
    let FluxAuth::Ssh(key) = &plan.auth else { return Ok(()) };
    let question = format!(
        "Add this public key to {} as a read-only deploy key (Flux pulls with it):\n\n  {}\n\nIs it added?",
        plan.url, key.public_openssh
    );
    if super::confirm(&question, yes)? {
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

/// Waits until the `flux-system` Kustomization has applied `sha` and is Ready; on timeout
/// says which object is not ready and why.
async fn wait_ready(cluster: &Cluster, plan: &Plan, sha: &str, timeout: Duration) -> Result<()> {
    let namespace = &plan.request.namespace;
    let revision = format!("{}@sha1:{sha}", plan.request.branch);
    let kustomizations: Api<DynamicObject> = Api::namespaced_with(
        cluster.client.clone(),
        namespace,
        &ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            "kustomize.toolkit.fluxcd.io",
            "v1",
            "Kustomization",
        )),
    );
    let repositories: Api<DynamicObject> = Api::namespaced_with(
        cluster.client.clone(),
        namespace,
        &ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk("source.toolkit.fluxcd.io", "v1", "GitRepository")),
    );
    let started = Instant::now();
    let waiting = format!("waiting for Kustomization {namespace}/{SYNC_NAME}");
    let mut spinner = crate::output::progress::Spinner::new(waiting);
    loop {
        let kustomization = kustomizations.get_opt(SYNC_NAME).await.map_err(|error| cluster.error(error))?;
        let applied = kustomization.as_ref().and_then(|k| k.last_applied_revision());
        let ready = kustomization.as_ref().and_then(|k| k.ready_condition());
        let synced = applied == Some(revision.as_str()) && ready.as_ref().is_some_and(|ready| ready.is_true());
        // The Flux Deployments must be ready too (a Flux running outside Deployments has none).
        let unready_controller = if synced {
            crate::detect::read_controllers(cluster, namespace).await?.into_iter().find(|c| !c.ready).map(|c| c.name)
        } else {
            None
        };
        if synced && unready_controller.is_none() {
            spinner.finish();
            let style = Style::for_stream(Stream::Stderr);
            report::write_stderr(&format!(
                "{}Kustomization {namespace}/{SYNC_NAME} is Ready at {revision}\n",
                style.glyph("✔")
            ));
            return Ok(());
        }
        if started.elapsed() > timeout {
            spinner.finish();
            if let Some(controller) = &unready_controller {
                return Err(Error::Negative {
                    message: format!(
                        "Deployment {namespace}/{controller} is not ready after {}",
                        crate::duration::format(timeout)
                    ),
                    hint: Some(format!("kubectl -n {namespace} describe deployment {controller}")),
                });
            }
            let repository = repositories.get_opt(SYNC_NAME).await.ok().flatten();
            let (object, why) = match repository.as_ref().and_then(|r| r.ready_condition()) {
                Some(unready) if !unready.is_true() => (
                    format!("GitRepository {namespace}/{SYNC_NAME}"),
                    format!("{}: {}", unready.reason(), unready.message()),
                ),
                _ => match ready {
                    Some(ready) => (
                        format!("Kustomization {namespace}/{SYNC_NAME}"),
                        format!("{}: {}", ready.reason(), ready.message()),
                    ),
                    None => (
                        format!("Kustomization {namespace}/{SYNC_NAME}"),
                        "not reconciled yet (are the Flux controllers running?)".to_string(),
                    ),
                },
            };
            return Err(Error::Negative {
                message: format!(
                    "{object} is not Ready at {revision} after {}: {why} (last applied: {})",
                    crate::duration::format(timeout),
                    applied.unwrap_or("nothing")
                ),
                hint: Some(format!(
                    "kubectl -n {namespace} describe kustomization {SYNC_NAME}; re-run install to resume"
                )),
            });
        }
        let detail = match &unready_controller {
            Some(controller) => format!("waiting for Deployment {controller}"),
            None => ready.as_ref().map(|ready| format!("{}: {}", ready.reason(), ready.message())).unwrap_or_default(),
        };
        spinner.tick(&detail);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
