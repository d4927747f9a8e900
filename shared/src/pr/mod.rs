//! `kubectl gitops pr`: the pull (merge) requests kubectl-gitops opened on the config repo,
//! listed (`pr list`) and validated (`pr show`).
//!
//! Ours are known by their branch, `gitops/<verb>-<name>-<hash>` ([`plan::BranchName`]), and
//! their body's first line ([`plan::PULL_REQUEST_MARK`]). The branch name carries the hash of
//! the planned change ([`plan::change_hash`]), so `pr show` checks the branch against the plan
//! without trusting the body, which anyone with access can edit; the body's file list, with
//! each planned file's blob id, only serves to name what differs. When the body records the
//! request (`app`/`platform` add and remove, [`app::recorded`]), `pr show` also plans it again
//! on the branch's merge base and compares that plan with the branch.

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use crate::app::args::RepoArgs;
use crate::app::plan::{self, BranchName, FileChange};
use crate::app::settings::RepoSettings;
use crate::app::{self, HostedRepo, Target};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::duration;
use crate::error::{Error, Result};
use crate::output::Printer;
use crate::output::table::Table;
use crate::provider::{MergeMethod, MergeOutcome, PullRequestDetails, PullState};
use crate::record::InstallRecord;

/// How often, and how far apart, `pr show` asks again while the provider has not worked out
/// whether a request is mergeable (GitHub computes it in the background after the first read).
const MERGEABLE_POLLS: u32 = 5;
const MERGEABLE_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// `pr show` arguments.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The pull request: its number (`42`, `#42`, `!42`) or its web address.
    #[arg(value_name = "NUMBER|URL")]
    pub reference: String,

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
    /// `-o`.
    pub format: OutputFormat,
    /// Print the header lines.
    pub headers: bool,
}

impl ShowArgs {
    /// Checks the reference: a number, or an address ending in one. `platform`: a pull request
    /// of the platform repo (`pr --platform`).
    pub fn request(&self, global: &GlobalArgs, platform: bool) -> Result<Request> {
        let mut request = list_request(global, platform)?;
        let reference = self.reference.trim();
        let last = reference.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
        let digits = last.trim_start_matches(['#', '!']);
        let number = digits.parse::<u64>().ok().filter(|number| *number > 0).ok_or_else(|| {
            Error::usage(
                format!("{:?} is not a pull request number or address", self.reference),
                "give its number (42) or its address (https://github.com/acme/fleet/pull/42)",
            )
        })?;
        request.number = Some(number);
        request.repo = RepoSettings { platform, ..self.repo.settings()? };
        request.url = reference.contains("://").then(|| reference.trim_end_matches('/').to_string());
        Ok(request)
    }
}

/// `pr list`'s flags, checked. `platform`: the platform repo's pull requests (`pr --platform`).
pub fn list_request(global: &GlobalArgs, platform: bool) -> Result<Request> {
    let format = global.output_format();
    crate::output::ensure_supported(format, &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml])?;
    let repo = RepoSettings { platform, ..RepoSettings::default() };
    Ok(Request { number: None, url: None, repo, format, headers: !global.no_headers })
}

/// One of our open pull requests, as `pr list` shows it.
#[derive(Debug, Clone, Serialize)]
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
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listing {
    pull_requests: Vec<Row>,
}

/// `pr list`: the open pull requests we opened, oldest first.
pub async fn list(request: &Request, target: &Target, printer: &Printer) -> Result<String> {
    // Only the provider is asked: no clone, so no key is needed.
    let context = app::context(target, &request.repo, false, printer).await?;
    let hosted = context.hosted_repo(&request.repo)?.ok_or_else(|| no_pull_requests(context.record()))?;
    let open = hosted.provider.list_open_pull_requests(&hosted.repo).await?;
    let mut rows = Vec::new();
    for listed in open.into_iter().filter(is_ours) {
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
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&Listing { pull_requests: rows }, request.format)
        }
        _ => Ok(render_list(&rows, request.headers, hosted.provider.kind().pull_request_noun())),
    }
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
            format!("{} {}", row.verb, row.name),
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `open`, `base`, `change`, `mergeable`.
    pub name: &'static str,
    pub ok: bool,
    /// What was found, in words.
    pub detail: String,
}

/// What `pr show` found.
#[derive(Debug, Clone, Serialize)]
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
    pub valid: bool,
    pub checks: Vec<Check>,
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

