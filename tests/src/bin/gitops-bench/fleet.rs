//! The `fleet status` row: `kubectl gitops fleet status --context c0,…,c9 -o json` against the
//! slowest single-cluster `kubectl gitops status -A -o json` of the ten, at `FLEET_APPS` apps per
//! cluster.
//!
//! Ten whole environments of the test environment (each its own etcd and kube-apiserver; the
//! Flux CRDs installed, no controller running), each seeded with the status row's apps (a
//! GitRepository and a Kustomization each, their status as the controllers write it, a ledger
//! each) and reached through one kubeconfig with a context per cluster. Each single-cluster row
//! runs `RUNS` times (after a warm-up); its median is that cluster's time, and the slowest of the
//! ten is the peer. Targets (docs/performance.md): ours <= 1.5x the peer, peak RSS <= 250 MB.
//! Printed beside them, to read the first target against this machine: the sum of the ten
//! single-cluster medians (what asking them one after the other costs) and the peak RSS per
//! cluster.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use gitops_e2e::testenv::{Options, TestEnv};

use super::seed::{Api, seed};
use super::{NAMESPACES, binaries_path, check, timed_run};

/// Clusters (`BENCH_FLEET_CLUSTERS` measures another number, for docs/performance.md's note on
/// scale), and apps in each.
const CLUSTERS: usize = 10;
const FLEET_APPS: usize = 1_000;
/// Environments started at once (each boots an etcd and an API server on this machine's cores).
const STARTING: usize = 2;
/// Measured rounds (after one warm-up).
const RUNS: usize = 5;

pub(super) fn fleet_rows() -> Result<()> {
    let clusters: usize = match std::env::var("BENCH_FLEET_CLUSTERS") {
        Ok(text) => text.parse()?,
        Err(_) => CLUSTERS,
    };
    let started = Instant::now();
    let mut envs: Vec<Arc<TestEnv>> = Vec::new();
    while envs.len() < clusters {
        let batch = STARTING.min(clusters - envs.len());
        let booted: Vec<Result<Arc<TestEnv>>> = std::thread::scope(|scope| {
            let starting: Vec<_> =
                (0..batch).map(|_| scope.spawn(|| TestEnv::start(Options { flux: false }))).collect();
            starting
                .into_iter()
                .map(|thread| thread.join().unwrap_or_else(|_| anyhow::bail!("a start panicked")))
                .collect()
        });
        for env in booted {
            envs.push(env?);
        }
    }
    eprintln!("bench: fleet: {clusters} environments up in {:.1?}", started.elapsed());
    let seeded = Instant::now();
    for env in &envs {
        env.install_flux_crds()?;
        for namespace in 0..NAMESPACES {
            let _ = env.kubectl(&["create", "namespace", &format!("bench-{namespace}")]);
        }
        seed(&Api::new(env), 0, FLEET_APPS)?;
    }
    eprintln!("bench: fleet: {clusters} x {FLEET_APPS} apps seeded in {:.1?}", seeded.elapsed());
    let dir = tempfile::tempdir()?;
    let kubeconfig = fleet_kubeconfig(dir.path(), &envs)?;
    let contexts: Vec<String> = (0..clusters).map(context).collect();

    let status = binaries_path("kubectl-gitops-status");
    let fleet = binaries_path("kubectl-gitops-fleet");
    // `status -A` exits 1 (some seeded apps fail), and so does the matrix.
    let run_status = |context: &str| {
        timed_run(
            Command::new("/usr/bin/time").args(["-f", "%M"]).arg(&status).args([
                "-A",
                "-o",
                "json",
                "--context",
                context,
            ]),
            &kubeconfig,
            1,
        )
    };
    let list = contexts.join(",");
    let run_fleet = || {
        timed_run(
            Command::new("/usr/bin/time").args(["-f", "%M"]).arg(&fleet).args([
                "status",
                "-o",
                "json",
                "--no-config-repo",
                "--context",
                &list,
            ]),
            &kubeconfig,
            1,
        )
    };
    for context in &contexts {
        run_status(context)?;
    }
    run_fleet()?;
    let (mut singles, mut ours, mut status_kb, mut fleet_kb) = (vec![Vec::new(); clusters], Vec::new(), 0, 0);
    for _ in 0..RUNS {
        for (index, context) in contexts.iter().enumerate() {
            let (took, kb) = run_status(context)?;
            singles[index].push(took);
            status_kb = status_kb.max(kb);
        }
        let (took, kb) = run_fleet()?;
        ours.push(took);
        fleet_kb = fleet_kb.max(kb);
    }
    let medians: Vec<Duration> = singles.iter().map(|times| median(times)).collect();
    let slowest = medians.iter().max().copied().unwrap_or_default();
    let sum: Duration = medians.iter().sum();
    let ours = median(&ours);
    let ms = |took: Duration| took.as_secs_f64() * 1e3;
    println!(
        "\nkubectl gitops fleet status vs status -A ({clusters} clusters x {FLEET_APPS} apps; {RUNS} runs, medians)"
    );
    println!(
        "  fleet status -o json ({clusters} contexts)      {:>8.0} ms  peak {:>6.1} MB",
        ms(ours),
        fleet_kb as f64 / 1e3
    );
    println!(
        "  status -A -o json, slowest of {clusters}       {:>8.0} ms  peak {:>6.1} MB",
        ms(slowest),
        status_kb as f64 / 1e3
    );
    println!("  status -A -o json, the {clusters} one after another {:>6.0} ms", ms(sum));
    println!(
        "  (fleet / the {clusters} one after another: {:.2}x; peak RSS per cluster: {:.1} MB)",
        ms(ours) / ms(sum),
        fleet_kb as f64 / 1e3 / clusters as f64
    );
    check("fleet status / slowest status -A", ms(ours) / ms(slowest), 1.5, "x");
    check("fleet status peak RSS", fleet_kb as f64 / 1e3, 250.0, " MB");
    Ok(())
}

fn median(times: &[Duration]) -> Duration {
    let mut times = times.to_vec();
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn context(index: usize) -> String {
    format!("cluster-{index}")
}

/// One kubeconfig with a context per environment (`cluster-N`), each its own cluster and user.
fn fleet_kubeconfig(dir: &Path, envs: &[Arc<TestEnv>]) -> Result<PathBuf> {
    let (mut clusters, mut users, mut contexts) = (Vec::new(), Vec::new(), Vec::new());
    for (index, env) in envs.iter().enumerate() {
        let text = std::fs::read_to_string(&env.kubeconfig)?;
        let config: serde_json::Value = gitops_shared::yaml::from_str(&text).map_err(anyhow::Error::msg)?;
        let name = context(index);
        clusters.push(serde_json::json!({"name": name, "cluster": config["clusters"][0]["cluster"]}));
        users.push(serde_json::json!({"name": name, "user": config["users"][0]["user"]}));
        contexts.push(serde_json::json!({"name": name, "context": {"cluster": name, "user": name}}));
    }
    let merged = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": context(0),
    });
    let path = dir.join("kubeconfig");
    std::fs::write(&path, gitops_shared::yaml::to_string(&merged)?)?;
    Ok(path)
}
