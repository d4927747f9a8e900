//! `kubectl gitops pr`: the pull (merge) requests kubectl-gitops opened on the config repo,
//! listed (`pr list`) and validated (`pr show`).
//!
//! Ours are known by their branch, `gitops/<verb>-<name>-<hash>` ([`plan::BranchName`]), and
//! their body's first line ([`plan::PULL_REQUEST_MARK`]); anyone can write both, so neither is
//! trusted. A pull request is valid only when
//! - the token's own user opened it (or the one `--opened-by` names): one another identity opened
//!   is at most unverified, never valid;
//! - the branch's whole change since it left the config branch hashes, SHA-256 in full, to the
//!   hash in its name ([`plan::change_hash`]), which only indexes it: the body's file list, with
//!   each planned file's blob id, then names what differs;
//! - the request its body records ([`crate::change::recorded`]), planned again on the branch's
//!   merge base by the planner the binary hands in (the edge's, which knows every command), gives
//!   exactly the branch: every path, every blob, nothing else, and the branch's very name.
//!
//! A branch an older kubectl-gitops named (7 digits of SHA-1) is listed, but never validates.
//!
//! `pr show` (show.rs) prints the validation, with `--preview` `diff`'s preview of the head it
//! validated; `pr comment` (comment.rs) posts `diff`'s preview of any pull request of the
//! config repo.

mod comment;
mod show;

use std::time::Duration;

pub use self::comment::{CommentArgs, CommentRequest, comment};
pub use self::show::{ShowPreviewArgs, ShowRequest, checked, show};

use clap::Args;
use serde::Serialize;

use crate::change::RepoSettings;
use crate::change::plan::{self, BranchName, FileChange};
use crate::change::recorded::{Recorded, Replanned, Replanner};
use crate::change::{self, HostedRepo, Target};
use crate::cli::RepoArgs;
use crate::cli::{GlobalArgs, OutputFormat};
use crate::duration;
use crate::error::{Error, Result};
use crate::git::log::BranchChange;
use crate::git::{Checkout, Workspace};
use crate::output::Printer;
use crate::output::table::Table;
use crate::provider::{MergeMethod, MergeOutcome, PullRequestDetails, PullState};
use crate::record::InstallRecord;

/// How far apart, and for how long, `pr show` asks again while the provider has not worked out
/// whether a request is mergeable (GitHub computes it in the background after the first read).
const MERGEABLE_POLL: Duration = Duration::from_secs(1);
const MERGEABLE_PATIENCE: Duration = Duration::from_secs(5);

/// `pr show` arguments.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The pull request: its number (`42`, `#42`, `!42`) or its web address.
    #[arg(value_name = "NUMBER|URL")]
    pub reference: String,

    /// Whose pull requests to vouch for: the login that must have opened it (default: the
    /// token's own user). A reviewer approving an automation account's requests names it.
    #[arg(long, value_name = "LOGIN")]
    pub opened_by: Option<String>,

    /// Where its branch is read from (it is cloned, so a key that may read it is needed).
    #[command(flatten)]
    pub repo: RepoArgs,
}

/// `pr list` or `pr show`, resolved.
#[derive(Debug, Clone)]
pub struct Request {
    /// `pr show`: the number; `pr list`: `None`.
    pub number: Option<u64>,
    /// `pr show URL`: the address given, which must be the request's own.
    pub url: Option<String>,
    /// How to reach the config repo (`pr show` clones the branch).
    pub repo: RepoSettings,
    /// `--opened-by`: the author to vouch for; `None`: the token's own user.
    pub opened_by: Option<String>,
    /// `-o`.
    pub format: OutputFormat,
    /// Print the header lines.
    pub headers: bool,
}

impl Request {
    /// `pr show NUMBER` of the repository `repo` reaches, as a face asks for it: plain data, no
    /// flags to parse.
    pub fn show_number(number: u64, repo: RepoSettings, format: OutputFormat) -> Request {
        Request { number: Some(number), url: None, repo, opened_by: None, format, headers: true }
    }
}

