//! The tools that change something, listed only when the server runs with `--allow-writes`.
//! Each is the command's own request, checked as its flags are, run by the command's own function
//! through the change engine: a plan, then one commit on the git write path, a pull request
//! unless the call says `pr: false` (then a push, unless the branch is protected). `dryRun`
//! answers the plan, its diff and what the cluster would get (`diff`'s preview) and changes
//! nothing. `merge_pr` merges only what `pr_show` validates, at the head it validated.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};
use serde::Deserialize;

use super::tools::{Tools, bounded, given, no_app, said};
use crate::app::RollbackArgs;
use crate::app::requests::{AddApp, RemoveApp};
use crate::app::rollback::rolled_back;
use crate::app::settings::SuspendRequest;
use crate::change::Target;
use crate::change::result::Changed;
use crate::error::Error;
use crate::fleet::promote_app::PromoteApp;
use crate::pr::Action;
use crate::provider::MergeMethod;

/// The input of `remove_app`, `suspend_app` and `resume_app`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct AppChange {
    /// The app's name.
    name: String,
    /// Its Flux namespace (default: flux-system).
    namespace: Option<String>,
    /// Answer the plan, its diff and what the cluster would get; change nothing.
    #[serde(default)]
    dry_run: bool,
    /// Open a pull request (default), or `false`: push, unless the branch is protected.
    pr: Option<bool>,
}

/// `promote`'s input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Promote {
    /// The app.
    name: String,
    /// The environment (or cluster name) of fleet.yaml whose version is promoted.
    from: String,
    /// The environment (or cluster name) that gets it.
    to: String,
    /// Promote only this version (chart or tag): refused unless `from` runs it, Ready.
    expect_version: Option<String>,
    /// Carry `from`'s own values files too, replacing `to`'s.
    #[serde(default)]
    with_values: bool,
    /// Answer the plan, its diff and what the cluster would get; change nothing.
    #[serde(default)]
    dry_run: bool,
    /// Open a pull request (default), or `false`: push, unless the branch is protected.
    pr: Option<bool>,
}

/// `rollback_app`'s input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Rollback {
    /// The app.
    name: String,
    /// Its Flux namespace (default: flux-system).
    namespace: Option<String>,
    /// The deployment to go back to: its commit (full hash), its revision as app_history lists
    /// it, or a tag (default: the last deployment before the current one that was Ready).
    to: Option<String>,
    /// Answer the plan, its diff and what the cluster would get; change nothing.
    #[serde(default)]
    dry_run: bool,
    /// Open a pull request (default), or `false`: push, unless the branch is protected.
    pr: Option<bool>,
}

/// `reconcile_app`'s input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Reconcile {
    /// The app.
    name: String,
    /// Its Flux namespace (default: flux-system).
    namespace: Option<String>,
}

/// `merge_pr`'s input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct MergePr {
    /// The pull request's number (as `pr_list` lists it).
    number: u64,
    /// How: merge (default), squash or rebase.
    method: Option<String>,
}

/// Whether a call's pull request choice, unset, opens one.
fn pull_request(pr: Option<bool>) -> bool {
    pr.unwrap_or(true)
}

#[tool_router(router = write_router, vis = "pub(super)")]
impl Tools {
    /// The target of a change: the server's connection, in `namespace` (default: Flux's).
    fn in_namespace(&self, namespace: Option<String>) -> Result<(Target, String), String> {
        let namespace = Tools::namespace_or_flux(namespace)?;
        let target = Target { namespace: Some(namespace.clone()), ..Target::from_args(&self.global) };
        Ok((target, namespace))
    }

