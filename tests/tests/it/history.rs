//! `kubectl gitops app history` and `kubectl gitops metrics dora` against the real Flux
//! controllers: commits pushed to an app's repo, one broken and then fixed, one reverted, each
//! reconciled by kustomize-controller; the ledger keeps what Flux's 5 entries drop.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::binaries;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::ui::Ui;
use gitops_shared::cluster::{Cluster, Connection};
use gitops_shared::deployments::{AppKind, Deployment};
use gitops_shared::readers::ledger::{self, AppId, Owner};
use serde_json::Value;

const NAMESPACE: &str = "history";

fn kubectl_gitops(env: &TestEnv, binary: &str, args: &[&str]) -> Run {
    Run::of(Command::new(binaries::path(binary)).args(args).env("KUBECONFIG", &env.kubeconfig))
}

/// `app history web -n history -o json`, which also keeps what it saw in the ledger.
fn history(env: &TestEnv) -> Vec<Value> {
    let run = kubectl_gitops(env, "kubectl-gitops-app", &["history", "web", "-n", NAMESPACE, "-o", "json"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let json = gitops_e2e::schema::document("AppHistory", &run.stdout);
    assert_eq!((json["fluxKind"].as_str(), json["name"].as_str()), (Some("Kustomization"), Some("web")));
    json["deployments"].as_array().unwrap().clone()
}

/// The deployments the app's ledger holds.
fn kept(env: &TestEnv) -> Vec<Value> {
    let ledger = env.kubectl_ok(&["-n", NAMESPACE, "get", "configmap", "kubectl-gitops-history-ks-web", "-o", "json"]);
    let ledger: Value = serde_json::from_str(&ledger.unwrap()).unwrap();
    serde_json::from_str(ledger["data"]["deployments.json"].as_str().unwrap()).unwrap()
}

fn dora(env: &TestEnv, args: &[&str]) -> Run {
    let run = kubectl_gitops(env, "kubectl-gitops-metrics", &[&["dora", "-n", NAMESPACE], args].concat());
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    run
}

/// Commits `config` as the app's only manifest and pushes it; returns the commit.
fn push(env: &TestEnv, work: &Path, config: &str, message: &str) -> String {
    std::fs::write(work.join("app/config.yaml"), config).unwrap();
    env.git.git(work, &["add", "."]).unwrap();
    env.git.git(work, &["commit", "-q", "-m", message]).unwrap();
    publish(env, work)
}

fn publish(env: &TestEnv, work: &Path) -> String {
    env.git.git(work, &["push", "-q", &env.git.ssh_url("history-web"), "main"]).unwrap();
    env.git.git(work, &["rev-parse", "HEAD"]).unwrap().trim().to_string()
}

fn config_map(version: u32) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  version: \"{version}\"\n")
}

