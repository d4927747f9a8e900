//! `kubectl gitops app rollback NAME`: back to an earlier deployment, through git.
//!
//! An app `app add` added whose change lives in the config repo (a HelmRelease; a source that
//! follows a tag, a semver range or an artifact) is rolled back there instead: its files restored
//! at the commit that asked for its last good deployment ([`config`]), one commit the sync applies.
//!
//! The app's directory in the repository Flux applies it from (the Kustomization's `spec.path` in
//! its GitRepository, on the branch it follows) is restored to what it held at that deployment's
//! commit, in one commit pushed to that branch: Flux applies it as any change, and nothing in the
//! cluster is patched for Flux to undo. The restored manifests are those of the earlier
//! deployment, so `app history` marks the new deployment as a rollback.
//!
//! Refused, before anything is written, when it cannot be done cleanly: the branch holds a newer
//! commit than the one Flux runs (someone else's change is on its way), an ImageUpdateAutomation
//! writes to the same repository (it would move the image forward again; `--suspend-image-automation`
//! suspends it just before the push, and resumes it if the push fails), or the branch moves while
//! we push.

mod automation;
mod config;
mod files;

use std::time::Duration;

use kube::api::{Api, DynamicObject};
use serde::Serialize;
use serde_json::Value;

use crate::change::deliver::Route;
use crate::change::plan::{Delivery, Plan};
use crate::change::{self, ConfigRepo, RepoSettings, Target};
use crate::cli::{GlobalArgs, OutputFormat, RepoArgs};
use crate::cluster::Cluster;
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{GIT_REPOSITORY, HELM_RELEASE, KUSTOMIZATION};
use crate::flux::bootstrap::SYNC_NAME;
use crate::git::{Checkout, Remote, Workspace};
use crate::output::Printer;
use crate::plan::FileChange;
use crate::preview::SourceRef;
use crate::preview::sources::{self, GitRef};
use crate::readers::{Limits, WaitRequest};
use crate::repo_access::{parse_url, same_server};

/// `app rollback`.
#[derive(Debug, Clone, clap::Args)]
pub struct RollbackArgs {
    /// The app: a Kustomization or HelmRelease of this name in the Flux namespace (-n, default flux-system).
    pub name: String,

    /// Where to: the deployment (app rollback) or the environment (promote) that is the target.
    ///
    /// The deployment to go back to: its commit by its full hash, its Flux revision
    /// (main@sha1:…) as `kubectl gitops app history NAME` lists them, or a tag of the repository
    /// restored, which names its commit (default: the last
    /// deployment before the current one that was Ready). For an app whose change is in the
    /// config repo (a HelmRelease, a source at a tag or an artifact), the config repo's commit
    /// whose files to restore (default: the one that asked for its last good deployment).
    #[arg(long, value_name = "TARGET")]
    pub to: Option<String>,

    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Wait until Flux has applied the change and it is Ready.
    #[arg(long)]
    pub wait: bool,

    /// Push to a new branch and open a pull request (GitLab: merge request).
    ///
    /// Push the rollback to a new branch of the app's repository and open a pull request into
    /// the branch Flux follows, on the config repo's forge (the app's repository must be on the
    /// same server); Flux applies it once it is merged.
    #[arg(long, conflicts_with = "wait")]
    pub pr: bool,

    /// Suspend the image automations that write to the app's repository.
    ///
    /// Suspend the ImageUpdateAutomations that write to the app's repository (as `flux suspend
    /// image update` does) just before the rollback is pushed, so that they do not move the
    /// image forward again; they stay suspended until you resume them (`flux resume image
    /// update`). Without it, such an automation refuses the rollback.
    #[arg(long)]
    pub suspend_image_automation: bool,

    /// How long to wait.
    ///
    /// How long --wait waits.
    #[arg(long, value_name = "DURATION", default_value = crate::timeouts::COMMAND_FLAG, value_parser = crate::duration::parse)]
    pub timeout: Duration,

    #[command(flatten)]
    pub repo: RepoArgs,
}

/// What `app rollback` is asked, checked.
#[derive(Debug, Clone)]
pub struct RollbackRequest {
    name: String,
    to: Option<To>,
    dry_run: bool,
    wait: bool,
    pr: bool,
    suspend_image_automation: bool,
    timeout: Duration,
    repo: RepoSettings,
    format: OutputFormat,
}