    /// `kubectl gitops app add`, through a pull request by default.
    #[tool(
        description = "Add an app, or with `update` change one (its tag, branch, chart version, path…), as `kubectl gitops app add` does: one commit to the config repo, through a pull request unless `pr` is false. With `dryRun`, answers the plan, its diff and what the cluster would get, and changes nothing.",
        annotations(destructive_hint = false, idempotent_hint = true)
    )]
    async fn add_app(&self, Parameters(mut input): Parameters<AddApp>) -> Result<Json<Changed>, String> {
        input.pr = Some(pull_request(input.pr));
        if input.wait && input.pr == Some(true) {
            return Err(said(Error::usage(
                "wait follows a push; a pull request is applied once it is merged",
                "leave out wait, or merge with merge_pr and follow app_status",
            )));
        }
        let (target, _) = self.in_namespace(None)?;
        self.answered(input.run(&self.repo, &target, &self.printer).await.map_err(said)?)
    }

    /// `kubectl gitops app remove`, through a pull request by default.
    #[tool(
        description = "Remove an app from the config repo (Flux then prunes what it applied), as `kubectl gitops app remove`: through a pull request unless `pr` is false. With `dryRun`, answers the plan, its diff and what the cluster would lose, and changes nothing.",
        annotations(destructive_hint = true)
    )]
    async fn remove_app(&self, Parameters(input): Parameters<AppChange>) -> Result<Json<Changed>, String> {
        let (target, namespace) = self.in_namespace(input.namespace)?;
        let request = RemoveApp { name: input.name, pr: pull_request(input.pr), dry_run: input.dry_run, wait: false };
        self.answered(request.run(&namespace, &self.repo, &target, &self.printer).await.map_err(said)?)
    }

    /// `kubectl gitops app suspend --persist`.
    #[tool(
        description = "Suspend an app's reconciliation, as `kubectl gitops app suspend --persist`: Flux stops applying it at once, and the config repo records it (through a pull request unless `pr` is false) so that it survives a re-install. With `dryRun`, answers the plan and changes nothing.",
        annotations(destructive_hint = false, idempotent_hint = true)
    )]
    async fn suspend_app(&self, Parameters(input): Parameters<AppChange>) -> Result<Json<Changed>, String> {
        self.suspended(input, true).await
    }

    /// `kubectl gitops app resume --persist`.
    #[tool(
        description = "Resume a suspended app, as `kubectl gitops app resume --persist`: Flux applies it again at once, and the config repo records it (through a pull request unless `pr` is false). With `dryRun`, answers the plan and changes nothing.",
        annotations(destructive_hint = false, idempotent_hint = true)
    )]
    async fn resume_app(&self, Parameters(input): Parameters<AppChange>) -> Result<Json<Changed>, String> {
        self.suspended(input, false).await
    }

    /// `kubectl gitops promote`, through a pull request by default.
    #[tool(
        description = "Promote an app's version (chart version, tag, images) from one environment of the fleet to another, as `kubectl gitops promote NAME --from ENV --to ENV`: read from the source cluster where it is Ready, written into the target cluster's overlay through a pull request unless `pr` is false. With `dryRun`, answers the plan, its diff and what the target would get.",
        annotations(destructive_hint = false, idempotent_hint = true)
    )]
    async fn promote(&self, Parameters(input): Parameters<Promote>) -> Result<Json<Changed>, String> {
        let request = PromoteApp {
            name: input.name,
            from: input.from,
            to: input.to,
            version: given(input.expect_version),
            with_values: input.with_values,
            pr: pull_request(input.pr),
            dry_run: input.dry_run,
        };
        let (target, _) = self.in_namespace(None)?;
        self.answered(request.run(&self.repo, &target, &self.printer).await.map_err(said)?)
    }

    /// `kubectl gitops app rollback`, through a pull request by default.
    #[tool(
        description = "Roll an app back to an earlier deployment, as `kubectl gitops app rollback NAME`: its earlier files restored in the repository they came from (the app's own repository, or the config repo for a HelmRelease), through a pull request unless `pr` is false (a push is then reconciled at once). With `dryRun`, answers the plan, its diff and what the cluster would get.",
        annotations(destructive_hint = true)
    )]
    async fn rollback_app(&self, Parameters(input): Parameters<Rollback>) -> Result<Json<Changed>, String> {
        let (target, namespace) = self.in_namespace(input.namespace)?;
        let args = RollbackArgs {
            name: input.name,
            to: given(input.to),
            dry_run: input.dry_run,
            wait: false,
            pr: pull_request(input.pr),
            suspend_image_automation: false,
            timeout: crate::timeouts::COMMAND,
            repo: self.repo.clone(),
        };
        let global = crate::cli::GlobalArgs { namespace: Some(namespace), ..self.global.clone() };
        let request = args.request(&global).map_err(said)?;
        let (outcome, output, _) = rolled_back(&request, &target, &self.printer).await.map_err(said)?;
        self.answered(Changed { name: outcome.name, dry_run: input.dry_run, output })
    }

    /// `flux reconcile` of an app.
    #[tool(
        description = "Ask Flux to reconcile an app now instead of at its next interval, as `flux reconcile kustomization|helmrelease NAME` does (an annotation on the app's object; nothing in the config repo changes). app_status then shows what it did.",
        annotations(destructive_hint = false, idempotent_hint = true)
    )]
    async fn reconcile_app(&self, Parameters(input): Parameters<Reconcile>) -> Result<Json<Changed>, String> {
        let (_, namespace) = self.in_namespace(input.namespace)?;
        let name = crate::names::validate_name(&input.name, "the app").map_err(said)?;
        let requested = crate::readers::request_reconcile(&self.cluster, &namespace, &name).await.map_err(said)?;
        let Some(requested) = requested else { return Err(no_app(&name, &namespace)) };
        let output = format!("reconcile requested (reconcile.fluxcd.io/requestedAt={requested})\n");
        self.answered(Changed { name, dry_run: false, output })
    }

    /// `kubectl gitops pr merge NUMBER`.
    #[tool(
        description = "Merge one of the pull requests kubectl-gitops opened, as `kubectl gitops pr merge NUMBER`: only when `pr_show` finds it valid (its branch is exactly what its recorded request plans), at the head it validated. Flux applies it at its next sync.",
        annotations(destructive_hint = true)
    )]
    async fn merge_pr(&self, Parameters(input): Parameters<MergePr>) -> Result<Json<Changed>, String> {
        let method = match given(input.method).as_deref() {
            None | Some("merge") => MergeMethod::Merge,
            Some("squash") => MergeMethod::Squash,
            Some("rebase") => MergeMethod::Rebase,
            Some(other) => {
                return Err(said(Error::usage(format!("method {other:?}"), "merge, squash or rebase")));
            }
        };
        if !self.writes.self_merge && self.opened_pull_requests().contains(&input.number) {
            return Err(said(Error::usage(
                format!(
                    "#{} was opened by this server: a change an assistant made is merged after a second look",
                    input.number
                ),
                "a person reviews and merges it (`kubectl gitops pr show`, `pr merge`), or the server runs with --allow-self-merge",
            )));
        }
        let repo = self.repo.settings().map_err(said)?;
        let request = crate::pr::Request::show_number(input.number, repo, self.global.output_format());
        let target = Target::from_args(&self.global);
        let action = Action::Merge { method, auto: false };
        let (output, merged) =
            crate::pr::act(action, &request, &target, self.replan, &self.printer).await.map_err(said)?;
        if !merged {
            return Err(said(Error::Negative {
                message: format!("#{} was not merged: it is not valid\n{output}", input.number),
                hint: Some("pr_show says why; open the change again".into()),
            }));
        }
        bounded(Changed { name: format!("#{}", input.number), dry_run: false, output })
    }
}

