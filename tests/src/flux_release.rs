//! The real flux CLI, built from its Go module (tests/testenv/build-flux-cli.sh, cached), and a
//! release server on 127.0.0.1 shaped like Flux's release page: the CLI packed as
//! `flux_<number>_<os>_<arch>.tar.gz` beside `flux_<number>_checksums.txt`, under `/<version>/`.
//! Tests point `KUBECTL_GITOPS_FLUX_RELEASE_URL` at it, so that the download and its
//! verification run for real.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use anyhow::Result;
use gitops_shared::dependencies::FLUX_VERSION;
use gitops_shared::env;
use gitops_shared::flux_cli::{Release, sha256_hex};

use crate::http::{self, Reply};

/// The directory build-flux-cli.sh built into: `GITOPS_FLUX_CLI_DIR` (make test and make bench
/// pass it), else the script's answer (a no-op when its cache is warm, minutes when cold).
pub fn cli_dir() -> Result<PathBuf> {
    crate::tools::built_dir("GITOPS_FLUX_CLI_DIR", "build-flux-cli.sh")
}

/// `flux install --export` of the previous Flux line (v2.8.3), built from Go modules by
/// tests/testenv/build-flux-previous.sh (`GITOPS_FLUX_PREVIOUS_DIR` when make test built it):
/// what a cluster installed before the pinned release runs. Panics, naming what failed.
pub fn previous_components() -> PathBuf {
    let dir = crate::tools::built_dir("GITOPS_FLUX_PREVIOUS_DIR", "build-flux-previous.sh")
        .expect("the previous Flux release's manifests");
    let path = dir.join("gotk-components.yaml");
    assert!(path.is_file(), "{} is missing: rebuild it with tests/testenv/build-flux-previous.sh", path.display());
    path
}

/// The real flux CLI of [`FLUX_VERSION`]; panics, naming what failed, when it cannot be built.
pub fn cli() -> PathBuf {
    static CLI: OnceLock<PathBuf> = OnceLock::new();
    CLI.get_or_init(|| {
        let path = cli_dir().expect("the flux CLI for the tests").join("bin/flux");
        assert!(path.is_file(), "{} is missing: rebuild it with tests/testenv/build-flux-cli.sh", path.display());
        path
    })
    .clone()
}

/// `flux install --export` of the real CLI, with all six controllers, in a file: what a user
/// would pass as `--components-file`.
pub fn components() -> PathBuf {
    static COMPONENTS: OnceLock<PathBuf> = OnceLock::new();
    COMPONENTS
        .get_or_init(|| {
            let output = Command::new(cli())
                .args([
                    "install",
                    "--export",
                    "--components-extra=image-reflector-controller,image-automation-controller",
                ])
                .output()
                .expect("running flux install --export");
            assert!(output.status.success(), "flux install --export: {}", String::from_utf8_lossy(&output.stderr));
            // In a directory of the user's own (the tests may not write to the build), under a
            // name the same CLI always gives the same bytes: written whole, then renamed into place,
            // so concurrent test processes share one file and none reads a partial one.
            let uid = rustix::process::geteuid().as_raw();
            let dir = std::env::temp_dir().join(format!("kubectl-gitops-tests-{uid}"));
            std::fs::create_dir_all(&dir).expect("a directory for the components");
            let path = dir.join(format!("gotk-components-{FLUX_VERSION}.yaml"));
            let partial = dir.join(format!(".gotk-components-{FLUX_VERSION}.{}", std::process::id()));
            std::fs::write(&partial, &output.stdout).expect("writing the components");
            std::fs::rename(&partial, &path).expect("moving the components into place");
            path
        })
        .clone()
}

/// The archive's and the checksums file's names for this machine, for the pinned version.
pub fn asset_names() -> (String, String) {
    asset_names_of(FLUX_VERSION)
}

/// The names the product itself downloads for `version` on this machine.
fn asset_names_of(version: &str) -> (String, String) {
    let tag = version.parse().expect("a release tag");
    let release = Release::for_this_machine(&tag, "", Path::new("")).expect("Flux publishes this platform");
    (release.archive, release.checksums)
}

