//! `make bench`: `kubectl gitops status -A -o json` against `kubectl get <the Flux kinds> -A -o json`
//! on the same API server in the same run, for N apps (a GitRepository and a Kustomization each).
//!
//! Prints the median wall time of several runs of each, the ratio, and each side's peak RSS.
//! The Flux CRDs are installed but no controller runs, so the objects stay as created.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use gitops_e2e::testenv::{Options, TestEnv};

const RUNS: usize = 5;
const KINDS: &str = "gitrepositories,helmrepositories,ocirepositories,kustomizations,helmreleases";

fn main() -> Result<()> {
    let sizes: Vec<usize> = std::env::args().skip(1).map(|n| n.parse()).collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() { vec![1_000, 10_000] } else { sizes };
    let env = TestEnv::start(Options { flux: false })?.detach();
    env.install_flux_crds()?;
    eprintln!("bench: environment ready in {:.1?}", env.startup);
    let mut created = 0;
    println!(
        "{:>7}  {:>12}  {:>12}  {:>6}  {:>14}  {:>14}",
        "N", "gitops (ms)", "kubectl (ms)", "ratio", "gitops RSS MB", "kubectl RSS MB"
    );
    for size in sizes {
        create(env, created, size)?;
        created = size;
        // status shows one row per Kustomization; kubectl lists the GitRepositories too.
        let gitops = measure(&env.kubeconfig, &binaries_path("kubectl-gitops-status"), &["-A", "-o", "json"], size)?;
        let kubectl = measure(&env.kubeconfig, Path::new("kubectl"), &["get", KINDS, "-A", "-o", "json"], 2 * size)?;
        println!(
            "{size:>7}  {:>12}  {:>12}  {:>6.2}  {:>14.1}  {:>14.1}",
            gitops.0.as_millis(),
            kubectl.0.as_millis(),
            kubectl.0.as_secs_f64() / gitops.0.as_secs_f64(),
            gitops.1,
            kubectl.1
        );
    }
    Ok(())
}

/// The release build of a binary (`make bench` builds it), else the debug one.
fn binaries_path(name: &str) -> std::path::PathBuf {
    // This binary lives in target/<profile>/.
    let profile_dir =
        std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)).unwrap_or_default();
    let release = profile_dir.join("../release").join(name);
    if release.exists() { release } else { profile_dir.join(name) }
}

/// Creates apps `from..to`: a GitRepository and a Kustomization each, in 10 namespaces.
fn create(env: &TestEnv, from: usize, to: usize) -> Result<()> {
    let started = Instant::now();
    for namespace in 0..10 {
        let _ = env.kubectl(&["create", "namespace", &format!("bench-{namespace}")]);
    }
    let mut text = String::new();
    for index in from..to {
        let namespace = format!("bench-{}", index % 10);
        text.push_str(&format!(
            "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: app-{index}\n  namespace: {namespace}\n  labels:\n    app.kubernetes.io/managed-by: kubectl-gitops\nspec:\n  interval: 1m0s\n  url: https://git.example.com/app-{index}.git\n  ref:\n    branch: main\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: app-{index}\n  namespace: {namespace}\n  labels:\n    app.kubernetes.io/managed-by: kubectl-gitops\nspec:\n  interval: 10m0s\n  path: ./deploy\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: app-{index}\n"
        ));
    }
    let file = env.dir.join("bench-objects.yaml");
    std::fs::write(&file, text)?;
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&env.kubeconfig)
        .args(["create", "-f"])
        .arg(&file)
        .output()
        .context("kubectl create")?;
    if !output.status.success() {
        bail!("creating objects failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    eprintln!("bench: created apps {from}..{to} in {:.1?}", started.elapsed());
    Ok(())
}

/// Median wall time of `RUNS` runs (after one warm-up) and the largest peak RSS in MB.
fn measure(kubeconfig: &Path, program: &Path, args: &[&str], expected: usize) -> Result<(Duration, f64)> {
    let mut times = Vec::new();
    let mut peak_kb = 0u64;
    for run in 0..=RUNS {
        let started = Instant::now();
        let output = Command::new("/usr/bin/time")
            .args(["-f", "%M"])
            .arg(program)
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .output()
            .with_context(|| format!("running {}", program.display()))?;
        let elapsed = started.elapsed();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let rss: u64 = stderr.lines().last().and_then(|line| line.trim().parse().ok()).unwrap_or(0);
        if run == 0 {
            // The warm-up run also checks that the command really listed everything.
            let listed: serde_json::Value = serde_json::from_slice(&output.stdout)
                .with_context(|| format!("{} printed no JSON: {stderr}", program.display()))?;
            let count = listed["apps"].as_array().or(listed["items"].as_array()).map_or(0, Vec::len);
            if count < expected {
                bail!("{} listed {count} objects, expected {expected}", program.display());
            }
        } else {
            times.push(elapsed);
            peak_kb = peak_kb.max(rss);
        }
    }
    times.sort();
    Ok((times[times.len() / 2], peak_kb as f64 / 1024.0))
}
