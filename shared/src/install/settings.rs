//! The `install` flags (args.rs) resolved into settings before any command code runs: every
//! flag that can be checked without the network is checked here (a bad one stops the command
//! before the cluster, the git server or the provider is asked anything), the component lists
//! are merged and the OCI components parsed. The command in mod.rs and source.rs see these,
//! never clap's structs.

use std::path::PathBuf;
use std::time::Duration;

use super::args::{InstallArgs, ProviderKind};
use crate::cli::GlobalArgs;
use crate::cluster::Connection;
use crate::config::hosts;
use crate::deploy_key::KeyAlgorithm;
use crate::error::{Error, Result};
use crate::flux::bootstrap::OciComponent;
use crate::http::Origin;
use crate::names::{normalize_path, validate_name, validate_repo_path};
use crate::record::PlatformRepo;
use crate::repo_access::{ParsedUrl, parse_url};

/// What the command does with its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `--export`: print the manifests; no cluster or repo is touched.
    Export,
    /// `--dry-run`: print the plan; nothing is changed anywhere.
    DryRun,
    /// Execute the plan.
    Apply,
}

/// Where the config repo is.
#[derive(Debug, Clone)]
pub struct RepoFlags {
    /// `--provider`.
    pub provider: ProviderKind,
    /// `--owner`, blank treated as absent.
    pub owner: Option<String>,
    /// `--repository`, blank treated as absent.
    pub repository: Option<String>,
    /// `--hostname`: GitHub Enterprise, self-managed GitLab or a Gitea, parsed strictly.
    pub hostname: Option<Origin>,
    /// `--url`, or the URL of `--from-repo`, parsed.
    pub url: Option<ParsedUrl>,
    /// `--from-repo`: the layout already in the repo names the cluster, version and components.
    pub from_repo: bool,
    /// `--platform-repo` (its URL canonical) and `--platform-branch`.
    pub platform: Option<PlatformRepo>,
}

impl RepoFlags {
    /// `--owner/--repository` as `owner/name`, when both are given.
    pub fn repository_path(&self) -> Option<String> {
        self.owner.as_ref().zip(self.repository.as_ref()).map(|(owner, name)| format!("{owner}/{name}"))
    }
}

/// How the repo is created, and how Flux and we authenticate to it.
#[derive(Debug, Clone)]
pub struct AccessSettings {
    /// `--private`: create a missing repository as private.
    pub private: bool,
    /// `--personal`: the owner is a user, not an organisation or group.
    pub personal: bool,
    /// `--read-write-key`.
    pub read_write_key: bool,
    /// `--token-auth`: Flux pulls over HTTPS with the provider token.
    pub token_auth: bool,
    /// `--ssh-key-algorithm` of a generated deploy key.
    pub ssh_key_algorithm: KeyAlgorithm,
    /// `--private-key-file`.
    pub private_key_file: Option<PathBuf>,
    /// `--known-hosts-file`.
    pub known_hosts_file: Option<PathBuf>,
}

/// Which Flux to install.
#[derive(Debug, Clone)]
pub struct FluxSettings {
    /// `--flux-version`, checked as a release tag; `None` is the pinned version, or the
    /// recorded one with `--from-repo`.
    pub version: Option<String>,
    /// `--components` plus `--components-extra`, each a known controller.
    pub components: Vec<String>,
    /// `--components-file`.
    pub components_file: Option<PathBuf>,
    /// `--flux-bin`: the flux CLI that generates the manifests.
    pub flux_bin: Option<PathBuf>,
    /// `--allow-unpinned-flux`.
    pub allow_unpinned: bool,
    /// `--component`, parsed.
    pub oci_components: Vec<OciComponent>,
}

/// Everything `install` was asked to do.
#[derive(Debug, Clone)]
pub struct InstallSettings {
    /// How to reach the cluster.
    pub connection: Connection,
    /// `-n`: the Flux namespace.
    pub namespace: Option<String>,
    /// Where the config repo is.
    pub repo: RepoFlags,
    /// `--branch`, the branch Flux follows.
    pub branch: String,
    /// `--path`, normalised (no `./`, no trailing `/`).
    pub path: Option<String>,
    /// `--cluster-name`, a valid name.
    pub cluster_name: Option<String>,
    /// Which Flux to install.
    pub flux: FluxSettings,
    /// Repository creation and credentials.
    pub access: AccessSettings,
    /// Export, dry run or apply.
    pub mode: Mode,
    /// Wait until Flux has applied the pushed commit (not `--no-wait`).
    pub wait: bool,
    /// `--timeout` for CRDs, controllers and the first sync.
    pub timeout: Duration,
    /// `--yes`: no confirmation questions.
    pub yes: bool,
    /// `--layers`: move a cluster directory laid out before the layers to them.
    pub layers: bool,
}

