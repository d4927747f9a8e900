//! `kubectl gitops monitoring` against a real Prometheus and promtool, built from the Prometheus
//! Go module (tests/testenv/build-tools.sh): the generated rules and every dashboard expression
//! pass promtool; a Prometheus scrapes the local Flux controllers, with targets taken from the
//! generated PodMonitor's selector; an alert goes pending, then firing; `monitoring status` reads
//! them back.
//!
//! The way through the API server's service proxy (the default without `--prometheus-url`): the
//! API server proxies only to an address of a Service's Endpoints whose target Pod reports that
//! address, and never to loopback. kwok's pods have no address this machine serves, so the test
//! stands a Pod in for Prometheus the way the controllers' processes stand in for theirs: left
//! unscheduled, its status given this machine's address as a kubelet would report it, named by
//! the stack's Service's Endpoints. The API server, its proxy and Prometheus are the real ones.
//!
//! kube-state-metrics (built from `k8s.io/kube-state-metrics/v2` like Prometheus) runs with the
//! custom-resource-state config `monitoring install` writes, so `gotk_resource_info` has a series
//! per Flux object, and the alerts on it (not Ready, suspended) go firing too.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use gitops_e2e::prometheus::{Prometheus, rules_file, wait_for};
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::testenv::process::free_ports;
use gitops_e2e::{binaries, tools};
use gitops_shared::monitoring::{Thresholds, manifests, rules};
use serde_json::{Value, json};

/// This machine's first IPv4 address that is not loopback (the API server's proxy refuses
/// loopback endpoints).
fn host_address() -> String {
    let out = Command::new("hostname").arg("-I").output().unwrap();
    let addresses = String::from_utf8_lossy(&out.stdout).to_string();
    let usable = addresses
        .split_whitespace()
        .find(|address| address.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| !ip.is_loopback() && !ip.is_link_local()));
    usable
        .unwrap_or_else(|| panic!("no IPv4 address but loopback here ({addresses:?}): the service proxy needs one"))
        .to_string()
}

/// `monitoring status` without `--prometheus-url`: through the API server's service proxy to the
/// stack's Service, whose one endpoint is the Prometheus on `port`. Without the Service: a clear
/// error saying monitoring is not there.
fn through_the_service_proxy(env: &TestEnv, port: u16) {
    let status = |format: &[&str]| {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-monitoring"))
                .arg("status")
                .args(format)
                .env("KUBECONFIG", &env.kubeconfig)
                .env("NO_COLOR", "1"),
        )
    };
    let absent = status(&[]);
    assert_eq!(absent.code, Some(4), "{}\n{}", absent.stdout, absent.stderr);
    assert!(
        absent
            .stderr
            .starts_with("error: no Prometheus answers at service monitoring/kube-prometheus-stack-prometheus"),
        "{}",
        absent.stderr
    );
    assert!(absent.stderr.contains("hint: run `kubectl gitops monitoring install`"), "{}", absent.stderr);

    let (namespace, service) = (gitops_shared::monitoring::NAMESPACE, format!("{}-prometheus", manifests::RELEASE));
    let address = host_address();
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata:\n  name: {service}\n  namespace: {namespace}\n\
         spec:\n  ports:\n  - name: http-web\n    port: 9090\n    targetPort: {port}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata:\n  name: prometheus-stand-in\n  namespace: {namespace}\n\
         spec:\n  schedulerName: no-scheduler\n  containers:\n  - name: prometheus\n    image: prometheus\n"
    ))
    .unwrap();
    let reported = format!(r#"{{"status":{{"podIP":"{address}","podIPs":[{{"ip":"{address}"}}]}}}}"#);
    env.kubectl_ok(&[
        "-n",
        namespace,
        "patch",
        "pod",
        "prometheus-stand-in",
        "--subresource=status",
        "--type=merge",
        "-p",
        &reported,
    ])
    .unwrap();
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: {service}\n  namespace: {namespace}\n\
         subsets:\n- addresses:\n  - ip: {address}\n    targetRef:\n      kind: Pod\n      name: prometheus-stand-in\n      namespace: {namespace}\n\
         \x20 ports:\n  - name: http-web\n    port: {port}\n"
    ))
    .unwrap();
    let proxied = status(&["-o", "json"]);
    assert_eq!(proxied.code, Some(1), "an alert fires: {}\n{}", proxied.stdout, proxied.stderr);
    let report = gitops_e2e::schema::document("MonitoringStatus", &proxied.stdout);
    let slow =
        report["alerts"].as_array().unwrap().iter().find(|alert| alert["name"] == "FluxReconciliationSlow").unwrap();
    assert_eq!(slow["state"], "firing", "{report:#}");
    assert!(!report["slowest"].as_array().unwrap().is_empty(), "{report:#}");
    let audit = env.our_requests().unwrap();
    let path = format!("/api/v1/namespaces/{namespace}/services/{service}:9090/proxy/api/v1/rules");
    assert!(audit.iter().any(|request| request.uri.starts_with(&path)), "the rules were read through the proxy");
    env.kubectl_ok(&[
        "-n",
        namespace,
        "delete",
        "endpoints,service,pod",
        &service,
        "prometheus-stand-in",
        "--ignore-not-found",
        "--wait=false",
    ])
    .unwrap();
}

