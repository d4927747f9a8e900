//! `kubectl gitops repo create`: an app repository on the config repo's provider, made one of four
//! ways (docs/repositories.md):
//!
//! - empty of anything but our app layout ([`app_layout`]): created, then one first commit;
//! - `--from-template OWNER/REPO`: the provider generates it (GitHub and Gitea `…/generate`, after
//!   checking the template is marked as one); GitLab has no such call for a project, so the
//!   template's tree is copied as below;
//! - `--from-template OWNER/REPO --fork`: a fork;
//! - `--from-url URL`: created empty, then the tree of URL's branch pushed as its first commit,
//!   whose message records the template's commit (`Template: URL@<commit>`): any git server.
//!
//! One plan ([`Plan`]): `--dry-run` prints it, execution consumes it. A step that fails after the
//! repository was made deletes it again, so nothing is left half-made.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;

use clap::Args;
use serde::Serialize;

use crate::app::settings::RepoSettings;
use crate::app::{self, HostedRepo, Target};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::error::{Error, Result};
use crate::git::{self, Auth, Checkout, Remote};
use crate::output::Printer;
use crate::provider::{Kind, RepoInfo, RepoRef};

/// `repo create` arguments.
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// The new repository: `OWNER/NAME`, or `NAME` under the config repo's owner.
    #[arg(value_name = "[OWNER/]NAME")]
    pub name: String,

    /// Generate it from this template repository of the same provider (`OWNER/REPO`).
    #[arg(long, value_name = "OWNER/REPO", conflicts_with = "from_url")]
    pub from_template: Option<String>,

    /// Copy the files of this git repository (any server) into it as its first commit.
    #[arg(long, value_name = "URL")]
    pub from_url: Option<String>,

    /// The branch of --from-url to copy.
    #[arg(long, value_name = "BRANCH", default_value = "main", requires = "from_url")]
    pub from_branch: String,

    /// Fork --from-template instead of generating from it (it need not be a template).
    #[arg(long, requires = "from_template")]
    pub fork: bool,

    /// Make it public (default: private).
    #[arg(long)]
    pub public: bool,

    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Where the new repository's first files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Our app layout.
    Layout,
    /// A template repository of the same provider.
    Template(RepoRef),
    /// A repository of the same provider, forked.
    Fork(RepoRef),
    /// A branch of any git repository, copied.
    Url { url: String, branch: String },
}

/// `repo create`, resolved.
#[derive(Debug, Clone)]
pub struct CreateRequest {
    /// `OWNER/NAME` as given, or `NAME`.
    pub name: String,
    pub source: Source,
    pub private: bool,
    pub dry_run: bool,
    pub format: OutputFormat,
}

impl CreateArgs {
    /// Checks the flags before anything is asked.
    pub fn request(&self, global: &GlobalArgs) -> Result<CreateRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml])?;
        let name = self.name.trim().trim_matches('/').to_string();
        let valid = |part: &str| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if !name.split('/').all(valid) || name.split('/').count() > 2 {
            return Err(Error::usage(
                format!("{:?} is not a repository name", self.name),
                "give NAME or OWNER/NAME: letters, digits, '-', '_' and '.'",
            ));
        }
        let source = match (&self.from_template, &self.from_url) {
            (Some(template), _) => {
                let template = RepoRef::parse(template).map_err(|error| {
                    Error::usage(error.to_string(), "give the template as OWNER/REPO, e.g. acme/app-template")
                })?;
                if self.fork { Source::Fork(template) } else { Source::Template(template) }
            }
            (None, Some(url)) => {
                crate::repo_access::parse_url(url)?;
                crate::app::spec::validate_git_ref(&self.from_branch, "--from-branch", "heads")?;
                Source::Url { url: url.clone(), branch: self.from_branch.clone() }
            }
            (None, None) => Source::Layout,
        };
        Ok(CreateRequest { name, source, private: !self.public, dry_run: self.dry_run, format })
    }
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// The provider generates the repository from a template.
    Generate(RepoRef),
    /// The provider forks a repository.
    Fork(RepoRef),
    /// The provider creates the repository, empty.
    Create,
    /// The first commit: these files, with this message.
    FirstCommit { files: Files, message: String },
}

/// Where the first commit's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Files {
    /// Our app layout.
    Layout,
    /// The tree of a branch of a repository (read when the step runs).
    Copy { remote: String, branch: String },
}

/// What `repo create` will do.
#[derive(Debug)]
pub struct Plan {
    target: RepoRef,
    kind: Kind,
    private: bool,
    steps: Vec<(Step, String)>,
}

impl Plan {
    /// `--dry-run`'s text.
    pub fn render(&self) -> String {
        crate::plan::render_steps(self.steps.iter().map(|(_, words)| words.as_str()))
    }
}