/// Asks source-controller to fetch now, then waits until kustomize-controller's newest history
/// entry is `commit` with `status`; returns that entry.
fn reconciled(env: &TestEnv, commit: &str, status: &str) -> Value {
    env.request_reconcile(NAMESPACE, &["gitrepository/web"]).unwrap();
    let revision = format!("main@sha1:{commit}");
    let started = Instant::now();
    loop {
        let json: Value = serde_json::from_str(
            &env.kubectl_ok(&["-n", NAMESPACE, "get", "kustomization/web", "-o", "json"]).unwrap(),
        )
        .unwrap();
        let newest = &json["status"]["history"][0];
        if newest["metadata"]["revision"] == revision.as_str() && newest["lastReconciledStatus"] == status {
            return json["status"]["history"].clone();
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{commit} never reached {status}: {json:#}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn seconds(time: &Value) -> u64 {
    gitops_shared::duration::parse_timestamp(time.as_str().unwrap()).unwrap()
}

#[test]
fn history_and_dora_follow_real_reconciles_beyond_fluxs_five_entries() {
    let env = TestEnv::shared();
    env.git.create_repo("history-web").unwrap();
    let work = tempfile::tempdir().unwrap();
    env.git.git(work.path(), &["init", "-q", "-b", "main"]).unwrap();
    std::fs::create_dir_all(work.path().join("app")).unwrap();
    let mut commits = vec![push(env, work.path(), &config_map(1), "web 1")];
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: {NAMESPACE}\n\
         stringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n---\n\
         apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: web\n  namespace: {NAMESPACE}\n\
         spec:\n  interval: 10m\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n---\n\
         apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\n  namespace: {NAMESPACE}\n\
         spec:\n  interval: 10m\n  retryInterval: 1m\n  path: ./app\n  prune: true\n  targetNamespace: {NAMESPACE}\n  \
         sourceRef:\n    kind: GitRepository\n    name: web\n",
        env.git.http_url("history-web")
    ))
    .unwrap();
    reconciled(env, &commits[0], "ReconciliationSucceeded");
    // `status` keeps what it listed: the ledger exists before any app history ran.
    let listed = kubectl_gitops(env, "kubectl-gitops-status", &["-n", NAMESPACE, "-o", "json"]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    gitops_e2e::schema::document("Status", &listed.stdout);
    assert_eq!(kept(env).len(), 1);
    assert_eq!(history(env).len(), 1);

    // Commits 2 to 5: the 3rd is broken (the API server refuses its ConfigMap), the 4th fixes it.
    commits.push(push(env, work.path(), &config_map(2), "web 2"));
    reconciled(env, &commits[1], "ReconciliationSucceeded");
    history(env);
    let broken = config_map(3).replace("  version:", "  bad key!:");
    commits.push(push(env, work.path(), &broken, "web 3, broken"));
    let broke = reconciled(env, &commits[2], "ReconciliationFailed");
    history(env);
    let pushed_break = Instant::now();
    // Some time passes before the fix, so that the time to restore is measurably that long.
    std::thread::sleep(Duration::from_secs(8));
    commits.push(push(env, work.path(), &config_map(4), "web 4, fixed"));
    let fixed = reconciled(env, &commits[3], "ReconciliationSucceeded");
    let between_pushes = pushed_break.elapsed().as_secs();
    history(env);
    commits.push(push(env, work.path(), &config_map(5), "web 5"));
    reconciled(env, &commits[4], "ReconciliationSucceeded");

    let rows = history(env);
    let revisions: Vec<String> =
        rows.iter().map(|row| row["revision"].as_str().unwrap().trim_start_matches("main@sha1:").to_string()).collect();
    assert_eq!(revisions, commits, "in order, oldest first");
    let failed: Vec<bool> = rows.iter().map(|row| row["failed"].as_bool().unwrap()).collect();
    assert_eq!(failed, [false, false, true, false, false]);
    assert_eq!(rows[2]["status"], "ReconciliationFailed");
    assert_eq!(rows[3]["commit"]["subject"], "web 4, fixed");
    assert_eq!(rows[3]["changes"].as_array().unwrap().len(), 1, "{:#}", rows[3]);

    let report = gitops_e2e::schema::document("DoraMetrics", &dora(env, &["--app", "web", "-o", "json"]).stdout);
    let web = &report["apps"][0];
    assert_eq!((web["deployments"].as_u64(), web["succeeded"].as_u64()), (Some(5), Some(4)), "{report:#}");
    assert_eq!(web["changeFailureRate"]["failed"], 1);
    assert_eq!(web["changeFailureRate"]["rate"], 0.2);
    // Restored from the broken commit's first reconcile to the fix's, as Flux timed them.
    let restore = web["timeToRestore"]["medianSeconds"].as_u64().unwrap();
    let flux_restore = seconds(&fixed[0]["firstReconciled"]) - seconds(&broke[0]["firstReconciled"]);
    assert_eq!((web["timeToRestore"]["samples"].as_u64(), restore), (Some(1), flux_restore));
    assert!(restore.abs_diff(between_pushes) <= 10, "restore {restore} s, pushes {between_pushes} s apart");
    // Every successful deployment's commit was looked up by app history: 4 lead times.
    assert_eq!(web["leadTime"]["samples"], 4, "{report:#}");
    assert!(web["leadTime"]["p90Seconds"].as_u64().unwrap() < 120, "{report:#}");
    assert_eq!(report["overall"]["deployments"], 5);

    let exposition = dora(env, &["--app", "web", "-o", "prometheus"]).stdout;
    let series = "kubectl_gitops_dora_deployments{kind=\"Kustomization\",namespace=\"history\",name=\"web\"} 5\n";
    assert!(exposition.contains(series), "{exposition}");
    assert!(exposition.contains("# TYPE kubectl_gitops_dora_change_failure_rate gauge\n"), "{exposition}");
    let table = dora(env, &["--app", "web"]).stdout;
    assert!(table.contains("20% (1/5)"), "{table}");

    // Three more: the 6th reverts the 5th (Flux moves the 4th's manifests back to the front of
    // its history), then 7 and 8. Flux keeps 5 entries; the ledger keeps all 8.
    env.git.git(work.path(), &["revert", "--no-edit", "HEAD"]).unwrap();
    commits.push(publish(env, work.path()));
    reconciled(env, &commits[5], "ReconciliationSucceeded");
    history(env);
    for version in [7, 8] {
        commits.push(push(env, work.path(), &config_map(version), &format!("web {version}")));
        let flux = reconciled(env, commits.last().unwrap(), "ReconciliationSucceeded");
        history(env);
        if version == 8 {
            assert_eq!(flux.as_array().unwrap().len(), 5, "Flux keeps 5: {flux:#}");
        }
    }
    let rows = history(env);
    let revisions: Vec<String> =
        rows.iter().map(|row| row["revision"].as_str().unwrap().trim_start_matches("main@sha1:").to_string()).collect();
    assert_eq!(revisions, commits, "all 8, in order");
    let marks = |row: &Value| {
        (row["rollback"].as_bool().unwrap(), row["rolledBack"].as_bool().unwrap(), row["reverted"].as_bool().unwrap())
    };
    assert_eq!(marks(&rows[4]), (false, true, true), "the 5th was reverted: {:#}", rows[4]);
    assert_eq!(marks(&rows[5]), (true, false, false), "the revert rolled back to the 4th's manifests");
    assert_eq!(rows[5]["digest"], rows[3]["digest"]);
    assert_eq!(rows[5]["observed"], true, "Flux kept the 4th's time; ours is when it was seen");
    let table = kubectl_gitops(env, "kubectl-gitops-app", &["history", "web", "-n", NAMESPACE]);
    assert_eq!(table.code, Some(0), "{}", table.stderr);
    assert_eq!(table.stdout.lines().count(), 9, "a header and 8 rows: {}", table.stdout);
    assert!(table.stdout.contains("failed: ReconciliationFailed") && table.stdout.contains("rolled back, reverted"));

    let report = gitops_e2e::schema::document("DoraMetrics", &dora(env, &["--app", "web", "-o", "json"]).stdout);
    let web = &report["apps"][0];
    assert_eq!(web["deployments"], 8, "{report:#}");
    assert_eq!(web["changeFailureRate"]["failed"], 2, "the broken one and the reverted one: {report:#}");
    assert_eq!(web["timeToRestore"]["samples"], 2, "{report:#}");

    // The ledger is a labelled ConfigMap beside the app, owned by its Kustomization.
    let ledger: Value = serde_json::from_str(
        &env.kubectl_ok(&["-n", NAMESPACE, "get", "configmap", "kubectl-gitops-history-ks-web", "-o", "json"]).unwrap(),
    )
    .unwrap();
    assert_eq!(ledger["metadata"]["labels"]["kubectl-gitops.io/ledger-of"], "web");
    assert_eq!(ledger["metadata"]["ownerReferences"][0]["kind"], "Kustomization");

    // The UI: its watch keeps what it sees (a 9th commit reaches the ledger with no command
    // run), the history tab and API, the DORA panel and API.
    let ui = Ui::start(&binaries::path("kubectl-gitops-ui"), &env.kubeconfig, &[]);
    let cookie = ui.login();
    commits.push(push(env, work.path(), &config_map(9), "web 9"));
    reconciled(env, &commits[8], "ReconciliationSucceeded");
    let started = Instant::now();
    while kept(env).len() < 9 {
        assert!(started.elapsed() < Duration::from_secs(30), "the UI did not keep the 9th: {:#?}", kept(env));
        std::thread::sleep(Duration::from_millis(500));
    }
    let api = ui.json(&cookie, "/api/v1/apps/history/web/history");
    assert_eq!(api["deployments"].as_array().unwrap().len(), 9, "{api:#}");
    let page = ui.get(&cookie, "/apps/history/web/history");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("rolled back, reverted") && page.body.contains("web 9"), "{}", page.body);
    assert!(page.body.contains("Change failure rate"), "{}", page.body);
    let figures = ui.json(&cookie, "/api/v1/metrics/dora?namespace=history&app=web&since=7d");
    assert_eq!(figures["apps"][0]["deployments"], 9, "{figures:#}");
    let refused = ui.get(&cookie, "/api/v1/metrics/dora?since=soon");
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.error().contains("invalid --since"), "{}", refused.body);
    let missing = ui.get(&cookie, "/api/v1/apps/history/nothing/history");
    assert_eq!(missing.status, 404, "{}", missing.body);
    let started = Instant::now();
    loop {
        let apps = ui.get(&cookie, "/apps");
        if apps.body.contains("Lead time") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no DORA panel: {}", apps.body);
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn concurrent_ledger_writers_lose_nothing() {
    let env = TestEnv::shared();
    env.kubectl_ok(&["create", "namespace", "history-race"]).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let connection = Connection {
        kubeconfig: Some(env.kubeconfig.clone()),
        context: None,
        namespace: None,
        request_timeout: Some(Duration::from_secs(30)),
        overrides: Default::default(),
    };
    let printer = gitops_shared::output::Printer::new(gitops_shared::cli::ColorChoice::Never, 0, 0);
    let kept = runtime.block_on(async {
        let cluster = Cluster::connect(&connection, &printer).await.unwrap();
        let app = AppId { kind: AppKind::Kustomization, namespace: "history-race".into(), name: "race".into() };
        let owner = Owner { api_version: String::new(), uid: String::new() };
        // Eight writers, each with a look of its own: two deployments, one shared with the next.
        let writers = (0..8u64).map(|writer| {
            let (cluster, app, owner) = (cluster.clone(), app.clone(), owner.clone());
            tokio::spawn(async move {
                let look = [deployment(writer + 1), deployment(writer)];
                ledger::record(&cluster, &app, &owner, &look, &[]).await.unwrap()
            })
        });
        futures::future::join_all(writers).await.into_iter().for_each(|written| drop(written.unwrap()));
        ledger::list(&cluster, Some("history-race")).await.unwrap().remove(&app).unwrap()
    });
    let firsts: Vec<u64> = kept.iter().map(Deployment::first_seconds).collect();
    assert_eq!(firsts, (0..=8).map(|n| 1_796_083_200 + n * 60).collect::<Vec<_>>(), "all 9, in order");
}

fn deployment(n: u64) -> Deployment {
    let time = gitops_shared::duration::format_timestamp(1_796_083_200 + n as i64 * 60);
    Deployment {
        revision: format!("main@sha1:{n:040x}"),
        digest: format!("sha256:{n}"),
        status: "ReconciliationSucceeded".into(),
        first: time.clone(),
        observed: false,
        last: time,
        duration: None,
        reconciliations: Some(1),
        release: None,
        commit: None,
    }
}
