//! `diff`'s flags and what they resolve to: the state of the config repo to compare, the other
//! sources' checkouts, and the source a Kustomization applies.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::change::{self, RepoSettings};
use crate::cli::{GlobalArgs, OutputFormat, RepoArgs};
use crate::error::{Error, Result};
use crate::provider::PullRequestReference;

/// `kubectl gitops diff`.
#[derive(Debug, Clone, clap::Args)]
pub struct DiffArgs {
    /// A directory on this machine, for the files to write or to read.
    ///
    /// The checkout of the config repo to compare with the cluster, uncommitted edits included
    /// (default: the git work tree you stand in, when one of its remotes is the config repo).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, conflicts_with_all = ["git_ref", "pull_request"])]
    pub dir: Option<PathBuf>,

    /// The config repo at a branch's head, or at a commit by its full hash.
    ///
    /// The config repo at a branch's head, or at a commit of the branch Flux follows by its full
    /// 40-character hash, cloned for the comparison (the key flags below, else what the
    /// install record says).
    #[arg(long = "ref", value_name = "BRANCH|SHA", conflicts_with = "pull_request")]
    pub git_ref: Option<String>,

    /// A pull request of the config repo, compared at its head commit: its number or address.
    #[arg(long, value_name = "NUMBER|URL")]
    pub pull_request: Option<String>,

    #[command(flatten)]
    pub preview: PreviewArgs,
}

/// How a state is compared, whoever names it (`diff`, `pr comment`): how it is rendered, and
/// where the config repo is cloned from.
#[derive(Debug, Clone, clap::Args)]
pub struct PreviewArgs {
    #[command(flatten)]
    pub render: RenderArgs,

    #[command(flatten)]
    pub repo: RepoArgs,
}

/// How a preview renders what it compares: the other sources, the helm that renders.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RenderArgs {
    /// A checkout of another source some Kustomizations apply: KIND/NAMESPACE/NAME=DIR (repeatable).
    ///
    /// A checkout of another source some Kustomizations apply (a team's or an app's repository),
    /// compared as they would apply it: KIND/NAMESPACE/NAME=DIR, as flux build's --local-sources
    /// names one, e.g. GitRepository/team-a/team-a=../team-a (repeatable).
    #[arg(long = "local-source", value_name = "KIND/NAMESPACE/NAME=DIR")]
    pub local_sources: Vec<String>,

    /// The helm executable to render HelmReleases with, instead of the pinned release.
    ///
    /// The helm executable to render HelmReleases with (also KUBECTL_GITOPS_HELM_BIN), instead
    /// of the release dependencies.toml pins, which is downloaded once, verified and cached.
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub helm_bin: Option<PathBuf>,

    /// Fetch charts from HelmRepository URLs the change introduces, not only those the cluster uses.
    ///
    /// Fetch a HelmRelease's chart from a HelmRepository URL the change introduces. Without it,
    /// charts come only from repositories the cluster already pulls from, so that a change
    /// cannot make the reviewer's machine reach a host of its choosing.
    #[arg(long)]
    pub fetch_new_chart_repositories: bool,
}

impl RenderArgs {
    /// The flags, checked.
    pub fn rendering(&self) -> Result<Rendering> {
        Ok(Rendering {
            local_sources: self.local_sources.iter().map(|given| local_source(given)).collect::<Result<_>>()?,
            helm_bin: self.helm_bin.clone(),
            fetch_new_chart_repositories: self.fetch_new_chart_repositories,
        })
    }

    /// The first of these flags given, for a command that takes them only with another flag.
    pub fn first_given(&self) -> Option<&'static str> {
        if !self.local_sources.is_empty() {
            Some("--local-source")
        } else if self.helm_bin.is_some() {
            Some("--helm-bin")
        } else if self.fetch_new_chart_repositories {
            Some("--fetch-new-chart-repositories")
        } else {
            None
        }
    }
}

impl DiffArgs {
    /// The request these flags make: `-o`, the ref and the pull request checked.
    pub fn request(&self, global: &GlobalArgs) -> Result<DiffRequest> {
        let state = match (&self.dir, &self.git_ref, &self.pull_request) {
            (Some(dir), _, _) => State::Dir(dir.clone()),
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
                State::Branch(branch.clone())
            }
            (_, _, Some(reference)) => State::PullRequest(change::pull_request_reference(reference)?),
            _ => State::WorkTree,
        };
        self.preview.request(state, global)
    }
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