/// The CLI packed as the release packs it: `flux` at the archive's root, mode 0755.
fn archive() -> &'static [u8] {
    static ARCHIVE: OnceLock<Vec<u8>> = OnceLock::new();
    ARCHIVE.get_or_init(|| {
        let binary = std::fs::read(cli()).expect("reading the flux CLI");
        let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut builder = tar::Builder::new(gzip);
        let mut header = tar::Header::new_gnu();
        header.set_size(binary.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        builder.append_data(&mut header, "flux", binary.as_slice()).expect("packing flux");
        builder.into_inner().and_then(|gzip| gzip.finish()).expect("finishing the archive")
    })
}

/// What the release server gets wrong on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// Nothing: the archive and the checksums file of the release.
    None,
    /// One byte of the archive is changed after its checksum was listed.
    Archive,
    /// The checksums file lists another sha256 for the archive.
    Checksums,
}

/// A release server for [`FLUX_VERSION`] (and, with [`ReleaseServer::start_with`], other versions
/// served with the same CLI); stops when dropped.
pub struct ReleaseServer {
    /// The release base URL template, for `KUBECTL_GITOPS_FLUX_RELEASE_URL`.
    pub url: String,
    requests: Arc<Mutex<Vec<String>>>,
    _server: http::Server,
}

impl ReleaseServer {
    /// Serves the release, tampered with as asked.
    pub fn start(tamper: Tamper) -> ReleaseServer {
        ReleaseServer::start_with(tamper, &[FLUX_VERSION])
    }

    /// Serves each of `versions` as a release of the same CLI, tampered with as asked.
    pub fn start_with(tamper: Tamper, versions: &[&str]) -> ReleaseServer {
        let mut archive = archive().to_vec();
        let listed = match tamper {
            Tamper::Checksums => "0".repeat(64),
            _ => sha256_hex(&archive),
        };
        if tamper == Tamper::Archive {
            let middle = archive.len() / 2;
            archive[middle] ^= 0xff;
        }
        let mut files = Vec::new();
        for version in versions {
            let (archive_name, checksums_name) = asset_names_of(version);
            let checksums = format!("{}  flux_0.0.0_other_os.tar.gz\n{listed}  {archive_name}\n", "1".repeat(64));
            files.push((format!("/{version}/{archive_name}"), archive.clone()));
            files.push((format!("/{version}/{checksums_name}"), checksums.into_bytes()));
        }
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let server = http::serve(move |incoming| {
            seen.lock().unwrap_or_else(PoisonError::into_inner).push(incoming.path.clone());
            let found = files.iter().find(|(path, _)| *path == incoming.path);
            Reply {
                status: if found.is_some() { 200 } else { 404 },
                headers: Vec::new(),
                body: found.map(|(_, body)| body.clone()).unwrap_or_default(),
                content_type: "application/octet-stream",
                delay: Duration::ZERO,
            }
        });
        ReleaseServer { url: format!("{}/{{version}}", server.origin), requests, _server: server }
    }

    /// The paths requested so far, oldest first.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A release URL where nothing listens: a port just bound and released.
pub fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let port = listener.local_addr().expect("local address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/{{version}}")
}

/// Environment for a binary that must find no flux but the one it downloads: a PATH without
/// flux, an empty cache and the release server `url`.
pub fn isolated_env(cache: &Path, url: &str) -> Vec<(String, String)> {
    let path = std::env::var("PATH").unwrap_or_default();
    let without_flux: Vec<&str> = path.split(':').filter(|dir| !Path::new(dir).join("flux").exists()).collect();
    vec![
        ("PATH".into(), without_flux.join(":")),
        (env::XDG_CACHE_HOME.into(), cache.display().to_string()),
        (env::KUBECTL_GITOPS_FLUX_RELEASE_URL.into(), url.to_string()),
    ]
}

/// Every file under `dir`, relative, sorted: what a failed download left behind.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.push(path.strip_prefix(dir).unwrap_or(&path).display().to_string());
        }
    }
    found.sort();
    found
}

/// Writes `text` to stdin of `command` and returns its output.
pub fn with_stdin(command: &mut Command, text: &str) -> std::process::Output {
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait")
}