fn non_blank(value: &Option<String>) -> Option<String> {
    value.clone().filter(|value| !value.trim().is_empty())
}

/// Each component must be one Flux knows, and Flux cannot sync without the two required ones.
fn validate_components(components: &[String]) -> Result<()> {
    let known: Vec<&str> =
        crate::flux::DEFAULT_COMPONENTS.iter().chain(crate::flux::EXTRA_COMPONENTS.iter()).copied().collect();
    for component in components {
        if !known.contains(&component.as_str()) {
            return Err(Error::usage(
                format!("unknown Flux component {component:?}"),
                format!("known components: {}", known.join(", ")),
            ));
        }
    }
    for required in ["source-controller", "kustomize-controller"] {
        if !components.iter().any(|c| c == required) {
            return Err(Error::usage(format!("{required} is required"), "add it to --components"));
        }
    }
    Ok(())
}

impl InstallArgs {
    /// `--platform-repo`: a URL on the config repo's server (`config`, when given as `--url`),
    /// reached the same way, so that Flux reads it with the sync's Secret.
    fn platform_repo(&self, config: Option<&ParsedUrl>) -> Result<Option<PlatformRepo>> {
        let Some(text) = &self.platform_repo else { return Ok(None) };
        let platform = parse_url(text)?;
        if let Some(config) = config
            && !crate::repo_access::same_server(config, &platform)
        {
            return Err(Error::usage(
                format!("the platform repo {text} is not on the config repo's server ({})", config.canonical),
                "Flux reads the platform repo with the config repo's credentials: give a URL of the same scheme, \
                 user, host and port",
            ));
        }
        let branch = self.platform_branch.clone().unwrap_or_else(|| self.branch.clone());
        Ok(Some(PlatformRepo { url: platform.canonical, branch }))
    }

