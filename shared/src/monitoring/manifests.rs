//! The files `monitoring install` commits (docs/monitoring.md), in the shape of
//! fluxcd/flux2-monitoring-example: a Kustomization that installs the stack and waits for it,
//! and one that depends on it and adds what needs the stack's CRDs.
//!
//! ```text
//! platform/monitoring/controllers/   Namespace, OCIRepository + HelmRelease kube-prometheus-stack
//!                                    (with kube-state-metrics' custom resource state for Flux)
//! platform/monitoring/configs/       PodMonitor, PrometheusRule, Grafana dashboards (ConfigMaps)
//! <cluster>/platform/monitoring/     Kustomizations monitoring-controllers and monitoring-configs
//!                                    (and monitoring-drift with --drift-exporter)
//! <cluster>/platform/monitoring/drift/  the ScrapeConfig of this cluster's drift exporter
//! ```

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::rules::{self, Thresholds};
use super::{NAMESPACE, POD_MONITOR};
use crate::change::layout::{ClusterDir, KUSTOMIZATION_FILE, kustomize_config};
use crate::error::{Error, Result};
use crate::flux::api::Versions;
use crate::flux::api::{self, FluxKind};
use crate::flux::bootstrap::SYNC_NAME;
use crate::flux::objects::{self, Chart, HelmReleaseSpec, KustomizationSpec, Meta, OciRef, SourceRef};
use crate::yaml;

/// The root of platform services in the config repo, and of each cluster's list of them.
pub const PLATFORM_DIR: &str = "platform";
/// The name of the monitoring stack: its directory, list entry and Flux objects' prefix.
pub const NAME: &str = "monitoring";
/// The chart, and the HelmRelease's name (the chart's resources are named after it).
pub const RELEASE: &str = "kube-prometheus-stack";
/// Where the chart is published.
pub const CHART_URL: &str = crate::dependencies::MONITORING_CHART_URL;
/// The chart version, pinned in dependencies.toml.
pub const CHART_VERSION: &str = crate::dependencies::MONITORING_CHART_VERSION;
/// The container port the Flux controllers serve metrics on.
pub const METRICS_PORT: &str = "http-prom";
/// The controllers the PodMonitor selects, by their pods' `app` label.
pub const CONTROLLERS: [&str; 6] = [
    "source-controller",
    "kustomize-controller",
    "helm-controller",
    "notification-controller",
    "image-reflector-controller",
    "image-automation-controller",
];
/// What selects our PodMonitor and PrometheusRule in the stack's Prometheus.
const SELECTED: (&str, &str) = ("app.kubernetes.io/component", "monitoring");
/// The label Grafana's sidecar loads dashboards from.
const DASHBOARD_LABEL: (&str, &str) = ("grafana_dashboard", "1");

/// `platform/monitoring/<part>`.
pub fn part_dir(part: &str) -> String {
    format!("{PLATFORM_DIR}/{NAME}/{part}")
}

