//! `kubectl gitops monitoring` against a real Prometheus and promtool, built from the Prometheus
//! Go module (tests/testenv/build-tools.sh): the generated rules and every dashboard expression
//! pass promtool; a Prometheus scrapes the local Flux controllers, with targets taken from the
//! generated PodMonitor's selector; an alert goes pending, then firing; `monitoring status` reads
//! them back.
//!
//! Not here: the way through the API server's service proxy (the default without
//! `--prometheus-url`). The API server proxies only to an endpoint backed by a Pod with that IP,
//! and kwok's pods have no address this machine serves; the proxy answered "no endpoints
//! available for service" to a selector-less Service whose Endpoints named this machine.
//!
//! What this environment cannot run: kube-state-metrics (`k8s.io/kube-state-metrics/v2`: the Go
//! module proxy answers 403 "This module version is not available"), so the alerts on
//! `gotk_resource_info` are parsed and loaded but have no series to fire on here; the alert
//! that fires is the one on the controllers' own `gotk_reconcile_duration_seconds`.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::testenv::process::free_ports;
use gitops_e2e::{binaries, tools};
use gitops_shared::monitoring::{Thresholds, manifests, rules};
use serde_json::{Value, json};

/// `promtool check rules FILE`, which must pass.
fn check_rules(file: &Path) {
    let out = Command::new(tools::path("promtool")).args(["check", "rules"]).arg(file).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "promtool check rules {}:\n{text}", file.display());
    assert!(text.contains("SUCCESS"), "{text}");
}

/// The `groups` of the PrometheusRule `monitoring install` commits, as a Prometheus rules file.
fn rules_file(dir: &Path, thresholds: &Thresholds) -> std::path::PathBuf {
    let rule = rules::prometheus_rule(thresholds);
    let path = dir.join("flux-rules.yaml");
    std::fs::write(&path, serde_json::to_string(&json!({"groups": rule["spec"]["groups"]})).unwrap()).unwrap();
    path
}

#[test]
fn the_rules_and_every_dashboard_expression_pass_promtool() {
    let dir = tempfile::tempdir().unwrap();
    check_rules(&rules_file(dir.path(), &Thresholds::default()));
    // Each dashboard and alert expression as a recording rule: promtool parses every one.
    let recorded: Vec<Value> = rules::expressions(&Thresholds::default())
        .into_iter()
        .enumerate()
        .map(|(index, expr)| json!({"record": format!("dashboard:expr_{index}"), "expr": expr}))
        .collect();
    assert!(recorded.len() >= 17, "{recorded:?}");
    let path = dir.path().join("dashboards.yaml");
    std::fs::write(
        &path,
        serde_json::to_string(&json!({"groups": [{"name": "dashboards", "rules": recorded}]})).unwrap(),
    )
    .unwrap();
    check_rules(&path);
}