impl ShowArgs {
    /// Checks the reference: a number, or an address ending in one. `platform`: a pull request
    /// of the platform repo (`pr --platform`).
    pub fn request(&self, global: &GlobalArgs, platform: bool) -> Result<Request> {
        let mut request = list_request(global, platform)?;
        let reference = change::pull_request_reference(&self.reference)?;
        request.number = Some(reference.number);
        request.opened_by =
            self.opened_by.as_deref().map(str::trim).filter(|login| !login.is_empty()).map(String::from);
        request.repo = RepoSettings { platform, ..self.repo.settings()? };
        request.url = reference.url;
        Ok(request)
    }
}

/// `pr list`'s flags, checked. `platform`: the platform repo's pull requests (`pr --platform`).
pub fn list_request(global: &GlobalArgs, platform: bool) -> Result<Request> {
    let format = global.output_format();
    crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
    let repo = RepoSettings { platform, ..RepoSettings::default() };
    Ok(Request { number: None, url: None, repo, opened_by: None, format, headers: !global.no_headers })
}

/// One of our open pull requests, as `pr list` shows it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub number: u64,
    pub title: String,
    pub url: String,
    pub branch: String,
    /// `add`, `remove`, `upgrade`, … from the branch name.
    pub verb: String,
    /// The app, tenant or component the change is about.
    pub name: String,
    /// `null` while the provider has not worked it out.
    pub mergeable: Option<bool>,
    /// The state of the checks on its head (GitHub and Gitea commit statuses, GitLab's
    /// pipeline); absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge_detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Its branch was named by an older kubectl-gitops (7 digits of SHA-1): it cannot be
    /// validated, only opened again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub older: bool,
}

impl crate::output::Kind for Row {
    const KIND: &'static str = "PullRequest";
}

/// The config repo's provider, and the open pull requests on it that look like ours (by their
/// branch and body, which anyone can write: listed, not trusted). Only the provider is asked: no
/// clone, so no key is needed.
async fn open_ours(
    repo: &RepoSettings,
    target: &Target,
    printer: &Printer,
) -> Result<(HostedRepo, Vec<PullRequestDetails>)> {
    let context = change::context(target, repo, false, printer).await?;
    let hosted = context.hosted_repo(repo)?.ok_or_else(|| no_pull_requests(context.record()))?;
    let open = hosted.provider.list_open_pull_requests(&hosted.repo).await?;
    Ok((hosted, open.into_iter().filter(is_ours).collect()))
}

/// The numbers and titles of the open pull requests `pr list` would list, from one listing:
/// what `pr show|approve|merge <TAB>` completes. `platform`: the platform repo's (`pr --platform`).
pub async fn open_numbers(target: &Target, platform: bool, printer: &Printer) -> Result<Vec<(u64, String)>> {
    let repo = RepoSettings { platform, ..RepoSettings::default() };
    let (_, open) = open_ours(&repo, target, printer).await?;
    Ok(open.into_iter().map(|details| (details.number, details.title)).collect())
}

/// `pr list`: the open pull requests we opened, oldest first, as `request.format` prints them.
pub async fn list(request: &Request, target: &Target, printer: &Printer) -> Result<String> {
    let (rows, noun) = open_rows(&request.repo, target, printer).await?;
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&crate::output::list(&rows), request.format)
        }
        _ => Ok(render_list(&rows, request.headers, noun)),
    }
}

/// The open pull requests we opened on `repo`'s forge, oldest first, and what the forge calls
/// them (a warning names those an older kubectl-gitops opened).
pub async fn open_rows(repo: &RepoSettings, target: &Target, printer: &Printer) -> Result<(Vec<Row>, &'static str)> {
    let (hosted, open) = open_ours(repo, target, printer).await?;
    let mut rows = Vec::new();
    for listed in open {
        // GitHub's listing does not say whether a request is mergeable: read that one whole.
        let details = match listed.mergeable {
            Some(_) => listed,
            None => hosted.provider.get_pull_request(&hosted.repo, listed.number).await?.unwrap_or(listed),
        };
        let Some(branch) = details.head_branch.as_deref().and_then(BranchName::parse) else { continue };
        let checks = match &details.head_sha {
            Some(head) => hosted.provider.checks(&hosted.repo, details.number, head).await?,
            None => None,
        };
        rows.push(Row {
            older: branch.is_older(),
            checks,
            number: details.number,
            title: details.title,
            url: details.url,
            branch: details.head_branch.clone().unwrap_or_default(),
            verb: branch.verb,
            name: branch.name,
            mergeable: details.mergeable,
            merge_detail: details.merge_detail,
            author: details.author,
            created_at: details.created_at,
        });
    }
    rows.sort_by_key(|row| row.number);
    let older: Vec<String> = rows.iter().filter(|row| row.older).map(|row| row.number.to_string()).collect();
    if !older.is_empty() {
        let sign = hosted.provider.kind().pull_request_sign();
        printer.warning(&format!(
            "{sign}{} {} opened by an older kubectl-gitops and can no longer be validated: run the change's command \
             again to open it anew, and close the old one",
            older.join(&format!(", {sign}")),
            if older.len() == 1 { "was" } else { "were" }
        ));
    }
    Ok((rows, hosted.provider.kind().pull_request_noun()))
}