/// Every file of `platform/monitoring/`, path → contents.
pub fn stack_files(versions: &Versions, thresholds: &Thresholds) -> Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    let controllers = part_dir("controllers");
    let labels = || {
        let mut labels = platform_labels();
        labels.insert(SELECTED.0.to_string(), SELECTED.1.to_string());
        labels
    };
    let namespace = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"labels": {SELECTED.0: SELECTED.1}, "name": NAMESPACE},
    });
    let meta = Meta { name: RELEASE.to_string(), namespace: NAMESPACE.to_string(), labels: labels() };
    let source_kind = &api::OCI_REPOSITORY;
    let mut source = objects::oci_repository(
        source_kind,
        versions.get(source_kind)?,
        &meta,
        CHART_URL,
        &OciRef::Tag(CHART_VERSION.to_string()),
        std::time::Duration::from_secs(3600),
        None,
    );
    // The chart's layer, as `flux create source oci --layer-selector` would select it.
    source["spec"]["layerSelector"] =
        json!({"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "operation": "copy"});
    let release_kind = &api::HELM_RELEASE;
    let spec = HelmReleaseSpec {
        chart: Chart::Reference(SourceRef { kind: source_kind.kind.to_string(), name: RELEASE.to_string() }),
        interval: std::time::Duration::from_secs(3600),
        target_namespace: None,
        create_namespace: false,
        depends_on: Vec::new(),
        values_from: Vec::new(),
        values: Some(stack_values()),
    };
    let mut release = objects::helm_release(release_kind, versions.get(release_kind)?, &meta, &spec);
    release["spec"]["install"] = json!({"crds": "Create"});
    release["spec"]["upgrade"] = json!({"crds": "CreateReplace"});
    files.insert(format!("{controllers}/namespace.yaml"), yaml::to_documents(&[namespace])?);
    files.insert(format!("{controllers}/source.yaml"), yaml::to_documents(&[source])?);
    files.insert(format!("{controllers}/release.yaml"), yaml::to_documents(&[release])?);
    let config = kustomize_config(vec!["namespace.yaml".into(), "source.yaml".into(), "release.yaml".into()]);
    files.insert(format!("{controllers}/{KUSTOMIZATION_FILE}"), yaml::to_string(&config)?);

    let configs = part_dir("configs");
    files.insert(format!("{configs}/podmonitor.yaml"), yaml::to_documents(&[pod_monitor()])?);
    files.insert(format!("{configs}/rules.yaml"), yaml::to_documents(&[rules::prometheus_rule(thresholds)])?);
    let mut dashboard_files = Vec::new();
    for (name, dashboard) in rules::dashboards() {
        let file = format!("dashboards/{name}.json");
        let text = serde_json::to_string_pretty(&dashboard)
            .map_err(|error| Error::Internal(format!("the {name} dashboard as JSON: {error}")))?;
        files.insert(format!("{configs}/{file}"), text + "\n");
        dashboard_files.push(file);
    }
    let mut config = kustomize_config(vec!["podmonitor.yaml".into(), "rules.yaml".into()]);
    config["namespace"] = json!(NAMESPACE);
    config["configMapGenerator"] = json!([{
        "name": "flux-dashboards",
        "files": dashboard_files,
        "options": {
            "labels": {DASHBOARD_LABEL.0: DASHBOARD_LABEL.1, SELECTED.0: SELECTED.1},
            // The dashboards' `${…}` are Grafana's variables, not Flux's post-build substitutions.
            "annotations": {"kustomize.toolkit.fluxcd.io/substitute": "disabled"},
        },
    }]);
    files.insert(format!("{configs}/{KUSTOMIZATION_FILE}"), yaml::to_string(&config)?);
    Ok(files)
}

/// The cluster's overlay `<cluster>/platform/monitoring/`: the two Kustomizations, the second
/// after the first is Ready (its PodMonitor and PrometheusRule need the chart's CRDs); with a
/// drift exporter, a third after the first, applying this cluster's own `drift/` directory (an
/// exporter follows one cluster, so its address is not the stack's, shared by every cluster).
pub fn cluster_files(
    cluster: &ClusterDir,
    flux_namespace: &str,
    versions: &Versions,
    drift_exporter: Option<&str>,
) -> Result<BTreeMap<String, String>> {
    let kind = &api::KUSTOMIZATION;
    let dir = cluster.entry_dir(PLATFORM_DIR, NAME);
    let sync = |part: &str, depends_on: Vec<String>| -> Result<Value> {
        let meta =
            Meta { name: format!("{NAME}-{part}"), namespace: flux_namespace.to_string(), labels: platform_labels() };
        let path = if part == DRIFT_PART { format!("{dir}/{DRIFT_PART}") } else { part_dir(part) };
        let spec = KustomizationSpec {
            source: SourceRef { kind: api::GIT_REPOSITORY.kind.to_string(), name: SYNC_NAME.to_string() },
            path: format!("./{path}"),
            prune: true,
            interval: std::time::Duration::from_secs(3600),
            target_namespace: None,
            depends_on,
        };
        let mut object = objects::kustomization(kind, versions.get(kind)?, &meta, &spec);
        object["spec"]["wait"] = json!(true);
        object["spec"]["retryInterval"] = json!("2m0s");
        object["spec"]["timeout"] = json!("10m0s");
        Ok(object)
    };
    let after_controllers = || vec![format!("{NAME}-controllers")];
    let mut objects = vec![sync("controllers", Vec::new())?, sync("configs", after_controllers())?];
    let mut files = BTreeMap::new();
    if let Some(address) = drift_exporter {
        objects.push(sync(DRIFT_PART, after_controllers())?);
        let mut config = kustomize_config(vec!["scrape.yaml".into()]);
        config["namespace"] = json!(NAMESPACE);
        files.insert(format!("{dir}/{DRIFT_PART}/scrape.yaml"), yaml::to_documents(&[drift_scrape_config(address)])?);
        files.insert(format!("{dir}/{DRIFT_PART}/{KUSTOMIZATION_FILE}"), yaml::to_string(&config)?);
    }
    files.insert(format!("{dir}/sync.yaml"), yaml::to_documents(&objects)?);
    files.insert(format!("{dir}/{KUSTOMIZATION_FILE}"), yaml::to_string(&kustomize_config(vec!["sync.yaml".into()]))?);
    Ok(files)
}

/// The part of a cluster's overlay that holds its drift exporter's ScrapeConfig.
pub const DRIFT_PART: &str = "drift";
/// The ScrapeConfig's name; prometheus-operator names its job `scrapeConfig/<namespace>/<name>`.
pub const DRIFT_SCRAPE_CONFIG: &str = "gitops-drift";

/// The ScrapeConfig that has the stack's Prometheus scrape `kubectl gitops metrics drift --listen`
/// at `address` (HOST:PORT, checked by the flag), for the `GitOpsDriftDetected` alert's series.
pub fn drift_scrape_config(address: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1alpha1",
        "kind": "ScrapeConfig",
        "metadata": {"labels": {SELECTED.0: SELECTED.1}, "name": DRIFT_SCRAPE_CONFIG},
        "spec": {
            "staticConfigs": [{"targets": [address]}],
            "metricsPath": "/metrics",
        },
    })
}