/// `pr approve` and `pr merge`: validates the request as `pr show` does, and acts only when it
/// is valid, at the head it validated (the provider refuses when the head moved since). The
/// text to print, and whether it acted (`false`: the findings, exit 1).
pub async fn act(action: Action, request: &Request, target: &Target, printer: &Printer) -> Result<(String, bool)> {
    let validated = validate(request, target, printer).await?;
    let Validated { validation, hosted, sign } = &validated;
    let number = validation.number;
    let head = validation.head.as_deref().filter(|_| validation.valid);
    let Some(head) = head else {
        let mut text = render_validation(validation, sign);
        let verb = if action == Action::Approve { "approved" } else { "merged" };
        text.push_str(&format!("{sign}{number} was not {verb}\n"));
        return Ok((text, false));
    };
    let at = &head[..head.len().min(12)];
    let text = match action {
        Action::Approve => {
            hosted.provider.approve_pull_request(&hosted.repo, number, head).await?;
            format!("approved {sign}{number} at {at}\n")
        }
        Action::Merge { method, auto: false } => {
            hosted.provider.merge_pull_request(&hosted.repo, number, head, method).await?;
            format!("merged {sign}{number} ({}) into {} at {at}\n", method.id(), validation.base)
        }
        Action::Merge { method, auto: true } => {
            match hosted.provider.auto_merge_pull_request(&hosted.repo, number, head, method).await? {
                MergeOutcome::Merged => {
                    format!("merged {sign}{number} ({}) into {} at {at}\n", method.id(), validation.base)
                }
                MergeOutcome::Scheduled => format!(
                    "auto-merge enabled on {sign}{number} ({}) at {at}: {} merges it into {} once its checks pass\n",
                    method.id(),
                    hosted.provider.kind(),
                    validation.base
                ),
            }
        }
    };
    Ok((text, true))
}

/// A validated request, and the provider in front of its repo.
struct Validated {
    validation: Validation,
    hosted: HostedRepo,
    sign: &'static str,
}

/// `pr show`: validates one pull request we opened. The text to print, and whether it is valid.
pub async fn show(request: &Request, target: &Target, printer: &Printer) -> Result<(String, bool)> {
    let Validated { validation, sign, .. } = validate(request, target, printer).await?;
    let text = match request.format {
        OutputFormat::Json | OutputFormat::Yaml => crate::output::render_structured(&validation, request.format)?,
        _ => render_validation(&validation, sign),
    };
    Ok((text, validation.valid))
}

