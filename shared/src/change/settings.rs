//! The settings every changing command shares, resolved from the shared flags before any command
//! code runs: where the commands act, how to reach the config repo, how a change is delivered.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{DeliveryArgs, GlobalArgs, RepoArgs};
use crate::cluster::Connection;
use crate::error::{Error, Result};
use crate::git::Signature;

/// Where the commands act: the cluster and the namespace `-n` asks for.
#[derive(Debug, Clone)]
pub struct Target {
    /// How to reach the cluster.
    pub connection: Connection,
    /// `-n`: the Flux namespace when the cluster does not tell.
    pub namespace: Option<String>,
}

impl Target {
    /// The target the shared flags name.
    pub fn from_args(global: &GlobalArgs) -> Target {
        Target {
            connection: Connection::from_args(global, crate::timeouts::REQUEST),
            namespace: global.namespace.clone(),
        }
    }
}

/// How to reach the config repo; unset fields default to the install record's.
#[derive(Debug, Clone, Default)]
pub struct RepoSettings {
    /// `--config-repo`.
    pub config_repo: Option<String>,
    /// `--config-branch`, checked to be a valid branch name.
    pub config_branch: Option<String>,
    /// `--private-key-file`.
    pub private_key_file: Option<PathBuf>,
    /// `--known-hosts-file`.
    pub known_hosts_file: Option<PathBuf>,
    /// The change is a platform service's or a tenant's: it goes to the platform repo when the
    /// cluster was installed with one (`install --platform-repo`) and no `--config-repo` is given.
    pub platform: bool,
    /// `--accept-host`: new hosts the install record may send credentials to (with
    /// `KUBECTL_GITOPS_ACCEPT_HOSTS`, parsed strictly where they are used:
    /// [`crate::config::hosts::accepted`]).
    pub accepted_hosts: Vec<String>,
}

impl RepoSettings {
    /// These settings, for a change the platform repo holds when there is one (`platform`), or
    /// the config repo.
    pub fn for_platform(&self, platform: bool) -> RepoSettings {
        RepoSettings { platform, ..self.clone() }
    }

    /// These settings, for a change the platform repo holds when there is one (tenants).
    pub fn in_platform_repo(&self) -> RepoSettings {
        RepoSettings { platform: true, ..self.clone() }
    }
}

impl RepoArgs {
    pub(crate) fn settings(&self) -> Result<RepoSettings> {
        if let Some(url) = &self.config_repo {
            crate::repo_access::parse_url(url)?;
        }
        if let Some(branch) = &self.config_branch {
            crate::names::validate_git_ref(branch, "--config-branch", "heads")?;
        }
        // Checked here too, so that a bad one is refused before anything is asked.
        crate::config::hosts::accepted(&self.trust.accept_hosts)?;
        Ok(RepoSettings {
            config_repo: self.config_repo.clone(),
            config_branch: self.config_branch.clone(),
            private_key_file: self.private_key_file.clone(),
            known_hosts_file: self.known_hosts_file.clone(),
            platform: false,
            accepted_hosts: self.trust.accept_hosts.clone(),
        })
    }
}

/// How a change reaches the config repo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryMode {
    /// Push, unless the provider says the branch is protected: then a pull request.
    Auto,
    /// `--auto-merge`: push.
    Push,
    /// `--pr`: a pull request.
    PullRequest,
}

/// How a change is delivered, and what happens after.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// Push or pull request.
    pub mode: DeliveryMode,
    /// `-m`: the commit message, else one that says what changed.
    pub message: Option<String>,
    /// `--author`, else `GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL`, else kubectl-gitops.
    pub author: Signature,
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--merge`: merge the pull request once opened.
    pub merge: bool,
    /// `--wait`.
    pub wait: bool,
    /// `--timeout`: of `--wait`, and of retrying refused pushes.
    pub timeout: Duration,
    /// With `dry_run`: also what the plan would change in the cluster, as the preview engine
    /// ([`crate::preview`]) says (`--preview`; the UI's Add and Remove pages ask for it).
    pub preview: bool,
}

impl DeliveryArgs {
    /// The settings these flags make.
    pub(crate) fn settings(&self) -> Result<DeliverySettings> {
        let mode = match (self.pr, self.auto_merge) {
            (true, _) => DeliveryMode::PullRequest,
            (false, true) => DeliveryMode::Push,
            (false, false) => DeliveryMode::Auto,
        };
        Ok(DeliverySettings {
            mode,
            message: self.message.clone(),
            author: author(self.author.as_deref())?,
            dry_run: self.dry_run,
            merge: self.merge,
            wait: self.wait,
            timeout: self.timeout,
            preview: self.dry_run && self.preview,
        })
    }
}

/// The commit author: `--author "Name <email>"`, else `GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL`.
fn author(text: Option<&str>) -> Result<Signature> {
    let Some(text) = text else {
        return Ok(crate::publish::author());
    };
    let parsed = text.trim().strip_suffix('>').and_then(|rest| rest.split_once('<'));
    match parsed {
        Some((name, email)) if !name.trim().is_empty() && email.contains('@') => {
            Ok(Signature { name: name.trim().to_string(), email: email.trim().to_string() })
        }
        _ => Err(Error::usage(
            format!("--author {text:?} is not \"Name <email>\""),
            "e.g. --author \"Jo Doe <jo@example.com>\"",
        )),
    }
}

/// The delivery a face asks for: a pull request or what `app add` chooses (a push unless the
/// branch is protected), the plan and its cluster preview with `dryRun`, `--wait`; every other
/// setting as the flags default it.
pub fn delivery(pr: bool, message: Option<String>, dry_run: bool, wait: bool) -> DeliverySettings {
    DeliverySettings {
        mode: if pr { DeliveryMode::PullRequest } else { DeliveryMode::Auto },
        message,
        author: crate::publish::author(),
        dry_run,
        merge: false,
        wait,
        timeout: crate::timeouts::COMMAND,
        // The plan comes with what it would do to the cluster, as `kubectl gitops diff` says it.
        preview: dry_run,
    }
}
