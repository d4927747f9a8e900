//! What a Flux version can make us fetch and run (#32, items 1 and 6): a version from a flag, a
//! repo's record or the cluster is checked as a release tag before any request; only releases
//! dependencies.toml pins run without `--allow-unpinned-flux`; a download is bounded in size and
//! time; and a failed download never falls back to a `flux` on PATH. The release server is a
//! local one that logs every request, and the binaries are the real ones.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use gitops_e2e::binaries;
use gitops_e2e::flux_release::{self, ReleaseServer, Tamper};
use gitops_e2e::http::{self, Reply};
use gitops_e2e::snapshot::Run;
use gitops_shared::dependencies::FLUX_VERSION;
use gitops_shared::env;

/// A release server that answers every request with `reply` and logs each path it was asked for.
fn logging_server(reply: Reply) -> (http::Server, Arc<Mutex<Vec<String>>>) {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&requests);
    let server = http::serve(move |incoming| {
        seen.lock().unwrap_or_else(PoisonError::into_inner).push(incoming.path);
        reply.clone()
    });
    (server, requests)
}

fn not_found() -> Reply {
    Reply { status: 404, headers: Vec::new(), body: Vec::new(), content_type: "text/plain", delay: Duration::ZERO }
}

fn logged(requests: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// A binary that finds no flux but what it downloads from `url` into `cache`.
fn isolated(binary: &str, cache: &Path, url: &str) -> Command {
    let mut command = Command::new(binaries::path(binary));
    command
        .env_remove(env::KUBECTL_GITOPS_FLUX_BIN)
        .env_remove("KUBECONFIG")
        .envs(flux_release::isolated_env(cache, url));
    command
}

/// `install --export` (no cluster, no repo) with the given extra arguments.
fn export(cache: &Path, url: &str, args: &[&str]) -> Run {
    Run::of(
        isolated("kubectl-gitops-install", cache, url)
            .args(["--export", "--url", "ssh://git@example.com/fleet.git", "--cluster-name", "dev"])
            .args(args),
    )
}

#[test]
fn a_crafted_flux_version_is_refused_before_any_request() {
    let (server, requests) = logging_server(not_found());
    let url = format!("{}/{{version}}", server.origin);
    let cache = tempfile::tempdir().unwrap();
    // The two reproductions: the url crate turned `\` into `/` and resolved `..`, so these
    // fetched /evil/repo/releases/download/t1/x_checksums.txt and /evil/x_checksums.txt.
    for crafted in ["..\\..\\..\\..\\evil\\repo\\releases\\download\\t1\\x", "v2.9.4/../../../../evil/x"] {
        let refused = export(cache.path(), &url, &["--flux-version", crafted]);
        assert_eq!(refused.code, Some(2), "{crafted}: {}", refused.stderr);
        assert!(refused.stderr.starts_with("error: \""), "{}", refused.stderr);
        assert!(refused.stderr.contains("\" is not a Flux release tag\nhint: give a release as vMAJOR.MINOR.PATCH"));
        assert_eq!(refused.stdout, "");
        let cli = Run::of(isolated("kubectl-gitops-flux", cache.path(), &url).args(["install-cli", crafted]));
        assert_eq!(cli.code, Some(2), "{}", cli.stderr);
        assert!(cli.stderr.contains("is not a Flux release tag"), "{}", cli.stderr);
    }
    assert_eq!(logged(&requests), Vec::<String>::new(), "nothing was asked of the server");
    assert_eq!(flux_release::files_under(cache.path()), Vec::<String>::new(), "nothing cached");
}

#[test]
fn a_release_this_build_does_not_pin_runs_only_with_allow_unpinned_flux() {
    let unpinned = "v2.8.1";
    let server = ReleaseServer::start_with(Tamper::None, &[unpinned]);
    let cache = tempfile::tempdir().unwrap();

    let refused = export(cache.path(), &server.url, &["--flux-version", unpinned]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused.stderr.starts_with(&format!("error: flux {unpinned} is not a release this kubectl-gitops pins (")),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains(&format!("hint: use {FLUX_VERSION}, or pass --allow-unpinned-flux")));
    let refused = Run::of(isolated("kubectl-gitops-flux", cache.path(), &server.url).args(["install-cli", unpinned]));
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert_eq!(server.requests(), Vec::<String>::new(), "refused before any download");

    // Asked for explicitly, it is downloaded and checked against its own checksums file.
    let allowed = Run::of(isolated("kubectl-gitops-flux", cache.path(), &server.url).args([
        "--allow-unpinned-flux",
        "install-cli",
        unpinned,
    ]));
    assert_eq!(allowed.code, Some(0), "{}", allowed.stderr);
    assert_eq!(
        allowed.stdout.trim(),
        cache.path().join("kubectl-gitops/flux").join(unpinned).join("flux").display().to_string()
    );
    assert_eq!(server.requests().len(), 2, "its checksums file and archive");
    // Cached, it still needs the flag: the cache is no way around the pin.
    let cached = export(cache.path(), &server.url, &["--flux-version", unpinned]);
    assert_eq!(cached.code, Some(2), "{}", cached.stderr);
}

#[test]
fn a_development_build_says_so_on_every_download_and_in_version() {
    let server = ReleaseServer::start(Tamper::None);
    let cache = tempfile::tempdir().unwrap();
    let installed = Run::of(isolated("kubectl-gitops-flux", cache.path(), &server.url).arg("install-cli"));
    assert_eq!(installed.code, Some(0), "{}", installed.stderr);
    assert!(
        installed.stderr.contains(&format!(
            "warning: this is a development build: it pins no sha256 for flux {FLUX_VERSION}'s checksums file"
        )),
        "{}",
        installed.stderr
    );
    let version = Run::of(isolated("kubectl-gitops", cache.path(), &server.url).args(["version", "--client"]));
    assert!(version.stdout.contains(&format!(
        "Pinned Flux Version: {FLUX_VERSION} (development build: the sha256 of its checksums file is not pinned)"
    )));
    let json =
        Run::of(isolated("kubectl-gitops", cache.path(), &server.url).args(["version", "--client", "-o", "json"]));
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["client"]["fluxChecksumsPinned"], false, "{report}");

    // The cached CLI changed after it was verified, at the same size (its first bytes now a
    // script that leaves a mark): never run, but named, removed and downloaded again.
    let binary = cache.path().join("kubectl-gitops/flux").join(FLUX_VERSION).join("flux");
    let mark = cache.path().join("ran");
    let mut bytes = std::fs::read(&binary).unwrap();
    let script = format!("#!/bin/sh\ntouch '{}'\nexit 0\n", mark.display());
    bytes[..script.len()].copy_from_slice(script.as_bytes());
    std::fs::write(&binary, &bytes).unwrap();
    let ran = Run::of(isolated("kubectl-gitops-flux", cache.path(), &server.url).args(["version", "--client"]));
    assert_eq!(
        (ran.code, ran.stdout.as_str()),
        (Some(0), format!("flux: {FLUX_VERSION}\n").as_str()),
        "{}",
        ran.stderr
    );
    assert!(!mark.exists(), "the tampered flux never ran");
    assert!(
        ran.stderr.contains(&format!(
            "warning: {} is not the flux {FLUX_VERSION} verified when it was downloaded (its sha256 changed)",
            binary.display()
        )),
        "{}",
        ran.stderr
    );
    assert_eq!(server.requests().len(), 4, "downloaded again");
}