fn render_list(rows: &[Row], headers: bool, noun: &str) -> String {
    if rows.is_empty() {
        return format!("no open {noun} opened by kubectl gitops\n");
    }
    let now = duration::now();
    let mut table = Table::new(["NUMBER", "CHANGE", "MERGEABLE", "CHECKS", "AGE", "TITLE", "URL"]);
    for row in rows {
        let age = row
            .created_at
            .as_deref()
            .and_then(duration::parse_timestamp)
            .map(|at| duration::format_age(Duration::from_secs(now.saturating_sub(at))));
        table.push([
            row.number.to_string(),
            format!("{} {}{}", row.verb, row.name, if row.older { " (older)" } else { "" }),
            mergeable_word(row.mergeable, row.merge_detail.as_deref()),
            row.checks.clone().unwrap_or_else(|| "-".into()),
            age.unwrap_or_else(|| "-".into()),
            row.title.clone(),
            row.url.clone(),
        ]);
    }
    table.render(headers)
}

fn mergeable_word(mergeable: Option<bool>, detail: Option<&str>) -> String {
    match (mergeable, detail) {
        (Some(true), _) => "yes".into(),
        (Some(false), Some(detail)) => format!("no ({detail})"),
        (Some(false), None) => "no".into(),
        (None, _) => "unknown".into(),
    }
}

/// One check of `pr show`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Check {
    /// `open`, `base`, `author`, `change`, `request`, `mergeable`.
    pub name: &'static str,
    pub ok: bool,
    /// What was found, in words.
    pub detail: String,
}

/// What `pr show` found.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Validation {
    pub number: u64,
    pub title: String,
    pub url: String,
    pub branch: String,
    pub base: String,
    /// The branch's head commit, as git reads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// Who opened it, as the provider says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Opened by the identity we vouch for (the token's user, or `--opened-by`): without it, a
    /// request is at most unverified, never valid.
    pub verified: bool,
    /// Every check passed, the author's included.
    pub valid: bool,
    pub checks: Vec<Check>,
    /// `pr show --preview`: what its head commit would change in the cluster (`diff`'s preview).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<crate::preview::Diff>,
    /// The identity vouched for.
    #[serde(skip)]
    pub trusted: String,
}

impl crate::output::Kind for Validation {
    const KIND: &'static str = "PullRequestValidation";
}

/// `pr merge` arguments.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    #[command(flatten)]
    pub show: ShowArgs,

    /// How to merge: a merge commit, one squashed commit, or the commits rebased (GitHub only).
    #[arg(long, value_enum, default_value_t = MergeMethod::Merge)]
    pub method: MergeMethod,

    /// Let the provider merge it once its checks pass (auto-merge); merged now when nothing is pending.
    #[arg(long)]
    pub auto: bool,
}

/// What `pr approve` or `pr merge` does once the request is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Approve it at the validated head.
    Approve,
    /// Merge it, guarded by the validated head; `auto`: once its checks pass.
    Merge { method: MergeMethod, auto: bool },
}

/// What `pr approve|merge -o json|yaml` prints: what was asked, what came of it, and the
/// validation it rests on (as `pr show` prints it).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Acted {
    /// `approve` or `merge`.
    pub action: String,
    /// The merge method (`merge`, `squash`, `rebase`); absent for an approval.
    pub method: Option<String>,
    /// `approved`, `merged`, `autoMergeEnabled` (merged by the forge once its checks pass), or
    /// `notDone` (a check failed: nothing was done, exit 1).
    pub outcome: String,
    /// The head commit validated, in full, at which it was approved or merged.
    pub head: Option<String>,
    pub validation: Validation,
}

