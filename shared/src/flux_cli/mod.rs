//! Which flux CLI runs, and getting it when there is none: `install` runs its `install --export`
//! and `kubectl gitops flux` passes commands to it.
//!
//! The order, first found wins (docs/dependencies.md):
//! 1. `--flux-bin`, else `KUBECTL_GITOPS_FLUX_BIN`;
//! 2. the cache, `${XDG_CACHE_HOME:-~/.cache}/kubectl-gitops/flux/<version>/flux`, written only
//!    after the release's checksums matched, and hashed again before each run (release.rs);
//! 3. for the pinned version, the CLI embedded in this binary or in the `kubectl-gitops-flux`
//!    beside it (the `embed-flux` build), written to the cache;
//! 4. a download of the release (archive checked against the checksums file, and that file
//!    against dependencies.toml's sha256 when it has one), unpacked into the cache.
//!
//! Only releases dependencies.toml pins are found or downloaded, unless the command was given
//! `--allow-unpinned-flux`; nothing falls back to a `flux` on PATH (pass `--flux-bin` for that),
//! so a failed or refused download never runs an unverified CLI.

pub mod embedded;
mod release;
mod tag;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

pub(crate) use self::release::platform;
pub use self::release::{FLUX, Given, Release, Tool, sha256_hex, verify_cached, verify_cached_or_warn};
pub use self::tag::{Pin, Tag, pinned_list};
use crate::dependencies;
use crate::env;
use crate::error::{Error, Result};
use crate::output::Printer;

fn non_empty_env(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

/// The cache of `tool`'s verified releases: `${XDG_CACHE_HOME:-~/.cache}/kubectl-gitops/<tool>`,
/// or none when neither variable is set.
pub fn cache_root(tool: &Tool) -> Option<PathBuf> {
    non_empty_env(env::XDG_CACHE_HOME)
        .map(PathBuf::from)
        .or_else(|| non_empty_env(env::HOME).map(|home| PathBuf::from(home).join(".cache")))
        .map(|cache| cache.join("kubectl-gitops").join(tool.name))
}

/// Where the CLI that runs came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--flux-bin`.
    Flag,
    /// `KUBECTL_GITOPS_FLUX_BIN`.
    Environment,
    /// The cache of verified downloads.
    Cache,
    /// Embedded in kubectl-gitops-flux, written to the cache just now.
    Embedded,
    /// Downloaded just now, verified and cached.
    Download,
}

impl Origin {
    /// The word `version -o json` says.
    pub fn id(self) -> &'static str {
        match self {
            Origin::Flag => "flag",
            Origin::Environment => "environment",
            Origin::Cache => "cache",
            Origin::Embedded => "embedded",
            Origin::Download => "download",
        }
    }

    /// How `version` and the warnings name it.
    pub fn describe(self) -> &'static str {
        match self {
            Origin::Flag => "--flux-bin",
            Origin::Environment => env::KUBECTL_GITOPS_FLUX_BIN,
            Origin::Cache => "the verified cache",
            Origin::Embedded => "embedded in kubectl-gitops-flux",
            Origin::Download => "downloaded and verified",
        }
    }
}

/// A flux CLI to run.
#[derive(Debug, Clone)]
pub struct FluxCli {
    /// The executable.
    pub path: PathBuf,
    /// The release, when it came from the cache, the binary or a download (not for `--flux-bin`).
    pub version: Option<Tag>,
    /// Where it came from.
    pub origin: Origin,
}

impl FluxCli {
    /// A command running this CLI.
    pub fn command(&self) -> Command {
        Command::new(&self.path)
    }
}

/// Where to look for the CLI, resolved from the flags and the environment.
#[derive(Debug, Clone)]
pub struct Locator {
    /// `--flux-bin`.
    pub flag: Option<PathBuf>,
    /// `KUBECTL_GITOPS_FLUX_BIN`.
    pub environment: Option<PathBuf>,
    /// The cache's root, holding one directory per version.
    pub cache_root: Option<PathBuf>,
    /// The release base URL template (`{version}` filled in per version).
    pub release_url: String,
    /// A `kubectl-gitops-flux` that may carry the pinned CLI (`install-cli --embedded`).
    pub sibling: Option<PathBuf>,
    /// `--allow-unpinned-flux`: releases dependencies.toml does not pin may run too.
    pub allow_unpinned: bool,
    /// How long a download may take in all.
    pub download_deadline: Duration,
}

