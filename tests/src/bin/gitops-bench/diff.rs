//! The `diff` rows: `kubectl gitops diff --dir` against the real `flux diff kustomization` run for
//! each of the same Kustomizations.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Result;
use gitops_e2e::testenv::TestEnv;

use super::{binaries_path, check, timed_run};

/// Kustomizations of the config repo the diff rows build and compare, beside the sync.
const DIFF_KUSTOMIZATIONS: usize = 100;
/// Measured rounds of the diff rows (after one warm-up).
const DIFF_RUNS: usize = 3;

/// `kubectl gitops diff --dir` against the real `flux diff kustomization` run for each of the same
/// Kustomizations one after the other (the sync and 100 apps, each applying a directory of its
/// own: a ConfigMap and a Deployment, none of them in the cluster yet, so every object is new to
/// both). Targets (docs/performance.md): ours <= 0.5x the peer's time, and under 200 MB of peak RSS
/// (GNU time's, which counts the largest of the process and the flux builds it waited for).
pub(super) fn diff_rows(env: &TestEnv, cli: &Path) -> Result<()> {
    let checkout = tempfile::tempdir()?;
    let root = checkout.path();
    let _ = env.kubectl(&["create", "namespace", "flux-system"]);
    let kustomization = |name: &str, path: &str| {
        format!(
            "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: {path}\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        )
    };
    std::fs::create_dir_all(root.join("clusters/bench"))?;
    std::fs::write(
        root.join("clusters/bench/marker.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-marker\ndata:\n  ok: \"yes\"\n",
    )?;
    let mut objects = kustomization("flux-system", "./clusters/bench");
    let mut peers = vec![("flux-system".to_string(), root.join("clusters/bench"))];
    for n in 0..DIFF_KUSTOMIZATIONS {
        let dir = root.join(format!("apps/app-{n}"));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("config.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{n}\ndata:\n  n: \"{n}\"\n"),
        )?;
        std::fs::write(
            dir.join("deployment.yaml"),
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{n}\nspec:\n  selector:\n    matchLabels:\n      app: app-{n}\n  template:\n    metadata:\n      labels:\n        app: app-{n}\n    spec:\n      containers:\n      - name: app\n        image: registry.invalid/app:{n}\n"
            ),
        )?;
        objects.push_str(&kustomization(&format!("app-{n}"), &format!("./apps/app-{n}")));
        peers.push((format!("app-{n}"), dir));
    }
    env.apply_yaml(&objects)?;
    let ours = binaries_path("kubectl-gitops-diff");
    let timed = |command: &mut Command| timed_run(command.current_dir(root), &env.kubeconfig, 1);
    let (mut our_times, mut peer_times, mut peak_kb) = (Vec::new(), Vec::new(), 0);
    for round in 0..=DIFF_RUNS {
        let (ours_took, kb) = timed(
            Command::new("/usr/bin/time")
                .args(["-f", "%M"])
                .arg(&ours)
                .args(["--dir", ".", "-n", "flux-system", "-q"])
                .env("KUBECTL_GITOPS_FLUX_BIN", cli),
        )?;
        let started = Instant::now();
        for (name, dir) in &peers {
            timed(
                Command::new("/usr/bin/time")
                    .args(["-f", "%M"])
                    .arg(cli)
                    .args([
                        "diff",
                        "kustomization",
                        name,
                        "--namespace",
                        "flux-system",
                        "--progress-bar=false",
                        "--path",
                    ])
                    .arg(dir),
            )?;
        }
        let peer_took = started.elapsed();
        if round > 0 {
            our_times.push(ours_took);
            peer_times.push(peer_took);
            peak_kb = peak_kb.max(kb);
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (ours_took, peer_took) = (median(&mut our_times), median(&mut peer_times));
    let count = peers.len();
    println!(
        "\nkubectl gitops diff vs flux diff kustomization ({count} Kustomizations, 2 objects each; {DIFF_RUNS} runs, medians)"
    );
    println!(
        "  kubectl gitops diff --dir          {:>9.0} ms  peak {:>6.1} MB",
        ours_took.as_secs_f64() * 1e3,
        peak_kb as f64 / 1e3
    );
    println!("  flux diff kustomization x {count:<4}    {:>9.0} ms", peer_took.as_secs_f64() * 1e3);
    check("diff / flux diff, one after the other", ours_took.as_secs_f64() / peer_took.as_secs_f64(), 0.5, "x");
    check("diff peak RSS", peak_kb as f64 / 1e3, 200.0, " MB");
    Ok(())
}