impl crate::output::Kind for Acted {
    const KIND: &'static str = "PullRequestAction";
}

/// `pr approve` and `pr merge`: validates the request as `pr show` does, and acts only when it
/// is valid, at the head it validated (the provider refuses when the head moved since). The
/// text to print (a `PullRequestAction` document with `-o json|yaml`), and whether it acted
/// (`false`: the findings, exit 1).
pub async fn act(
    action: Action,
    request: &Request,
    target: &Target,
    replan: Replanner,
    printer: &Printer,
) -> Result<(String, bool)> {
    let validated = validate(request, target, replan, printer).await?;
    let Validated { validation, hosted, sign, .. } = &validated;
    let number = validation.number;
    let verb = if action == Action::Approve { "approved" } else { "merged" };
    let acted = |outcome: &str, head: Option<&str>| Acted {
        action: if action == Action::Approve { "approve" } else { "merge" }.to_string(),
        method: match action {
            Action::Approve => None,
            Action::Merge { method, .. } => Some(method.id().to_string()),
        },
        outcome: outcome.to_string(),
        head: head.map(String::from),
        validation: validation.clone(),
    };
    let printed = |text: String, acted: Acted| match printer.output() {
        format @ (OutputFormat::Json | OutputFormat::Yaml) => {
            crate::output::render_structured(&crate::output::document(&acted), format)
        }
        _ => Ok(text),
    };
    if !validation.verified {
        printer.data(&printed(render_validation(validation, sign), acted("notDone", None))?)?;
        return Err(unverified(validation, sign, verb));
    }
    let head = validation.head.as_deref().filter(|_| validation.valid);
    let Some(head) = head else {
        let mut text = render_validation(validation, sign);
        text.push_str(&format!("{sign}{number} was not {verb}\n"));
        return Ok((printed(text, acted("notDone", None))?, false));
    };
    let at = &head[..head.len().min(12)];
    let (text, outcome) = match action {
        Action::Approve => {
            hosted.provider.approve_pull_request(&hosted.repo, number, head).await?;
            (format!("approved {sign}{number} at {at}\n"), "approved")
        }
        Action::Merge { method, auto: false } => {
            hosted.provider.merge_pull_request(&hosted.repo, number, head, method).await?;
            (format!("merged {sign}{number} ({}) into {} at {at}\n", method.id(), validation.base), "merged")
        }
        Action::Merge { method, auto: true } => {
            match hosted.provider.auto_merge_pull_request(&hosted.repo, number, head, method).await? {
                MergeOutcome::Merged => {
                    (format!("merged {sign}{number} ({}) into {} at {at}\n", method.id(), validation.base), "merged")
                }
                MergeOutcome::Scheduled => (
                    format!(
                        "auto-merge enabled on {sign}{number} ({}) at {at}: {} merges it into {} once its checks pass\n",
                        method.id(),
                        hosted.provider.kind(),
                        validation.base
                    ),
                    "autoMergeEnabled",
                ),
            }
        }
    };
    Ok((printed(text, acted(outcome, Some(head)))?, true))
}

/// The refusal of `pr approve|merge` for a request another identity opened.
fn unverified(validation: &Validation, sign: &str, verb: &str) -> Error {
    let author = validation.author.as_deref().unwrap_or("an unknown user");
    Error::Negative {
        message: format!(
            "{sign}{} was opened by {author}, not by {}: it is unverified, and was not {verb}",
            validation.number, validation.trusted
        ),
        hint: Some(format!(
            "review it on the provider yourself, or run the change's own command to open it as {}; --opened-by LOGIN \
             vouches for another identity's pull requests, if you trust whoever holds it",
            validation.trusted
        )),
    }
}

/// A validated request, and the provider in front of its repo.
struct Validated {
    validation: Validation,
    hosted: HostedRepo,
    sign: &'static str,
    /// The cluster and config repo it was validated against.
    context: change::Context,
}

