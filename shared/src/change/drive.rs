//! The driver every changing verb runs through (`app add|remove|suspend`, `platform`, `tenant`,
//! `monitoring install`, `component upgrade`, `upgrade`): a [`Change`] is planned against a clone
//! of the config repo, printed for `--dry-run` or delivered (one commit or pull request), then
//! waited for when asked. It says what it did as a line, or with `-o json|yaml` as one `Change`
//! document ([`super::result`]).

use super::context::{ConfigRepo, Context};
use super::layout::SuspendPatch;
use super::plan::{self, Delivery, FileChange, Plan};
use super::result::{ChangeResult, DoneChange, PlannedChange, Waited};
use super::settings::{DeliveryMode, DeliverySettings};
use super::{deliver, new_repo, wait};
use crate::cli::OutputFormat;
use crate::error::{Error, Result};
use crate::git::Workspace;
use crate::output::Printer;
use crate::preview::PlanInput;
use crate::publish::Replan;
use std::time::Duration;

/// What one changing verb (`app …`, `component upgrade`, `upgrade`) asks for, before it is
/// planned: the repo changes and cluster writes it computed, and how to word them.
pub(crate) struct Change<'a> {
    /// `app`, `component` or `flux`: what the last line names.
    pub noun: &'static str,
    /// `add`, `remove`, `suspend`, `resume`, `upgrade`: names the pull request branch.
    pub verb: &'static str,
    /// `added`, `removed`, …: the last line says `app NAME <done> at <commit>`.
    pub done: &'static str,
    pub app: &'a str,
    pub message: String,
    pub files: Vec<FileChange>,
    pub patches: Vec<SuspendPatch>,
    /// Flux kinds whose storage is migrated before the commit.
    pub migrations: Vec<crate::flux::storage::StoredKind>,
    pub objects: Vec<String>,
    pub wait: Option<String>,
    pub notes: Vec<String>,
    /// What `--wait` waits for once the sync applied the commit; `None`: the caller waits
    /// itself, on the commit [`drive_change`] returns.
    pub awaits: Option<Awaits>,
    /// The answer when the config repo already holds the change (`None`: not a question).
    pub already_there: Option<String>,
    /// `app add --create-repo`: the app's repository, made first.
    pub new_repo: Option<new_repo::ForApp>,
    /// The words that plan this change again, recorded in a pull request's body
    /// ([`super::recorded`]); empty for a change `pr show` does not re-plan.
    pub request: Vec<String>,
}

/// The releases a change's `--wait` follows after the push: Kustomizations or HelmReleases by
/// (namespace, name), Ready or gone.
pub(crate) struct Awaits {
    pub objects: Vec<(String, String)>,
    /// Ready (`true`), or gone.
    pub ready: bool,
    /// The layer whose list the change is in (`None`: the sync applies it, as components).
    pub layer: Option<crate::flux::bootstrap::Layer>,
}

impl Awaits {
    /// One release, in `layer`'s list.
    pub fn one(
        namespace: &str,
        name: &str,
        ready: bool,
        layer: Option<crate::flux::bootstrap::Layer>,
    ) -> Option<Awaits> {
        Some(Awaits { objects: vec![(namespace.to_string(), name.to_string())], ready, layer })
    }

    /// What `--wait` saw once Flux applied `commit`.
    fn waited(&self, what: &str, commit: &str) -> Waited {
        Waited {
            what: what.to_string(),
            objects: self.objects.iter().map(|(namespace, name)| format!("{namespace}/{name}")).collect(),
            ready: self.ready,
            commit: commit.to_string(),
        }
    }

    /// What the wait after the push follows, for `noun` `name`.
    fn awaited<'a>(&'a self, noun: &'a str, name: &'a str) -> wait::Awaited<'a> {
        wait::Awaited { noun, name, objects: &self.objects, wants_ready: self.ready, layer: self.layer }
    }
}

/// The one driver of add, remove, suspend and resume: plans the change (how it is delivered),
/// then prints the plan (`--dry-run`), or carries it out ([`deliver::execute`]: patches, then
/// the commit, re-planned with `replan` on a refused push) and waits when asked.
pub(crate) async fn drive(
    context: &Context,
    args: &DeliverySettings,
    change: Change<'_>,
    checkout: Option<Workspace>,
    replan: Replan<'_>,
) -> Result<String> {
    drive_change(context, args, change, checkout, replan).await?.text(&context.printer)
}

/// What [`drive_change`] did: the last line to print, what execution did (`None` for a dry
/// run or a change already made), and both as the `Change` document.
pub(crate) struct Driven {
    pub line: String,
    pub outcome: Option<deliver::Outcome>,
    pub result: ChangeResult,
}