impl RollbackArgs {
    /// The request these flags make.
    pub fn request(&self, global: &GlobalArgs) -> Result<RollbackRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
        let name = crate::names::validate_name(&self.name, "app name")?;
        let to = match &self.to {
            Some(given) => match crate::names::full_commit(given) {
                Some(commit) => Some(To::Commit(commit)),
                None if crate::names::validate_git_ref(given, "--to", "tags").is_ok()
                    && !given.chars().all(|c| c.is_ascii_hexdigit()) =>
                {
                    Some(To::Tag(given.clone()))
                }
                None => {
                    return Err(Error::usage(
                        format!("--to {given}: not a commit's full hash, a Flux revision (main@sha1:…) or a tag"),
                        "name the deployment as `kubectl gitops app history NAME` lists it, its commit's full 40-character hash, or a tag",
                    ));
                }
            },
            None => None,
        };
        Ok(RollbackRequest {
            name,
            to,
            dry_run: self.dry_run,
            wait: self.wait,
            pr: self.pr,
            suspend_image_automation: self.suspend_image_automation,
            timeout: self.timeout,
            repo: self.repo.settings()?,
            format,
        })
    }
}

/// What `app rollback -o json|yaml` prints.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollback {
    /// The app's namespace.
    pub namespace: String,
    /// The app.
    pub name: String,
    /// The repository and branch written: `URL (branch B)`.
    pub repository: String,
    /// The directory restored (a HelmRelease app's: its directories in the config repo, comma-separated).
    pub path: String,
    /// The commit Flux ran before (the current deployment's; a HelmRelease app's: the config repo's).
    pub from: String,
    /// The commit whose files were restored (the earlier deployment's).
    pub to: String,
    /// The commit pushed; absent with --dry-run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// With --pr: the pull request opened, by its address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
    /// The files restored: `add`, `update` or `delete` and the path.
    pub files: Vec<String>,
    /// The ImageUpdateAutomations suspended (`--suspend-image-automation`), as NAMESPACE/NAME.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suspended: Vec<String>,
    /// True with --dry-run: nothing was written.
    pub dry_run: bool,
    /// With --dry-run: what the restored files would change in the cluster (the app's objects
    /// built from them and compared by a server-side dry run, as `drift` compares).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<crate::drift::Drift>,
    /// With --dry-run, for an app whose change is in the config repo: what the config repo with
    /// the restored files would change in the cluster (`kubectl gitops diff`'s comparison: the
    /// sources moved back fetched, HelmReleases rendered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_preview: Option<crate::preview::Diff>,
}

impl crate::output::Kind for Rollback {
    const KIND: &'static str = "Rollback";
}

/// `kubectl gitops app rollback NAME`: rolls back, and prints what [`rolled_back`] answers (the
/// `Rollback` document with `-o json|yaml`).
pub async fn rollback(request: &RollbackRequest, target: &Target, printer: &Printer) -> Result<ExitCode> {
    let (outcome, text, code) = rolled_back(request, target, printer).await?;
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            printer.structured(&crate::output::document(&outcome), request.format)?
        }
        _ => printer.data(&text)?,
    }
    Ok(code)
}

