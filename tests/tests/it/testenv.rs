//! Proof that the test environment runs the real GitOps loop: git → source-controller →
//! kustomize-/helm-controller → kube-apiserver, plus OCI and RBAC.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gitops_e2e::testenv::process::{port_open, run, wait_until};
use gitops_e2e::testenv::{Options, TestEnv};

const CONVERGE: Duration = Duration::from_secs(120);

/// Commits the files into a new branch `main` of a bare repo over SSH; returns the commit.
fn push_files(env: &TestEnv, repo: &str, files: &[(&str, &str)]) -> String {
    env.git.create_repo(repo).unwrap();
    let work = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        run(Command::new("git")
            .args(["-c", "user.name=testenv", "-c", "user.email=testenv@example.invalid"])
            .args(args)
            .current_dir(work.path())
            .env("GIT_SSH_COMMAND", env.git.git_ssh_command()))
        .unwrap()
    };
    git(&["init", "-q", "-b", "main"]);
    for (path, content) in files {
        let full = work.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "testenv commit"]);
    git(&["push", "-q", &env.git.ssh_url(repo), "main"]);
    git(&["rev-parse", "HEAD"]).trim().to_string()
}

/// The Secret Flux needs for SSH: the test client key plus the pinned host key.
fn ssh_secret(env: &TestEnv, namespace: &str, name: &str) -> String {
    let identity = std::fs::read_to_string(&env.git.client_key).unwrap();
    let indent = |text: &str| text.lines().map(|line| format!("    {line}\n")).collect::<String>();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\nstringData:\n  identity: |\n{}  known_hosts: |\n{}",
        indent(&identity),
        indent(&env.git.known_hosts_line)
    )
}

fn namespace(env: &TestEnv, name: &str) {
    env.kubectl_ok(&["create", "namespace", name]).unwrap();
}

#[test]
fn a_commit_pushed_over_ssh_is_applied_by_the_real_flux_controllers() {
    let env = TestEnv::shared();
    eprintln!("testenv started in {:.1?}", env.startup);
    namespace(env, "proof-git");
    let commit = push_files(
        env,
        "proof-git",
        &[(
            "deploy/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\n  namespace: proof-git\ndata:\n  hello: world\n",
        )],
    );
    env.apply_yaml(&ssh_secret(env, "proof-git", "git-ssh")).unwrap();
    env.apply_yaml(&format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: proof\n  namespace: proof-git\nspec:\n  interval: 1m0s\n  url: {url}\n  ref:\n    branch: main\n  secretRef:\n    name: git-ssh\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: proof\n  namespace: proof-git\nspec:\n  interval: 1m0s\n  path: ./deploy\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: proof\n",
        url = env.git.ssh_url("proof-git")
    ))
    .unwrap();
    let expected = format!("main@sha1:{commit}");
    env.wait_for_jsonpath(
        &["-n", "proof-git", "kustomization/proof"],
        "{.status.lastAppliedRevision}",
        &expected,
        CONVERGE,
    )
    .unwrap();
    env.wait_for_jsonpath(
        &["-n", "proof-git", "kustomization/proof"],
        "{.status.conditions[?(@.type==\"Ready\")].status}",
        "True",
        CONVERGE,
    )
    .unwrap();
    let data =
        env.kubectl_ok(&["-n", "proof-git", "get", "configmap", "from-git", "-o=jsonpath={.data.hello}"]).unwrap();
    assert_eq!(data, "world");
}