/// The checks of `pr show`, on the request `request` names; `replan` plans its recorded request
/// again.
async fn validate(request: &Request, target: &Target, replan: Replanner, printer: &Printer) -> Result<Validated> {
    let number = request.number.ok_or_else(|| Error::Internal("pr show without a number".into()))?;
    // The request is looked up before the config repo is resolved, so that a number that is not
    // ours is refused without a key; cloning its branch needs one.
    let mut context = change::context(target, &request.repo, false, printer).await?;
    let hosted = context.hosted_repo(&request.repo)?.ok_or_else(|| no_pull_requests(context.record()))?;
    let sign = hosted.provider.kind().pull_request_sign();
    let reference = crate::provider::PullRequestReference { number, url: request.url.clone() };
    let mut details = change::pull_request_named(&hosted, &reference).await?;
    let head_branch = details.head_branch.clone().unwrap_or_default();
    let Some(branch_name) = BranchName::parse(&head_branch).filter(|_| is_ours(&details)) else {
        return Err(Error::usage(
            format!("{sign}{number} of {} was not opened by kubectl gitops (branch {head_branch:?})", hosted.repo),
            "pr show validates the pull requests kubectl gitops opened: their branches start with gitops/",
        ));
    };
    // Whose requests we vouch for: asked once (GET /user), unless named.
    let trusted = match &request.opened_by {
        Some(login) => login.clone(),
        None => hosted.provider.token_login().await?,
    };
    context.attach_repo(&request.repo).await?;
    let mut polls = crate::retry::Backoff::every(MERGEABLE_POLL, std::time::Instant::now() + MERGEABLE_PATIENCE);
    while details.state == PullState::Open && details.mergeable.is_none() {
        printer.progress(&format!("{} is still working out whether {sign}{number} can be merged", hosted.repo));
        if !polls.wait().await {
            break;
        }
        details = hosted.provider.get_pull_request(&hosted.repo, number).await?.unwrap_or(details);
    }
    let repo = context.repo()?.clone();
    let change = crate::git::workspace::branch_change(&repo.remote, &repo.branch, &head_branch).await?;
    let author = author_check(&details, &trusted, request.opened_by.is_some());
    let verified = author.ok;
    let mut checks = vec![state_check(&details), base_check(&details, &repo.branch), author];
    checks.extend(change_checks(&branch_name, &details.body, change.as_ref(), &head_branch));
    if let Some(change) = &change {
        let replanned = replan_recorded(&details.body, &context, change, replan, printer).await;
        checks.extend(request_checks(replanned, change, &head_branch));
    }
    checks.push(mergeable_check(&details));
    let validation = Validation {
        number,
        title: details.title,
        url: details.url,
        branch: head_branch,
        base: details.base_branch.unwrap_or_default(),
        head: change.map(|change| change.head),
        author: details.author,
        verified,
        valid: checks.iter().all(|check| check.ok),
        checks,
        preview: None,
        trusted,
    };
    Ok(Validated { validation, hosted, sign, context })
}

/// The request the body records, as words, planned again on a checkout of the branch's merge
/// base, each kind by its own planner; `None` when the body records none.
async fn replan_recorded(
    body: &str,
    context: &change::Context,
    change: &BranchChange,
    replan: Replanner,
    printer: &Printer,
) -> Option<(Vec<String>, Result<Replanned>)> {
    let words = crate::change::plan::parse(body)?;
    let base = match context.repo() {
        Ok(repo) => {
            let (repo, merge_base) = (repo.clone(), change.merge_base.clone());
            crate::git::network(move || -> Result<Workspace> {
                let mut base = Checkout::clone(&repo.remote, &repo.branch)?;
                base.reset_to_commit(&merge_base)?;
                Ok(base.into())
            })
            .await
        }
        Err(error) => Err(error),
    };
    let replanned = match base {
        Ok(base) => {
            replan(Recorded { words: &words, context, base: &base, branch_files: &change.files, printer }).await
        }
        Err(error) => Err(error),
    };
    Some((words, replanned))
}

/// Why there are no pull requests to read: no install record, or a config repo on a plain git
/// server.
fn no_pull_requests(record: Option<&InstallRecord>) -> Error {
    match record {
        None => Error::usage(
            "this cluster has no kubectl-gitops install record, so no config repo with pull requests",
            "run `kubectl gitops install --provider github|gitlab|gitea`",
        ),
        Some(record) => Error::usage(
            format!("the config repo {} is on a plain git server, which has no pull requests", record.url),
            "pull requests come with a config repo on GitHub, GitLab or Gitea (install --provider github|gitlab|gitea)",
        ),
    }
}