/// The rollback: what was (or with `--dry-run` would be) done, the text that says it (the plan
/// with its diff and preview, or the line of the commit or pull request), and the exit code.
pub async fn rolled_back(
    request: &RollbackRequest,
    target: &Target,
    printer: &Printer,
) -> Result<(Rollback, String, ExitCode)> {
    let mut context = change::context(target, &request.repo, false, printer).await?;
    let cluster = context.cluster()?.clone();
    let namespace = context.namespace.clone();
    let located = locate(&context, &cluster, &namespace, &request.name).await?;
    let Located { app, source, url, branch, .. } = &located;
    let (url, branch) = (url.clone(), branch.clone());
    let automations = automation::image_automations(&cluster, source, request.suspend_image_automation).await?;
    let config = crate::change::preview_at::credentials_later(&mut context, &request.repo).remote().await;
    let restore = restore_of(&located, request, config.as_ref()).await?;
    printer.progress(&format!("cloning branch {branch} of {url}"));
    let (head_checkout, head) = sources::fetch(&url, &GitRef::Branch(branch.clone()), config.as_ref())
        .await
        .map_err(|why| Error::Remote { message: format!("{url}: {why}"), hint: None })?;
    if head != restore.running {
        return Err(Error::usage(
            format!(
                "branch {branch} of {url} is at {}, a newer commit than the {} Flux runs: another change is on its way",
                short(&head),
                short(&restore.running)
            ),
            format!(
                "wait until Flux has applied it (`kubectl gitops app status {} --wait`), then roll back from there",
                request.name
            ),
        ));
    }
    let at = GitRef::Commit { branch: branch.clone(), commit: restore.to.clone() };
    let (earlier, _) = sources::fetch(&url, &at, config.as_ref()).await.map_err(|why| {
        Error::usage(
            format!("{} is not a commit of branch {branch} of {url}: {why}", short(&restore.to)),
            "name a deployment `kubectl gitops app history NAME` lists",
        )
    })?;
    let mut files = Vec::new();
    for dir in &restore.dirs {
        files.extend(files::restored(&head_checkout.files(), &earlier.files(), dir)?);
    }
    if files.is_empty() {
        return Err(Error::usage(
            format!(
                "{} of {url} is the same at {} as now: what changed is not there",
                restore.path,
                short(&restore.to)
            ),
            "look at the changes `kubectl gitops app history NAME` lists: the app's definition or values may have moved in the config repo",
        ));
    }
    let message = commit_message(&request.name, app, &restore);
    let mut outcome = Rollback {
        namespace: namespace.clone(),
        name: request.name.clone(),
        repository: format!("{url} (branch {branch})"),
        path: restore.path.clone(),
        from: restore.running.clone(),
        to: restore.to.clone(),
        commit: None,
        pull_request: None,
        files: files.iter().map(|file| format!("{} {}", file.verb(), file.path)).collect(),
        suspended: automations.names.iter().map(|name| format!("{}/{name}", source.namespace())).collect(),
        dry_run: request.dry_run,
        preview: None,
        config_preview: None,
    };
    if request.dry_run {
        if located.config.is_none() {
            // The app's own repository: its Kustomization built from the restored files.
            let root = earlier.files().root().to_path_buf();
            outcome.preview = Some(crate::drift::preview(&cluster, app, &root, printer).await?);
        } else {
            // The config repo: the restored files written into the scratch clone of its head
            // (deleted with it), compared as `diff` compares a checkout.
            crate::publish::write(&mut head_checkout.files(), &files)?;
            let root = head_checkout.files().root().to_path_buf();
            let input = crate::preview::PlanInput {
                cluster: &cluster,
                versions: &context.versions,
                namespace: &namespace,
                dir: &root,
                compared: format!("the config repo with {} rolled back", request.name),
                config_remote: config.as_ref(),
                printer,
            };
            outcome.config_preview = Some(crate::preview::of_plan(input).await?);
        }
        let text = plan_text(&outcome, &message, &files, request, printer);
        return Ok((outcome, text, ExitCode::Ok));
    }
    // Flux will fold the restored snapshot into its newest entry under the new revision: keep
    // the deployments in the app's ledger first, so that `app history` can mark the rollback.
    crate::readers::app_history(&cluster, &namespace, &request.name, false, crate::readers::Ledgers::Keep, printer)
        .await?;
    automations.set_suspended(&cluster, true, printer).await?;
    let checkout = (head_checkout, config.as_ref());
    let delivered = deliver(&context, checkout, &located, (&message, files), &mut outcome, request, printer).await;
    if delivered.is_err() {
        // Nothing half done: an automation suspended for a rollback that did not happen runs again.
        let _ = automations.set_suspended(&cluster, false, printer).await;
    }
    let line = delivered?;
    let code = match &outcome.commit {
        Some(commit) if outcome.pull_request.is_none() => {
            reconcile_and_wait(&context, &located, commit, request, printer).await?
        }
        _ => ExitCode::Ok,
    };
    Ok((outcome, line, code))
}

