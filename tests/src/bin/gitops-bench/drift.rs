//! The `drift` row: `kubectl gitops drift -A` against the real `flux diff kustomization` run for
//! each of the same Kustomizations one after the other, at 1,000 apps of 20 objects each.
//!
//! One config repository on the environment's git server holds `apps/app-N/` (20 ConfigMaps
//! each); one GitRepository follows it, and each of the 1,000 Kustomizations applies its own
//! directory into one of 10 namespaces. No controller runs: the objects are created as
//! kustomize-controller applies them (server-side apply under its field manager, with the labels
//! its build adds), and each Kustomization's `status.lastAppliedRevision` names the commit, as
//! the controller writes it. So both tools find every object as applied (no drift): the
//! comparison is the whole work. Targets (docs/performance.md): ours <= 0.5x the peer's time,
//! and under 200 MB of peak RSS (GNU time's: the largest of the process and the flux builds it
//! waited for).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Result;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};

use super::seed::{Api, Request};
use super::{binaries_path, check, timed_run};

/// Kustomizations, and objects each applies.
const APPS: usize = 1_000;
const OBJECTS: usize = 20;
const NAMESPACES: usize = 10;
/// Measured rounds (after one warm-up of ours).
const RUNS: usize = 2;

pub(super) fn drift_rows(env: &TestEnv, api: &Api, cli: &Path) -> Result<()> {
    let seeded = Instant::now();
    let checkout = tempfile::tempdir()?;
    let root = checkout.path();
    let head = push_config_repo(env, root)?;
    let _ = env.kubectl(&["create", "namespace", "flux-system"]);
    for namespace in 0..NAMESPACES {
        let _ = env.kubectl(&["create", "namespace", &format!("drift-{namespace}")]);
    }
    env.apply_yaml(&format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: drift-bench\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  url: {}\n  ref:\n    branch: main\n",
        env.git.http_url("drift-bench")
    ))?;
    seed(api, &head)?;
    eprintln!("bench: drift: {APPS} Kustomizations of {OBJECTS} objects seeded in {:.1?}", seeded.elapsed());

    let ours = binaries_path("kubectl-gitops-drift");
    let timed = |command: &mut Command| timed_run(command, &env.kubeconfig, 0);
    let run_ours = || {
        timed(
            Command::new("/usr/bin/time")
                .args(["-f", "%M"])
                .arg(&ours)
                .args(["-A", "-q", "--config-repo", &env.git.http_url("drift-bench")])
                .env("GITOPS_GIT_USERNAME", GIT_HTTP_USER)
                .env("GITOPS_GIT_PASSWORD", GIT_HTTP_PASSWORD)
                .env("KUBECTL_GITOPS_FLUX_BIN", cli),
        )
    };
    run_ours()?;
    let (mut our_times, mut peer_times, mut peak_kb) = (Vec::new(), Vec::new(), 0);
    for _ in 0..RUNS {
        let (ours_took, kb) = run_ours()?;
        let started = Instant::now();
        for n in 0..APPS {
            timed(
                Command::new(cli)
                    .args(["diff", "kustomization", &format!("app-{n}"), "--namespace", "flux-system"])
                    .args(["--progress-bar=false", "--path"])
                    .arg(root.join(format!("apps/app-{n}"))),
            )?;
        }
        our_times.push(ours_took);
        peer_times.push(started.elapsed());
        peak_kb = peak_kb.max(kb);
    }
    let best = |times: &[Duration]| times.iter().min().copied().unwrap_or_default();
    let (ours_took, peer_took) = (best(&our_times), best(&peer_times));
    println!(
        "\nkubectl gitops drift -A vs flux diff kustomization ({APPS} Kustomizations, {OBJECTS} objects each; {RUNS} runs, the faster)"
    );
    println!(
        "  kubectl gitops drift -A            {:>9.0} ms  peak {:>6.1} MB",
        ours_took.as_secs_f64() * 1e3,
        peak_kb as f64 / 1e3
    );
    println!("  flux diff kustomization x {APPS:<5}   {:>9.0} ms", peer_took.as_secs_f64() * 1e3);
    check("drift -A / flux diff, one after the other", ours_took.as_secs_f64() / peer_took.as_secs_f64(), 0.5, "x");
    check("drift -A peak RSS", peak_kb as f64 / 1e3, 200.0, " MB");
    Ok(())
}

/// The config repository: `apps/app-N/objects.yaml`, 20 ConfigMaps each, pushed to the
/// environment's git server; returns the commit.
fn push_config_repo(env: &TestEnv, root: &Path) -> Result<String> {
    env.git.create_repo("drift-bench")?;
    for n in 0..APPS {
        let dir = root.join(format!("apps/app-{n}"));
        std::fs::create_dir_all(&dir)?;
        let objects: Vec<String> = (0..OBJECTS)
            .map(|m| {
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{n}-{m}\ndata:\n  app: \"{n}\"\n  part: \"{m}\"\n  text: {}\n",
                    "x".repeat(200)
                )
            })
            .collect();
        std::fs::write(dir.join("objects.yaml"), objects.join("---\n"))?;
    }
    env.git.git(root, &["init", "-q", "-b", "main"])?;
    env.git.git(root, &["add", "."])?;
    env.git.git(root, &["commit", "-q", "-m", "drift bench"])?;
    env.git.git(root, &["push", "-q", &env.git.ssh_url("drift-bench"), "main"])?;
    Ok(env.git.git(root, &["rev-parse", "HEAD"])?.trim().to_string())
}

/// The Kustomizations with the commit as their applied revision, and every object as
/// kustomize-controller applies it.
fn seed(api: &Api, head: &str) -> Result<()> {
    let kustomizations = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations";
    let (mut creates, mut statuses, mut applies) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..APPS {
        let namespace = format!("drift-{}", n % NAMESPACES);
        let kustomization = serde_json::json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": format!("app-{n}"), "namespace": "flux-system"},
            "spec": {
                "interval": "10m0s",
                "path": format!("./apps/app-{n}"),
                "prune": true,
                "targetNamespace": namespace,
                "sourceRef": {"kind": "GitRepository", "name": "drift-bench"},
            },
        });
        creates.push(request("POST", kustomizations.to_string(), "application/json", kustomization.to_string()));
        let status = serde_json::json!({"status": {"lastAppliedRevision": format!("main@sha1:{head}")}});
        let path = format!("{kustomizations}/app-{n}/status");
        statuses.push(request("PATCH", path, "application/merge-patch+json", status.to_string()));
        for m in 0..OBJECTS {
            let object = serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": format!("app-{n}-{m}"),
                    "namespace": namespace,
                    "labels": {
                        "kustomize.toolkit.fluxcd.io/name": format!("app-{n}"),
                        "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
                    },
                },
                "data": {"app": n.to_string(), "part": m.to_string(), "text": "x".repeat(200)},
            });
            let path = format!(
                "/api/v1/namespaces/{namespace}/configmaps/app-{n}-{m}?fieldManager=kustomize-controller&force=true"
            );
            applies.push(request("PATCH", path, "application/apply-patch+yaml", object.to_string()));
        }
    }
    api.send_all("creating the drift Kustomizations", &creates, 201)?;
    api.send_all("writing their applied revision", &statuses, 200)?;
    // Server-side apply answers 201 for an object it creates.
    api.send_all("applying their objects", &applies, 201)
}

fn request(method: &'static str, path: String, content_type: &'static str, body: String) -> Request {
    Request { method, path, content_type, agent: "kustomize-controller", body }
}
