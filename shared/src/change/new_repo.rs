//! A new app repository on the config repo's provider, made one of four ways
//! (docs/repositories.md), for `repo create` and `app add --create-repo`:
//!
//! - empty of anything but our app layout ([`app_layout`]): created, then one first commit;
//! - `--from-template OWNER/REPO`: the provider generates it (GitHub and Gitea `…/generate`, after
//!   checking the template is marked as one); GitLab has no such call for a project, so the
//!   template's tree is copied as below;
//! - `--from-template OWNER/REPO --fork`: a fork;
//! - `--from-url URL`: created empty, then the tree of URL's branch pushed as its first commit,
//!   whose message records the template's commit (`Template: URL@<commit>`): any git server.
//!
//! [`plan`] asks the provider only what it can tell before anything is written (the name is
//! free, the template exists and is one); [`Progress`] runs the steps and, when a later step
//! fails, deletes the repository again ([`Progress::undo`]), so nothing is left half-made.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use k8s_openapi::api::core::v1::Secret;

use super::context::{Context, HostedRepo};
use super::layout::ClusterDir;
use crate::cli::SourceArgs;
use crate::deploy_key::{DeployKey, KeyAlgorithm};
use crate::error::{Error, Result};
use crate::flux::bootstrap::SYNC_NAME;
use crate::git::{self, Auth, Checkout, Remote};
use crate::output::Printer;
use crate::provider::{Kind, RepoInfo, RepoRef};

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

/// A new repository, resolved from the flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRepoRequest {
    /// `OWNER/NAME` as given, or `NAME` (under the config repo's owner).
    pub name: String,
    pub source: Source,
    pub private: bool,
}

impl SourceArgs {
    /// Checks the name and the flags before anything is asked.
    pub fn request(&self, name: &str) -> Result<NewRepoRequest> {
        let name = name.trim().trim_matches('/').to_string();
        crate::names::validate_repo_path(&name, "a repository name", "NAME or OWNER/NAME", 2)?;
        let source = match (&self.from_template, &self.from_url) {
            (Some(template), _) => {
                let template = RepoRef::parse(template).map_err(|error| {
                    Error::usage(error.to_string(), "give the template as OWNER/REPO, e.g. acme/app-template")
                })?;
                if self.fork { Source::Fork(template) } else { Source::Template(template) }
            }
            (None, Some(url)) => {
                crate::repo_access::parse_url(url)?;
                crate::names::validate_git_ref(&self.from_branch, "--from-branch", "heads")?;
                Source::Url { url: url.clone(), branch: self.from_branch.clone() }
            }
            (None, None) => Source::Layout,
        };
        Ok(NewRepoRequest { name, source, private: !self.public })
    }
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
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
pub enum Files {
    /// Our app layout.
    Layout,
    /// The tree of a branch of a repository (read when the step runs).
    Copy { remote: String, branch: String },
}

/// What making the repository takes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The new repository.
    pub target: RepoRef,
    /// The branch its files will be on: the template's default branch, else `main`.
    pub branch: String,
    /// Its files are our app layout (whose manifests are in `deploy/`).
    pub layout: bool,
    kind: Kind,
    private: bool,
    /// The steps, each with its words.
    pub steps: Vec<(Step, String)>,
}

/// What was made, for stdout.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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

impl crate::output::Kind for Created {
    const KIND: &'static str = "Repository";
}

/// The branch new repositories start on when nothing says otherwise.
const DEFAULT_BRANCH: &str = "main";