/// What to restore: a Kustomization's path in its repository at the last deployment that was
/// Ready (or `--to`); a HelmRelease app's files in the config repo at the commit that asked for
/// its last good release (or `--to`).
async fn restore_of(located: &Located, request: &RollbackRequest, config: Option<&Remote>) -> Result<Restore> {
    let app = &located.app;
    let name = &request.name;
    let not_applied = |what: &str| {
        Error::usage(
            format!("{what} has not been applied yet: there is nothing to roll back"),
            "`kubectl gitops app status NAME` shows why",
        )
    };
    let restore = match &located.config {
        None => {
            let running = current_commit(app).ok_or_else(|| not_applied(name))?;
            let to = match &request.to {
                Some(to) => resolved(to, located, config).await?,
                None => last_ready(app, &running)?,
            };
            let path = app["spec"]["path"].as_str().unwrap_or("./").to_string();
            let dirs = vec![files::repo_dir(&path)?];
            Restore { dirs, path, running, to, because: String::new() }
        }
        Some((sync, dirs)) => {
            let running = current_commit(sync).ok_or_else(|| not_applied("the config repo's sync"))?;
            let (to, because) = match &request.to {
                Some(to) => (resolved(to, located, config).await?, String::new()),
                None => {
                    let (deployment, current) = config::last_good_deployment(app)?;
                    let remote = sources::remote_for(&located.url, config);
                    let (reference, paths) = (format!("refs/heads/{}", located.branch), dirs.clone());
                    let log = crate::git::off_runtime(crate::timeouts::GIT_READ, move || {
                        crate::git::log::log(&remote, &reference, &paths)
                    })
                    .await
                    .map_err(|error| Error::Remote { message: format!("{}: {error}", located.url), hint: None })?;
                    (config::config_commit(&log, &deployment, &current)?, config::asked_for(&deployment))
                }
            };
            Restore { dirs: dirs.clone(), path: dirs.join(", "), running, to, because }
        }
    };
    if restore.to == restore.running {
        return Err(Error::usage(
            format!("{} runs {} already", request.name, short(&restore.to)),
            "name an earlier deployment with --to (`kubectl gitops app history NAME` lists them)",
        ));
    }
    Ok(restore)
}

/// The commit `--to` names: as given, or the one its tag points at in the repository restored.
async fn resolved(to: &To, located: &Located, config: Option<&Remote>) -> Result<String> {
    match to {
        To::Commit(commit) => Ok(commit.clone()),
        To::Tag(tag) => sources::fetch(&located.url, &GitRef::Tag(tag.clone()), config)
            .await
            .map(|(_, commit)| commit)
            .map_err(|why| {
                Error::usage(
                    format!("--to {tag}: not a tag of {}: {why}", located.url),
                    "name a tag of the app's repository, or the deployment's commit (`kubectl gitops app history NAME` lists them)",
                )
            }),
    }
}

/// Delivers the rollback through the change engine into the app's repository: a commit pushed
/// to the branch Flux follows (a push refused because the branch moved meanwhile refuses the
/// rollback), or with `--pr` a branch of its own with a pull request on the config repo's
/// forge, read back before it is reported. Fills in `outcome` and returns the line that says what
/// was done.
async fn deliver(
    context: &change::Context,
    (head_checkout, config): (Workspace, Option<&Remote>),
    located: &Located,
    (message, files): (&str, Vec<FileChange>),
    outcome: &mut Rollback,
    request: &RollbackRequest,
    printer: &Printer,
) -> Result<String> {
    let (url, branch) = (&located.url, &located.branch);
    let app = format!("{}/{}", outcome.namespace, outcome.name);
    let hosted = match request.pr {
        true => Some(app_forge(context, url, config, &request.repo)?),
        false => None,
    };
    let delivery = match &hosted {
        Some(hosted) => Delivery::PullRequest {
            branch: format!("gitops/rollback-{}-{}", request.name, short(&outcome.to)),
            noun: hosted.provider.kind().pull_request_noun(),
            merge: false,
        },
        None => Delivery::Push,
    };
    let repo = ConfigRepo { remote: sources::remote_for(url, config), branch: branch.clone(), hosted, platform: false };
    let why = message.split_once("\n\n").map(|(_, body)| body.replace('\n', " ")).into_iter().collect();
    let plan = Plan {
        message: message.to_string(),
        repo: url.clone(),
        branch: branch.clone(),
        files,
        delivery,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects: Vec::new(),
        wait: None,
        notes: why,
        new_repo: None,
        request: Vec::new(),
    };
    let moved = |_: &Checkout| -> Result<Vec<FileChange>> {
        Err(Error::usage(
            format!("someone pushed to branch {branch} of {url} meanwhile; nothing was pushed"),
            "look at what they pushed (`kubectl gitops app history NAME`), and roll back again once Flux has applied it",
        ))
    };
    let route = Route::of(&plan.delivery, &plan.files, Some(head_checkout), Some(&repo))?;
    let author = crate::publish::author();
    let done =
        change::deliver::execute(&plan, route, &author, context.cluster.as_ref(), &moved, request.timeout, printer)
            .await?;
    outcome.commit = done.commit.clone();
    if let Some((opened, _)) = &done.pull_request {
        outcome.pull_request = Some(opened.url.clone());
        return Ok(format!("opened pull request #{} to roll back {app}: {}", opened.number, opened.url));
    }
    let commit = done.commit.ok_or_else(|| Error::Internal("the rollback commit was not pushed".into()))?;
    Ok(format!(
        "rolled back {app} to {}: commit {} pushed to branch {branch} of {url}",
        short(&outcome.to),
        short(&commit)
    ))
}