#[test]
fn a_helm_release_from_the_local_chart_repository_installs() {
    let env = TestEnv::shared();
    namespace(env, "proof-helm");
    env.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    env.apply_yaml(&format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: local\n  namespace: proof-helm\nspec:\n  interval: 1m0s\n  url: {url}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: hello\n  namespace: proof-helm\nspec:\n  interval: 1m0s\n  chart:\n    spec:\n      chart: hello\n      version: 0.1.0\n      sourceRef:\n        kind: HelmRepository\n        name: local\n  values:\n    greeting: from-helm\n",
        url = env.helm.url
    ))
    .unwrap();
    env.wait_for_jsonpath(
        &["-n", "proof-helm", "helmrelease/hello"],
        "{.status.conditions[?(@.type==\"Ready\")].status}",
        "True",
        CONVERGE,
    )
    .unwrap();
    let secrets =
        env.kubectl_ok(&["-n", "proof-helm", "get", "secrets", "-l", "owner=helm,name=hello", "-o=name"]).unwrap();
    assert_eq!(secrets.trim(), "secret/sh.helm.release.v1.hello.v1");
    let greeting = env
        .kubectl_ok(&["-n", "proof-helm", "get", "configmap", "hello-greeting", "-o=jsonpath={.data.greeting}"])
        .unwrap();
    assert_eq!(greeting, "from-helm");
    let available = env
        .kubectl_ok(&["-n", "proof-helm", "get", "deployment", "hello", "-o=jsonpath={.status.availableReplicas}"])
        .unwrap();
    assert_eq!(available, "1", "kwok makes the Deployment's pod Ready");
}

#[test]
fn an_oci_repository_pulls_an_artifact_from_the_local_registry() {
    let env = TestEnv::shared();
    namespace(env, "proof-oci");
    let content = tempfile::tempdir().unwrap();
    std::fs::write(
        content.path().join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-oci\n  namespace: proof-oci\ndata:\n  source: oci\n",
    )
    .unwrap();
    let digest = env
        .registry
        .push_artifact("proof/manifests", "v1", content.path(), "v1@sha1:0000000000000000000000000000000000000000")
        .unwrap();
    env.apply_yaml(&format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: proof\n  namespace: proof-oci\nspec:\n  interval: 1m0s\n  url: oci://{registry}/proof/manifests\n  insecure: true\n  ref:\n    tag: v1\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: proof\n  namespace: proof-oci\nspec:\n  interval: 1m0s\n  path: ./\n  prune: true\n  sourceRef:\n    kind: OCIRepository\n    name: proof\n",
        registry = env.registry.address
    ))
    .unwrap();
    env.wait_for_jsonpath(
        &["-n", "proof-oci", "ocirepository/proof"],
        "{.status.artifact.revision}",
        &format!("v1@{digest}"),
        CONVERGE,
    )
    .unwrap();
    env.wait_for_jsonpath(&["-n", "proof-oci", "configmap/from-oci"], "{.data.source}", "oci", CONVERGE).unwrap();
}

#[test]
fn the_read_only_kubeconfig_is_forbidden_to_write() {
    let env = TestEnv::shared();
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&env.readonly_kubeconfig)
        .args(["create", "configmap", "nope", "-n", "default"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is forbidden: User \"viewer\" cannot create resource \"configmaps\""), "{stderr}");
    let read =
        Command::new("kubectl").arg("--kubeconfig").arg(&env.readonly_kubeconfig).args(["get", "ns"]).output().unwrap();
    assert!(read.status.success(), "the read-only user can read");
}

#[test]
fn the_audit_log_records_mutating_requests() {
    let env = TestEnv::shared();
    env.kubectl_ok(&["create", "configmap", "audited", "-n", "default"]).unwrap();
    let events = env.audit_events().unwrap();
    let created = events.iter().any(|event| {
        event["verb"] == "create"
            && event["objectRef"]["resource"] == "configmaps"
            && event["objectRef"]["name"] == "audited"
    });
    assert!(created, "the create is in the audit log");
}