/// What was made, for stdout.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    pub repository: String,
    pub web_url: String,
    pub ssh_url: String,
    pub https_url: String,
    /// The template's (or copied branch's) commit, when one was copied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_commit: Option<String>,
}

/// Plans: checks what the provider can tell before anything is written (the name is free, the
/// template exists and is one).
async fn plan(request: &CreateRequest, hosted: &HostedRepo) -> Result<Plan> {
    let provider = &hosted.provider;
    let kind = provider.kind();
    let target = match request.name.split_once('/') {
        Some((owner, name)) => RepoRef::new(owner, name),
        None => RepoRef::new(hosted.repo.owner.clone(), request.name.clone()),
    };
    if provider.get_repository(&target).await?.is_some() {
        return Err(Error::usage(
            format!("{kind} repository {target} exists already"),
            "choose another name; repo create never writes into an existing repository",
        ));
    }
    let visibility = if request.private { "private" } else { "public" };
    let create = (Step::Create, format!("create the empty {visibility} repository {target} on {kind}"));
    let copy_message = |from: &str| format!("Create {target} from {from}");
    let steps = match &request.source {
        Source::Layout => vec![
            create,
            (
                Step::FirstCommit {
                    files: Files::Layout,
                    message: format!("Create {target} with the kubectl-gitops app layout"),
                },
                format!(
                    "commit the app layout ({}) as its first commit",
                    app_layout().keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ),
        ],
        Source::Template(template) | Source::Fork(template) => {
            let Some(found) = provider.get_repository(template).await? else {
                return Err(Error::usage(
                    format!("the template {template} does not exist on {kind}, or the token cannot see it"),
                    "check its OWNER/REPO, and that the token may read it",
                ));
            };
            match (&request.source, kind) {
                (Source::Fork(_), _) => {
                    vec![(Step::Fork(template.clone()), format!("fork {template} into {target} on {kind}"))]
                }
                (_, Kind::GitLab) => vec![
                    create,
                    (
                        Step::FirstCommit {
                            files: Files::Copy { remote: found.https_url.clone(), branch: default_branch(&found) },
                            message: copy_message(&template.to_string()),
                        },
                        format!(
                            "copy the files of {template} ({}) as its first commit, recording the template's commit",
                            default_branch(&found)
                        ),
                    ),
                ],
                _ if found.is_template != Some(true) => {
                    return Err(Error::usage(
                        format!("{kind} repository {template} is not a template repository"),
                        format!(
                            "mark it as a template in its settings, or fork it (--fork), or copy it (--from-url {})",
                            found.https_url
                        ),
                    ));
                }
                _ => vec![(
                    Step::Generate(template.clone()),
                    format!("generate the {visibility} repository {target} from the template {template} on {kind}"),
                )],
            }
        }
        Source::Url { url, branch } => vec![
            create,
            (
                Step::FirstCommit {
                    files: Files::Copy { remote: url.clone(), branch: branch.clone() },
                    message: copy_message(url),
                },
                format!(
                    "copy the files of {url} (branch {branch}) as its first commit, recording the template's commit"
                ),
            ),
        ],
    };
    Ok(Plan { target, kind, private: request.private, steps })
}

fn default_branch(info: &RepoInfo) -> String {
    info.default_branch.clone().unwrap_or_else(|| "main".to_string())
}

/// `repo create`: plans, then (unless `--dry-run`) runs the plan; returns stdout's text.
pub async fn create(request: &CreateRequest, target: &Target, printer: &Printer) -> Result<String> {
    let context = app::context(target, &RepoSettings::default(), false, printer).await?;
    let hosted = app::hosted_repo(context.record())?.ok_or_else(|| {
        Error::usage(
            "the config repo is not on GitHub, GitLab or Gitea: repo create needs a provider's API",
            "install with --provider github, gitlab or gitea; on a plain git server, create the repository there",
        )
    })?;
    let plan = plan(request, &hosted).await?;
    if request.dry_run {
        return Ok(format!("{}(dry run: nothing was created)\n", plan.render()));
    }
    let created = execute(&plan, &hosted, printer).await?;
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => crate::output::render_structured(&created, request.format),
        _ => Ok(format!("repository {} created: {}\n", created.repository, created.web_url)),
    }
}