/// The forge a rollback's pull request opens on: the config repo's, which the app's repository
/// must be on (its server, and its token).
fn app_forge(
    context: &change::Context,
    url: &str,
    config: Option<&Remote>,
    settings: &RepoSettings,
) -> Result<change::HostedRepo> {
    let no_forge = || {
        Error::usage(
            format!("{url} is not on the config repo's forge: there is no pull request to open there"),
            "roll back without --pr (a commit pushed to the branch), or open the pull request yourself",
        )
    };
    let hosted = context.hosted_repo(settings)?.ok_or_else(no_forge)?;
    let on_config_server = config.is_some_and(
        |config| matches!((parse_url(url), parse_url(&config.url)), (Ok(a), Ok(b)) if same_server(&a, &b)),
    );
    if !on_config_server {
        return Err(no_forge());
    }
    let path = crate::repo_access::path_of(url)?;
    let repo = crate::provider::RepoRef::parse(path.trim_start_matches('/').trim_end_matches(".git"))?;
    Ok(change::HostedRepo { repo, ..hosted })
}

/// The app's Kustomization and the git repository and branch it is applied from, with the APIs
/// to ask Flux to reconcile them.
struct Located {
    app: Value,
    source: SourceRef,
    url: String,
    branch: String,
    kustomizations: Api<DynamicObject>,
    repositories: Api<DynamicObject>,
    /// An app whose change is in the config repo (a HelmRelease, a source that follows a tag or
    /// an artifact): the config repo's sync Kustomization, and the app's directories there.
    config: Option<(Value, Vec<String>)>,
}

/// `--to`: a commit, or a tag of the repository restored (resolved to its commit when read).
#[derive(Debug, Clone)]
enum To {
    Commit(String),
    Tag(String),
}

/// What a rollback restores: directories of the repository, as they were at a commit.
struct Restore {
    /// The directories, relative to the repository's root (empty: all of it).
    dirs: Vec<String>,
    /// What the Rollback document's `path` says: the app's path, or its directories.
    path: String,
    /// The commit Flux runs now.
    running: String,
    /// The commit whose files are restored.
    to: String,
    /// Why that commit, for the commit message.
    because: String,
}

/// Finds the app `name` in `namespace` and its source, refusing what a commit cannot roll back.
async fn locate(context: &change::Context, cluster: &Cluster, namespace: &str, name: &str) -> Result<Located> {
    let version = context.versions.lookup(&KUSTOMIZATION).unwrap_or(KUSTOMIZATION.version).to_string();
    let kustomizations: Api<DynamicObject> =
        Api::namespaced_with(cluster.client.clone(), namespace, &KUSTOMIZATION.at(&version));
    let git_version = context.versions.lookup(&GIT_REPOSITORY).unwrap_or(GIT_REPOSITORY.version).to_string();
    let getter = Getter { cluster, git_repositories: GIT_REPOSITORY.at(&git_version) };
    let app = match getter.get(&kustomizations, name).await? {
        Some(app) => app,
        None => {
            let release = match context.versions.lookup(&HELM_RELEASE) {
                Some(version) => {
                    let api = Api::namespaced_with(cluster.client.clone(), namespace, &HELM_RELEASE.at(version));
                    getter.get(&api, name).await?
                }
                None => None,
            };
            release.ok_or_else(|| {
                Error::usage(
                    format!("there is no Kustomization or HelmRelease {namespace}/{name} to roll back"),
                    "`kubectl gitops app list` lists the apps",
                )
            })?
        }
    };
    // A Kustomization of a GitRepository that follows a branch: the change is in that branch.
    let why_not_own = if app["kind"] == "Kustomization" {
        let source = SourceRef::applied_by(&app);
        match getter.branch_of(&source).await? {
            Ok((url, branch, repositories)) => {
                return Ok(Located { app, source, url, branch, kustomizations, repositories, config: None });
            }
            Err(why) => why,
        }
    } else {
        format!("HelmRelease {namespace}/{name}")
    };
    // Otherwise in the config repo: its definition (a chart version or values, a tag).
    let dirs = config_app_dirs(context, &app, name, &why_not_own)?;
    let sync = getter.get(&kustomizations, SYNC_NAME).await?.ok_or_else(|| {
        Error::usage(format!("there is no sync Kustomization {namespace}/{SYNC_NAME}"), "run `kubectl gitops install`")
    })?;
    let source = SourceRef::applied_by(&sync);
    let (url, branch, repositories) = getter.branch_of(&source).await?.map_err(|why| {
        Error::usage(format!("the config repo's sync: {why}"), "rollback needs a source that follows a branch")
    })?;
    Ok(Located { app, source, url, branch, kustomizations, repositories, config: Some((sync, dirs)) })
}

