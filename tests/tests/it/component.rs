//! The pipeline-controller proposal, run for real: a controller package (tests/fixtures/components)
//! pushed with `kubectl gitops artifact push`, installed with `install --component oci://…`, pulled
//! by the real source-controller and applied by the real kustomize-controller, listed with
//! `component list`, and upgraded through git with `component upgrade --tag`, CRD change included.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::binaries;
use gitops_e2e::flux_release;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::process::run;
use gitops_e2e::testenv::{Options, TestEnv};

const CRD: &str = "crd/widgets.example.kubectl-gitops.io";

fn package(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/components/widgets-controller").join(version)
}

fn ours(env: &TestEnv, binary: &str, args: &[&str]) -> Run {
    Run::of(
        Command::new(binaries::path(binary))
            .args(args)
            .env("KUBECONFIG", &env.kubeconfig)
            .env("DOCKER_CONFIG", "/nonexistent")
            .env("NO_COLOR", "1"),
    )
}

/// Pushes the package's `version` and returns the manifest digest.
fn push(env: &TestEnv, version: &str) -> String {
    let url = format!("oci://{}/manifests/widgets-controller:{version}", env.registry.address);
    let path = package(version);
    let revision = format!("{version}@sha1:0000000000000000000000000000000000000002");
    let run = ours(
        env,
        "kubectl-gitops-artifact",
        &[
            "push",
            &url,
            "--path",
            path.to_str().unwrap(),
            "--source",
            "https://example.com/widgets",
            "--revision",
            &revision,
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.render());
    run.stdout.trim().to_string()
}

/// `component upgrade`, pushing with the test git server's key.
fn upgrade(env: &TestEnv, args: &[&str]) -> Run {
    let (key, known_hosts) = (env.git.client_key.to_str().unwrap(), env.git.known_hosts.to_str().unwrap());
    let with_keys = [&["upgrade"][..], args, &["--private-key-file", key, "--known-hosts-file", known_hosts]].concat();
    ours(env, "kubectl-gitops-component", &with_keys)
}

/// `component list -o json` until `done` holds for its rows, or the timeout.
fn list_until(env: &TestEnv, what: &str, done: impl Fn(&[serde_json::Value]) -> bool) -> Vec<serde_json::Value> {
    let started = Instant::now();
    loop {
        let run = ours(env, "kubectl-gitops-component", &["list", "-o", "json"]);
        assert_eq!(run.code, Some(0), "{}", run.render());
        let rows = gitops_e2e::schema::document("ComponentList", &run.stdout)["items"].as_array().unwrap().clone();
        if done(&rows) {
            return rows;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "timed out waiting for {what}: {rows:#?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_component_pushed_as_an_artifact_installs_lists_and_upgrades_through_git() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("platform").unwrap();
    let first = push(env, "v0.0.1");
    let component = format!(
        "oci://{}/manifests/widgets-controller:v0.0.1?path=./config/default&insecure=true",
        env.registry.address
    );
    let url = env.git.ssh_url("platform");
    let install = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--url", &url, "--path", "clusters/dev", "--cluster-name", "dev", "--timeout", "3m"])
            .arg("--components-file")
            .arg(&components)
            .args(["--component", &component])
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .arg("--known-hosts-file")
            .arg(&env.git.known_hosts)
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(install.code, Some(0), "{}", install.render());

    // source-controller pulled what we pushed, kustomize-controller applied it and waited for it.
    let established = "{.status.conditions[?(@.type==\"Established\")].status}";
    env.wait_for_jsonpath(&[CRD], established, "True", Duration::from_secs(180)).unwrap();
    let deployment = ["-n", "widgets-system", "deployment/widgets-controller"];
    env.wait_for_jsonpath(&deployment, "{.status.availableReplicas}", "1", Duration::from_secs(180)).unwrap();
    // Ready and the applied revision can be read a moment apart: wait for both.
    let rows = list_until(env, "the component Ready at v0.0.1", |rows| {
        rows.len() == 1 && rows[0]["ready"] == true && rows[0]["applied"] != ""
    });
    let row = &rows[0];
    assert_eq!(row["name"], "widgets-controller");
    assert_eq!(row["tag"], "v0.0.1");
    assert_eq!(row["url"], format!("oci://{}/manifests/widgets-controller", env.registry.address));
    assert_eq!(row["digest"], first.as_str(), "the digest `artifact push` printed");
    assert_eq!(row["revision"], format!("v0.0.1@{first}"));
    assert_eq!(row["applied"], row["revision"]);
    // -l: the API server selects the OCIRepositories.
    let selected = |selector: &str| {
        let run = ours(env, "kubectl-gitops-component", &["list", "-l", selector, "-o", "json"]);
        assert_eq!(run.code, Some(0), "{}", run.render());
        gitops_e2e::schema::document("ComponentList", &run.stdout)["items"].as_array().unwrap().len()
    };
    assert_eq!(selected("kubectl-gitops.io/component=widgets-controller"), 1);
    assert_eq!(selected("kubectl-gitops.io/component notin (widgets-controller)"), 0);
    let table = ours(env, "kubectl-gitops-component", &["list"]);
    let line = table.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        table.stdout.starts_with("NAME") && line.starts_with("widgets-controller") && line.contains(" v0.0.1 "),
        "{}",
        table.stdout
    );

    // v0.0.2 adds a CRD version. --dry-run shows the one-line change and pushes nothing.
    let second = push(env, "v0.0.2");
    let head = env.git.head("platform");
    let dry = upgrade(env, &["widgets-controller", "--tag", "v0.0.2", "--dry-run"]);
    assert_eq!(dry.code, Some(0), "{}", dry.render());
    assert!(dry.stdout.contains("-    tag: v0.0.1\n+    tag: v0.0.2"), "{}", dry.stdout);
    assert_eq!(env.git.head("platform"), head, "--dry-run pushes nothing");
    let upgraded = upgrade(env, &["widgets-controller", "--tag", "v0.0.2"]);
    assert_eq!(upgraded.code, Some(0), "{}", upgraded.render());
    let pushed = env.git.head("platform");
    assert_ne!(pushed, head);
    assert_eq!(upgraded.stdout, format!("component widgets-controller upgraded at {}\n", &pushed[..12]));
    let again = upgrade(env, &["widgets-controller", "--tag", "v0.0.2"]);
    assert_eq!(again.code, Some(0), "{}", again.render());
    assert_eq!(again.stdout, "component widgets-controller follows v0.0.2 already; nothing to change\n");

    // Flux fetches the config repo now instead of at its interval; the rest follows by itself.
    let requested = format!("reconcile.fluxcd.io/requestedAt={pushed}");
    env.kubectl_ok(&["-n", "flux-system", "annotate", "--overwrite", "gitrepository/flux-system", &requested]).unwrap();
    env.wait_for_jsonpath(&[CRD], "{.spec.versions[1].name}", "v1beta1", Duration::from_secs(180)).unwrap();
    let storage = env.kubectl_ok(&["get", CRD, "-o", "jsonpath={.spec.versions[?(@.storage==true)].name}"]).unwrap();
    assert_eq!(storage, "v1beta1");
    let rows = list_until(env, "the component Ready at v0.0.2", |rows| {
        rows.len() == 1
            && rows[0]["ready"] == true
            && rows[0]["applied"].as_str().unwrap_or_default().starts_with("v0.0.2@")
    });
    assert_eq!((&rows[0]["tag"], &rows[0]["digest"]), (&"v0.0.2".into(), &second.as_str().into()));
    let image = env
        .kubectl_ok(
            &[&["get"][..], &deployment[..], &["-o", "jsonpath={.spec.template.spec.containers[0].image}"]].concat(),
        )
        .unwrap();
    assert_eq!(image, "ghcr.io/example/widgets-controller:v0.0.2");

    // A component that is not there, and a bad tag, are refused before anything is pushed.
    let missing = upgrade(env, &["nope", "--tag", "v1"]);
    assert_eq!(missing.code, Some(2), "{}", missing.render());
    assert!(missing.stderr.contains("component nope is not in the config repo for clusters/dev"), "{}", missing.stderr);
    let bad_tag = upgrade(env, &["widgets-controller", "--tag=bad/tag"]);
    assert_eq!(bad_tag.code, Some(2), "{}", bad_tag.render());
    assert_eq!(env.git.head("platform"), pushed, "nothing pushed by refused upgrades");
}

/// Whether the config repo's main branch holds `path`.
fn repo_has(env: &TestEnv, repo: &str, path: &str) -> bool {
    let checkout = tempfile::tempdir().unwrap();
    run(Command::new("git")
        .args(["clone", "-q", &env.git.ssh_url(repo)])
        .arg(checkout.path().join("repo"))
        .env("GIT_SSH_COMMAND", env.git.git_ssh_command()))
    .unwrap();
    checkout.path().join("repo").join(path).exists()
}

/// The seed's gating: on a Flux that does not serve OCIRepository (its CRD left out, as before
/// Flux v2.0) `--component` is skipped with a clear message and exit 0; once an upgrade brings
/// OCIRepository, the same install adds the component and Flux deploys it.
#[test]
fn a_component_waits_for_a_flux_that_serves_oci_repository() {
    let components = std::fs::read_to_string(flux_release::components()).unwrap();
    let without_oci: Vec<&str> = components
        .split("\n---\n")
        .filter(|document| !document.contains("name: ocirepositories.source.toolkit.fluxcd.io"))
        .collect();
    assert_eq!(without_oci.len() + 1, components.split("\n---\n").count(), "exactly the OCIRepository CRD is left out");
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.apply_yaml(&without_oci.join("\n---\n")).unwrap();
    env.kubectl_ok(&["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]).unwrap();
    env.git.create_repo("gated").unwrap();
    push(env, "v0.0.1");
    let component = format!(
        "oci://{}/manifests/widgets-controller:v0.0.1?path=./config/default&insecure=true",
        env.registry.address
    );
    let url = env.git.ssh_url("gated");
    let install = || {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-install"))
                .args(["--url", &url, "--path", "clusters/old", "--cluster-name", "old", "--no-wait"])
                .arg("--components-file")
                .arg(flux_release::components())
                .args(["--component", &component])
                .arg("--private-key-file")
                .arg(&env.git.client_key)
                .arg("--known-hosts-file")
                .arg(&env.git.known_hosts)
                .env("KUBECONFIG", &env.kubeconfig)
                .env("NO_COLOR", "1"),
        )
    };
    let skipped = install();
    assert_eq!(skipped.code, Some(0), "{}", skipped.render());
    assert!(
        skipped.stderr.contains(&format!(
            "skipped component oci://{}/manifests/widgets-controller: this cluster's Flux does not serve OCIRepository",
            env.registry.address
        )),
        "{}",
        skipped.render()
    );
    assert!(!repo_has(env, "gated", "clusters/old/components/widgets-controller.yaml"));

    // The upgrade brings OCIRepository; the same install now adds the component.
    env.apply_yaml(&components).unwrap();
    env.kubectl_ok(&["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]).unwrap();
    let added = install();
    assert_eq!(added.code, Some(0), "{}", added.render());
    assert!(!added.stderr.contains("skipped component"), "{}", added.render());
    assert!(repo_has(env, "gated", "clusters/old/components/widgets-controller.yaml"));
    env.start_flux_controllers().unwrap();
    let established = "{.status.conditions[?(@.type==\"Established\")].status}";
    env.wait_for_jsonpath(&[CRD], established, "True", Duration::from_secs(180)).unwrap();
}
