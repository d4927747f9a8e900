//! A preview of the config repo at a state someone names (`diff`'s `--dir`, `--ref`,
//! `--pull-request`, the work tree; `pr comment` and `pr show --preview` a pull request's head):
//! the state resolved with the context, cloned when it is not on disk, and handed to the preview
//! engine ([`crate::preview`]) with the config repo's credentials, resolved only when a moved
//! source needs them.

use std::path::PathBuf;

use crate::change::{Context, RepoSettings};
use crate::cli::{GlobalArgs, OutputFormat, RepoArgs};
use crate::error::{Error, Result};
use crate::git::{Checkout, Workspace};
use crate::output::Printer;
use crate::preview::{self, Compared, Diff, RenderArgs, Rendering, existing_dir, sources};
use crate::provider::PullRequestReference;

/// How a state is compared, whoever names it (`diff`, `pr comment`): how it is rendered, and
/// where the config repo is cloned from.
#[derive(Debug, Clone, clap::Args)]
pub struct PreviewArgs {
    #[command(flatten)]
    pub render: RenderArgs,

    #[command(flatten)]
    pub repo: RepoArgs,
}

impl PreviewArgs {
    /// The request comparing `state` with these flags: `-o` and the other sources checked.
    pub fn request(&self, state: State, global: &GlobalArgs) -> Result<DiffRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
        Ok(DiffRequest {
            state,
            rendering: self.render.rendering()?,
            repo: self.repo.settings()?,
            format,
            headers: !global.no_headers,
        })
    }
}

/// The state of the config repo to compare with the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// The git work tree of the current directory, which must be a checkout of the config repo.
    WorkTree,
    /// `--dir`: a checkout, as it is on disk.
    Dir(PathBuf),
    /// `--ref BRANCH`: the branch's head, cloned.
    Branch(String),
    /// `--ref SHA`: a commit of the branch Flux follows, cloned.
    Commit(String),
    /// `--pull-request`: its head commit, cloned from its branch.
    PullRequest(PullRequestReference),
    /// A commit of a branch, cloned, as a caller that already read it names it (`pr show
    /// --preview`: the pull request's head it validated). `compared` says what it is.
    Pinned { branch: String, commit: String, compared: String },
}

/// `diff`, resolved.
#[derive(Debug, Clone)]
pub struct DiffRequest {
    /// What to compare with the cluster.
    pub state: State,
    /// How it is rendered.
    pub rendering: Rendering,
    /// How to reach the config repo (for a ref or a pull request).
    pub repo: RepoSettings,
    /// `-o`.
    pub format: OutputFormat,
    /// Print the table's header line.
    pub headers: bool,
}

/// What the state `request` names would change in the cluster of `context`: the preview `diff`
/// prints and `pr comment` posts.
pub async fn compute(context: &mut Context, request: &DiffRequest, printer: &Printer) -> Result<Diff> {
    let (resource, source) = preview::config_of(context.cluster()?, &context.versions, &context.namespace).await?;
    // A clone lives in a scratch directory until the comparison is over.
    let (dir, compared, _clone) = match &request.state {
        State::Dir(dir) => {
            let dir = existing_dir(dir)?;
            (dir.clone(), dir.display().to_string(), None)
        }
        State::WorkTree => {
            let dir = preview::work_tree(context.cluster()?, &context.versions, &source).await?;
            (dir.clone(), dir.display().to_string(), None)
        }
        _ => {
            let (clone, compared) = clone_state(context, request, printer).await?;
            let root = clone.files().root().to_path_buf();
            (root, compared, Some(clone))
        }
    };
    let checkout = Compared { resource, source, dir, compared };
    let cluster = context.cluster()?.clone();
    let credentials = credentials_later(context, &request.repo);
    preview::compare_checkout(&cluster, checkout, &request.rendering, credentials, printer).await
}