impl Tools {
    /// `changed` as the tool's result, the pull request it opened remembered.
    fn answered(&self, changed: Changed) -> Result<Json<Changed>, String> {
        // The change engine says `pull request opened: URL` (drive.rs) of one it opened.
        let opened =
            changed.output.lines().filter_map(|line| line.split_once(" opened: ")).filter_map(|(_, url)| {
                crate::provider::PullRequestReference::parse(url).map(|reference| reference.number)
            });
        let numbers: Vec<u64> = opened.collect();
        self.opened_pull_requests().extend(numbers);
        bounded(changed)
    }

    fn opened_pull_requests(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<u64>> {
        // A panic elsewhere while it was held leaves the numbers as they were: still to refuse.
        self.opened.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `app suspend --persist` (`suspend`) or `app resume --persist`.
    async fn suspended(&self, input: AppChange, suspend: bool) -> Result<Json<Changed>, String> {
        let (target, _) = self.in_namespace(input.namespace)?;
        let name = crate::names::validate_name(&input.name, "the app").map_err(said)?;
        let request = SuspendRequest {
            name: name.clone(),
            suspend,
            persist: true,
            repo: self.repo.settings().map_err(said)?,
            delivery: crate::change::settings::delivery(pull_request(input.pr), None, input.dry_run, false),
        };
        let output = crate::app::suspend(&request, &target, &self.printer).await.map_err(said)?;
        self.answered(Changed { name, dry_run: input.dry_run, output })
    }
}
