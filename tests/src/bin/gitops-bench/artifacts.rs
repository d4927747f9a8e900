//! The artifact rows: `kubectl gitops artifact push` and `pull` against `flux push artifact` and
//! `flux pull artifact`, to a registry of their own on loopback.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{RUNS, binaries_path};

/// `kubectl gitops artifact push` and `pull` against `flux push artifact` and `flux pull artifact`
/// on a directory of 1,000 YAML files (20 MB), to a registry of their own on loopback. Each round
/// changes one file first, so every push uploads a new layer (both skip blobs the registry holds).
pub(super) fn artifacts(cli: &Path) -> Result<()> {
    const FILES: usize = 1_000;
    const FILE_SIZE: usize = 20_000;
    let ours = binaries_path("kubectl-gitops-artifact");
    let own = gitops_e2e::testenv::servers::OwnRegistry::start(false)?;
    let registry = own.registry.address.clone();
    let work = tempfile::tempdir()?;
    let dir = work.path().join("manifests");
    // Deterministic, YAML-looking text that compresses about as well as real manifests.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for file in 0..FILES {
        let sub = dir.join(format!("team-{}", file % 20));
        std::fs::create_dir_all(&sub)?;
        let mut text = String::with_capacity(FILE_SIZE);
        while text.len() < FILE_SIZE {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let _ = writeln!(text, "  key-{}: value-{:x}", state % 97, state >> 40);
        }
        std::fs::write(sub.join(format!("object-{file}.yaml")), text)?;
    }
    let path = dir.to_str().context("a UTF-8 temp path")?;
    let run = |program: &Path, args: &[&str]| -> Result<Duration> {
        let started = Instant::now();
        let output = Command::new(program).args(args).env("DOCKER_CONFIG", work.path()).output()?;
        if !output.status.success() {
            bail!("{} {}: {}", program.display(), args.join(" "), String::from_utf8_lossy(&output.stderr));
        }
        Ok(started.elapsed())
    };
    let (mut pushes, mut pulls) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for round in 0..=RUNS {
        std::fs::write(dir.join("round.yaml"), format!("round: {round}\n"))?;
        let (our_url, flux_url) =
            (format!("oci://{registry}/bench/ours:r{round}"), format!("oci://{registry}/bench/flux:r{round}"));
        let meta = ["--path", path, "--source", "https://example.com/bench", "--revision", "main@sha1:0"];
        let (our_out, flux_out) =
            (work.path().join(format!("ours-{round}")), work.path().join(format!("flux-{round}")));
        std::fs::create_dir(&flux_out)?;
        let (our_dir, flux_dir) = (our_out.to_str().context("UTF-8")?, flux_out.to_str().context("UTF-8")?);
        let our_push = || run(&ours, &[&["push", &our_url][..], &meta].concat());
        let flux_push = || run(cli, &[&["push", "artifact", &flux_url][..], &meta].concat());
        let our_pull = || run(&ours, &["pull", &our_url, "--dir", our_dir]);
        let flux_pull = || run(cli, &["pull", "artifact", &flux_url, "--output", flux_dir]);
        // Who goes first alternates: the second one pays for flushing the first one's writes.
        let ((our_push, flux_push), (our_pull, flux_pull)) = if round % 2 == 0 {
            ((our_push()?, flux_push()?), (our_pull()?, flux_pull()?))
        } else {
            let (flux_push, our_push) = (flux_push()?, our_push()?);
            let (flux_pull, our_pull) = (flux_pull()?, our_pull()?);
            ((our_push, flux_push), (our_pull, flux_pull))
        };
        if round > 0 {
            pushes.0.push(our_push);
            pushes.1.push(flux_push);
            pulls.0.push(our_pull);
            pulls.1.push(flux_pull);
        }
        std::fs::remove_dir_all(&our_out)?;
        std::fs::remove_dir_all(&flux_out)?;
    }
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2].as_secs_f64() * 1e3
    };
    println!(
        "\nartifact push and pull, {FILES} files ({} MB), {RUNS} runs each, medians; flux {}",
        FILES * FILE_SIZE / 1_000_000,
        cli.display()
    );
    for (name, (mine, theirs)) in [("push", pushes), ("pull", pulls)] {
        let (mine, theirs) = (median(mine), median(theirs));
        let ratio = mine / theirs;
        let verdict = if ratio <= 1.0 { "PASS" } else { "FAIL" };
        println!("  kubectl gitops artifact {name}   {mine:>8.0} ms");
        println!("  flux {name} artifact             {theirs:>8.0} ms");
        println!("  ours / flux                    {ratio:>8.2}     (target <= 1)  {verdict}");
    }
    Ok(())
}