/// Runs the plan; when a step fails after the repository was made, deletes it again.
async fn execute(plan: &Plan, hosted: &HostedRepo, printer: &Printer) -> Result<Created> {
    let provider = &hosted.provider;
    let mut made: Option<RepoInfo> = None;
    let mut template_commit = None;
    let ran = crate::plan::run_steps(&plan.steps, async |number, step: &Step, words: &str| {
        printer.progress(&format!("{number}/{} {words}", plan.steps.len()));
        match step {
            Step::Create => {
                let personal = provider.token_login().await?.eq_ignore_ascii_case(&plan.target.owner);
                made = Some(provider.create_repository(&plan.target, plan.private, personal).await?);
            }
            Step::Generate(template) => {
                made = Some(provider.generate_repository(template, &plan.target, plan.private).await?);
            }
            Step::Fork(upstream) => made = Some(provider.fork_repository(upstream, &plan.target).await?),
            Step::FirstCommit { files, message } => {
                let info =
                    made.as_ref().ok_or_else(|| Error::Internal("no repository before its first commit".into()))?;
                template_commit = first_commit(hosted, info, files, message).await?;
            }
        }
        Ok(())
    })
    .await;
    if let Err(error) = ran {
        if made.is_some() {
            let undone = provider.delete_repository(&plan.target).await;
            return Err(match undone {
                Ok(()) => error,
                Err(left) => Error::Remote {
                    message: format!("{error}; and {} could not be deleted again: {left}", plan.target),
                    hint: Some(format!("delete {} on {} by hand", plan.target, plan.kind)),
                },
            });
        }
        return Err(error);
    }
    let info = made.ok_or_else(|| Error::Internal("the plan made no repository".into()))?;
    Ok(Created {
        repository: plan.target.to_string(),
        web_url: info.web_url,
        ssh_url: info.ssh_url,
        https_url: info.https_url,
        template_commit,
    })
}

/// Pushes the first commit over HTTPS with the provider token; returns the copied commit.
async fn first_commit(hosted: &HostedRepo, info: &RepoInfo, files: &Files, message: &str) -> Result<Option<String>> {
    let token = Auth::Basic {
        username: hosted.provider.kind().token_user().to_string(),
        password: hosted.token.expose().to_string(),
    };
    let target = Remote { url: info.https_url.clone(), auth: token.clone() };
    let branch = default_branch(info);
    let (files, message, copied) = match files {
        Files::Layout => (app_layout(), message.to_string(), None),
        Files::Copy { remote, branch: source_branch } => {
            // The provider's own repositories are read with its token; others anonymously.
            let host = |url: &str| crate::repo_access::parse_url(url).ok().map(|parsed| parsed.host);
            let same_host = host(remote) == host(&info.https_url);
            let auth = if same_host { token.clone() } else { Auth::Anonymous };
            let source = Remote { url: remote.clone(), auth };
            let (files, commit) = git::in_place(|| read_tree(&source, source_branch))?;
            (files, format!("{message}\n\nTemplate: {remote}@{commit}\n"), Some(commit))
        }
    };
    git::in_place(|| -> Result<()> {
        let mut checkout = Checkout::clone(&target, &branch)?;
        for (path, contents) in &files {
            checkout.write(path, contents)?;
        }
        checkout.commit(&message, &crate::publish::author())?;
        checkout.push()?;
        Ok(())
    })?;
    Ok(copied)
}

/// Every file of `branch` of `source` and the commit it is at.
fn read_tree(source: &Remote, branch: &str) -> Result<(BTreeMap<String, Vec<u8>>, String)> {
    let checkout = Checkout::clone(source, branch)?;
    let commit = checkout.head().ok_or_else(|| {
        Error::usage(format!("{} has no branch {branch:?} to copy", source.url), "name the branch with --from-branch")
    })?;
    let mut files = BTreeMap::new();
    collect(checkout.root(), checkout.root(), &mut files)?;
    Ok((files, commit))
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) -> Result<()> {
    let read = |error| Error::io(format!("reading the copy of the template in {}", dir.display()), error);
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(read)?;
        if kind.is_dir() && entry.file_name() != ".git" {
            collect(root, &path, files)?;
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).map_err(|error| Error::Internal(error.to_string()))?;
            files.insert(relative.to_string_lossy().into_owned(), std::fs::read(&path).map_err(read)?);
        }
    }
    Ok(())
}

/// The files of a new app repository: a kustomization `app add --path ./deploy` applies, and a
/// README that says so.
pub fn app_layout() -> BTreeMap<String, Vec<u8>> {
    BTreeMap::from([
        (
            "README.md".to_string(),
            b"# An app deployed with kubectl-gitops\n\n\
              Put the app's Kubernetes manifests in `deploy/` and list them in\n\
              `deploy/kustomization.yaml`. Deploy it with\n\n\
              ```\nkubectl gitops app add NAME --url <this repository's URL> --path ./deploy\n```\n"
                .to_vec(),
        ),
        (
            "deploy/kustomization.yaml".to_string(),
            b"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n".to_vec(),
        ),
    ])
}