/// The checks of `pr show`, on the request `request` names.
async fn validate(request: &Request, target: &Target, printer: &Printer) -> Result<Validated> {
    let number = request.number.ok_or_else(|| Error::Internal("pr show without a number".into()))?;
    // The request is looked up before the config repo is resolved, so that a number that is not
    // ours is refused without a key; cloning its branch needs one.
    let mut context = app::context(target, &request.repo, false, printer).await?;
    let hosted = context.hosted_repo(&request.repo)?.ok_or_else(|| no_pull_requests(context.record()))?;
    let (noun, sign) = (hosted.provider.kind().pull_request_noun(), hosted.provider.kind().pull_request_sign());
    let mut details = hosted.provider.get_pull_request(&hosted.repo, number).await?.ok_or_else(|| {
        Error::usage(
            format!("{} has no {noun} {sign}{number}", hosted.repo),
            "`kubectl gitops pr list` lists the open ones kubectl gitops opened",
        )
    })?;
    if let Some(given) = &request.url
        && details.url.trim_end_matches('/') != given
    {
        return Err(Error::usage(
            format!("{given} is not {noun} {sign}{number} of {}, which is {}", hosted.repo, details.url),
            "give a pull request of the config repo the current cluster was installed from, or its number",
        ));
    }
    let head_branch = details.head_branch.clone().unwrap_or_default();
    let Some(branch_name) = BranchName::parse(&head_branch).filter(|_| is_ours(&details)) else {
        return Err(Error::usage(
            format!("{sign}{number} of {} was not opened by kubectl gitops (branch {head_branch:?})", hosted.repo),
            "pr show validates the pull requests kubectl gitops opened: their branches start with gitops/",
        ));
    };
    context.attach_repo(&request.repo).await?;
    let repo = context.repo()?.clone();
    let mut polls = 1;
    while details.state == PullState::Open && details.mergeable.is_none() && polls < MERGEABLE_POLLS {
        printer.progress(&format!("{} is still working out whether {sign}{number} can be merged", hosted.repo));
        tokio::time::sleep(MERGEABLE_POLL_INTERVAL).await;
        details = hosted.provider.get_pull_request(&hosted.repo, number).await?.unwrap_or(details);
        polls += 1;
    }
    let change = crate::git::in_place(|| crate::git::log::branch_change(&repo.remote, &repo.branch, &head_branch))?;
    let mut checks = vec![state_check(&details), base_check(&details, &repo.branch)];
    checks.extend(change_checks(&branch_name, &details.body, change.as_ref(), &head_branch));
    if let (Some(words), Some(change)) = (app::recorded::parse(&details.body), change.as_ref()) {
        let replanned = crate::git::in_place(|| -> Result<Vec<FileChange>> {
            let mut base = crate::git::Checkout::clone(&repo.remote, &repo.branch)?;
            base.reset_to_commit(&change.merge_base)?;
            app::recorded::replan(&words, &context, &base, &change.files)
        });
        checks.extend(request_checks(&words, replanned, change));
    }
    checks.push(mergeable_check(&details));
    let validation = Validation {
        number,
        title: details.title,
        url: details.url,
        branch: head_branch,
        base: details.base_branch.unwrap_or_default(),
        head: change.map(|change| change.head),
        valid: checks.iter().all(|check| check.ok),
        checks,
    };
    Ok(Validated { validation, hosted, sign })
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
/// name; when not, each file that differs from the body's list is named.
fn change_checks(
    branch: &BranchName,
    body: &str,
    change: Option<&crate::git::log::BranchChange>,
    head_branch: &str,
) -> Vec<Check> {
    let Some(change) = change else {
        return vec![Check { name: "change", ok: false, detail: format!("branch {head_branch} no longer exists") }];
    };
    let held: Vec<FileChange> = change
        .files
        .iter()
        .map(|(path, contents)| FileChange {
            path: path.clone(),
            before: None,
            after: contents.as_ref().map(|bytes| String::from_utf8_lossy(bytes).into_owned()),
        })
        .collect();
    if plan::change_hash(&held) == branch.hash {
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
        checks.push(Check {
            name: "change",
            ok: false,
            detail: format!(
                "the branch's change does not hash to {} (the plan's, in the branch name); its files: {}",
                branch.hash,
                held.iter().map(|file| file.path.as_str()).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    checks
}

/// Whether the branch holds the plan of the request its body records, planned again on the
/// commit the branch left the config branch at: each difference named.
fn request_checks(
    words: &[String],
    replanned: Result<Vec<FileChange>>,
    change: &crate::git::log::BranchChange,
) -> Vec<Check> {
    let failed = |detail: String| Check { name: "request", ok: false, detail };
    let planned = match replanned {
        Ok(planned) => planned,
        Err(error) => return vec![failed(error.to_string())],
    };
    let held: std::collections::BTreeMap<&str, Option<String>> = change
        .files
        .iter()
        .map(|(path, contents)| {
            (path.as_str(), contents.as_ref().map(|bytes| String::from_utf8_lossy(bytes).into_owned()))
        })
        .collect();
    let blob = |contents: &Option<String>| {
        contents
            .as_ref()
            .map_or_else(|| "deleted".to_string(), |text| format!("blob {}", plan::blob_id(text.as_bytes())))
    };
    let mut checks = Vec::new();
    for file in &planned {
        match held.get(file.path.as_str()) {
            None => checks.push(failed(format!(
                "the recorded request plans to {} {}, but the branch does not change it",
                file.verb(),
                file.path
            ))),
            Some(found) if *found != file.after => checks.push(failed(format!(
                "{}: {} on the branch, {} as the recorded request plans it",
                file.path,
                blob(found),
                blob(&file.after)
            ))),
            Some(_) => {}
        }
    }
    for path in held.keys().filter(|path| !planned.iter().any(|file| file.path == **path)) {
        checks.push(failed(format!("the branch changes {path}, which the recorded request does not plan")));
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
    let failed = validation.checks.iter().filter(|check| !check.ok).count();
    text.push_str(&match failed {
        0 => format!("\n{sign}{} is valid\n", validation.number),
        count => format!("\n{sign}{} is not valid: {count} finding(s)\n", validation.number),
    });
    text
}

#[cfg(test)]
mod tests;
