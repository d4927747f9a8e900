//! A release of a CLI this project pins (flux's, helm's) for this machine: its archive and
//! checksums file on the release server, and its directory in the cache. Nothing reaches the cache before both checksums matched, and the
//! cache directory appears in one rename, so a failure or a crash leaves nothing behind and two
//! concurrent downloads cannot mix. A download is bounded: each file has a size cap and the
//! whole download a deadline, so a release server cannot fill the memory or hold us for ever.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::tag::{Pin, Tag};
use crate::dependencies;
use crate::env;
use crate::error::{Error, Result};
use crate::output::Printer;

/// The file beside the cached CLI that records its sha256 and size, written after verification.
const VERIFIED: &str = "verified";

/// The largest checksums file read: Flux's and Helm's are under 1 KiB.
const MAX_CHECKSUMS_BYTES: u64 = 1 << 20;
/// The largest archive downloaded: Flux's are about 25 MB, Helm's about 20 MB.
const MAX_ARCHIVE_BYTES: u64 = 256 << 20;
/// The largest executable unpacked: Flux's is about 80 MB.
const MAX_BINARY_BYTES: u64 = 512 << 20;

/// A CLI downloaded and verified this way: how messages, the cache and the archive name it.
#[derive(Debug)]
pub struct Tool {
    /// The executable's name, without the platform's suffix, in the cache.
    pub name: &'static str,
    /// The flag naming an executable to run instead.
    pub flag: &'static str,
    /// The environment variable that does the same.
    pub environment: &'static str,
    /// The environment variable naming another release server.
    pub release_url_environment: &'static str,
}

/// Where a given executable came from: the flag, or the environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    Flag,
    Environment,
}

impl Tool {
    /// The executable given explicitly: the flag's, else the environment variable's, checked to
    /// be a file.
    pub fn given(&self, flag: Option<PathBuf>, environment: Option<PathBuf>) -> Result<Option<(PathBuf, Given)>> {
        let given = flag.map(|path| (path, Given::Flag)).or_else(|| environment.map(|path| (path, Given::Environment)));
        let Some((path, origin)) = given else { return Ok(None) };
        if !path.is_file() {
            let named = match origin {
                Given::Flag => self.flag,
                Given::Environment => self.environment,
            };
            return Err(Error::usage(
                format!("{named} names {}, which is not a file", path.display()),
                format!("point it at a {} executable, or unset it to use the pinned release", self.name),
            ));
        }
        Ok(Some((path, origin)))
    }
}

/// The flux CLI.
pub static FLUX: Tool = Tool {
    name: "flux",
    flag: "--flux-bin",
    environment: env::KUBECTL_GITOPS_FLUX_BIN,
    release_url_environment: env::KUBECTL_GITOPS_FLUX_RELEASE_URL,
};

/// One release of a pinned CLI, for this operating system and architecture.
#[derive(Debug, Clone)]
pub struct Release {
    /// Which CLI.
    pub tool: &'static Tool,
    /// The tag, e.g. `v2.9.4`.
    pub version: Tag,
    /// The archive's file name on the release page.
    pub archive: String,
    /// The executable's path inside the archive.
    pub executable: String,
    /// The release page's base URL.
    pub base_url: String,
    /// The checksums file's name.
    pub checksums: String,
    /// What dependencies.toml pins for it: the sha256 its checksums file must have, if any.
    pub pin: Pin,
    /// The cache's root.
    pub cache_root: PathBuf,
}

/// Flux's and Helm's names for this machine's operating system and architecture.
pub(crate) fn platform() -> Result<(&'static str, &'static str)> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        "windows" => "windows",
        other => return Err(unsupported(other)),
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "arm" => "arm",
        other => return Err(unsupported(other)),
    };
    Ok((os, arch))
}

fn unsupported(what: &str) -> Error {
    Error::usage(
        format!("Flux publishes no CLI for {what}"),
        format!("build flux yourself and pass --flux-bin (or {})", env::KUBECTL_GITOPS_FLUX_BIN),
    )
}