/// [`RenderArgs`], checked.
#[derive(Debug, Clone, Default)]
pub struct Rendering {
    /// `--local-source`: other sources, each with its checkout.
    pub local_sources: Vec<(SourceRef, PathBuf)>,
    /// `--helm-bin`.
    pub helm_bin: Option<PathBuf>,
    /// `--fetch-new-chart-repositories`.
    pub fetch_new_chart_repositories: bool,
}

/// A Flux source, as a Kustomization's `sourceRef` names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceRef {
    pub(super) kind: String,
    pub(super) namespace: String,
    pub(super) name: String,
}

impl SourceRef {
    /// A source by kind, namespace and name.
    pub fn new(kind: &str, namespace: &str, name: &str) -> SourceRef {
        SourceRef { kind: kind.to_string(), namespace: namespace.to_string(), name: name.to_string() }
    }

    /// The source `kustomization`'s `sourceRef` names (its namespace defaults to the
    /// Kustomization's).
    pub fn applied_by(kustomization: &Value) -> SourceRef {
        let reference = &kustomization["spec"]["sourceRef"];
        let namespace = kustomization["metadata"]["namespace"].as_str().unwrap_or_default();
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        SourceRef {
            kind: text(&reference["kind"]),
            namespace: reference["namespace"].as_str().unwrap_or(namespace).to_string(),
            name: text(&reference["name"]),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Its namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `kustomization`'s `sourceRef` names this source (its namespace defaults to the
    /// Kustomization's).
    pub(super) fn is_applied_by(&self, kustomization: &Value) -> bool {
        *self == SourceRef::applied_by(kustomization)
    }
}

impl std::fmt::Display for SourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// `--local-source KIND/NAMESPACE/NAME=DIR`, checked: a Flux source kind, names Kubernetes takes,
/// and a directory.
fn local_source(given: &str) -> Result<(SourceRef, PathBuf)> {
    let hint = "give it as KIND/NAMESPACE/NAME=DIR, e.g. GitRepository/team-a/team-a=../team-a";
    let (reference, dir) = given
        .split_once('=')
        .ok_or_else(|| Error::usage(format!("--local-source {given:?} names no directory"), hint))?;
    let parts: Vec<&str> = reference.split('/').collect();
    let [kind, namespace, name] = parts[..] else {
        return Err(Error::usage(format!("--local-source {reference:?} is not KIND/NAMESPACE/NAME"), hint));
    };
    if !matches!(kind, "GitRepository" | "OCIRepository" | "Bucket") {
        return Err(Error::usage(format!("--local-source: {kind:?} is not a source Kustomizations apply"), hint));
    }
    let source = SourceRef {
        kind: kind.to_string(),
        namespace: crate::names::validate_name(namespace, "--local-source namespace")?,
        name: crate::names::validate_name(name, "--local-source name")?,
    };
    Ok((source, existing_dir(Path::new(dir))?))
}

/// `--dir`, which must be a directory, as an absolute path.
pub(super) fn existing_dir(dir: &Path) -> Result<PathBuf> {
    if !dir.is_dir() {
        return Err(Error::usage(
            format!("--dir {} is not a directory", dir.display()),
            "give a checkout of the config repo",
        ));
    }
    std::fs::canonicalize(dir)
        .map_err(|error| Error::Io { context: format!("reading {}", dir.display()), source: error })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_source_is_a_flux_source_and_a_directory() {
        let (source, dir) = local_source("GitRepository/team-a/team-a=/").unwrap();
        assert_eq!((source.to_string(), dir), ("GitRepository/team-a/team-a".to_string(), PathBuf::from("/")));
        for bad in [
            "GitRepository/team-a/team-a",
            "team-a=/",
            "HelmRelease/a/b=/",
            "GitRepository/A_/b=/",
            "GitRepository/a/b=/nowhere",
        ] {
            assert!(local_source(bad).is_err(), "{bad}");
        }
    }
}
