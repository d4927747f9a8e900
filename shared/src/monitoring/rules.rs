//! The alerts and the Grafana dashboards `monitoring install` writes. Every PromQL expression is
//! plain (no Grafana variables: ranges are written out), so each one can be parsed as it is
//! (`promtool`, in tests/tests/it/monitoring.rs) and `monitoring status` queries the same ones.

use std::time::Duration;

use serde_json::{Value, json};

use super::{NAMESPACE, POD_MONITOR};
use crate::duration;

/// How long before each alert fires, and what is slow.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// A Flux object not Ready for this long (default 10m).
    pub not_ready_for: Duration,
    /// An object suspended for this long (default 24h).
    pub suspended_for: Duration,
    /// A controller's metrics endpoint down for this long (default 5m).
    pub controller_down_for: Duration,
    /// Reconciliation p99 of a kind above this (default 60s) ...
    pub slow_reconcile: Duration,
    /// ... for this long (default 15m).
    pub slow_for: Duration,
    /// Objects of a Kustomization differing from what Flux applied for this long (default 15m).
    pub drifted_for: Duration,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            not_ready_for: Duration::from_secs(600),
            suspended_for: Duration::from_secs(24 * 3600),
            controller_down_for: Duration::from_secs(300),
            slow_reconcile: Duration::from_secs(60),
            slow_for: Duration::from_secs(900),
            drifted_for: Duration::from_secs(900),
        }
    }
}

/// The Prometheus job of the controllers: the PodMonitor's `<namespace>/<name>`.
pub fn job() -> String {
    format!("{NAMESPACE}/{POD_MONITOR}")
}

/// Each kind's reconciliation p99 over 5 minutes, in seconds.
pub fn p99_by_kind() -> String {
    "histogram_quantile(0.99, sum by (kind, le) (rate(gotk_reconcile_duration_seconds_bucket[5m])))".to_string()
}

/// The mean reconciliation time of each object over 5 minutes, the slowest first (`topk`). The
/// object's namespace is `exported_namespace`: the scrape's own `namespace` label (the
/// controller pod's) takes precedence over the metric's.
pub fn slowest(count: usize) -> String {
    format!(
        "topk({count}, sum by (kind, exported_namespace, name) (rate(gotk_reconcile_duration_seconds_sum[5m])) \
         / sum by (kind, exported_namespace, name) (rate(gotk_reconcile_duration_seconds_count[5m])))"
    )
}

/// The objects of each Kustomization that differ from what Flux last applied, from the series
/// `kubectl gitops metrics drift` prints or serves (docs/drift.md).
pub fn drifted_by_kustomization() -> String {
    "sum by (namespace, name) (gitops_drifted_objects)".to_string()
}

/// The alert rules, by name: (name, expression, for, severity, summary).
pub fn alerts(thresholds: &Thresholds) -> Vec<(&'static str, String, Duration, &'static str, String)> {
    let object = "{{ $labels.customresource_kind }} {{ $labels.exported_namespace }}/{{ $labels.name }}";
    let by_object = "max by (customresource_kind, exported_namespace, name)";
    vec![
        (
            "FluxObjectNotReady",
            format!("{by_object} (gotk_resource_info{{ready=\"False\", suspended!=\"true\"}}) == 1"),
            thresholds.not_ready_for,
            "warning",
            format!("{object} has not been Ready for {}", duration::format(thresholds.not_ready_for)),
        ),
        (
            "FluxObjectSuspended",
            format!("{by_object} (gotk_resource_info{{suspended=\"true\"}}) == 1"),
            thresholds.suspended_for,
            "info",
            format!("{object} has been suspended for {}", duration::format(thresholds.suspended_for)),
        ),
        (
            "FluxControllerDown",
            format!("up{{job=\"{}\"}} == 0", job()),
            thresholds.controller_down_for,
            "critical",
            "Flux controller {{ $labels.pod }} cannot be scraped".to_string(),
        ),
        (
            "FluxReconciliationSlow",
            format!("{} > {}", p99_by_kind(), thresholds.slow_reconcile.as_secs_f64()),
            thresholds.slow_for,
            "warning",
            format!(
                "{{{{ $labels.kind }}}} reconciliations take {{{{ $value | humanizeDuration }}}} at p99 (over {})",
                duration::format(thresholds.slow_reconcile)
            ),
        ),
        (
            "GitOpsDriftDetected",
            format!("{} > 0", drifted_by_kustomization()),
            thresholds.drifted_for,
            "warning",
            format!(
                "{{{{ $value }}}} objects of Kustomization {{{{ $labels.namespace }}}}/{{{{ $labels.name }}}} differ from what Flux applied (for {})",
                duration::format(thresholds.drifted_for)
            ),
        ),
    ]
}