/// Reads what a rollback needs, as JSON.
struct Getter<'a> {
    cluster: &'a Cluster,
    git_repositories: kube::discovery::ApiResource,
}

impl Getter<'_> {
    async fn get(&self, api: &Api<DynamicObject>, name: &str) -> Result<Option<Value>> {
        let found = api.get_opt(name).await.map_err(|error| self.cluster.error(error))?;
        found.map(|object| serde_json::to_value(object).map_err(|error| Error::Internal(error.to_string()))).transpose()
    }

    /// The URL and branch of `source` when it is a GitRepository that follows a branch (and the
    /// API of its kind); else why a commit there would not be applied.
    async fn branch_of(
        &self,
        source: &SourceRef,
    ) -> Result<std::result::Result<(String, String, Api<DynamicObject>), String>> {
        if source.kind() != GIT_REPOSITORY.kind {
            return Ok(Err(format!("it applies a {source}, not a git branch")));
        }
        let repositories: Api<DynamicObject> =
            Api::namespaced_with(self.cluster.client.clone(), source.namespace(), &self.git_repositories);
        let repository = self.get(&repositories, source.name()).await?.ok_or_else(|| {
            Error::usage(format!("{source} does not exist"), "`kubectl gitops app status NAME` shows why")
        })?;
        let url = repository["spec"]["url"].as_str().unwrap_or_default().to_string();
        Ok(match sources::git_ref(&repository["spec"]["ref"]) {
            Ok(GitRef::Branch(branch)) => Ok((url, branch, repositories)),
            Ok(other) => Err(format!("{source} follows {other}, not a branch")),
            Err(why) => Err(format!("{source}: {why}")),
        })
    }
}

/// The config repo directories of an app whose change is not in a branch of its own; only an
/// app `app add` added (labelled so) on a cluster `install` recorded has them where we know.
fn config_app_dirs(context: &change::Context, app: &Value, name: &str, why_not_own: &str) -> Result<Vec<String>> {
    let ours = app["metadata"]["labels"][crate::record::MANAGED_BY_LABEL] == crate::record::MANAGED_BY_VALUE;
    match (ours, context.record()) {
        // The record's path is the cluster's word: read as a Kustomization's path is, never
        // leaving the repository.
        (true, Some(record)) => config::app_dirs(name, &record.path).iter().map(|dir| files::repo_dir(dir)).collect(),
        _ => Err(Error::usage(
            format!(
                "{why_not_own}: rollback goes through its definition in the config repo, and {name} was not added by `kubectl gitops app add` on a cluster it installed"
            ),
            "point it back in the repository that defines it (an earlier tag, chart version or values), then `kubectl gitops app status NAME --wait`",
        )),
    }
}

