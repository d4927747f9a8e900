//! The start-up, detect and size budgets of docs/performance.md, and the passthrough row.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use gitops_e2e::testenv::TestEnv;

use super::{binaries_path, check};

/// The start-up, detect and size budgets of docs/performance.md. The timed rows run alternating,
/// `STARTUP_RUNS` each after one warm-up round, medians, against kubectl in the same rounds:
/// `--help` and `version --client` of the dispatcher (our start alone, as a script calls
/// `kubectl-gitops`) against `kubectl version --client`; `kubectl gitops detect` through the real
/// kubectl against `kubectl version`, both on the environment's API server.
/// The budget of each binary of the host's release build (10^6 bytes): the one binary holds every
/// command.
const RELEASE_BINARY_MB: f64 = 16.0;
/// The budget of each binary in the release archive. On Linux it is the static build, which
/// carries OpenSSL and musl besides (17.2 MB against the host build's 12.0 MB, 2026-12-05).
const ARCHIVE_BINARY_MB: f64 = 20.0;

pub(super) fn budgets(env: &TestEnv) -> Result<()> {
    const STARTUP_RUNS: usize = 40;
    let kubectl = gitops_e2e::binaries::kubectl();
    let dispatcher = binaries_path("kubectl-gitops");
    let bin_dir = dispatcher.parent().context("the binaries' directory")?.to_path_buf();
    // kubectl finds kubectl-gitops (and the dispatcher its siblings) on PATH.
    let path = std::env::join_paths(
        std::iter::once(bin_dir.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )?;
    let rows: [(&str, &Path, &[&str]); 5] = [
        ("kubectl-gitops --help", &dispatcher, &["--help"]),
        ("kubectl-gitops version --client", &dispatcher, &["version", "--client"]),
        ("kubectl version --client", &kubectl, &["version", "--client"]),
        ("kubectl gitops detect", &kubectl, &["gitops", "detect"]),
        ("kubectl version", &kubectl, &["version"]),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
    for round in 0..=STARTUP_RUNS {
        for ((name, program, args), row) in rows.iter().zip(&mut times) {
            let started = Instant::now();
            let output =
                Command::new(program).args(*args).env("PATH", &path).env("KUBECONFIG", &env.kubeconfig).output()?;
            let elapsed = started.elapsed();
            if !output.status.success() {
                bail!("{name}: {}", String::from_utf8_lossy(&output.stderr));
            }
            if round > 0 {
                row.push(elapsed);
            }
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|row| {
            row.sort();
            row[row.len() / 2].as_secs_f64() * 1e3
        })
        .collect();
    println!("\nstart-up and detect ({STARTUP_RUNS} runs each, alternating, medians)");
    for ((name, _, _), median) in rows.iter().zip(&medians) {
        println!("  {name:<46} {median:>8.1} ms");
    }
    let [help, client, kubectl_client, detect, kubectl_version] = medians[..] else { unreachable!() };
    check("kubectl-gitops --help", help, 10.0, " ms");
    check("kubectl-gitops version --client", client, 10.0, " ms");
    check("--help / kubectl version --client", help / kubectl_client, 0.2, "");
    check("version --client / kubectl version --client", client / kubectl_client, 0.2, "");
    check("kubectl gitops detect / kubectl version", detect / kubectl_version, 2.0, "");

    // MB as the budgets mean it: 10^6 bytes.
    println!("\nsizes ({})", bin_dir.display());
    // What a release ships: the one binary that runs every command, and the completion shim.
    for name in gitops_e2e::binaries::RELEASE {
        let size =
            std::fs::metadata(bin_dir.join(name)).with_context(|| format!("{name} in {}", bin_dir.display()))?.len();
        check(name, size as f64 / 1e6, RELEASE_BINARY_MB, " MB");
    }
    match std::env::var_os("BENCH_ARCHIVE").map(PathBuf::from) {
        Some(archive) => {
            let size = std::fs::metadata(&archive).with_context(|| format!("the archive {}", archive.display()))?.len();
            check(&archive.file_name().unwrap_or_default().to_string_lossy(), size as f64 / 1e6, 25.0, " MB");
            // What the archive holds: on Linux, the static build (musl, OpenSSL inside).
            let listing = Command::new("tar").arg("-tvzf").arg(&archive).output()?;
            for line in String::from_utf8_lossy(&listing.stdout).lines() {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (Some(size), Some(name)) = (fields.get(2), fields.last()) else { continue };
                if gitops_e2e::binaries::RELEASE.contains(name) {
                    let size: f64 = size.parse().with_context(|| format!("the size of {name}: {line}"))?;
                    check(&format!("{name} in the archive"), size / 1e6, ARCHIVE_BINARY_MB, " MB");
                }
            }
        }
        None => println!("  the release archive: not measured (BENCH_ARCHIVE unset; `make bench` sets it)"),
    }
    Ok(())
}

/// What `kubectl gitops flux` adds to flux's own start: `version --client` (no cluster) through
/// the release build, with the CLI in a cache that `install-cli` filled from a local release
/// server, against the same CLI run directly; alternating, `PASSTHROUGH_RUNS` each, medians.
pub(super) fn passthrough(cli: &Path) -> Result<()> {
    const PASSTHROUGH_RUNS: usize = 40;
    let ours = binaries_path("kubectl-gitops-flux");
    let server = gitops_e2e::flux_release::ReleaseServer::start(gitops_e2e::flux_release::Tamper::None);
    let cache = tempfile::tempdir()?;
    let isolated = gitops_e2e::flux_release::isolated_env(cache.path(), &server.url);
    let installed = Command::new(&ours).arg("install-cli").envs(isolated.clone()).output()?;
    if !installed.status.success() {
        bail!("kubectl-gitops-flux install-cli: {}", String::from_utf8_lossy(&installed.stderr));
    }
    let cached = PathBuf::from(String::from_utf8_lossy(&installed.stdout).trim());
    let time = |program: &Path| -> Result<Duration> {
        let started = Instant::now();
        let output = Command::new(program).args(["version", "--client"]).envs(isolated.clone()).output()?;
        if !output.status.success() {
            bail!("{} version --client failed", program.display());
        }
        Ok(started.elapsed())
    };
    let (mut direct, mut through) = (Vec::new(), Vec::new());
    for run in 0..=PASSTHROUGH_RUNS {
        let (a, b) = (time(&cached)?, time(&ours)?);
        if run > 0 {
            direct.push(a);
            through.push(b);
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (direct, through) = (median(&mut direct), median(&mut through));
    let added = through.saturating_sub(direct);
    println!("\nkubectl gitops flux version --client ({PASSTHROUGH_RUNS} runs each, medians; flux {})", cli.display());
    println!("  flux directly                  {:>8.1} ms", direct.as_secs_f64() * 1e3);
    println!("  through kubectl gitops flux    {:>8.1} ms", through.as_secs_f64() * 1e3);
    let verdict = if added <= Duration::from_millis(5) { "PASS" } else { "FAIL" };
    println!("  added by the passthrough       {:>8.1} ms  (target <= 5 ms)  {verdict}", added.as_secs_f64() * 1e3);
    // Without embed-flux the binary carries no CLI: it must stay within the plugins' size budget.
    // MB as the budget means it: 10^6 bytes (5.9 MiB is 6.1 MB).
    let megabytes = std::fs::metadata(&ours)?.len() as f64 / 1e6;
    let verdict = if megabytes <= 8.0 { "PASS" } else { "FAIL" };
    println!("  kubectl-gitops-flux size       {megabytes:>8.1} MB  (budget <= 8 MB, {})  {verdict}", ours.display());
    Ok(())
}
