//! `kubectl gitops status` against the real Flux controllers: ready, failing, suspended,
//! progressing and unfetchable apps, as rows, JSON and an exit code.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::process::run;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, fixtures};

const LABELS: &str = "  labels:\n    app.kubernetes.io/managed-by: kubectl-gitops\n";

fn status(env: &TestEnv, args: &[&str]) -> Run {
    Run::of(Command::new(binaries::path("kubectl-gitops-status")).args(args).env("KUBECONFIG", &env.kubeconfig))
}

fn app_status(env: &TestEnv, args: &[&str]) -> Run {
    Run::of(
        Command::new(binaries::path("kubectl-gitops-app")).arg("status").args(args).env("KUBECONFIG", &env.kubeconfig),
    )
}

fn push_app(env: &TestEnv) {
    env.git.create_repo("apps").unwrap();
    let work = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        run(Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(work.path())
            .env("GIT_SSH_COMMAND", env.git.git_ssh_command()))
        .unwrap()
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(work.path().join("app")).unwrap();
    std::fs::write(
        work.path().join("app/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: status-app\n  namespace: default\ndata:\n  ok: \"yes\"\n",
    )
    .unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "app"]);
    git(&["push", "-q", &env.git.ssh_url("apps"), "main"]);
}

fn kustomization(name: &str, source: &str, path: &str, suspend: bool) -> String {
    let suspend = if suspend { "  suspend: true\n" } else { "" };
    format!(
        "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\n{LABELS}spec:\n  interval: 1m0s\n  path: {path}\n  prune: true\n{suspend}  sourceRef:\n    kind: GitRepository\n    name: {source}\n"
    )
}

fn git_repository(name: &str, url: &str) -> String {
    format!(
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: {name}\n  namespace: flux-system\n{LABELS}spec:\n  interval: 1m0s\n  timeout: 5s\n  url: {url}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n"
    )
}

fn helm_release(name: &str, values: &str) -> String {
    format!(
        "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\n  namespace: flux-system\n{LABELS}spec:\n  interval: 1m0s\n  install:\n    remediation:\n      retries: 0\n  chart:\n    spec:\n      chart: hello\n      version: 0.1.0\n      sourceRef:\n        kind: HelmRepository\n        name: local\n  values:\n{values}"
    )
}

