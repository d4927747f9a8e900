//! `kubectl gitops app rollback` through the real kubectl, against the real API server and Flux
//! controllers: an app's repository gets a bad commit the API server refuses, and the rollback
//! brings the app back to Ready through a commit that restores the last good deployment's files;
//! `app history` marks it as a rollback. A newer commit on its way and an image automation that
//! would move the app forward again are refused with their hints.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::browser::Browser;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::ui::Ui;
use gitops_e2e::{binaries, flux_release};
use serde_json::Value;

/// `kubectl gitops app ARGS` through the real kubectl, the config repo named (the cluster has no
/// install record): its credentials are the ones the app's repository, on the same server, takes.
fn app(env: &TestEnv, plugins: &Path, args: &[&str]) -> Run {
    Run::of(
        env.kubectl_gitops(plugins, "rollback-fleet", &[&["app"][..], args].concat()).env("GIT_AUTHOR_NAME", "on-call"),
    )
}

fn config_map(version: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  version: \"{version}\"\n")
}

/// Commits `config` as the app's only manifest and pushes it; returns the commit.
fn push(env: &TestEnv, work: &Path, config: &str, message: &str) -> String {
    std::fs::write(work.join("app/config.yaml"), config).unwrap();
    env.git.git(work, &["add", "."]).unwrap();
    env.git.git(work, &["commit", "-q", "-m", message]).unwrap();
    env.git.git(work, &["push", "-q", &env.git.ssh_url("rollback-web"), "main"]).unwrap();
    env.git.git(work, &["rev-parse", "HEAD"]).unwrap().trim().to_string()
}

fn kustomization(env: &TestEnv) -> Value {
    serde_json::from_str(&env.kubectl_ok(&["-n", "flux-system", "get", "kustomization/web", "-o", "json"]).unwrap())
        .unwrap()
}