/// The sha256 of `bytes` in lower-case hex, as checksums files write it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl Release {
    /// The release of `version` whose assets are under `base_url` (a template with `{version}`).
    /// The tag is checked, so it cannot reach another path of the server or of the cache.
    pub fn for_this_machine(version: &Tag, base_url: &str, cache_root: &Path) -> Result<Release> {
        let tag = version.as_str();
        let (os, arch) = platform()?;
        let archive_template =
            if os == "windows" { dependencies::FLUX_ARCHIVE_WINDOWS } else { dependencies::FLUX_ARCHIVE };
        if !archive_template.ends_with(".tar.gz") {
            return Err(Error::usage(
                format!("the flux CLI for {os} comes as {archive_template}, which kubectl-gitops cannot unpack"),
                format!("unpack flux yourself and pass --flux-bin (or {})", env::KUBECTL_GITOPS_FLUX_BIN),
            ));
        }
        Ok(Release {
            tool: &FLUX,
            version: version.clone(),
            archive: dependencies::fill(archive_template, tag, os, arch),
            executable: format!("flux{}", std::env::consts::EXE_SUFFIX),
            base_url: dependencies::fill(base_url, tag, os, arch).trim_end_matches('/').to_string(),
            checksums: dependencies::fill(dependencies::FLUX_CHECKSUMS, tag, os, arch),
            pin: version.pin(),
            cache_root: cache_root.to_path_buf(),
        })
    }

    /// This version's directory in the cache.
    pub fn dir(&self) -> PathBuf {
        self.cache_root.join(self.version.as_str())
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base_url)
    }

    /// Downloads, verifies and unpacks the CLI into the cache; returns its path. Nothing is left
    /// in the cache when any of it fails.
    /// The whole download must end within `deadline`.
    pub async fn install(&self, deadline: Duration, printer: &Printer) -> Result<PathBuf> {
        tokio::time::timeout(deadline, self.download(deadline, printer)).await.unwrap_or_else(|_| {
            Err(Error::Remote {
                message: format!(
                    "downloading {} {} from {} took longer than {}",
                    self.tool.name,
                    self.version,
                    self.base_url,
                    crate::duration::format(deadline)
                ),
                hint: Some(format!(
                    "nothing was kept; try again on a faster network, or download the release yourself and pass {} (or {})",
                    self.tool.flag, self.tool.environment
                )),
            })
        })
    }

    async fn download(&self, deadline: Duration, printer: &Printer) -> Result<PathBuf> {
        let client = http_client(deadline)?;
        printer.step(&format!("downloading {} {} from {}", self.tool.name, self.version, self.base_url));
        if let Some(warning) = self.pin.development_warning(self.tool.name, &self.version) {
            printer.warning(&warning);
        }
        let checksums = fetch(&client, self.tool, &self.url(&self.checksums), MAX_CHECKSUMS_BYTES, printer).await?;
        let expected = self.archive_sha256(&checksums)?;
        let archive = fetch(&client, self.tool, &self.url(&self.archive), MAX_ARCHIVE_BYTES, printer).await?;
        let actual = sha256_hex(&archive);
        if actual != expected {
            return Err(Error::Untrusted {
                message: format!(
                    "{} does not match {}: sha256 {actual}, expected {expected}",
                    self.archive, self.checksums
                ),
                hint: "nothing was kept; try again later, or report it if it persists (the download may have been tampered with)".into(),
            });
        }
        let binary = unpack(&archive, self)?;
        let path = self.store(&binary)?;
        printer.done(&format!("{} {} verified and cached in {}", self.tool.name, self.version, self.dir().display()));
        Ok(path)
    }

    /// Puts a verified CLI into the cache: written with its record into a directory beside the
    /// cache's, which then takes the version's name in one rename. A version directory that fails
    /// the check is replaced; one that another process completed meanwhile is kept and used.
    pub fn store(&self, binary: &[u8]) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.cache_root)
            .map_err(|error| Error::io(format!("creating {}", self.cache_root.display()), error))?;
        let staging = tempfile::Builder::new()
            .prefix(".download-")
            .tempdir_in(&self.cache_root)
            .map_err(|error| Error::io(format!("creating a directory in {}", self.cache_root.display()), error))?;
        let unpacked = staging.path().join(self.version.as_str());
        std::fs::create_dir(&unpacked).map_err(|error| Error::io("creating the staging directory", error))?;
        let name = format!("{}{}", self.tool.name, std::env::consts::EXE_SUFFIX);
        write_executable(&unpacked.join(&name), binary)?;
        let record = format!("{name} {} {}\n", sha256_hex(binary), binary.len());
        std::fs::write(unpacked.join(VERIFIED), record).map_err(|error| Error::io("recording the checksum", error))?;
        let target = self.dir();
        if verify_cached(self).is_none() && target.exists() {
            std::fs::remove_dir_all(&target)
                .map_err(|error| Error::io(format!("removing the unverified {}", target.display()), error))?;
        }
        match std::fs::rename(&unpacked, &target) {
            Ok(()) => {}
            Err(_) if verify_cached(self).is_some() => {}
            Err(error) => {
                return Err(Error::io(format!("moving the {} CLI into {}", self.tool.name, target.display()), error));
            }
        }
        Ok(target.join(name))
    }

    /// The archive's sha256 according to the checksums file, which is first checked against
    /// the pinned sha256 when there is one.
    pub fn archive_sha256(&self, checksums: &[u8]) -> Result<String> {
        if let Pin::Checksums(pinned) = &self.pin {
            let actual = sha256_hex(checksums);
            if actual != *pinned {
                return Err(Error::Untrusted {
                    message: format!(
                        "{} does not match dependencies.toml: sha256 {actual}, expected {pinned}",
                        self.checksums
                    ),
                    hint: "nothing was kept; the release server answered with another checksums file than the one this kubectl-gitops pins".into(),
                });
            }
        }
        let text = String::from_utf8_lossy(checksums);
        text.lines()
            .filter_map(|line| line.split_once(char::is_whitespace))
            .find(|(_, name)| name.trim().trim_start_matches('*') == self.archive)
            .map(|(sha, _)| sha.to_ascii_lowercase())
            .filter(|sha| sha.len() == 64 && sha.bytes().all(|byte| byte.is_ascii_hexdigit()))
            .ok_or_else(|| Error::Untrusted {
                message: format!("{} lists no sha256 for {}", self.checksums, self.archive),
                hint: format!("nothing was kept; check the version, or pass {}", self.tool.flag),
            })
    }
}