/// Opened by us: our branch and our body.
fn is_ours(details: &PullRequestDetails) -> bool {
    details.head_branch.as_deref().is_some_and(|branch| BranchName::parse(branch).is_some())
        && details.body.starts_with(plan::PULL_REQUEST_MARK)
}

/// Whether the identity we vouch for opened it (`named`: `--opened-by` named it, else it is the
/// token's own user). Logins are compared as the providers do, ignoring case.
fn author_check(details: &PullRequestDetails, trusted: &str, named: bool) -> Check {
    let whose = if named { "named by --opened-by" } else { "the token's own user" };
    match details.author.as_deref() {
        Some(author) if author.eq_ignore_ascii_case(trusted) => {
            Check { name: "author", ok: true, detail: format!("opened by {author}, {whose}") }
        }
        author => Check {
            name: "author",
            ok: false,
            detail: format!(
                "opened by {}, not by {trusted} ({whose}): unverified, whatever it holds",
                author.unwrap_or("an unknown user")
            ),
        },
    }
}

fn state_check(details: &PullRequestDetails) -> Check {
    let (ok, detail) = match details.state {
        PullState::Open => (true, "open".to_string()),
        PullState::Merged => (false, "merged already".to_string()),
        PullState::Closed => (false, "closed without merging".to_string()),
    };
    Check { name: "open", ok, detail }
}

fn base_check(details: &PullRequestDetails, config_branch: &str) -> Check {
    match details.base_branch.as_deref() {
        Some(base) if base == config_branch => {
            Check { name: "base", ok: true, detail: format!("into {base}, the branch Flux follows") }
        }
        base => Check {
            name: "base",
            ok: false,
            detail: format!("into {}, not {config_branch}, the branch Flux follows", base.unwrap_or("?")),
        },
    }
}

