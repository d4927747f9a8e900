//! What must hold on any cluster running Flux, through the real kubectl: the local environment
//! under `make test`, or the cluster `GITOPS_E2E_KUBECONFIG` names (e2e.yml runs these against
//! kind after `make demo` installed Flux there). They only touch a namespace of their own.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::binaries;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::ui::Ui;

use super::kubectl::kubectl_with_plugins;

/// The cluster under test: `GITOPS_E2E_KUBECONFIG`, else the shared local environment.
fn kubeconfig() -> PathBuf {
    match std::env::var_os("GITOPS_E2E_KUBECONFIG") {
        Some(path) => PathBuf::from(path),
        None => TestEnv::shared().kubeconfig.clone(),
    }
}

fn gitops(kubeconfig: &Path, args: &[&str]) -> Run {
    let plugins = binaries::plugin_dir();
    let words: Vec<&str> = std::iter::once("gitops").chain(args.iter().copied()).collect();
    kubectl_with_plugins(&binaries::kubectl(), plugins.path(), kubeconfig, &words)
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Run {
    Run::of(Command::new(binaries::kubectl()).args(args).env("KUBECONFIG", kubeconfig))
}

#[test]
fn detect_version_and_status_tell_the_same_flux() {
    let kubeconfig = kubeconfig();
    let detect = gitops(&kubeconfig, &["detect", "-o", "json"]);
    assert_eq!(detect.code, Some(0), "{}", detect.stderr);
    let detected = gitops_e2e::schema::document("Detection", &detect.stdout);
    let state = detected["state"].as_str().unwrap();
    assert!(matches!(state, "flux2" | "gitops"), "{detected}");
    // The local environment runs the controllers as processes, with no Flux namespace, so there
    // the version is unknown; whatever it is, the three commands must say the same.
    let flux_version = detected["flux"]["version"].clone();
    assert!(detected["apiVersions"]["Kustomization"].is_array(), "{detected}");

    let version = gitops(&kubeconfig, &["version", "-o", "json"]);
    assert_eq!(version.code, Some(0), "{}", version.stderr);
    let version = gitops_e2e::schema::document("Version", &version.stdout);
    assert_eq!(version["server"]["reachable"], true, "{version}");
    assert_eq!(version["server"]["fluxVersion"], flux_version);

    let status = gitops(&kubeconfig, &["status", "-A", "-o", "json"]);
    assert!(matches!(status.code, Some(0 | 1)), "{}", status.stderr);
    let status = gitops_e2e::schema::document("Status", &status.stdout);
    assert_eq!(status["flux"]["version"], flux_version, "{status}");
}

#[test]
fn the_ui_lists_what_status_lists() {
    let kubeconfig = kubeconfig();
    let namespace = "gitops-e2e-any-cluster";
    let _ = kubectl(&kubeconfig, &["create", "namespace", namespace]);
    let mut objects = String::new();
    for name in ["alpha", "beta", "gamma"] {
        objects.push_str(&format!(
            "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  interval: 10m0s\n  path: ./{name}\n  prune: true\n  suspend: {}\n  sourceRef:\n    kind: GitRepository\n    name: absent\n",
            name == "beta"
        ));
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), objects).unwrap();
    let applied = kubectl(&kubeconfig, &["apply", "-f", file.path().to_str().unwrap()]);
    assert_eq!(applied.code, Some(0), "{}", applied.stderr);

    let ui = Ui::start(&binaries::path("kubectl-gitops-ui"), &kubeconfig, &[]);
    let cookie = ui.login();
    // The controllers may still be moving the rows from progressing to failing: compare until
    // both read the same, for at most a minute.
    let started = Instant::now();
    loop {
        let status = gitops(&kubeconfig, &["status", "-n", namespace, "-o", "json"]);
        let status = gitops_e2e::schema::document("Status", &status.stdout);
        let from_status: Vec<(String, String)> = status["otherFluxObjects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| (row["name"].as_str().unwrap().to_string(), row["state"].as_str().unwrap().to_string()))
            .collect();
        let page = ui.json(&cookie, &format!("/api/v1/apps?namespace={namespace}"));
        let from_ui: Vec<(String, String)> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| (row["name"].as_str().unwrap().to_string(), row["state"].as_str().unwrap().to_string()))
            .collect();
        if from_status == from_ui {
            assert_eq!(from_ui.len(), 3, "{from_ui:?}");
            assert!(from_ui.contains(&("beta".to_string(), "suspended".to_string())), "{from_ui:?}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "status: {from_status:?}\nui: {from_ui:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let (code, stderr) = ui.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
    let deleted = kubectl(&kubeconfig, &["delete", "namespace", namespace, "--wait=false"]);
    assert_eq!(deleted.code, Some(0), "{}", deleted.stderr);
}