/// kube-state-metrics with only the custom resource state `monitoring install` configures (the
/// chart's `customResourceState.config`, as the chart writes it into its config file), reading the
/// test's API server; killed when dropped.
struct KubeStateMetrics {
    child: Child,
    /// `127.0.0.1:<port>` of its metrics.
    address: String,
}

impl KubeStateMetrics {
    fn start(env: &TestEnv, dir: &Path, port: u16, telemetry_port: u16) -> KubeStateMetrics {
        let values = manifests::kube_state_metrics();
        let mut config = values["customResourceState"]["config"].clone();
        config["kind"] = json!("CustomResourceStateMetrics");
        let config_path = dir.join("custom-resource-state.yaml");
        std::fs::write(&config_path, serde_json::to_string(&config).unwrap()).unwrap();
        let child = Command::new(tools::path("kube-state-metrics"))
            .arg(format!("--kubeconfig={}", env.kubeconfig.display()))
            .args(values["extraArgs"].as_array().unwrap().iter().map(|arg| arg.as_str().unwrap()))
            .arg(format!("--custom-resource-state-config-file={}", config_path.display()))
            .args(["--host=127.0.0.1", "--telemetry-host=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(format!("--telemetry-port={telemetry_port}"))
            .stdout(std::fs::File::create(dir.join("kube-state-metrics.log")).unwrap())
            .stderr(std::fs::File::create(dir.join("kube-state-metrics.err")).unwrap())
            .spawn()
            .unwrap();
        KubeStateMetrics { child, address: format!("127.0.0.1:{port}") }
    }
}

impl Drop for KubeStateMetrics {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `promtool check rules FILE`, which must pass.
fn check_rules(file: &Path) {
    let out = Command::new(tools::path("promtool")).args(["check", "rules"]).arg(file).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "promtool check rules {}:\n{text}", file.display());
    assert!(text.contains("SUCCESS"), "{text}");
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
        not_ready_for: Duration::from_secs(3),
        suspended_for: Duration::from_secs(3),
        ..Thresholds::default()
    };
    let rules = rules_file(dir.path(), &thresholds);
    check_rules(&rules);
    let targets = targets(env);
    assert_eq!(targets.len(), 4, "{targets:?}");
    let ports = free_ports(3).unwrap();
    let (port, state_metrics) = (ports[0], KubeStateMetrics::start(env, dir.path(), ports[1], ports[2]));
    let config = json!({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [rules],
        "scrape_configs": [
            {"job_name": rules::job(), "static_configs": targets},
            {"job_name": "kube-state-metrics", "static_configs": [{"targets": [state_metrics.address.clone()]}]},
        ],
    });
    let prometheus = Prometheus::start(dir.path(), &config, port);

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
         spec:\n  type: generic\n  secretRef:\n    name: token\n  resources:\n  - kind: GitRepository\n    name: nowhere\n---\n\
         apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: paused\n  namespace: monitoring-e2e\n\
         spec:\n  suspend: true\n  interval: 1m\n  url: https://127.0.0.1:1/paused.git\n  ref:\n    branch: main\n",
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

    // kube-state-metrics reports each Flux object's state from the config `monitoring install`
    // writes, and the alerts on it fire: the failing Kustomization is not Ready, and the paused
    // GitRepository is suspended.
    let failing = "gotk_resource_info{customresource_kind=\"Kustomization\", exported_namespace=\"monitoring-e2e\", name=\"failing\"}";
    wait_for("the failing Kustomization's gotk_resource_info", Duration::from_secs(60), || {
        prometheus.query(failing).iter().any(|series| series["metric"]["ready"] == "False")
    });
    let paused = prometheus.query("gotk_resource_info{customresource_kind=\"GitRepository\", name=\"paused\"}");
    assert_eq!(paused[0]["metric"]["suspended"], "true", "{paused:?}");
    assert_eq!(paused[0]["metric"]["url"], "https://127.0.0.1:1/paused.git", "{paused:?}");
    for alert in ["FluxObjectNotReady", "FluxObjectSuspended"] {
        wait_for(&format!("{alert} firing"), Duration::from_secs(60), || prometheus.alert_state(alert) == "firing");
        // Pending first: Prometheus keeps the ALERTS series of each state it went through.
        let pending = format!("max_over_time(ALERTS{{alertname=\"{alert}\", alertstate=\"pending\"}}[10m])");
        assert!(!prometheus.query(&pending).is_empty(), "{alert} was pending before it fired");
    }
    drop(state_metrics);

    // `monitoring status` reads the same: exit 1 while an alert fires, the slowest objects listed.
    let status = Run::of(
        Command::new(binaries::path("kubectl-gitops-monitoring"))
            .args(["status", "--prometheus-url", &prometheus.url, "-o", "json"])
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(status.code, Some(1), "{}\n{}", status.stdout, status.stderr);
    let report = gitops_e2e::schema::document("MonitoringStatus", &status.stdout);
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
    through_the_service_proxy(env, port);
    env.kubectl_ok(&["delete", "namespace", "monitoring-e2e", "--wait=false"]).unwrap();
}
