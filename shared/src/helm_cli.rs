//! Which helm CLI `diff` renders HelmReleases with, and getting it when there is none, the way the
//! flux CLI is got ([`crate::flux_cli`]). First found wins (docs/dependencies.md):
//! 1. `--helm-bin`, else `KUBECTL_GITOPS_HELM_BIN`;
//! 2. the cache, `${XDG_CACHE_HOME:-~/.cache}/kubectl-gitops/helm/<version>/helm`, written only
//!    after the download matched its sha256 file;
//! 3. a download of dependencies.toml's `[helm]` release for this platform: the archive checked
//!    against Helm's sha256 file beside it, and that file against the sha256 this build pins for
//!    the platform when it has one, unpacked into the cache.
//!
//! Nothing falls back to a `helm` on PATH, and no file or object chooses the version: a chart
//! renders with the one Helm this build names.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::dependencies;
use crate::env;
use crate::error::{Error, Result};
use crate::flux_cli::{Pin, Release, Tag, Tool, cache_root, verify_cached_or_warn};
use crate::output::Printer;

/// The helm CLI.
pub static HELM: Tool = Tool {
    name: "helm",
    flag: "--helm-bin",
    environment: env::KUBECTL_GITOPS_HELM_BIN,
    release_url_environment: env::KUBECTL_GITOPS_HELM_RELEASE_URL,
};

/// `[helm].version` of dependencies.toml, for this platform: its assets, what this build pins for
/// them, and its directory in `cache_root`.
pub fn release(cache_root: PathBuf) -> Result<Release> {
    let version = Tag::from_str(dependencies::HELM_VERSION)?;
    let (os, arch) = crate::flux_cli::platform()?;
    let platform = format!("{os}-{arch}");
    let pin = match dependencies::HELM_PINNED_PLATFORMS.iter().find(|(listed, _)| *listed == platform) {
        Some((_, Some(sha))) => Pin::Checksums((*sha).to_string()),
        Some((_, None)) => Pin::DevelopmentBuild,
        None => {
            return Err(Error::usage(
                format!("this kubectl-gitops pins no helm {version} for {platform}"),
                format!("install helm {version} yourself and pass --helm-bin (or {})", env::KUBECTL_GITOPS_HELM_BIN),
            ));
        }
    };
    let base_url = std::env::var(env::KUBECTL_GITOPS_HELM_RELEASE_URL)
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| dependencies::HELM_RELEASE_URL.to_string());
    let fill = |template: &str| dependencies::fill(template, version.as_str(), os, arch);
    Ok(Release {
        tool: &HELM,
        archive: fill(dependencies::HELM_ARCHIVE),
        executable: format!("{}{}", fill(dependencies::HELM_EXECUTABLE), std::env::consts::EXE_SUFFIX),
        base_url: fill(&base_url).trim_end_matches('/').to_string(),
        checksums: fill(dependencies::HELM_CHECKSUMS),
        pin,
        cache_root,
        version,
    })
}

/// The helm executable to render with: given (`flag`, else the environment, checked to be a
/// file), cached, else downloaded within `deadline` and verified.
pub async fn locate(flag: Option<PathBuf>, deadline: Duration, printer: &Printer) -> Result<PathBuf> {
    let environment = std::env::var_os(env::KUBECTL_GITOPS_HELM_BIN).filter(|value| !value.is_empty());
    if let Some((path, _)) = HELM.given(flag, environment.map(PathBuf::from))? {
        return Ok(path);
    }
    let cache_root = cache_root(&HELM).ok_or_else(|| {
        Error::usage(
            "no cache directory for the helm CLI: neither XDG_CACHE_HOME nor HOME is set",
            format!("set XDG_CACHE_HOME, or pass --helm-bin (or {})", env::KUBECTL_GITOPS_HELM_BIN),
        )
    })?;
    let release = release(cache_root)?;
    if let Some(path) = verify_cached_or_warn(&release, printer)? {
        return Ok(path);
    }
    release.install(deadline, printer).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_names_helm_s_assets_for_this_machine() {
        let cache = tempfile::tempdir().unwrap();
        let release = release(cache.path().to_path_buf()).unwrap();
        let (os, arch) = crate::flux_cli::platform().unwrap();
        assert_eq!(release.archive, format!("helm-{}-{os}-{arch}.tar.gz", dependencies::HELM_VERSION));
        assert_eq!(release.checksums, format!("{}.sha256sum", release.archive));
        assert_eq!(release.executable, format!("{os}-{arch}/helm"));
        assert_eq!(release.base_url, "https://get.helm.sh");
        assert_eq!(release.dir(), cache.path().join(dependencies::HELM_VERSION));
        // Helm's sha256 file holds one line, `<sha256>  <archive>`, which the release reads.
        let sha = "c".repeat(64);
        let file = format!("{sha}  {}\n", release.archive);
        assert_eq!(release.archive_sha256(file.as_bytes()).unwrap(), sha);
    }

    #[test]
    fn a_helm_bin_that_is_not_a_file_is_refused() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let printer = Printer::new(crate::cli::ColorChoice::Never, 0, 0);
        let error = runtime
            .block_on(locate(Some(PathBuf::from("/nonexistent/helm")), Duration::from_secs(1), &printer))
            .unwrap_err();
        assert_eq!(error.to_string(), "--helm-bin names /nonexistent/helm, which is not a file");
    }
}