#[test]
fn a_failed_download_never_runs_the_flux_on_path() {
    // A `flux` on PATH that leaves a mark when it runs.
    let bin = tempfile::tempdir().unwrap();
    let mark = bin.path().join("ran");
    let fake = bin.path().join("flux");
    std::fs::write(&fake, format!("#!/bin/sh\ntouch {}\necho 'flux: v2.9.4'\n", mark.display())).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut command = isolated("kubectl-gitops-install", cache.path(), &flux_release::closed_url());
    let path = flux_release::isolated_env(cache.path(), "").into_iter().find(|(name, _)| name == "PATH").unwrap().1;
    command.env("PATH", format!("{}:{path}", bin.path().display())).args([
        "--export",
        "--url",
        "ssh://git@example.com/fleet.git",
        "--cluster-name",
        "dev",
    ]);
    let failed = Run::of(&mut command);
    assert_eq!(failed.code, Some(4), "{}", failed.stderr);
    assert!(failed.stderr.contains("error: cannot download http://127.0.0.1:"), "{}", failed.stderr);
    assert!(!failed.stderr.contains("from PATH"), "{}", failed.stderr);
    assert_eq!(failed.stdout, "", "no manifests from an unverified CLI");
    assert!(!mark.exists(), "the flux on PATH never ran");
}

#[test]
fn a_release_server_that_stalls_or_sends_too_much_is_cut_off() {
    // The checksums file comes after a minute: --timeout 3s ends the download, not the 30 s read
    // timeout of one request.
    let stalling = Reply { delay: Duration::from_secs(60), ..not_found() };
    let (server, requests) = logging_server(stalling);
    let cache = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let stalled = export(cache.path(), &format!("{}/{{version}}", server.origin), &["--timeout", "3s"]);
    let took = started.elapsed();
    assert_eq!(stalled.code, Some(4), "{}", stalled.stderr);
    assert!(stalled.stderr.contains(&format!("error: downloading flux {FLUX_VERSION} from ")), "{}", stalled.stderr);
    assert!(stalled.stderr.contains("took longer than 3s"), "{}", stalled.stderr);
    assert!(took < Duration::from_secs(15), "ended after {took:?}");
    assert_eq!(logged(&requests).len(), 1);

    // A checksums file far larger than any release's is refused as soon as its size is known.
    let huge = Reply {
        status: 200,
        headers: Vec::new(),
        body: vec![b'0'; 2 << 20],
        content_type: "text/plain",
        delay: Duration::ZERO,
    };
    let (server, _requests) = logging_server(huge);
    let refused = export(cache.path(), &format!("{}/{{version}}", server.origin), &[]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    let (_, checksums) = flux_release::asset_names();
    assert!(
        refused.stderr.contains(&format!("error: {checksums} is larger than 1 MiB, more than any flux release holds")),
        "{}",
        refused.stderr
    );
    assert_eq!(flux_release::files_under(&cache.path().join("kubectl-gitops/flux")), Vec::<String>::new());
}

#[test]
fn a_bug_is_one_error_line_with_a_hint_and_exit_code_5() {
    for binary in ["kubectl-gitops", "kubectl-gitops-status", "kubectl-gitops-flux"] {
        let crashed = Run::of(Command::new(binaries::path(binary)).arg("__panic"));
        assert_eq!(crashed.code, Some(5), "{binary}: {}", crashed.stderr);
        let lines: Vec<&str> = crashed.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{binary}: {}", crashed.stderr);
        assert!(lines[0].starts_with("error: internal error: __panic asked for a panic at "), "{}", lines[0]);
        assert!(lines[1].starts_with("hint: this is a bug in kubectl-gitops "), "{}", lines[1]);
        assert!(lines[1].ends_with("/issues"), "{}", lines[1]);
        assert_eq!(crashed.stdout, "");
    }
}
