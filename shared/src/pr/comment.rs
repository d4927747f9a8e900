//! `kubectl gitops pr comment NUMBER`: what pull request NUMBER would do to the cluster (the
//! preview of `diff --pull-request NUMBER`, the pull request's head pinned by its full hash),
//! posted on it as one comment, and that same comment updated in place when it runs again (after
//! a new push). Ours is the comment that starts with [`markdown::MARKER`] and that the token's own
//! user wrote: a marker anyone else writes is not ours to edit.

use clap::Args;

use crate::change::preview_at::{self, DiffRequest, PreviewArgs, State};
use crate::change::{self, Target};
use crate::cli::GlobalArgs;
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;
use crate::preview::markdown;

/// `pr comment` arguments.
#[derive(Debug, Clone, Args)]
pub struct CommentArgs {
    /// The pull request: its number (`42`, `#42`, `!42`) or its web address.
    #[arg(value_name = "NUMBER|URL")]
    pub reference: String,

    /// Where the whole preview can be read, linked when the comment is cut at the forge's limit.
    ///
    /// Where the whole preview can be read (a CI job's log), linked when the comment is cut at
    /// the forge's size limit. Default, in CI: the GitHub Actions run
    /// ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID) or the GitLab CI job
    /// ($CI_JOB_URL).
    #[arg(long, value_name = "URL")]
    pub full_output_url: Option<String>,

    /// Print the plan and change nothing.
    ///
    /// Print the comment it would post (its plan); post nothing, change nothing anywhere.
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub preview: PreviewArgs,
}

/// `pr comment`, resolved.
#[derive(Debug, Clone)]
pub struct CommentRequest {
    pub diff: DiffRequest,
    pub number: u64,
    pub full_output_url: Option<String>,
    pub dry_run: bool,
}

impl CommentArgs {
    /// The pull request checked, and the preview's flags.
    pub fn request(&self, global: &GlobalArgs) -> Result<CommentRequest> {
        let reference = change::pull_request_reference(&self.reference)?;
        let number = reference.number;
        let diff = self.preview.request(State::PullRequest(reference), global)?;
        let full_output_url = self.full_output_url.clone().or_else(ci_job_url);
        Ok(CommentRequest { diff, number, full_output_url, dry_run: self.dry_run })
    }
}

/// The page of the CI job running us: GitHub Actions' run, GitLab CI's job.
fn ci_job_url() -> Option<String> {
    let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    match (var("GITHUB_SERVER_URL"), var("GITHUB_REPOSITORY"), var("GITHUB_RUN_ID")) {
        (Some(server), Some(repository), Some(run)) => Some(format!("{server}/{repository}/actions/runs/{run}")),
        _ => var("CI_JOB_URL"),
    }
}

/// Computes the preview and posts it, or updates our comment; prints what it did. Exit 0 once
/// posted, 2 when the preview holds a refusal or a failure (posted too, for the reviewers).
pub async fn comment(request: &CommentRequest, target: &Target, printer: &Printer) -> Result<ExitCode> {
    let mut context = change::context(target, &request.diff.repo, false, printer).await?;
    let preview = preview_at::compute(&mut context, &request.diff, printer).await?;
    let hosted = context
        .hosted_repo(&request.diff.repo)?
        .ok_or_else(|| Error::Internal("a pull request was compared, so the config repo has a provider".into()))?;
    let provider = &hosted.provider;
    let (noun, sign) = (provider.kind().pull_request_noun(), provider.kind().pull_request_sign());
    let number = request.number;
    let command = format!("kubectl gitops diff --pull-request {number}");
    let body = markdown::comment(&preview, provider.max_comment(), request.full_output_url.as_deref(), &command);
    let code = if preview.exit_code() == ExitCode::Usage { ExitCode::Usage } else { ExitCode::Ok };
    if request.dry_run {
        printer.data(&body)?;
        return Ok(code);
    }
    let me = provider.token_login().await?;
    let comments = provider.list_comments(&hosted.repo, number).await?;
    let ours = comments
        .iter()
        .find(|comment| comment.body.starts_with(markdown::MARKER) && comment.author.as_deref() == Some(me.as_str()));
    let counts = preview.summary.counts();
    let done = match ours {
        Some(existing) => {
            let updated = provider.update_comment(&hosted.repo, number, existing.id, &body).await?;
            format!("{noun} {sign}{number}: comment {} updated ({counts})", updated.id)
        }
        None => {
            let created = provider.create_comment(&hosted.repo, number, &body).await?;
            format!("{noun} {sign}{number}: comment {} posted ({counts})", created.id)
        }
    };
    printer.data(&format!("{done}\n"))?;
    Ok(code)
}