    /// The settings these flags and the shared ones ask for; an error names the first bad flag.
    pub fn settings(&self, global: &GlobalArgs) -> Result<InstallSettings> {
        let url = self.url.as_deref().or(self.from_repo.as_deref()).map(parse_url).transpose()?;
        let platform = self.platform_repo(url.as_ref())?;
        if self.token_auth && self.provider == ProviderKind::Git && url.as_ref().is_some_and(|url| url.scheme == "ssh")
        {
            return Err(Error::usage(
                "--token-auth needs an https:// repository URL with --provider git",
                "pass --url https://host/path/repo.git, or drop --token-auth to use an SSH deploy key",
            ));
        }
        let (owner, repository) = (non_blank(&self.owner), non_blank(&self.repository));
        if let Some(owner) = &owner {
            validate_repo_path(owner, "an --owner", "a user, an organisation or a GROUP/SUBGROUP", usize::MAX)?;
        }
        if let Some(repository) = &repository {
            validate_repo_path(repository, "a --repository name", "one name", 1)?;
        }
        let cluster_name =
            self.cluster_name.as_deref().map(|name| validate_name(name, "--cluster-name")).transpose()?;
        let path = self.path.as_deref().map(normalize_path).transpose()?;
        let mut components = self.components.clone();
        components.extend(self.components_extra.iter().cloned());
        validate_components(&components)?;
        let oci_components = self.oci_components.iter().map(|text| OciComponent::parse(text)).collect::<Result<_>>()?;
        let mode = if self.export {
            Mode::Export
        } else if self.dry_run {
            Mode::DryRun
        } else {
            Mode::Apply
        };
        Ok(InstallSettings {
            connection: Connection::from_args(global, crate::timeouts::REQUEST),
            namespace: global.namespace.clone(),
            repo: RepoFlags {
                provider: self.provider,
                owner,
                repository,
                hostname: self
                    .hostname
                    .as_deref()
                    .map(|text| Origin::parse(text).map_err(|error| hosts::not_a_host("--hostname", &error)))
                    .transpose()?,
                url,
                from_repo: self.from_repo.is_some(),
                platform,
            },
            branch: self.branch.clone(),
            path,
            cluster_name,
            flux: FluxSettings {
                version: self
                    .flux_version
                    .as_deref()
                    .map(|version| version.parse::<crate::flux_cli::Tag>().map(|tag| tag.to_string()))
                    .transpose()?,
                components,
                components_file: self.components_file.clone(),
                flux_bin: self.flux_bin.clone(),
                allow_unpinned: self.allow_unpinned_flux,
                oci_components,
            },
            access: AccessSettings {
                private: !self.public,
                personal: self.personal,
                read_write_key: self.read_write_key,
                token_auth: self.token_auth,
                ssh_key_algorithm: self.ssh_key_algorithm,
                private_key_file: self.private_key_file.clone(),
                known_hosts_file: self.known_hosts_file.clone(),
            },
            mode,
            wait: !self.no_wait,
            timeout: self.timeout,
            yes: self.yes,
            layers: self.layers,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        install: InstallArgs,
        #[command(flatten)]
        global: GlobalArgs,
    }

    fn settings(flags: &[&str]) -> Result<InstallSettings> {
        let cli = Cli::try_parse_from(std::iter::once("install").chain(flags.iter().copied())).unwrap();
        cli.install.settings(&cli.global)
    }

    fn usage_error(flags: &[&str]) -> String {
        match settings(flags) {
            Err(error) => format!("{error} / {}", error.hint().unwrap_or_default()),
            Ok(settings) => panic!("{flags:?} was accepted: {settings:?}"),
        }
    }

    #[test]
    fn defaults_install_the_default_controllers_and_wait() {
        let settings = settings(&["--url", "git@git.example.com:fleet.git"]).unwrap();
        assert_eq!(settings.repo.url.unwrap().canonical, "ssh://git@git.example.com/fleet.git");
        assert_eq!(settings.flux.components, crate::flux::DEFAULT_COMPONENTS.map(String::from));
        assert_eq!((settings.mode, settings.wait, settings.branch.as_str()), (Mode::Apply, true, "main"));
        assert_eq!((settings.path, settings.cluster_name), (None, None));
    }

    #[test]
    fn extra_components_are_added_and_paths_normalised() {
        let settings = settings(&[
            "--url=https://git.example.com/fleet.git",
            "--components-extra=image-reflector-controller",
            "--path=./clusters/dev/",
            "--no-wait",
            "--dry-run",
        ])
        .unwrap();
        assert_eq!(settings.flux.components.last().unwrap(), "image-reflector-controller");
        assert_eq!(settings.path.as_deref(), Some("clusters/dev"));
        assert_eq!((settings.mode, settings.wait), (Mode::DryRun, false));
    }

    #[test]
    fn bad_flags_stop_before_any_io() {
        assert!(usage_error(&["--components-extra=nope"]).contains("unknown Flux component \"nope\""));
        assert!(usage_error(&["--components=source-controller"]).contains("kustomize-controller is required"));
        assert!(usage_error(&["--url=ftp://host/repo"]).contains("unsupported repository URL"));
        assert!(usage_error(&["--cluster-name=Not_A_Name"]).contains("--cluster-name"));
        let token = usage_error(&["--url=ssh://git@host/fleet.git", "--token-auth"]);
        assert!(token.contains("--token-auth needs an https:// repository URL"), "{token}");
        assert!(usage_error(&["--component=docker.io/x:1"]).contains("oci://"));
        let elsewhere = usage_error(&["--url=ssh://git@host/fleet.git", "--platform-repo=https://host/platform.git"]);
        assert!(
            elsewhere.contains("the platform repo https://host/platform.git is not on the config repo's server"),
            "{elsewhere}"
        );
    }

    #[test]
    fn a_platform_repo_beside_the_config_repo_follows_its_branch_unless_told() {
        let flags = ["--url=git@host:acme/fleet.git", "--branch=prod", "--platform-repo=git@host:acme/platform.git"];
        let platform = settings(&flags).unwrap().repo.platform.unwrap();
        assert_eq!((platform.url.as_str(), platform.branch.as_str()), ("ssh://git@host/acme/platform.git", "prod"));
        let told = settings(&[&flags[..], &["--platform-branch=stable"]].concat()).unwrap();
        assert_eq!(told.repo.platform.unwrap().branch, "stable");
        assert!(
            Cli::try_parse_from(["install", "--platform-branch=stable"]).is_err(),
            "--platform-branch needs --platform-repo"
        );
    }

    #[test]
    fn blank_owner_and_repository_count_as_absent() {
        let settings = settings(&["--provider=github", "--owner= ", "--repository=fleet"]).unwrap();
        assert_eq!((settings.repo.repository_path(), settings.repo.owner), (None, None));
    }
}