#[test]
fn status_shows_each_state_with_flux_messages_and_gates_on_failures() {
    let Some(components) = fixtures::flux_components() else { return };
    let env = TestEnv::start(Options { flux: true }).unwrap().detach();
    env.apply_yaml(&std::fs::read_to_string(components).unwrap()).unwrap();
    push_app(env);
    env.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut objects = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: flux-system\nstringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n"
    );
    objects.push_str(&git_repository("apps", &env.git.http_url("apps")));
    objects.push_str(&git_repository("unreachable", &format!("http://127.0.0.1:{closed}/nope.git")));
    objects.push_str(&kustomization("ready-app", "apps", "./app", false));
    objects.push_str(&kustomization("missing-path", "apps", "./does-not-exist", false));
    objects.push_str(&kustomization("paused", "apps", "./app", true));
    objects.push_str(&kustomization("bad-source", "unreachable", "./app", false));
    objects.push_str(&format!(
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: local\n  namespace: flux-system\n{LABELS}spec:\n  interval: 1m0s\n  url: {}\n",
        env.helm.url
    ));
    objects.push_str(&helm_release("hello", "    greeting: hi\n"));
    // `greeting` is required by the chart: null breaks the install.
    objects.push_str(&helm_release("broken-values", "    greeting: null\n"));
    env.apply_yaml(&objects).unwrap();

    let wanted = [
        ("bad-source", "failing"),
        ("broken-values", "failing"),
        ("hello", "ready"),
        ("missing-path", "failing"),
        ("paused", "suspended"),
        ("ready-app", "ready"),
    ];
    let started = Instant::now();
    let mut json: serde_json::Value;
    loop {
        let run = status(env, &["-o", "json"]);
        json = serde_json::from_str(&run.stdout).unwrap_or_default();
        let states: Vec<(String, String)> = json["apps"]
            .as_array()
            .map(|apps| {
                apps.iter()
                    .map(|a| {
                        (a["name"].as_str().unwrap_or_default().into(), a["state"].as_str().unwrap_or_default().into())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let expected: Vec<(String, String)> = wanted.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect();
        // helm-controller may report Ready a moment before the release history that carries
        // the deployed chart version: settled means both.
        let hello_deployed = json["apps"]
            .as_array()
            .and_then(|apps| apps.iter().find(|a| a["name"] == "hello"))
            .is_some_and(|hello| !hello["appliedRevision"].is_null());
        if states == expected && hello_deployed {
            assert_eq!(run.code, Some(1), "failing apps make status exit 1");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "states never settled: {states:?}\n{}", run.stderr);
        std::thread::sleep(Duration::from_secs(2));
    }

    let app = |name: &str| json["apps"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap().clone();
    assert!(
        app("missing-path")["message"].as_str().unwrap().contains("kustomization path not found"),
        "{}",
        app("missing-path")
    );
    assert!(
        app("bad-source")["message"].as_str().unwrap().starts_with("GitRepository unreachable: "),
        "{}",
        app("bad-source")
    );
    assert_eq!(app("hello")["appliedRevision"], "0.1.0", "{}", app("hello"));
    assert_eq!(app("hello")["kind"], "helm");
    assert!(app("ready-app")["appliedRevision"].as_str().unwrap().starts_with("main@sha1:"));
    assert!(app("ready-app")["lastDeployed"].as_str().unwrap().ends_with('Z'));
    assert_eq!(json["flux"]["version"], "v2.9.3");

    let table = status(env, &[]);
    assert_eq!(table.code, Some(1));
    assert!(table.stdout.starts_with("Flux v2.9.3 in flux-system: 6/6 controllers ready\n"), "{}", table.stdout);
    assert!(table.stdout.contains("\nready-app "), "{}", table.stdout);
    assert!(table.stdout.ends_with("6 apps: 2 ready, 3 failing, 0 progressing, 1 suspended\n"), "{}", table.stdout);

    let failed = status(env, &["--failed-only", "-o", "json"]);
    let failed: serde_json::Value = serde_json::from_str(&failed.stdout).unwrap();
    let names: Vec<&str> = failed["apps"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bad-source", "broken-values", "missing-path"]);

    app_status_shows_the_same_apps_as_trees(env);
}

/// `app status NAME` on the apps the listing test settled (one environment for both: each start
/// costs seconds).
fn app_status_shows_the_same_apps_as_trees(env: &TestEnv) {
    let ready = app_status(env, &["ready-app"]);
    assert_eq!(ready.code, Some(0), "{}\n{}", ready.stdout, ready.stderr);
    assert!(
        ready.stdout.starts_with(
            "App flux-system/ready-app (kustomize): ready\nGitRepository/flux-system/apps  Ready  main@sha1:"
        ),
        "{}",
        ready.stdout
    );
    assert!(ready.stdout.contains("\n└── Kustomization/flux-system/ready-app  Ready  main@sha1:"), "{}", ready.stdout);
    assert!(ready.stdout.contains("    └── ConfigMap/default/status-app\n"), "{}", ready.stdout);
    // The commit comes from the git server over HTTP with the GitRepository's Secret.
    assert!(ready.stdout.contains(" app (t <t@example.invalid>, "), "{}\n{}", ready.stdout, ready.stderr);
    assert_eq!(ready.stderr, "");

    let json = app_status(env, &["ready-app", "-o", "json"]);
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(json["app"]["state"], "ready");
    assert_eq!(json["commit"]["subject"], "app");
    assert_eq!(json["commit"]["sha"].as_str().unwrap().len(), 40);
    assert!(json["lastDeployed"]["revision"].as_str().unwrap().starts_with("main@sha1:"));
    assert_eq!(json["inventory"][0]["name"], "status-app");

    let helm = app_status(env, &["hello", "--no-git"]);
    assert_eq!(helm.code, Some(0), "{}\n{}", helm.stdout, helm.stderr);
    assert!(helm.stdout.contains("\n└── HelmChart/flux-system/flux-system-hello  Ready  0.1.0"), "{}", helm.stdout);
    assert!(helm.stdout.contains("    └── HelmRelease/flux-system/hello  Ready  0.1.0"), "{}", helm.stdout);
    assert!(helm.stdout.contains("        └── Deployment/flux-system/hello  "), "{}", helm.stdout);
    assert!(helm.stdout.contains("/1 ready\n"), "{}", helm.stdout);

    let missing = app_status(env, &["missing-path"]);
    assert_eq!(missing.code, Some(1));
    assert!(missing.stdout.contains("Last error:    Kustomization flux-system/missing-path: "), "{}", missing.stdout);
    assert!(missing.stdout.contains("kustomization path not found"), "{}", missing.stdout);

    let broken = app_status(env, &["broken-values", "-o", "json"]);
    assert_eq!(broken.code, Some(1));
    let broken: serde_json::Value = serde_json::from_str(&broken.stdout).unwrap();
    assert_eq!(broken["lastError"]["kind"], "HelmRelease", "{broken}");
    assert!(broken["lastError"]["message"].as_str().unwrap().contains("greeting is required"), "{broken}");

    let paused = app_status(env, &["paused", "--no-git"]);
    assert_eq!(paused.code, Some(0), "suspended counts as status counts it");
    assert!(paused.stdout.starts_with("App flux-system/paused (kustomize): suspended\n"), "{}", paused.stdout);

    let unfetchable = app_status(env, &["bad-source"]);
    assert_eq!(unfetchable.code, Some(1));
    assert!(
        unfetchable.stdout.contains("Last error:    GitRepository flux-system/unreachable: "),
        "{}",
        unfetchable.stdout
    );
    assert!(
        unfetchable.stdout.contains("Waiting on:    GitRepository flux-system/unreachable: "),
        "{}",
        unfetchable.stdout
    );

    let absent = app_status(env, &["absent"]);
    assert_eq!(absent.code, Some(2));
    assert!(
        absent.stderr.starts_with("error: app \"absent\" not found: no Kustomization or HelmRelease \"absent\" in namespace flux-system\nhint: "),
        "{}",
        absent.stderr
    );

    let started = Instant::now();
    let waited = app_status(env, &["ready-app", "--wait", "--timeout", "1m"]);
    assert_eq!(waited.code, Some(0), "{}", waited.stderr);
    assert!(started.elapsed() < Duration::from_secs(20), "a ready app needs no waiting");

    let started = Instant::now();
    let broken = app_status(env, &["missing-path", "--wait", "--grace-period", "2s", "--no-git"]);
    assert_eq!(broken.code, Some(1));
    assert!(
        broken.stderr.starts_with(
            "error: app flux-system/missing-path failed (for 2s and more): Kustomization flux-system/missing-path: "
        ),
        "{}",
        broken.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(30), "a lasting failure ends the wait early");

    let never =
        app_status(env, &["ready-app", "--wait", "--timeout", "3s", "--revision", "0123456789abcdef", "--no-git"]);
    assert_eq!(never.code, Some(1));
    assert!(
        never.stderr.starts_with("error: app flux-system/ready-app is not Ready at 0123456789abcdef after 3s: Kustomization flux-system/ready-app is at main@sha1:"),
        "{}",
        never.stderr
    );
}

#[test]
fn status_without_flux_says_so_and_exits_1() {
    let env = TestEnv::start(Options { flux: false }).unwrap().detach();
    let run = status(env, &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "error: Flux is not installed: this cluster serves no Kustomization or HelmRelease API\nhint: install it with `kubectl gitops install`\n"
    );
}