/// A Prometheus on 127.0.0.1, stopped when dropped.
struct Prometheus {
    child: Child,
    url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn get(&self, path: &str) -> Value {
        let out = Command::new("curl").args(["-sf", &format!("{}{path}", self.url)]).output().unwrap();
        assert!(out.status.success(), "GET {path}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn query(&self, expr: &str) -> Vec<Value> {
        let query: String = form_urlencoded::Serializer::new(String::new()).append_pair("query", expr).finish();
        self.get(&format!("/api/v1/query?{query}"))["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    fn alert_state(&self, name: &str) -> String {
        let rules = self.get("/api/v1/rules?type=alert");
        let groups = rules["data"]["groups"].as_array().cloned().unwrap_or_default();
        let rule = groups
            .iter()
            .flat_map(|group| group["rules"].as_array().cloned().unwrap_or_default())
            .find(|rule| rule["name"] == name);
        rule.map(|rule| rule["state"].as_str().unwrap_or_default().to_string()).unwrap_or_default()
    }
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The scrape targets the PodMonitor selects: the controllers whose `app` its selector names,
/// each at the port that serves `http-prom`, labelled as prometheus-operator labels pod targets.
fn targets(env: &TestEnv) -> Vec<Value> {
    let monitor = manifests::pod_monitor();
    let selector = &monitor["spec"]["selector"]["matchExpressions"][0];
    assert_eq!((selector["key"].as_str(), selector["operator"].as_str()), (Some("app"), Some("In")));
    let selected: Vec<&str> = selector["values"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let namespace = monitor["spec"]["namespaceSelector"]["matchNames"][0].as_str().unwrap();
    let running = env.flux_metrics.lock().unwrap().clone();
    assert_eq!(running.len(), 4, "the four controllers serve metrics: {running:?}");
    running
        .into_iter()
        .filter(|(controller, _)| selected.contains(controller))
        .map(|(controller, port)| {
            json!({
                "targets": [format!("127.0.0.1:{port}")],
                "labels": {"app": controller, "pod": controller, "namespace": namespace, "container": "manager"},
            })
        })
        .collect()
}

#[test]
fn prometheus_scrapes_the_flux_controllers_and_the_slow_reconcile_alert_fires() {
    let env = TestEnv::shared();
    let dir = tempfile::tempdir().unwrap();
    // Thresholds a test can reach: any reconciliation is slow, and 3 seconds of it fire.
    let thresholds = Thresholds {
        slow_reconcile: Duration::from_millis(1),
        slow_for: Duration::from_secs(3),
        ..Thresholds::default()
    };
    let rules = rules_file(dir.path(), &thresholds);
    check_rules(&rules);
    let targets = targets(env);
    assert_eq!(targets.len(), 4, "{targets:?}");
    let config = json!({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [rules],
        "scrape_configs": [{"job_name": rules::job(), "static_configs": targets}],
    });
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, serde_json::to_string(&config).unwrap()).unwrap();
    let port = free_ports(1).unwrap()[0];
    let child = Command::new(tools::path("prometheus"))
        .arg(format!("--config.file={}", config_path.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
        .stderr(std::fs::File::create(dir.path().join("prometheus.err")).unwrap())
        .spawn()
        .unwrap();
    let prometheus = Prometheus { child, url: format!("http://127.0.0.1:{port}") };
    wait_for("Prometheus ready", Duration::from_secs(60), || {
        Command::new("curl")
            .args(["-sf", "-o", "/dev/null", &format!("{}/-/ready", prometheus.url)])
            .status()
            .is_ok_and(|s| s.success())
    });

    // Something for each controller to reconcile: a source, a failing Kustomization retried
    // every 2 seconds, a HelmRelease and a Receiver.
    env.apply_yaml(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: monitoring-e2e\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: monitoring-e2e\nstringData:\n  token: s3cr3t\n---\n\
         apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: nowhere\n  namespace: monitoring-e2e\n\
         spec:\n  interval: 2s\n  url: https://127.0.0.1:1/nowhere.git\n  ref:\n    branch: main\n---\n\
         apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: failing\n  namespace: monitoring-e2e\n\
         spec:\n  interval: 1m\n  retryInterval: 2s\n  path: ./\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: nowhere\n---\n\
         apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: failing\n  namespace: monitoring-e2e\n\
         spec:\n  interval: 2s\n  chartRef:\n    kind: OCIRepository\n    name: absent\n---\n\
         apiVersion: notification.toolkit.fluxcd.io/v1\nkind: Receiver\nmetadata:\n  name: hook\n  namespace: monitoring-e2e\n\
         spec:\n  type: generic\n  secretRef:\n    name: token\n  resources:\n  - kind: GitRepository\n    name: nowhere\n",
    )
    .unwrap();

    // Every target is up, and each controller's reconcile durations are there.
    wait_for("every target up", Duration::from_secs(60), || {
        let up = prometheus.query(&format!("up{{job=\"{}\"}} == 1", rules::job()));
        up.len() == 4
    });
    for (controller, kind) in [
        ("source-controller", "GitRepository"),
        ("kustomize-controller", "Kustomization"),
        ("helm-controller", "HelmRelease"),
        ("notification-controller", "Receiver"),
    ] {
        let expr = format!(
            "gotk_reconcile_duration_seconds_count{{app=\"{controller}\", kind=\"{kind}\", exported_namespace=\"monitoring-e2e\"}}"
        );
        wait_for(&format!("{expr} recorded"), Duration::from_secs(90), || !prometheus.query(&expr).is_empty());
    }

    // The slow-reconcile alert goes pending, then firing, for the Kustomizations.
    let mut seen = Vec::new();
    wait_for("FluxReconciliationSlow firing", Duration::from_secs(120), || {
        let state = prometheus.alert_state("FluxReconciliationSlow");
        if seen.last() != Some(&state) {
            seen.push(state.clone());
        }
        state == "firing"
    });
    assert!(seen.contains(&"pending".to_string()), "pending before firing: {seen:?}");
    assert_eq!(prometheus.alert_state("FluxControllerDown"), "inactive", "every controller is up");

    // `monitoring status` reads the same: exit 1 while an alert fires, the slowest objects listed.
    let status = Run::of(
        Command::new(binaries::path("kubectl-gitops-monitoring"))
            .args(["status", "--prometheus-url", &prometheus.url, "-o", "json"])
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(status.code, Some(1), "{}\n{}", status.stdout, status.stderr);
    let report: Value = serde_json::from_str(&status.stdout).unwrap();
    let slow =
        report["alerts"].as_array().unwrap().iter().find(|alert| alert["name"] == "FluxReconciliationSlow").unwrap();
    assert_eq!(slow["state"], "firing", "{report:#}");
    assert!(slow["active"][0].as_str().unwrap().starts_with("firing: "), "{report:#}");
    assert!(report["slowest"].as_array().unwrap().iter().any(|row| row["namespace"] == "monitoring-e2e"), "{report:#}");
    let table = Run::of(
        Command::new(binaries::path("kubectl-gitops-monitoring"))
            .args(["status", "--prometheus-url", &prometheus.url])
            .env("KUBECONFIG", &env.kubeconfig)
            .env("NO_COLOR", "1"),
    );
    assert!(table.stdout.starts_with("ALERT "), "{}", table.stdout);
    assert!(table.stdout.contains("Slowest reconciliations (mean over 5m):"), "{}", table.stdout);
    // A Prometheus that is not there: a clear error, exit code of an unreachable server.
    let down = Run::of(
        Command::new(binaries::path("kubectl-gitops-monitoring"))
            .args(["status", "--prometheus-url", "http://127.0.0.1:1"])
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert!(down.stderr.starts_with("error: ") && down.stderr.contains("hint:"), "{}", down.stderr);
    assert_eq!(down.code, Some(4), "Prometheus is a server that failed us: {}", down.stderr);
    assert!(down.stderr.contains("cannot reach Prometheus at http://127.0.0.1:1"), "{}", down.stderr);
    env.kubectl_ok(&["delete", "namespace", "monitoring-e2e", "--wait=false"]).unwrap();
}