impl Driven {
    /// What the command prints: the `Change` document under `-o json|yaml`, else the line.
    pub fn text(&self, printer: &Printer) -> Result<String> {
        match printer.output() {
            format @ (OutputFormat::Json | OutputFormat::Yaml) => {
                crate::output::render_structured(&crate::output::document(&self.result), format)
            }
            _ => Ok(self.line.clone()),
        }
    }
}

/// [`drive`], for a caller that goes on after the change: with the delivery's outcome.
pub(crate) async fn drive_change(
    context: &Context,
    args: &DeliverySettings,
    change: Change<'_>,
    checkout: Option<Workspace>,
    replan: Replan<'_>,
) -> Result<Driven> {
    let delivery = match &context.repo {
        Some(repo) if !change.files.is_empty() => {
            delivery(repo, args, change.verb, change.app, &change.files, &context.printer).await?
        }
        _ => Delivery::Push,
    };
    let plan = Plan {
        delivery,
        message: change.message,
        repo: context.repo.as_ref().map(|repo| repo.remote.url.clone()).unwrap_or_default(),
        branch: context.repo.as_ref().map(|repo| repo.branch.clone()).unwrap_or_default(),
        files: change.files,
        patches: change.patches,
        migrations: change.migrations,
        objects: change.objects,
        wait: change.wait,
        notes: change.notes,
        new_repo: change.new_repo,
        request: change.request,
    };
    let mut result = ChangeResult {
        noun: change.noun.to_string(),
        verb: change.verb.to_string(),
        name: change.app.to_string(),
        dry_run: args.dry_run,
        plan: PlannedChange::of(&plan),
        done: None,
        waited: None,
        preview: None,
    };
    if args.dry_run {
        let mut line = plan.render();
        if let (true, Some(checkout)) = (args.preview, &checkout)
            && !plan.files.is_empty()
        {
            let text = previewed(context, &plan, checkout).await;
            line.push('\n');
            line.push_str(&text);
            result.preview = Some(text);
        }
        return Ok(Driven { line, outcome: None, result });
    }
    if plan.is_noop()
        && let Some(already_there) = change.already_there
    {
        return Ok(Driven { line: already_there, outcome: None, result });
    }
    for note in &plan.notes {
        context.printer.progress(note);
    }
    let route = deliver::Route::of(&plan.delivery, &plan.files, checkout, context.repo.as_ref())?;
    let cluster = context.cluster.as_ref();
    let outcome = deliver::execute(&plan, route, &args.author, cluster, replan, args.timeout, &context.printer).await?;
    let what = Done { noun: change.noun, name: change.app, done: change.done, awaits: change.awaits.as_ref() };
    let finished = finish(context, &plan, &outcome, &what, args.timeout).await?;
    result.done = Some(DoneChange::of(&outcome, finished.merge_commit.as_deref()));
    result.waited = finished.waited;
    Ok(Driven { line: finished.line, outcome: Some(outcome), result })
}

/// What the plan would change in the cluster: its files written into the scratch clone (a dry
/// run pushes nothing, and the clone is thrown away), compared by `preview`. A preview that
/// fails does not fail the plan: it says why instead, and warns.
async fn previewed(context: &Context, plan: &Plan, checkout: &Workspace) -> String {
    let compared = format!("the plan on top of {} of {}", plan.branch, plan.repo);
    let asked = async {
        crate::publish::write(&mut checkout.files(), &plan.files)?;
        let dir = checkout.files().root().to_path_buf();
        let input = PlanInput {
            cluster: context.cluster()?,
            versions: &context.versions,
            namespace: &context.namespace,
            dir: &dir,
            compared,
            config_remote: context.repo.as_ref().map(|repo| &repo.remote),
            printer: &context.printer,
        };
        crate::preview::plan_text(input).await
    };
    match asked.await {
        Ok(text) => text,
        Err(error) => {
            let said = format!("the cluster preview failed: {error}");
            context.printer.warning(&said);
            format!("{said}\n")
        }
    }
}

/// What [`finish`] saw: the last line, and what `--wait` followed.
struct Finished {
    line: String,
    /// The commit the pull request was merged as (`--wait` on a pull request).
    merge_commit: Option<String>,
    waited: Option<Waited>,
}

/// What was changed, for the last line: `<noun> <name> <done> at <commit>`.
#[derive(Clone, Copy)]
struct Done<'a> {
    noun: &'a str,
    name: &'a str,
    done: &'a str,
    /// What `--wait` waits for; `None`: the caller waits.
    awaits: Option<&'a Awaits>,
}