/// The config repo cloned at a branch, a commit or a pull request's head (pinned to the head's
/// full hash the provider gave), and how to name it.
async fn clone_state(context: &mut Context, request: &DiffRequest, printer: &Printer) -> Result<(Workspace, String)> {
    context.attach_repo(&request.repo).await?;
    let repo = context.repo()?.clone();
    let (branch, pin, compared) = match &request.state {
        State::Branch(branch) => (branch.clone(), None, format!("branch {branch}")),
        State::Commit(commit) => (repo.branch.clone(), Some(commit.clone()), format!("commit {commit}")),
        State::Pinned { branch, commit, compared } => (branch.clone(), Some(commit.clone()), compared.clone()),
        State::PullRequest(reference) => {
            let hosted = context.hosted_repo(&request.repo)?.ok_or_else(|| {
                Error::usage(
                    format!("the config repo {} is on a plain git server, which has no pull requests", repo.remote.url),
                    "compare a branch with --ref BRANCH",
                )
            })?;
            let (noun, sign) = (hosted.provider.kind().pull_request_noun(), hosted.provider.kind().pull_request_sign());
            let number = reference.number;
            let details = super::pull_request_named(&hosted, reference).await?;
            let (Some(branch), Some(head)) = (details.head_branch, details.head_sha) else {
                return Err(Error::usage(
                    format!("{noun} {sign}{number} names no head branch and commit"),
                    "compare its branch with --ref BRANCH",
                ));
            };
            let compared = format!("{noun} {sign}{number} (branch {branch} at {head})");
            (branch, Some(head), compared)
        }
        State::Dir(_) | State::WorkTree => return Err(Error::Internal("a checkout on disk is not cloned".into())),
    };
    printer.progress(&format!("cloning {} ({compared})", repo.remote.url));
    let what = compared.clone();
    let clone = crate::git::network(move || -> Result<Workspace> {
        let mut checkout = Checkout::clone(&repo.remote, &branch)?;
        if checkout.head().is_none() {
            return Err(Error::usage(format!("the config repo has no branch {branch}"), "name a branch it has"));
        }
        if let Some(commit) = &pin {
            checkout.reset_to_commit(commit).map_err(|_| {
                Error::usage(
                    format!("{what}: commit {commit} is not on branch {branch} of the config repo"),
                    "name a commit of the branch Flux follows, or the branch that holds it with --ref BRANCH",
                )
            })?;
        }
        Ok(checkout.into())
    })
    .await?;
    Ok((clone, compared))
}

/// The config repo's credentials, for the preview engine to fetch moved sources with: the config
/// repo attached to `context` when first needed, else none (sources fetched anonymously).
pub fn credentials_later<'a>(context: &'a mut Context, repo: &'a RepoSettings) -> sources::Credentials<'a> {
    sources::Credentials::Later(Box::pin(async move {
        if context.repo.is_none()
            && let Err(error) = context.attach_repo(repo).await
        {
            context.printer.detail(&format!("sources are fetched anonymously: {error}"));
        }
        context.repo.as_ref().map(|repo| repo.remote.clone())
    }))
}

impl State {
    /// The state `--dir`, `--ref BRANCH|SHA` and `--pull-request` name (the work tree when none
    /// does), checked: a short hash is refused, a branch name checked as git checks one. `diff`'s
    /// flags and the MCP server's `diff` tool both name it so.
    pub fn named(dir: Option<PathBuf>, git_ref: Option<&str>, pull_request: Option<&str>) -> Result<State> {
        Ok(match (dir, git_ref, pull_request) {
            (Some(dir), _, _) => State::Dir(dir),
            (_, Some(commit), _) if commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()) => {
                State::Commit(commit.to_ascii_lowercase())
            }
            (_, Some(short), _) if short.len() >= 7 && short.chars().all(|c| c.is_ascii_hexdigit()) => {
                return Err(Error::usage(
                    format!("--ref {short} looks like a short commit hash"),
                    "name a commit by its full 40-character hash (`git rev-parse`), or a branch by its name",
                ));
            }
            (_, Some(branch), _) => {
                crate::names::validate_git_ref(branch, "--ref", "heads")?;
                State::Branch(branch.to_string())
            }
            (_, _, Some(reference)) => State::PullRequest(crate::change::pull_request_reference(reference)?),
            _ => State::WorkTree,
        })
    }
}