/// Asks Flux to fetch now and waits until the Kustomization attempted `commit` with `reason`.
fn reconciled(env: &TestEnv, commit: &str, reason: &str) {
    env.request_reconcile("flux-system", &["gitrepository/web", "kustomization/web"]).unwrap();
    let started = Instant::now();
    loop {
        let json = kustomization(env);
        let attempted = json["status"]["lastAttemptedRevision"].as_str().unwrap_or_default();
        let ready = json["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Ready");
        if attempted.ends_with(commit) && ready.is_some_and(|c| c["reason"] == reason) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{commit} never reached {reason}: {json:#}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn rollback_restores_the_last_good_deployment_through_git_and_refuses_what_it_cannot_do_cleanly() {
    let env = &TestEnv::start(Options { flux: true }).unwrap();
    env.apply_yaml(&std::fs::read_to_string(flux_release::components()).unwrap()).unwrap();
    // The config repo the credentials are resolved for: on the same server as the app's.
    env.git.create_repo("rollback-fleet").unwrap();
    let fleet = tempfile::tempdir().unwrap();
    env.git.git(fleet.path(), &["init", "-q", "-b", "main"]).unwrap();
    std::fs::write(fleet.path().join("README.md"), "The fleet.\n").unwrap();
    env.git.git(fleet.path(), &["add", "."]).unwrap();
    env.git.git(fleet.path(), &["commit", "-q", "-m", "fleet"]).unwrap();
    env.git.git(fleet.path(), &["push", "-q", &env.git.ssh_url("rollback-fleet"), "main"]).unwrap();

    env.git.create_repo("rollback-web").unwrap();
    let checkout = tempfile::tempdir().unwrap();
    let work = checkout.path();
    env.git.git(work, &["init", "-q", "-b", "main"]).unwrap();
    std::fs::create_dir_all(work.join("app")).unwrap();
    let first = push(env, work, &config_map("1"), "web 1");
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: flux-system\n\
         stringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n---\n\
         apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: web\n  namespace: flux-system\n\
         spec:\n  interval: 10m\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n---\n\
         apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\n  namespace: flux-system\n\
         spec:\n  interval: 10m\n  retryInterval: 1m\n  path: ./app\n  prune: true\n  targetNamespace: default\n  \
         sourceRef:\n    kind: GitRepository\n    name: web\n",
        env.git.http_url("rollback-web")
    ))
    .unwrap();
    reconciled(env, &first, "ReconciliationSucceeded");
    let good = push(env, work, &config_map("2"), "web 2");
    reconciled(env, &good, "ReconciliationSucceeded");
    // A bad commit: the API server refuses its ConfigMap, and Flux keeps failing on it.
    let bad = push(env, work, &config_map("3").replace("  version:", "  bad key!:"), "web 3, broken");
    reconciled(env, &bad, "ReconciliationFailed");
    let plugins = binaries::plugin_dir();

    // The plan: back to the last deployment that was Ready, the file restored.
    let before = env.our_requests().unwrap().len();
    let planned = app(env, plugins.path(), &["rollback", "web", "--dry-run", "-o", "json"]);
    assert_eq!(planned.code, Some(0), "{}", planned.render());
    let plan = gitops_e2e::schema::document("Rollback", &planned.stdout);
    assert_eq!((plan["from"].as_str(), plan["to"].as_str()), (Some(bad.as_str()), Some(good.as_str())), "{plan:#}");
    assert_eq!(plan["files"], serde_json::json!(["update app/config.yaml"]));
    assert_eq!(plan["dryRun"], true);
    assert!(plan.get("commit").is_none());
    // The failed commit never reached the cluster: web 2's files change nothing there.
    assert_eq!(plan["preview"]["summary"]["drifted"], 0, "{plan:#}");
    assert_eq!(plan["preview"]["summary"]["checked"], 1, "{plan:#}");
    let screen = app(env, plugins.path(), &["rollback", "web", "--dry-run"]);
    assert_eq!(screen.code, Some(0), "{}", screen.render());
    assert!(screen.stdout.starts_with("Plan:\n"), "{}", screen.stdout);
    assert!(screen.stdout.contains("-  bad key!: \"3\"\n+  version: \"2\"\n"), "{}", screen.stdout);
    assert!(
        screen.stdout.ends_with(
            "What the cluster would get from the restored files:\n0 objects would change (0 created), 1 stay as they are\n"
        ),
        "{}",
        screen.stdout
    );

    // --dry-run writes nothing to the cluster (dry runs aside).
    let writes: Vec<String> = env.our_requests().unwrap()[before..]
        .iter()
        .filter(|request| request.mutates() && !request.uri.contains("dryRun=All"))
        .map(|request| format!("{} {}", request.verb, request.uri))
        .collect();
    assert!(writes.is_empty(), "--dry-run wrote: {writes:?}");

    // The rollback, waited for: a commit that restores web 2's file, applied and Ready.
    let rolled = app(env, plugins.path(), &["rollback", "web", "--wait", "--timeout", "2m"]);
    assert_eq!(rolled.code, Some(0), "{}", rolled.render());
    let line = rolled.stdout.lines().last().unwrap();
    assert!(line.starts_with(&format!("rolled back flux-system/web to {}: commit ", &good[..12])), "{}", rolled.stdout);
    let commit = line.split("commit ").nth(1).unwrap().split(' ').next().unwrap().to_string();
    env.git.git(work, &["pull", "-q", &env.git.ssh_url("rollback-web"), "main"]).unwrap();
    let pushed = env.git.git(work, &["rev-parse", "HEAD"]).unwrap().trim().to_string();
    assert!(pushed.starts_with(&commit), "{pushed} is not {commit}");
    assert_eq!(std::fs::read_to_string(work.join("app/config.yaml")).unwrap(), config_map("2"));
    let message = env.git.git(work, &["log", "-1", "--format=%an%n%B"]).unwrap();
    assert!(message.starts_with(&format!("on-call\nRoll back web to {}\n", &good[..12])), "{message}");
    assert!(message.contains(&format!("the deployment before {bad}, which is not Ready")), "{message}");
    let applied = kustomization(env)["status"]["lastAppliedRevision"].as_str().unwrap().to_string();
    assert_eq!(applied, format!("main@sha1:{pushed}"));
    // `app history` marks it: the same manifests as web 2's deployment, deployed again.
    let history = Run::of(
        Command::new(binaries::path("kubectl-gitops-app"))
            .args(["history", "web", "--no-git", "-o", "json"])
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(history.code, Some(0), "{}", history.render());
    let history = gitops_e2e::schema::document("AppHistory", &history.stdout);
    let newest = history["deployments"].as_array().unwrap().last().unwrap();
    assert_eq!(newest["revision"], format!("main@sha1:{pushed}"), "{history:#}");
    assert_eq!(newest["rollback"], true, "{history:#}");
    // The UI's history tab draws it on the timeline, by shape and word.
    let ui = Ui::start(&binaries::path("kubectl-gitops-ui"), &env.kubeconfig, &[]);
    let browser = Browser::start();
    browser.goto(&format!("{}/?token={}", ui.origin(), ui.token));
    browser.goto(&format!("{}/apps/flux-system/web/history", ui.origin()));
    let timeline = browser.eval("document.querySelector('#timeline').textContent");
    assert!(timeline.as_str().unwrap_or_default().contains("↩ rollback"), "{timeline}");
    let marks = browser.eval("document.querySelectorAll('#timeline path.mark.rollback').length");
    assert_eq!(marks, serde_json::json!(1));
    let named = browser.eval("document.querySelector('#timeline').getAttribute('aria-label')");
    assert!(named.as_str().unwrap_or_default().ends_with(" failed, 1 rollback"), "{named}");
    browser.look("app-timeline");
    drop((browser, ui));

    // Further back, to web 1: the preview shows the ConfigMap's version going back.
    let further = app(env, plugins.path(), &["rollback", "web", "--to", &first, "--dry-run", "-o", "json"]);
    assert_eq!(further.code, Some(0), "{}", further.render());
    let further = gitops_e2e::schema::document("Rollback", &further.stdout);
    let objects = &further["preview"]["kustomizations"][0]["objects"];
    assert_eq!(objects[0]["name"], "web", "{further:#}");
    assert_eq!(objects[0]["fields"], serde_json::json!([{"path": "data.version", "managers": []}]), "{further:#}");
    // --to a tag of the app's repository names its commit; a short hash is not taken for one.
    env.git.git(work, &["tag", "release-1", &first]).unwrap();
    env.git.git(work, &["push", "-q", &env.git.ssh_url("rollback-web"), "release-1"]).unwrap();
    let tagged = app(env, plugins.path(), &["rollback", "web", "--to", "release-1", "--dry-run", "-o", "json"]);
    assert_eq!(tagged.code, Some(0), "{}", tagged.render());
    assert_eq!(gitops_e2e::schema::document("Rollback", &tagged.stdout)["to"], first.as_str());
    let short = app(env, plugins.path(), &["rollback", "web", "--to", &first[..12], "--dry-run"]);
    assert_eq!(short.code, Some(2), "{}", short.render());
    assert!(
        short.stderr.contains("not a commit's full hash, a Flux revision (main@sha1:…) or a tag"),
        "{}",
        short.stderr
    );

    // An image automation writing to the app's repository would undo it: refused, with the hint.
    env.apply_yaml(IMAGE_UPDATE_AUTOMATION_CRD).unwrap();
    env.wait_for_jsonpath(
        &["crd", "imageupdateautomations.image.toolkit.fluxcd.io"],
        "{.status.conditions[?(@.type==\"Established\")].status}",
        "True",
        Duration::from_secs(30),
    )
    .unwrap();
    env.apply_yaml(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  interval: 10m\n  sourceRef:\n    kind: GitRepository\n    name: web\n",
    )
    .unwrap();
    let automated = app(env, plugins.path(), &["rollback", "web", "--to", &first]);
    assert_eq!(automated.code, Some(2), "{}", automated.render());
    assert!(automated.stderr.contains("ImageUpdateAutomation flux-system/web writes to GitRepository/flux-system/web"));
    assert!(
        automated.stderr.contains(
            "hint: suspend it first (`flux suspend image update web -n flux-system`), or pass --suspend-image-automation"
        ),
        "{}",
        automated.render()
    );
    // The flag suspends it: planned with --dry-run (and not done), then done just before the push.
    let suspended = |env: &TestEnv| {
        env.kubectl_ok(&["-n", "flux-system", "get", "imageupdateautomation", "web", "-o", "jsonpath={.spec.suspend}"])
            .unwrap()
    };
    let planned =
        app(env, plugins.path(), &["rollback", "web", "--to", &first, "--suspend-image-automation", "--dry-run"]);
    assert_eq!(planned.code, Some(0), "{}", planned.render());
    assert!(
        planned.stdout.contains(
            "1. suspend ImageUpdateAutomation flux-system/web, which would move the image forward again\n  2. commit"
        ),
        "{}",
        planned.stdout
    );
    assert_eq!(suspended(env), "", "--dry-run suspended it");
    let through =
        app(env, plugins.path(), &["rollback", "web", "--to", &first, "--suspend-image-automation", "-o", "json"]);
    assert_eq!(through.code, Some(0), "{}", through.render());
    let through = gitops_e2e::schema::document("Rollback", &through.stdout);
    assert_eq!(through["suspended"], serde_json::json!(["flux-system/web"]), "{through:#}");
    assert_eq!(suspended(env), "true");
    env.git.git(work, &["pull", "-q", &env.git.ssh_url("rollback-web"), "main"]).unwrap();
    assert_eq!(std::fs::read_to_string(work.join("app/config.yaml")).unwrap(), config_map("1"));

    // Someone else's commit on its way: refused, nothing pushed.
    let newer = push(env, work, &config_map("4"), "web 4");
    let racing = app(env, plugins.path(), &["rollback", "web", "--to", &first]);
    assert_eq!(racing.code, Some(2), "{}", racing.render());
    assert!(
        racing.stderr.contains(&format!("branch main of {} is at {}", env.git.http_url("rollback-web"), &newer[..12])),
        "{}",
        racing.render()
    );
    let remote_head = env.git.git(work, &["ls-remote", &env.git.ssh_url("rollback-web"), "refs/heads/main"]).unwrap();
    assert!(remote_head.starts_with(&newer), "nothing was pushed: {remote_head}");
}

/// Image automation's CRD alone (no controller): what the rollback reads.
const IMAGE_UPDATE_AUTOMATION_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: imageupdateautomations.image.toolkit.fluxcd.io\nspec:\n  group: image.toolkit.fluxcd.io\n  names:\n    kind: ImageUpdateAutomation\n    listKind: ImageUpdateAutomationList\n    plural: imageupdateautomations\n    singular: imageupdateautomation\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";