/// After execution: the lines to print, and `--wait`.
async fn finish(
    context: &Context,
    plan: &Plan,
    outcome: &deliver::Outcome,
    what: &Done<'_>,
    timeout: Duration,
) -> Result<Finished> {
    let Done { noun: what_noun, name: app, done, awaits } = *what;
    if let Some((pull_request, state)) = &outcome.pull_request {
        let noun = match &plan.delivery {
            Delivery::PullRequest { noun, .. } => noun,
            Delivery::Push => "pull request",
        };
        let verb = match state {
            crate::provider::PullRequestOutcome::Created => "opened",
            crate::provider::PullRequestOutcome::Updated => "updated",
        };
        let line = format!("{noun} {verb}: {}\n", pull_request.url);
        let repo = context.repo.as_ref();
        let forge = repo.zip(repo.and_then(|repo| repo.hosted.as_ref()));
        let (Some(awaits), Some(_), Some(cluster), Some(forge)) = (awaits, &plan.wait, &context.cluster, forge) else {
            return Ok(Finished { line, merge_commit: None, waited: None });
        };
        // --wait follows the request: merged (by us with --merge, or by a reviewer), then applied.
        context.printer.progress(line.trim_end());
        let merged = deliver::merged(forge, pull_request.number, timeout, &context.printer).await?;
        let awaited = awaits.awaited(what_noun, app);
        wait::after_push(cluster, context, &awaited, &merged, timeout).await?;
        return Ok(Finished {
            line: format!("{line}{what_noun} {app} {done} at {}\n", &merged[..merged.len().min(12)]),
            waited: plan.wait.as_deref().map(|what| awaits.waited(what, &merged)),
            merge_commit: Some(merged),
        });
    }
    if outcome.made_meanwhile {
        let line = format!("{what_noun} {app} was {done} meanwhile by another push; nothing to change\n");
        return Ok(Finished { line, merge_commit: None, waited: None });
    }
    let at = outcome.commit.as_deref().map(|sha| format!(" at {}", &sha[..sha.len().min(12)])).unwrap_or_default();
    let mut waited = None;
    if plan.wait.is_some()
        && let Some(awaits) = awaits
        && let (Some(cluster), Some(commit)) = (&context.cluster, &outcome.commit)
    {
        let awaited = awaits.awaited(what_noun, app);
        wait::after_push(cluster, context, &awaited, commit, timeout).await?;
        waited = plan.wait.as_deref().map(|what| awaits.waited(what, commit));
    }
    Ok(Finished { line: format!("{what_noun} {app} {done}{at}\n"), merge_commit: None, waited })
}

/// Checks what the provider can tell before anything is written: the repo exists, and which
/// delivery applies (`--pr`, `--auto-merge`, or a pull request when the branch is protected).
async fn delivery(
    repo: &ConfigRepo,
    args: &DeliverySettings,
    verb: &str,
    app: &str,
    files: &[FileChange],
    printer: &Printer,
) -> Result<Delivery> {
    let Some(hosted) = &repo.hosted else {
        if args.mode == DeliveryMode::PullRequest {
            return Err(Error::usage(
                "--pr needs a config repo on GitHub or GitLab",
                "install with --provider github|gitlab to get pull requests, or push directly (--auto-merge)",
            ));
        }
        return Ok(Delivery::Push);
    };
    let info = hosted.provider.get_repository(&hosted.repo).await?.ok_or_else(|| Error::Remote {
        message: format!("the config repo {} does not exist on {}", hosted.repo, hosted.provider.kind()),
        hint: Some("check the install record (kubectl gitops detect -o yaml) and the token's access".into()),
    })?;
    if info.can_push == Some(false) {
        return Err(Error::Remote {
            message: format!("the {} token may not push to {}", hosted.provider.kind(), hosted.repo),
            hint: Some(format!(
                "use a token with write access ({})",
                crate::config::token_hint(hosted.provider.kind(), hosted.provider.host())
            )),
        });
    }
    let pull_request = Delivery::PullRequest {
        branch: plan::pull_request_branch(verb, app, files),
        noun: hosted.provider.kind().pull_request_noun(),
        merge: args.merge,
    };
    match args.mode {
        DeliveryMode::PullRequest => return Ok(pull_request),
        DeliveryMode::Push => return Ok(Delivery::Push),
        DeliveryMode::Auto => {}
    }
    if hosted.provider.is_branch_protected(&hosted.repo, &repo.branch).await? {
        let noun = hosted.provider.kind().pull_request_noun();
        printer.progress(&format!("{} is protected: opening a {noun} instead of pushing to it", repo.branch));
        return Ok(pull_request);
    }
    Ok(Delivery::Push)
}