impl Locator {
    /// The locator the environment describes, with `--flux-bin` when given.
    pub fn new(flag: Option<PathBuf>) -> Locator {
        Locator {
            flag,
            environment: non_empty_env(env::KUBECTL_GITOPS_FLUX_BIN).map(PathBuf::from),
            cache_root: cache_root(&FLUX),
            release_url: std::env::var(env::KUBECTL_GITOPS_FLUX_RELEASE_URL)
                .ok()
                .filter(|url| !url.is_empty())
                .unwrap_or_else(|| dependencies::FLUX_RELEASE_URL.to_string()),
            sibling: None,
            allow_unpinned: false,
            download_deadline: crate::timeouts::FLUX_DOWNLOAD,
        }
    }

    /// The same, with downloads bounded by the command's own deadline when it is shorter.
    pub fn with_download_deadline(mut self, deadline: Duration) -> Locator {
        self.download_deadline = self.download_deadline.min(deadline);
        self
    }

    /// The same, letting releases dependencies.toml does not pin run (`--allow-unpinned-flux`).
    pub fn allowing_unpinned(mut self, allow: bool) -> Locator {
        self.allow_unpinned = allow;
        self
    }

    /// The same, also asking `sibling` (a `kubectl-gitops-flux`) for the CLI it may embed.
    pub fn with_sibling(mut self, sibling: Option<PathBuf>) -> Locator {
        self.sibling = sibling;
        self
    }

    /// The pinned CLI embedded in this binary, else in the sibling, written to the cache.
    fn embedded(&self, release: &Release) -> Result<Option<FluxCli>> {
        if release.version.as_str() != dependencies::FLUX_VERSION {
            return Ok(None);
        }
        let cli = |path| FluxCli { path, version: Some(release.version.clone()), origin: Origin::Embedded };
        if let Some(path) = embedded::extract(release)? {
            return Ok(Some(cli(path)));
        }
        let Some(sibling) = &self.sibling else {
            return Ok(None);
        };
        // It writes into the same cache (it reads the same environment). Any failure (no embedded
        // CLI, an older build) means "not from there": the caller downloads instead.
        let wrote = Command::new(sibling)
            .args(["install-cli", "--embedded"])
            .output()
            .is_ok_and(|output| output.status.success());
        Ok(if wrote { verify_cached(release).map(cli) } else { None })
    }

    /// The release of `version` for this machine; refused when this build does not pin it and
    /// the command was not given `--allow-unpinned-flux`.
    pub fn release(&self, version: &Tag) -> Result<Release> {
        if version.pin() == Pin::Unpinned && !self.allow_unpinned {
            return Err(tag::unpinned(version));
        }
        let cache_root = self.cache_root.clone().ok_or_else(|| {
            Error::usage(
                "no cache directory for the flux CLI: neither XDG_CACHE_HOME nor HOME is set",
                format!("set XDG_CACHE_HOME, or pass --flux-bin (or {})", env::KUBECTL_GITOPS_FLUX_BIN),
            )
        })?;
        Release::for_this_machine(version, &self.release_url, &cache_root)
    }

    /// The CLI given explicitly (`--flux-bin`, else the environment), checked to exist.
    pub fn explicit(&self) -> Result<Option<FluxCli>> {
        let given = FLUX.given(self.flag.clone(), self.environment.clone())?;
        Ok(given.map(|(path, given)| {
            let origin = match given {
                Given::Flag => Origin::Flag,
                Given::Environment => Origin::Environment,
            };
            FluxCli { path, version: None, origin }
        }))
    }

    /// The CLI that would run for `version` without downloading anything: for `version` and
    /// for callers that must not touch the network.
    pub fn find_local(&self, version: &Tag) -> Result<Option<FluxCli>> {
        if let Some(cli) = self.explicit()? {
            return Ok(Some(cli));
        }
        if let Ok(release) = self.release(version)
            && let Some(path) = verify_cached(&release)
        {
            return Ok(Some(FluxCli { path, version: Some(version.clone()), origin: Origin::Cache }));
        }
        Ok(None)
    }

    /// The CLI to run for `version`: given, cached, embedded, else downloaded and verified. A
    /// failed or refused download is the error: no other CLI stands in for it.
    pub async fn locate(&self, version: &Tag, printer: &Printer) -> Result<FluxCli> {
        if let Some(cli) = self.explicit()? {
            return Ok(cli);
        }
        let release = self.release(version)?;
        if let Some(path) = verify_cached_or_warn(&release, printer)? {
            return Ok(FluxCli { path, version: Some(version.clone()), origin: Origin::Cache });
        }
        if let Some(cli) = self.embedded(&release)? {
            return Ok(cli);
        }
        let path = release.install(self.download_deadline, printer).await?;
        Ok(FluxCli { path, version: Some(version.clone()), origin: Origin::Download })
    }
}

#[cfg(test)]
mod tests;