/// Asks Flux to fetch and apply now, and with `--wait` waits as `app status NAME --wait
/// --revision COMMIT` does; a HelmRelease app as a change to the config repo is waited for
/// (the sync and the apps layer at the commit, then the HelmRelease Ready).
async fn reconcile_and_wait(
    context: &change::Context,
    located: &Located,
    commit: &str,
    request: &RollbackRequest,
    printer: &Printer,
) -> Result<ExitCode> {
    let (namespace, name) = (located.app["metadata"]["namespace"].as_str().unwrap_or_default(), &request.name);
    let cluster = context.cluster()?;
    if located.config.is_some() {
        let objects = [(namespace.to_string(), name.clone())];
        let awaited = crate::change::wait::Awaited {
            noun: "app",
            name,
            objects: &objects,
            wants_ready: true,
            layer: Some(crate::flux::bootstrap::APPS_LAYER),
        };
        if request.wait {
            crate::change::wait::after_push(cluster, context, &awaited, commit, request.timeout).await?;
        } else {
            let sync = (&located.repositories, located.source.name());
            crate::flux::reconcile::request_with_source(sync, (&located.kustomizations, SYNC_NAME), printer).await;
        }
        return Ok(ExitCode::Ok);
    }
    crate::flux::reconcile::request_with_source(
        (&located.repositories, located.source.name()),
        (&located.kustomizations, name),
        printer,
    )
    .await;
    if !request.wait {
        return Ok(ExitCode::Ok);
    }
    let wait = WaitRequest {
        limits: Limits { timeout: request.timeout, grace_period: crate::timeouts::GRACE_PERIOD },
        revision: Some(commit.to_string()),
    };
    crate::readers::wait_for_app(cluster.clone(), namespace, name, &wait, OutputFormat::Table, printer).await
}

/// The rollback commit's message: what is restored, from which deployment, and why.
fn commit_message(name: &str, app: &Value, restore: &Restore) -> String {
    let failed = app["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|condition| condition["type"] == "Ready" && condition["status"] == "False")
        .and_then(|condition| condition["reason"].as_str());
    let why = failed.map_or_else(String::new, |reason| format!(", which is not Ready ({reason})"));
    format!(
        "Roll back {name} to {}\n\nRestores {} as it was at commit {}{}, the deployment before {}{why}.\n\nMade by kubectl gitops app rollback {name}.",
        short(&restore.to),
        restore.path,
        restore.to,
        restore.because,
        restore.running
    )
}

/// The plan `--dry-run` prints: the steps, then each file's diff.
fn plan_text(
    outcome: &Rollback,
    message: &str,
    files: &[FileChange],
    request: &RollbackRequest,
    printer: &Printer,
) -> String {
    let mut steps: Vec<String> = outcome
        .suspended
        .iter()
        .map(|automation| {
            format!("suspend ImageUpdateAutomation {automation}, which would move the image forward again")
        })
        .collect();
    steps.push(format!(
        "commit \"{}\" and push it to {}",
        message.lines().next().unwrap_or_default(),
        outcome.repository
    ));
    steps.push(format!("ask Flux to reconcile {}/{} now", outcome.namespace, outcome.name));
    if request.wait {
        steps.push(format!("wait until {}/{} is Ready at the new commit", outcome.namespace, outcome.name));
    }
    let mut text = crate::plan::render_steps(steps.iter().map(String::as_str));
    for file in files {
        text.push('\n');
        text.push_str(&crate::plan::unified_diff(file));
    }
    if let Some(preview) = &outcome.preview {
        text.push_str("\nWhat the cluster would get from the restored files:\n");
        text.push_str(&crate::drift::render_preview(preview, true, printer.stdout_style()));
    }
    if let Some(preview) = &outcome.config_preview {
        text.push_str("\nWhat the cluster would get from the restored files:\n");
        text.push_str(&crate::preview::render_text(preview, true, printer.stdout_style()));
    }
    text
}

/// The commit Flux runs: the one it last attempted (a failed deployment is the one rolled back
/// from), else the one it applied.
fn current_commit(app: &Value) -> Option<String> {
    let status = &app["status"];
    [&status["lastAttemptedRevision"], &status["lastAppliedRevision"]]
        .into_iter()
        .filter_map(Value::as_str)
        .find_map(crate::names::full_commit)
}

/// The commit of the last deployment before `running` that was Ready, from the snapshots Flux
/// keeps in the app's `status.history` (read, not kept: `app history`'s ledger is written by
/// looks, and a `--dry-run` writes nothing).
fn last_ready(app: &Value, running: &str) -> Result<String> {
    let history =
        crate::deployments::from_flux(crate::deployments::AppKind::Kustomization, app.pointer("/status/history"));
    history
        .iter()
        .filter(|deployment| !deployment.failed() && deployment.status == config::SUCCEEDED)
        .filter_map(|deployment| crate::names::full_commit(&deployment.revision))
        .find(|commit| commit != running)
        .ok_or_else(|| {
            let name = app["metadata"]["name"].as_str().unwrap_or_default();
            Error::usage(
                format!("{name} has no earlier deployment that was Ready in the 5 Flux keeps"),
                "name one with --to (`kubectl gitops app history NAME` lists them all)",
            )
        })
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}