/// Ours, and a platform service's: `status` shows them in its Platform section.
fn platform_labels() -> BTreeMap<String, String> {
    use crate::record::{MANAGED_BY_LABEL, MANAGED_BY_VALUE, PLATFORM_TIER, TIER_LABEL};
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY_VALUE.to_string()),
        (TIER_LABEL.to_string(), PLATFORM_TIER.to_string()),
    ])
}

/// The Flux kinds the stack needs the cluster's Flux to serve.
pub const NEEDED_KINDS: [&FluxKind; 3] = [&api::OCI_REPOSITORY, &api::HELM_RELEASE, &api::KUSTOMIZATION];

/// The chart's values: Prometheus picks our PodMonitor and rules, kube-state-metrics exports the
/// Flux objects' state, Grafana loads our dashboards, Alertmanager keeps the chart's defaults.
fn stack_values() -> Value {
    let selected = json!({"matchLabels": {SELECTED.0: SELECTED.1}});
    json!({
        "prometheus": {"prometheusSpec": {
            "podMonitorSelector": selected,
            "podMonitorNamespaceSelector": {},
            "scrapeConfigSelector": selected,
            "scrapeConfigNamespaceSelector": {},
            "ruleSelector": selected,
            "ruleNamespaceSelector": {},
            "retention": "24h",
        }},
        "grafana": {
            "defaultDashboardsEnabled": false,
            "sidecar": {"dashboards": {"enabled": true, "label": DASHBOARD_LABEL.0, "labelValue": DASHBOARD_LABEL.1}},
        },
        "kube-state-metrics": kube_state_metrics(),
    })
}