/// Whether the branch holds exactly the planned change: its own change hashes to the hash in its
/// name; when not, each file that differs from the body's list is named. A branch an older
/// kubectl-gitops named is never taken for it.
fn change_checks(branch: &BranchName, body: &str, change: Option<&BranchChange>, head_branch: &str) -> Vec<Check> {
    let Some(change) = change else {
        return vec![differs(format!("branch {head_branch} no longer exists"))];
    };
    if branch.is_older() {
        return vec![differs(format!(
            "branch {head_branch} was named by an older kubectl-gitops, with 7 digits of SHA-1, which anyone can \
             grind to: it cannot be validated; run the change's command again to open it anew, and close this one"
        ))];
    }
    let held: Vec<FileChange> = change
        .files
        .iter()
        .map(|(path, contents)| FileChange {
            path: path.clone(),
            before: None,
            after: contents.as_ref().map(|bytes| String::from_utf8_lossy(bytes).into_owned()),
        })
        .collect();
    let utf8 = change
        .files
        .iter()
        .all(|(_, contents)| contents.as_deref().is_none_or(|bytes| std::str::from_utf8(bytes).is_ok()));
    if utf8 && plan::change_hash(&held) == branch.hash {
        let objects = plan::flux_objects(&held);
        let what = if objects.is_empty() { String::new() } else { format!(": {}", objects.join(", ")) };
        return vec![Check {
            name: "change",
            ok: true,
            detail: format!("the branch holds exactly the planned change, {} file(s){what}", held.len()),
        }];
    }
    let listed = plan::listed_files(body);
    let mut checks = Vec::new();
    for file in &listed {
        let on_branch = held.iter().find(|held| held.path == file.path);
        match (on_branch, file.verb.as_str()) {
            (None, _) => checks
                .push(differs(format!("{} is planned ({}) but the branch does not change it", file.path, file.verb))),
            (Some(held), "delete") if held.after.is_some() => {
                checks.push(differs(format!("{} is planned to be deleted but the branch keeps it", file.path)))
            }
            (Some(held), _) => {
                let found = held.after.as_deref().map(|after| plan::blob_id(after.as_bytes()));
                if let Some(planned) = &file.blob
                    && found.as_ref() != Some(planned)
                {
                    let found = found.map_or_else(|| "deleted".to_string(), |blob| format!("blob {blob}"));
                    checks.push(differs(format!(
                        "{} differs from the plan: {found} on the branch, blob {planned} planned",
                        file.path
                    )));
                }
            }
        }
    }
    for extra in held.iter().filter(|held| !listed.iter().any(|file| file.path == held.path)) {
        let verb = if extra.after.is_some() { "writes" } else { "deletes" };
        checks.push(differs(format!("the branch also {verb} {}, which is not in the plan", extra.path)));
    }
    if checks.is_empty() {
        checks.push(differs(format!(
            "the branch's change does not hash to {} (the plan's, in the branch name); its files: {}",
            branch.hash,
            held.iter().map(|file| file.path.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    checks
}

/// Whether the branch is exactly the plan of the request its body records, planned again on the
/// commit the branch left the config branch at: every path and blob it changes, nothing else,
/// and its very name. Each difference is named. A body that records no request fails.
fn request_checks(
    recorded: Option<(Vec<String>, Result<Replanned>)>,
    change: &BranchChange,
    head_branch: &str,
) -> Vec<Check> {
    let failed = |detail: String| Check { name: "request", ok: false, detail };
    let Some((words, replanned)) = recorded else {
        return vec![failed(
            "the body records no request, so the change cannot be planned again: run the change's command again to \
             open it anew"
                .into(),
        )];
    };
    let replanned = match replanned {
        Ok(replanned) => replanned,
        Err(error) => return vec![failed(error.to_string())],
    };
    let mut checks: Vec<Check> = plan::differences(&replanned.files, &change.files)
        .iter()
        .map(|difference| failed(difference.describe("the recorded request")))
        .collect();
    checks.extend(
        change
            .unusual
            .iter()
            .map(|path| failed(format!("the branch makes {path} more than a plain file, which no plan does"))),
    );
    if checks.is_empty() && replanned.branch != head_branch {
        checks.push(failed(format!(
            "the branch holds the recorded request's plan, but is named {head_branch}, not {}",
            replanned.branch
        )));
    }
    if checks.is_empty() {
        let at = &change.merge_base[..change.merge_base.len().min(12)];
        checks.push(Check {
            name: "request",
            ok: true,
            detail: format!(
                "`kubectl gitops {}` planned again at {at}: the branch holds exactly that plan",
                shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
            ),
        });
    }
    checks
}

/// A failed `change` check.
fn differs(detail: String) -> Check {
    Check { name: "change", ok: false, detail }
}

fn mergeable_check(details: &PullRequestDetails) -> Check {
    let detail = details.merge_detail.as_deref();
    let (ok, detail) = match details.mergeable {
        Some(true) => (true, "mergeable".to_string()),
        Some(false) => (false, format!("not mergeable ({})", detail.unwrap_or("the provider does not say why"))),
        None => (false, "not known yet: the provider is still working it out; run pr show again".to_string()),
    };
    Check { name: "mergeable", ok, detail }
}

fn render_validation(validation: &Validation, sign: &str) -> String {
    let mut text = format!(
        "{sign}{} {}\n{}\nbranch {} into {}{}\n\n",
        validation.number,
        validation.title,
        validation.url,
        validation.branch,
        validation.base,
        validation.head.as_deref().map(|head| format!(" at {}", &head[..head.len().min(12)])).unwrap_or_default()
    );
    for check in &validation.checks {
        text.push_str(&format!("{:<4}  {:<9}  {}\n", if check.ok { "ok" } else { "FAIL" }, check.name, check.detail));
    }
    let failed = validation.checks.iter().filter(|check| !check.ok && check.name != "author").count();
    let number = validation.number;
    text.push_str(&match (validation.verified, failed) {
        (true, 0) => format!("\n{sign}{number} is valid\n"),
        (true, count) => format!("\n{sign}{number} is not valid: {count} finding(s)\n"),
        (false, 0) => format!(
            "\n{sign}{number} is unverified: {} opened it, not {}\n",
            validation.author.as_deref().unwrap_or("an unknown user"),
            validation.trusted
        ),
        (false, count) => format!("\n{sign}{number} is unverified and not valid: {count} finding(s)\n"),
    });
    text
}

#[cfg(test)]
mod tests;