/// A kubelet restarts a crashed container; the environment restarts a Flux controller that exits,
/// and it serves again. (A controller that started before discovery served its kinds used to
/// exit and stay down: "no matches for kind".)
#[test]
fn a_flux_controller_that_dies_is_restarted_and_ready_again() {
    let env = TestEnv::shared();
    // notification-controller: the other tests of this binary do not need it meanwhile.
    let (restarts, pid) = env.restarts("notification-controller").expect("started as a restarted process");
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), rustix::process::Signal::KILL)
        .unwrap();
    wait_until("the restart", Duration::from_secs(30), || {
        Ok(env.restarts("notification-controller").is_some_and(|(now, _)| now == restarts + 1))
    })
    .unwrap();
    let (_, new_pid) = env.restarts("notification-controller").unwrap();
    assert_ne!(new_pid, pid);
    assert!(env.log("notification-controller").contains("testenv: notification-controller exited with signal: 9"));
    // It reconciles again: a Receiver becomes Ready.
    namespace(env, "proof-restart");
    env.apply_yaml(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: webhook-token\n  namespace: proof-restart\nstringData:\n  token: not-secret\n---\napiVersion: notification.toolkit.fluxcd.io/v1\nkind: Receiver\nmetadata:\n  name: restarted\n  namespace: proof-restart\nspec:\n  type: generic\n  secretRef:\n    name: webhook-token\n  resources:\n  - kind: GitRepository\n    name: any\n",
    )
    .unwrap();
    env.wait_for_jsonpath(
        &["receiver", "restarted", "-n", "proof-restart"],
        "{.status.conditions[?(@.type==\"Ready\")].status}",
        "True",
        CONVERGE,
    )
    .unwrap();
}

/// A kubelet renews its node's Lease every few seconds; kwok must too. Without a lease, the
/// fake node's only heartbeat came about once a minute, past the controller manager's grace
/// period: the node went NotReady for a few seconds each minute, every pod was marked NotReady,
/// and kwok never made them Ready again, so a long-lived environment's Deployments stayed unready
/// ("Deployment flux-system/helm-controller is not ready after 5m0s").
#[test]
fn the_fake_node_renews_its_lease_and_stays_ready() {
    let env = TestEnv::shared();
    let renewed = || {
        env.kubectl(&["get", "lease", "kwok-node-0", "-n", "kube-node-lease", "-o", "jsonpath={.spec.renewTime}"])
            .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
    };
    wait_until("the node's lease", Duration::from_secs(30), || Ok(!renewed()?.is_empty())).unwrap();
    let first = renewed().unwrap();
    wait_until("the lease renewed", Duration::from_secs(30), || Ok(renewed()? != first)).unwrap();
    let ready = env.kubectl_ok(&[
        "get",
        "node",
        "kwok-node-0",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
    ]);
    assert_eq!(ready.unwrap().trim(), "True");
}

/// A test's own environment ends with the test: every process it started is gone, its ports are
/// closed, its temp dir removed and its watchdog left (under `make test` environments that lived
/// until the test binary exited piled up to 45 kube-apiservers on 2 cores).
#[test]
fn a_private_environment_stops_when_it_is_dropped() {
    let env = TestEnv::start(Options { flux: false }).unwrap();
    let dir = env.dir.clone();
    let pid_file = dir.join("logs/pids");
    let pids: Vec<String> = std::fs::read_to_string(&pid_file).unwrap().lines().map(str::to_string).collect();
    assert!(pids.len() >= 5, "etcd, kube-apiserver, controller-manager, scheduler, kwok, servers: {pids:?}");
    let port: u16 = env.server.rsplit(':').next().unwrap().parse().unwrap();
    assert!(port_open(port), "the kube-apiserver listens on {port}");
    let watchdogs = || run(Command::new("pgrep").args(["-f", &pid_file.display().to_string()])).unwrap_or_default();
    assert!(!watchdogs().trim().is_empty(), "a watchdog watches {}", pid_file.display());

    drop(env);

    let alive: Vec<&String> = pids.iter().filter(|pid| Path::new("/proc").join(pid).exists()).collect();
    assert!(alive.is_empty(), "still running after the drop: {alive:?}");
    assert!(!port_open(port), "the kube-apiserver port {port} is closed");
    assert!(!dir.exists(), "{} is removed", dir.display());
    wait_until("the watchdog to leave", Duration::from_secs(5), || Ok(watchdogs().trim().is_empty())).unwrap();
}