/// What the cache holds for a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Cached {
    /// Nothing complete: never downloaded, or a directory without its record.
    Missing,
    /// The binary, with the size and sha256 recorded when it was verified.
    Verified(PathBuf),
    /// A binary that is no longer what was verified (a tampered or damaged cache): never run.
    Changed(PathBuf),
}

/// The cached CLI of this release, hashed in full against the sha256 recorded when it was
/// verified: whoever can write the cache could otherwise swap in a binary of the same size, and
/// we would run it (a stat alone cannot tell).
pub(super) fn cached(release: &Release) -> Cached {
    let dir = release.dir();
    let Ok(record) = std::fs::read_to_string(dir.join(VERIFIED)) else {
        return Cached::Missing;
    };
    let mut fields = record.split_whitespace();
    let (Some(name), Some(sha), Some(size)) = (fields.next(), fields.next(), fields.next()) else {
        return Cached::Missing;
    };
    let binary = dir.join(name);
    match file_sha256(&binary) {
        Ok((length, actual)) if length.to_string() == size && actual == sha => Cached::Verified(binary),
        _ => Cached::Changed(binary),
    }
}

/// The verified cached CLI of this release, if the cache holds one.
pub fn verify_cached(release: &Release) -> Option<PathBuf> {
    match cached(release) {
        Cached::Verified(path) => Some(path),
        Cached::Missing | Cached::Changed(_) => None,
    }
}

/// The verified cached CLI of this release; a changed one is never run: it is named in a
/// warning and removed, so that the caller downloads it again.
pub fn verify_cached_or_warn(release: &Release, printer: &Printer) -> Result<Option<PathBuf>> {
    match cached(release) {
        Cached::Verified(path) => Ok(Some(path)),
        Cached::Missing => Ok(None),
        Cached::Changed(path) => {
            printer.warning(&format!(
                "{} is not the {} {} verified when it was downloaded (its sha256 changed); it is not run, and is \
                 downloaded again",
                path.display(),
                release.tool.name,
                release.version
            ));
            let dir = release.dir();
            std::fs::remove_dir_all(&dir).map_err(|error| Error::io(format!("removing {}", dir.display()), error))?;
            Ok(None)
        }
    }
}

/// The size and sha256 of a file, read in pieces (flux is about 80 MB).
fn file_sha256(path: &Path) -> std::io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let length = std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    Ok((length, hex(&hasher.finalize())))
}