/// The PrometheusRule `flux` with [`alerts`].
pub fn prometheus_rule(thresholds: &Thresholds) -> Value {
    let rules: Vec<Value> = alerts(thresholds)
        .into_iter()
        .map(|(name, expr, for_, severity, summary)| {
            json!({
                "alert": name,
                "expr": expr,
                "for": duration::format_prometheus(for_),
                "labels": {"severity": severity},
                "annotations": {"summary": summary},
            })
        })
        .collect();
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"labels": {"app.kubernetes.io/component": "monitoring"}, "name": "flux"},
        "spec": {"groups": [{"name": "flux", "rules": rules}]},
    })
}

/// One panel: title, expression, unit, legend.
type Panel = (&'static str, String, &'static str, &'static str);

/// The dashboards, by file name: the Flux objects of the cluster, and the controllers.
pub fn dashboards() -> Vec<(&'static str, Value)> {
    let job = job();
    let cluster: Vec<Panel> = vec![
        (
            "Ready",
            "count by (customresource_kind) (gotk_resource_info{ready=\"True\"})".into(),
            "none",
            "{{customresource_kind}}",
        ),
        (
            "Not ready",
            "count by (customresource_kind) (gotk_resource_info{ready=\"False\"})".into(),
            "none",
            "{{customresource_kind}}",
        ),
        (
            "Suspended",
            "count by (customresource_kind) (gotk_resource_info{suspended=\"true\"})".into(),
            "none",
            "{{customresource_kind}}",
        ),
        (
            "Objects not ready",
            "gotk_resource_info{ready!=\"True\"}".into(),
            "none",
            "{{customresource_kind}} {{exported_namespace}}/{{name}}",
        ),
        ("Reconciliation p99 by kind", p99_by_kind(), "s", "{{kind}}"),
        ("Slowest reconciliations (mean)", slowest(10), "s", "{{kind}} {{exported_namespace}}/{{name}}"),
        ("Drifted objects", drifted_by_kustomization(), "none", "{{namespace}}/{{name}}"),
    ];
    let control_plane: Vec<Panel> = vec![
        ("Controllers up", format!("up{{job=\"{job}\"}}"), "none", "{{pod}}"),
        (
            "Reconciles per second",
            format!("sum by (controller) (rate(controller_runtime_reconcile_total{{job=\"{job}\"}}[5m]))"),
            "ops",
            "{{controller}}",
        ),
        (
            "Reconcile errors per second",
            format!("sum by (controller) (rate(controller_runtime_reconcile_errors_total{{job=\"{job}\"}}[5m]))"),
            "ops",
            "{{controller}}",
        ),
        (
            "Reconcile time p99",
            format!(
                "histogram_quantile(0.99, sum by (controller, le) (rate(controller_runtime_reconcile_time_seconds_bucket{{job=\"{job}\"}}[5m])))"
            ),
            "s",
            "{{controller}}",
        ),
        ("Work queue depth", format!("sum by (name) (workqueue_depth{{job=\"{job}\"}})"), "none", "{{name}}"),
        ("Memory", format!("sum by (pod) (process_resident_memory_bytes{{job=\"{job}\"}})"), "bytes", "{{pod}}"),
        ("CPU", format!("sum by (pod) (rate(process_cpu_seconds_total{{job=\"{job}\"}}[5m]))"), "none", "{{pod}}"),
    ];
    vec![
        ("flux-cluster", dashboard("flux-cluster", "Flux cluster overview", &cluster)),
        ("flux-control-plane", dashboard("flux-control-plane", "Flux control plane", &control_plane)),
    ]
}

/// Every PromQL expression of the dashboards and the alerts.
pub fn expressions(thresholds: &Thresholds) -> Vec<String> {
    let mut found: Vec<String> = alerts(thresholds).into_iter().map(|(_, expr, ..)| expr).collect();
    for (_, dashboard) in dashboards() {
        for panel in dashboard["panels"].as_array().into_iter().flatten() {
            for target in panel["targets"].as_array().into_iter().flatten() {
                found.extend(target["expr"].as_str().map(String::from));
            }
        }
    }
    found
}

/// A Grafana dashboard of time series panels, two a row, on the stack's Prometheus data source.
fn dashboard(uid: &str, title: &str, panels: &[Panel]) -> Value {
    let panels: Vec<Value> = panels
        .iter()
        .enumerate()
        .map(|(index, (title, expr, unit, legend))| {
            json!({
                "id": index + 1,
                "type": "timeseries",
                "title": title,
                "datasource": {"type": "prometheus", "uid": "prometheus"},
                "gridPos": {"h": 8, "w": 12, "x": (index % 2) * 12, "y": (index / 2) * 8},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "targets": [{"refId": "A", "expr": expr, "legendFormat": legend}],
            })
        })
        .collect();
    json!({
        "uid": uid,
        "title": title,
        "tags": ["flux", "kubectl-gitops"],
        "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "panels": panels,
    })
}