/// Plans: checks what the provider can tell before anything is written (the name is free, the
/// template exists and is one).
pub async fn plan(request: &NewRepoRequest, hosted: &HostedRepo) -> Result<Plan> {
    let provider = &hosted.provider;
    let kind = provider.kind();
    let target = match request.name.split_once('/') {
        Some((owner, name)) => RepoRef::new(owner, name),
        None => RepoRef::new(hosted.repo.owner.clone(), request.name.clone()),
    };
    if provider.get_repository(&target).await?.is_some() {
        return Err(Error::usage(
            format!("{kind} repository {target} exists already"),
            "choose another name; a new repository is never written into an existing one",
        ));
    }
    let visibility = if request.private { "private" } else { "public" };
    let create = (Step::Create, format!("create the empty {visibility} repository {target} on {kind}"));
    let copy_message = |from: &str| format!("Create {target} from {from}");
    let mut branch = DEFAULT_BRANCH.to_string();
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
            branch = found.default_branch.clone().unwrap_or(branch);
            match (&request.source, kind) {
                (Source::Fork(_), _) => {
                    vec![(Step::Fork(template.clone()), format!("fork {template} into {target} on {kind}"))]
                }
                (_, Kind::GitLab) => vec![
                    create,
                    (
                        Step::FirstCommit {
                            files: Files::Copy { remote: found.https_url.clone(), branch: branch.clone() },
                            message: copy_message(&template.to_string()),
                        },
                        format!(
                            "copy the files of {template} ({branch}) as its first commit, recording the template's commit"
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
        Source::Url { url, branch: copied } => vec![
            create,
            (
                Step::FirstCommit {
                    files: Files::Copy { remote: url.clone(), branch: copied.clone() },
                    message: copy_message(url),
                },
                format!(
                    "copy the files of {url} (branch {copied}) as its first commit, recording the template's commit"
                ),
            ),
        ],
    };
    Ok(Plan { target, branch, layout: request.source == Source::Layout, kind, private: request.private, steps })
}

/// What the steps run so far made.
#[derive(Debug, Default)]
pub struct Progress {
    made: Option<RepoInfo>,
    template_commit: Option<String>,
}

impl Progress {
    /// Runs one step of `plan`.
    pub async fn run(&mut self, plan: &Plan, hosted: &HostedRepo, step: &Step) -> Result<()> {
        let provider = &hosted.provider;
        match step {
            Step::Create => {
                let personal = provider.token_login().await?.eq_ignore_ascii_case(&plan.target.owner);
                self.made = Some(provider.create_repository(&plan.target, plan.private, personal).await?);
            }
            Step::Generate(template) => {
                self.made = Some(provider.generate_repository(template, &plan.target, plan.private).await?);
            }
            Step::Fork(upstream) => self.made = Some(provider.fork_repository(upstream, &plan.target).await?),
            Step::FirstCommit { files, message } => {
                let info = self
                    .made
                    .as_ref()
                    .ok_or_else(|| Error::Internal("no repository before its first commit".into()))?;
                self.template_commit = first_commit(hosted, info, &plan.branch, files, message).await?;
            }
        }
        Ok(())
    }

    /// After `error` stopped the plan: deletes the repository again when one was made. Returns
    /// the error to report (with what could not be undone).
    pub async fn undo(&mut self, plan: &Plan, hosted: &HostedRepo, error: Error, printer: &Printer) -> Error {
        if self.made.take().is_none() {
            return error;
        }
        match hosted.provider.delete_repository(&plan.target).await {
            Ok(()) => {
                printer.progress(&format!("deleted {} again", plan.target));
                error
            }
            Err(left) => Error::Remote {
                message: format!("{error}; and {} could not be deleted again: {left}", plan.target),
                hint: Some(format!("delete {} on {} by hand", plan.target, plan.kind)),
            },
        }
    }

    /// What was made, once every step ran.
    pub fn created(self, plan: &Plan) -> Result<Created> {
        let info = self.made.ok_or_else(|| Error::Internal("the plan made no repository".into()))?;
        Ok(Created {
            repository: plan.target.to_string(),
            web_url: info.web_url,
            ssh_url: info.ssh_url,
            https_url: info.https_url,
            template_commit: self.template_commit,
        })
    }
}

/// Pushes the first commit to `branch` over HTTPS with the provider token (the first branch
/// pushed to an empty repository becomes its default); returns the copied commit.
async fn first_commit(
    hosted: &HostedRepo,
    info: &RepoInfo,
    branch: &str,
    files: &Files,
    message: &str,
) -> Result<Option<String>> {
    let token = Auth::Basic {
        username: hosted.provider.kind().token_user().to_string(),
        password: hosted.token.expose().to_string(),
    };
    let target = Remote { url: info.https_url.clone(), auth: token.clone() };
    let (files, message, copied) = match files {
        Files::Layout => (app_layout(), message.to_string(), None),
        Files::Copy { remote, branch: source_branch } => {
            // The provider's own repositories are read with its token (the same scheme, host and
            // port: another port of the host is another server); others anonymously.
            let parsed = |url: &str| crate::repo_access::parse_url(url).ok();
            let same_server = parsed(remote)
                .zip(parsed(&info.https_url))
                .is_some_and(|(remote, ours)| crate::repo_access::same_server(&remote, &ours));
            let auth = if same_server { token.clone() } else { Auth::Anonymous };
            let source = Remote { url: remote.clone(), auth };
            let source_branch = source_branch.clone();
            let (files, commit) = git::network(move || read_tree(&source, &source_branch)).await?;
            (files, format!("{message}\n\nTemplate: {remote}@{commit}\n"), Some(commit))
        }
    };
    crate::publish::seed(target, branch, files, message).await?;
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

/// `app add --create-repo`: the repository, made before the app is committed, and the
/// credentials Flux reads it with.
#[derive(Debug, Clone)]
pub struct ForApp {
    /// Making the repository.
    pub plan: Plan,
    /// The new repository's URL, as Flux reads it.
    pub url: String,
    /// The Secret Flux reads it with: the app's own deploy key Secret, or the sync's.
    pub secret_ref: String,
    /// A new read-only deploy key for Flux (an SSH config repo), or `None`: Flux reads it with
    /// the config repo's own HTTPS credentials, the Secret the sync uses.
    pub key: Option<KeySecret>,
}

/// A deploy key Flux reads an app repository with: added to the repository, kept in a Secret of
/// the shape `flux create secret git` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySecret {
    /// The Flux namespace.
    pub namespace: String,
    /// The Secret, named after the app (as the sync's Secret is named after it).
    pub name: String,
    /// The deploy key's title on the provider.
    pub title: String,
    /// The host keys Flux trusts: the config repo's, pinned at install (same host).
    pub known_hosts: String,
}

impl ForApp {
    /// The steps, each with its words.
    pub fn steps(&self) -> impl Iterator<Item = (AppStep, String)> + '_ {
        let repository = self.plan.steps.iter().map(|(step, words)| (AppStep::Repository(step.clone()), words.clone()));
        let key = self.key.iter().map(|key| {
            let words = format!(
                "add a new read-only deploy key to {} and keep it in Secret {}/{} for Flux",
                self.plan.target, key.namespace, key.name
            );
            (AppStep::Key, words)
        });
        repository.chain(key)
    }
}

/// One step of [`ForApp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppStep {
    /// A step of making the repository.
    Repository(Step),
    /// The deploy key and its Secret.
    Key,
}

/// Plans `app add --create-repo` for `spec` (whose repository is not known yet): the new
/// repository beside the config repo, on the same host and reached the same way (so Flux
/// trusts the same host keys), and how Flux reads it.
pub(crate) async fn for_app(
    context: &Context,
    request: &NewRepoRequest,
    app: &str,
    clusters: &[ClusterDir],
) -> Result<ForApp> {
    let hosted = context.repo()?.hosted.as_ref().ok_or_else(|| {
        Error::usage(
            "--create-repo needs a config repo on GitHub, GitLab or Gitea",
            "create the app's repository on your git server and pass its --url",
        )
    })?;
    let record = context.record().ok_or_else(|| {
        Error::usage("--create-repo needs the cluster's install record", "run it against an installed cluster")
    })?;
    let plan = plan(request, hosted).await?;
    let url = sibling_url(&record.url, &plan.target)?;
    let key = if crate::repo_access::parse_url(&url)?.scheme == "ssh" {
        if let Some(other) = clusters.iter().find(|cluster| cluster.name != record.cluster_name) {
            return Err(Error::usage(
                format!(
                    "--create-repo keeps Flux's key for the new repository in this cluster ({}) only, not in {}",
                    record.cluster_name, other.name
                ),
                "add the app to this cluster, then to the others with --url and a --secret-ref of theirs",
            ));
        }
        let cluster = context.cluster()?;
        let known_hosts = crate::deploy_key::pinned_known_hosts(cluster, &context.namespace).await?.ok_or_else(|| {
            Error::usage(
                format!("Secret {}/{} has no known_hosts to trust the new repository's host with", context.namespace, SYNC_NAME),
                "re-run `kubectl gitops install`, or create the repository yourself and pass --url and --secret-ref",
            )
        })?;
        let secrets: kube::Api<Secret> = kube::Api::namespaced(cluster.client.clone(), &context.namespace);
        if secrets.get_opt(app).await.map_err(|error| cluster.error(error))?.is_some() {
            return Err(Error::usage(
                format!("Secret {}/{} exists already", context.namespace, app),
                "--create-repo keeps Flux's key in a Secret named after the app: choose another app name, or delete the Secret",
            ));
        }
        Some(KeySecret {
            namespace: context.namespace.clone(),
            name: app.to_string(),
            title: format!("flux-{}-{}", record.cluster_name, app),
            known_hosts,
        })
    } else {
        None
    };
    let secret_ref = key.as_ref().map_or_else(|| SYNC_NAME.to_string(), |key| key.name.clone());
    Ok(ForApp { plan, url, secret_ref, key })
}

/// `config_url` with its repository path replaced by `target`'s: the same scheme, user, host and
/// port (`ssh://git@host:2222/acme/fleet.git` → `ssh://git@host:2222/acme/hello.git`).
pub fn sibling_url(config_url: &str, target: &RepoRef) -> Result<String> {
    let suffix = if crate::repo_access::path_of(config_url)?.ends_with(".git") { ".git" } else { "" };
    crate::repo_access::with_path(config_url, &format!("/{}/{}{suffix}", target.owner, target.name))
}

/// The key's Secret, made by [`ForApp`]'s key step.
pub(crate) async fn add_key(
    for_app: &ForApp,
    key: &KeySecret,
    hosted: &HostedRepo,
    cluster: &crate::cluster::Cluster,
) -> Result<()> {
    let comment = format!("{}@{}", key.name, key.namespace);
    let deploy_key = DeployKey::generate(KeyAlgorithm::Ed25519, &comment, key.known_hosts.clone())?;
    hosted.provider.ensure_deploy_key(&for_app.plan.target, &key.title, &deploy_key.public_openssh, true).await?;
    let secrets: kube::Api<Secret> = kube::Api::namespaced(cluster.client.clone(), &key.namespace);
    let mut secret = deploy_key.secret(&key.namespace, &key.name);
    secret.metadata.labels = Some(BTreeMap::from([(
        crate::record::MANAGED_BY_LABEL.to_string(),
        crate::record::MANAGED_BY_VALUE.to_string(),
    )]));
    secrets.create(&kube::api::PostParams::default(), &secret).await.map_err(|error| cluster.error(error))?;
    Ok(())
}

/// Deletes the key's Secret again.
pub(crate) async fn remove_key(key: &KeySecret, cluster: &crate::cluster::Cluster) -> Result<()> {
    let secrets: kube::Api<Secret> = kube::Api::namespaced(cluster.client.clone(), &key.namespace);
    match secrets.delete(&key.name, &kube::api::DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(error) if crate::cluster::is_not_found(&error) => Ok(()),
        Err(error) => Err(cluster.error(error)),
    }
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