/// The house client without credentials (redirects to a CDN are followed, never from https to
/// http), each request within the whole download's `deadline` and each read within
/// [`crate::timeouts::PROVIDER_REQUEST`].
fn http_client(deadline: Duration) -> Result<reqwest::Client> {
    crate::http::builder(deadline, crate::http::Carries::Nothing)
        .read_timeout(crate::timeouts::PROVIDER_REQUEST)
        .build()
        .map_err(|error| Error::Internal(format!("cannot build an HTTP client: {error}")))
}

/// A whole file from the release server, at most `limit` bytes, with a progress line on a
/// terminal. A larger file is refused as soon as its size says so or its bytes pass the limit.
async fn fetch(client: &reqwest::Client, tool: &Tool, url: &str, limit: u64, printer: &Printer) -> Result<Vec<u8>> {
    let failed = |reason: String| Error::Remote {
        message: format!("cannot download {url}: {reason}"),
        hint: Some(format!(
            "check the network and that the release exists; {} points at another release server",
            tool.release_url_environment
        )),
    };
    let mut response =
        client.get(url).send().await.map_err(|error| failed(crate::diagnostic::chain_to_line(&error)))?;
    if !response.status().is_success() {
        return Err(failed(format!("the server answered {}", response.status())));
    }
    let total = response.content_length();
    let name = url.rsplit('/').next().unwrap_or(url).to_string();
    let too_large = || Error::Untrusted {
        message: format!("{name} is larger than {} MiB, more than any {} release holds", limit >> 20, tool.name),
        hint: format!(
            "nothing was kept; check the release server, or download the release yourself and pass {}",
            tool.flag
        ),
    };
    let mut spinner = printer.spinner(format!("downloading {name}"));
    let mut drawn = Instant::now();
    let body = crate::http::body_within(&mut response, limit, |done| {
        if drawn.elapsed() > Duration::from_millis(100) {
            let megabytes = |bytes: u64| bytes as f64 / 1_048_576.0;
            spinner.tick(&match total {
                Some(total) => format!("{:.1} of {:.1} MB", megabytes(done), megabytes(total)),
                None => format!("{:.1} MB", megabytes(done)),
            });
            drawn = Instant::now();
        }
    })
    .await;
    spinner.finish();
    match body {
        Ok(body) => Ok(body),
        Err(crate::http::BodyError::TooLarge) => Err(too_large()),
        Err(crate::http::BodyError::Transport(error)) => Err(failed(crate::diagnostic::chain_to_line(&error))),
    }
}

/// The release's executable inside its archive.
pub(super) fn unpack(archive: &[u8], release: &Release) -> Result<Vec<u8>> {
    let broken = |reason: String| Error::Untrusted {
        message: format!("{} cannot be unpacked: {reason}", release.archive),
        hint: format!("nothing was kept; try again, or pass {}", release.tool.flag),
    };
    let name = release.executable.as_str();
    let mut entries = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    for entry in entries.entries().map_err(|error| broken(error.to_string()))? {
        let entry = entry.map_err(|error| broken(error.to_string()))?;
        let path = entry.path().map_err(|error| broken(error.to_string()))?;
        if path.as_os_str() != name || !entry.header().entry_type().is_file() {
            continue;
        }
        if entry.header().size().map_err(|error| broken(error.to_string()))? > MAX_BINARY_BYTES {
            return Err(broken(format!("its {name} is larger than {} MiB", MAX_BINARY_BYTES >> 20)));
        }
        let mut bytes = Vec::new();
        entry.take(MAX_BINARY_BYTES + 1).read_to_end(&mut bytes).map_err(|error| broken(error.to_string()))?;
        if bytes.len() as u64 > MAX_BINARY_BYTES {
            return Err(broken(format!("its {name} is larger than {} MiB", MAX_BINARY_BYTES >> 20)));
        }
        return Ok(bytes);
    }
    Err(broken(format!("it holds no {name}")))
}

fn write_executable(path: &Path, bytes: &[u8]) -> Result<()> {
    let context = || format!("writing {}", path.display());
    let mut file = std::fs::File::create(path).map_err(|error| Error::io(context(), error))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|error| Error::io(context(), error))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|error| Error::io(context(), error))?;
    }
    Ok(())
}