/// kube-state-metrics with only the custom resource state of Flux's kinds:
/// `gotk_resource_info{customresource_kind, exported_namespace, name, ready, suspended, revision, …}`,
/// what the alerts and the cluster dashboard read (the controllers stopped exporting conditions).
pub fn kube_state_metrics() -> Value {
    let resources: Vec<Value> = RESOURCE_INFO.iter().map(|kind| kind.config()).collect();
    let groups: Vec<&str> = {
        let mut groups: Vec<&str> = RESOURCE_INFO.iter().map(|kind| kind.kind.group).collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    };
    let plurals: Vec<&str> = RESOURCE_INFO.iter().map(|kind| kind.kind.plural).collect();
    json!({
        "collectors": [],
        "extraArgs": ["--custom-resource-state-only=true"],
        "rbac": {"extraRules": [{"apiGroups": groups, "resources": plurals, "verbs": ["list", "watch"]}]},
        "customResourceState": {"enabled": true, "config": {"spec": {"resources": resources}}},
    })
}

/// One Flux kind's `gotk_resource_info`: the labels every kind has, and its own.
struct ResourceInfo {
    kind: &'static FluxKind,
    /// Label → path in the object, beyond name, namespace, ready and suspended.
    extra: &'static [(&'static str, &'static [&'static str])],
}

impl ResourceInfo {
    fn config(&self) -> Value {
        let mut labels = serde_json::Map::new();
        labels.insert("exported_namespace".into(), json!(["metadata", "namespace"]));
        labels.insert("ready".into(), json!(["status", "conditions", "[type=Ready]", "status"]));
        labels.insert("suspended".into(), json!(["spec", "suspend"]));
        for (label, path) in self.extra {
            labels.insert((*label).into(), json!(path));
        }
        json!({
            "groupVersionKind": {"group": self.kind.group, "version": self.kind.version, "kind": self.kind.kind},
            "metricNamePrefix": "gotk",
            "metrics": [{
                "name": "resource_info",
                "help": format!("The state of a Flux {}.", self.kind.kind),
                "each": {"type": "Info", "info": {"labelsFromPath": {"name": ["metadata", "name"]}}},
                "labelsFromPath": labels,
            }],
        })
    }
}

const RESOURCE_INFO: [ResourceInfo; 6] = [
    ResourceInfo {
        kind: &api::KUSTOMIZATION,
        extra: &[("revision", &["status", "lastAppliedRevision"]), ("source_name", &["spec", "sourceRef", "name"])],
    },
    ResourceInfo {
        kind: &api::HELM_RELEASE,
        extra: &[
            ("revision", &["status", "history", "0", "chartVersion"]),
            ("chart_name", &["status", "history", "0", "chartName"]),
            ("source_name", &["spec", "chartRef", "name"]),
        ],
    },
    ResourceInfo {
        kind: &api::GIT_REPOSITORY,
        extra: &[("revision", &["status", "artifact", "revision"]), ("url", &["spec", "url"])],
    },
    ResourceInfo {
        kind: &api::OCI_REPOSITORY,
        extra: &[("revision", &["status", "artifact", "revision"]), ("url", &["spec", "url"])],
    },
    ResourceInfo {
        kind: &api::HELM_REPOSITORY,
        extra: &[("revision", &["status", "artifact", "revision"]), ("url", &["spec", "url"])],
    },
    ResourceInfo {
        kind: &api::HELM_CHART,
        extra: &[("revision", &["status", "artifact", "revision"]), ("source_name", &["spec", "sourceRef", "name"])],
    },
];

/// The PodMonitor for the Flux controllers: every pod of the Flux namespace whose `app` is one
/// of [`CONTROLLERS`], on port [`METRICS_PORT`].
pub fn pod_monitor() -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"labels": {SELECTED.0: SELECTED.1}, "name": POD_MONITOR},
        "spec": {
            "namespaceSelector": {"matchNames": [crate::cluster::DEFAULT_FLUX_NAMESPACE]},
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": CONTROLLERS}]},
            "podMetricsEndpoints": [{"port": METRICS_PORT}],
        },
    })
}
