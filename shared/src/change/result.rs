//! What a changing command prints with `-o json|yaml`: one `Change` document saying what was
//! planned (the same [`Plan`] `--dry-run` shows), what was done (the commit, the pull request)
//! and what `--wait` waited for. A script reads it instead of the last line of text.

use schemars::JsonSchema;
use serde::Serialize;

use super::deliver::Outcome;
use super::plan::{Delivery, Plan};
use crate::provider::PullRequestOutcome;

/// The `Change` document.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeResult {
    /// What changed: `app`, `component`, `flux`, `tenant`, …
    pub noun: String,
    /// How: `add`, `remove`, `suspend`, `resume`, `upgrade`.
    pub verb: String,
    /// The app, component, tenant or release changed.
    pub name: String,
    /// `--dry-run`: planned, nothing done.
    pub dry_run: bool,
    /// What the command planned.
    pub plan: PlannedChange,
    /// What it did; absent for `--dry-run`, and when the config repo already held the change.
    pub done: Option<DoneChange>,
    /// What `--wait` waited for, once it was there.
    pub waited: Option<Waited>,
    /// `--dry-run --preview`: what the plan would change in the cluster, as `kubectl gitops diff`
    /// prints it (or why it could not be worked out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

impl crate::output::Kind for ChangeResult {
    const KIND: &'static str = "Change";
}

/// The plan, as data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedChange {
    /// The commit message (and pull request title).
    pub message: String,
    /// The config repo's URL (empty when the change writes no file).
    pub repo: String,
    /// The config branch.
    pub branch: String,
    /// How the commit reaches the config branch.
    pub delivery: PlannedDelivery,
    /// Every step in order, as `--dry-run` words it.
    pub steps: Vec<String>,
    /// The repo files the commit changes.
    pub files: Vec<PlannedFile>,
    /// The Flux objects the change adds or removes (`Kustomization/apps-web`).
    pub objects: Vec<String>,
    /// Objects patched in the cluster before the commit (suspend, resume).
    pub patches: Vec<PlannedPatch>,
    /// Flux CRDs whose stored objects are migrated first (upgrade).
    pub migrations: Vec<String>,
    /// What `--wait` waits for, when asked.
    pub wait: Option<String>,
    /// What the user should know.
    pub notes: Vec<String>,
}

/// How the commit is delivered.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedDelivery {
    /// `push` (to the config branch) or `pullRequest`.
    pub method: String,
    /// The pull request's branch.
    pub branch: Option<String>,
    /// `--merge`: the pull request is merged once opened and checked.
    pub merge: bool,
}

/// One file of the commit.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFile {
    /// Path from the repo root.
    pub path: String,
    /// `add`, `update` or `delete`.
    pub action: String,
}

/// One `spec.suspend` patch.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedPatch {
    /// The Flux kind (`Kustomization`, `HelmRelease`, a source kind).
    pub object_kind: String,
    pub namespace: String,
    pub name: String,
    /// The value written.
    pub suspend: bool,
}

/// What execution did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoneChange {
    /// The commit pushed to the config branch, in full (direct delivery).
    pub commit: Option<String>,
    /// The pull request opened or updated.
    pub pull_request: Option<DonePullRequest>,
    /// A concurrent push made the same change first: nothing was left to commit.
    pub made_meanwhile: bool,
}

/// The pull request of a change.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DonePullRequest {
    pub number: u64,
    pub url: String,
    /// `created` or `updated`.
    pub outcome: String,
    /// The commit it was merged as, when `--wait` saw it merged.
    pub merge_commit: Option<String>,
}

/// What `--wait` saw.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Waited {
    /// What was waited for, in words.
    pub what: String,
    /// The Kustomizations or HelmReleases followed, `namespace/name` (empty: every one).
    pub objects: Vec<String>,
    /// Ready (`true`), or gone.
    pub ready: bool,
    /// The commit Flux applied.
    pub commit: String,
}

impl PlannedChange {
    /// `plan`, as data.
    pub fn of(plan: &Plan) -> PlannedChange {
        let delivery = match &plan.delivery {
            Delivery::Push => PlannedDelivery { method: "push".into(), branch: None, merge: false },
            Delivery::PullRequest { branch, merge, .. } => {
                PlannedDelivery { method: "pullRequest".into(), branch: Some(branch.clone()), merge: *merge }
            }
        };
        PlannedChange {
            message: plan.message.clone(),
            repo: plan.repo.clone(),
            branch: plan.branch.clone(),
            delivery,
            steps: plan.steps().into_iter().map(|(_, words)| words).collect(),
            files: plan
                .files
                .iter()
                .map(|file| PlannedFile { path: file.path.clone(), action: file.verb().to_string() })
                .collect(),
            objects: plan.objects.clone(),
            patches: plan
                .patches
                .iter()
                .map(|patch| PlannedPatch {
                    object_kind: patch.kind.kind.to_string(),
                    namespace: patch.namespace.clone(),
                    name: patch.name.clone(),
                    suspend: patch.suspend,
                })
                .collect(),
            migrations: plan.migrations.iter().map(|kind| kind.crd.clone()).collect(),
            wait: plan.wait.clone(),
            notes: plan.notes.clone(),
        }
    }
}

impl DoneChange {
    /// What `outcome` says was done; `merge_commit` once `--wait` saw the pull request merged.
    pub fn of(outcome: &Outcome, merge_commit: Option<&str>) -> DoneChange {
        DoneChange {
            commit: outcome.commit.clone(),
            pull_request: outcome.pull_request.as_ref().map(|(pull_request, state)| DonePullRequest {
                number: pull_request.number,
                url: pull_request.url.clone(),
                outcome: match state {
                    PullRequestOutcome::Created => "created",
                    PullRequestOutcome::Updated => "updated",
                }
                .to_string(),
                merge_commit: merge_commit.map(String::from),
            }),
            made_meanwhile: outcome.made_meanwhile,
        }
    }
}

/// What a face's change answers (`POST /api/v1/apps`, `DELETE /api/v1/apps/{namespace}/{name}`,
/// the Fleet page's promotion, the MCP server's write tools): what `app add`
/// or `app remove` printed (the plan and its diff with `dryRun`, else the commit or the pull
/// request).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Changed {
    pub name: String,
    pub dry_run: bool,
    pub output: String,
}
