//! The monitoring stack's files without a cluster: what each holds, and that the alerts and the
//! dashboards query what the PodMonitor and kube-state-metrics produce. The expressions are
//! parsed by the real promtool and evaluated by a real Prometheus in tests/tests/it/monitoring.rs.

use super::manifests::{self, CONTROLLERS, METRICS_PORT};
use super::rules::{self, Thresholds};
use crate::flux::api::Versions;
use crate::yaml;

#[test]
fn the_stack_is_two_kustomizations_of_files_in_platform() {
    let files = manifests::stack_files(&Versions::pinned(), &Thresholds::default()).unwrap();
    let paths: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        [
            "platform/monitoring/configs/dashboards/flux-cluster.json",
            "platform/monitoring/configs/dashboards/flux-control-plane.json",
            "platform/monitoring/configs/kustomization.yaml",
            "platform/monitoring/configs/podmonitor.yaml",
            "platform/monitoring/configs/rules.yaml",
            "platform/monitoring/controllers/kustomization.yaml",
            "platform/monitoring/controllers/namespace.yaml",
            "platform/monitoring/controllers/release.yaml",
            "platform/monitoring/controllers/source.yaml",
        ]
    );
    let release = &yaml::documents_from_str(&files["platform/monitoring/controllers/release.yaml"]).unwrap()[0];
    assert_eq!(release["spec"]["chartRef"]["kind"], "OCIRepository");
    assert_eq!(release["spec"]["install"]["crds"], "Create");
    let ksm = &release["spec"]["values"]["kube-state-metrics"];
    assert_eq!(ksm["extraArgs"][0], "--custom-resource-state-only=true");
    let kinds: Vec<&str> = ksm["customResourceState"]["config"]["spec"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|resource| resource["groupVersionKind"]["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"Kustomization") && kinds.contains(&"HelmRelease") && kinds.contains(&"GitRepository"));
    let source = &yaml::documents_from_str(&files["platform/monitoring/controllers/source.yaml"]).unwrap()[0];
    assert_eq!(source["spec"]["ref"]["tag"], manifests::CHART_VERSION, "pinned in dependencies.toml");
    let configs: serde_json::Value = yaml::from_str(&files["platform/monitoring/configs/kustomization.yaml"]).unwrap();
    assert_eq!(configs["configMapGenerator"][0]["options"]["labels"]["grafana_dashboard"], "1");
}

#[test]
fn the_pod_monitor_selects_the_flux_controllers_on_their_metrics_port() {
    let monitor = manifests::pod_monitor();
    assert_eq!(monitor["spec"]["podMetricsEndpoints"][0]["port"], METRICS_PORT);
    let selected = &monitor["spec"]["selector"]["matchExpressions"][0];
    assert_eq!((selected["key"].as_str(), selected["operator"].as_str()), (Some("app"), Some("In")));
    assert_eq!(selected["values"].as_array().unwrap().len(), CONTROLLERS.len());
}

#[test]
fn the_five_alerts_use_the_thresholds() {
    let thresholds = Thresholds {
        slow_reconcile: std::time::Duration::from_millis(500),
        drifted_for: std::time::Duration::from_secs(3600),
        ..Thresholds::default()
    };
    let rule = rules::prometheus_rule(&thresholds);
    let alerts = rule["spec"]["groups"][0]["rules"].as_array().unwrap();
    let named = |name: &str| alerts.iter().find(|alert| alert["alert"] == name).unwrap().clone();
    assert_eq!(named("FluxObjectNotReady")["for"], "10m");
    assert!(named("FluxObjectNotReady")["expr"].as_str().unwrap().contains("gotk_resource_info{ready=\"False\""));
    assert_eq!(named("FluxObjectSuspended")["for"], "1d");
    assert_eq!(named("FluxControllerDown")["expr"], "up{job=\"monitoring/flux-system\"} == 0");
    assert!(named("FluxReconciliationSlow")["expr"].as_str().unwrap().ends_with("> 0.5"));
    assert_eq!(named("FluxReconciliationSlow")["for"], "15m");
    assert_eq!(named("GitOpsDriftDetected")["expr"], "sum by (namespace, name) (gitops_drifted_objects) > 0");
    assert_eq!(named("GitOpsDriftDetected")["for"], "1h");
    assert_eq!(alerts.len(), 5);
}

#[test]
fn every_expression_is_plain_promql() {
    let expressions = rules::expressions(&Thresholds::default());
    assert_eq!(expressions.len(), 5 + 7 + 7);
    for expr in expressions {
        assert!(!expr.contains('$'), "no Grafana variables: {expr}");
    }
}

#[test]
fn a_flux_without_helm_controller_cannot_run_the_stack() {
    use crate::flux::api::ServedApis;
    let served = ServedApis::from_pairs([("GitRepository", "v1"), ("OCIRepository", "v1"), ("Kustomization", "v1")]);
    let error = super::require_kinds(&Versions::served(served)).unwrap_err();
    assert!(error.to_string().contains("does not serve HelmRelease (helm.toolkit.fluxcd.io)"), "{error}");
    super::require_kinds(&Versions::pinned()).unwrap();
}

#[test]
fn the_flags_default_to_the_default_thresholds() {
    use clap::Parser;
    #[derive(Parser)]
    struct Install {
        #[command(flatten)]
        install: super::InstallArgs,
    }
    let parsed = Install::try_parse_from(["install"]).unwrap();
    assert_eq!(parsed.install.request().unwrap().thresholds, Thresholds::default());
}

#[test]
fn a_recorded_install_parses_back_to_the_same_thresholds() {
    use clap::Parser;
    #[derive(Parser)]
    struct Install {
        #[command(flatten)]
        install: super::InstallArgs,
    }
    let args = ["install", "--cluster-name", "dev", "--not-ready-for", "90s", "--slow-for", "1h"];
    let request = Install::try_parse_from(
        [&args[..], &["--drifted-for", "2h", "--drift-exporter", "drift.example:9464"]].concat(),
    )
    .unwrap()
    .install
    .request()
    .unwrap();
    let words = super::install_words(&request);
    assert_eq!(
        words.join(" "),
        "monitoring install --cluster-name dev --not-ready-for 1m30s --suspended-for 24h0m0s --controller-down-for 5m0s \
         --slow-reconcile 1m0s --slow-for 1h0m0s --drifted-for 2h0m0s --drift-exporter drift.example:9464"
    );
    let parsed: super::InstallArgs = crate::change::recorded::parse_args(&words[2..], &words).unwrap();
    assert_eq!(super::install_words(&parsed.request().unwrap()), words);
}

#[test]
fn export_prints_the_stacks_flux_objects_without_a_cluster() {
    use clap::Parser;
    #[derive(Parser)]
    struct Install {
        #[command(flatten)]
        install: super::InstallArgs,
    }
    let request = Install::try_parse_from(["install", "--export"]).unwrap().install.request().unwrap();
    let exported = super::export(&request).unwrap();
    let documents = crate::yaml::documents_from_str(&exported).unwrap();
    let kinds: Vec<&str> = documents.iter().filter_map(|document| document["kind"].as_str()).collect();
    for kind in ["Namespace", "OCIRepository", "HelmRelease", "PodMonitor", "PrometheusRule"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    assert!(
        !kinds.contains(&"Kustomization")
            || documents.iter().all(|d| d["apiVersion"] != "kustomize.config.k8s.io/v1beta1")
    );
    assert!(exported.starts_with("---\n"), "{}", &exported[..80]);
}

#[test]
fn a_drift_exporter_is_host_and_port_and_one_clusters() {
    use clap::Parser;
    #[derive(Parser)]
    struct Install {
        #[command(flatten)]
        install: super::InstallArgs,
    }
    let request =
        |extra: &[&str]| Install::try_parse_from([&["install"][..], extra].concat()).unwrap().install.request();
    for (given, taken) in [
        ("drift.monitoring.svc:9464", "drift.monitoring.svc:9464"),
        ("10.0.0.5:80", "10.0.0.5:80"),
        ("[::1]:9464", "[::1]:9464"),
    ] {
        assert_eq!(request(&["--drift-exporter", given]).unwrap().drift_exporter.as_deref(), Some(taken));
    }
    for refused in
        ["drift:9464/metrics", "http://drift:9464", "user:pw@drift:9464", "drift", "drift:0", ":9464", "drift :9464"]
    {
        let error = request(&["--drift-exporter", refused]).unwrap_err();
        assert!(error.to_string().contains("is not HOST:PORT"), "{refused}: {error}");
    }
    let error =
        request(&["--cluster-name", "dev", "--cluster-name", "uat", "--drift-exporter", "drift:9464"]).unwrap_err();
    assert!(error.to_string().contains("more than one --cluster-name"), "{error}");
}

#[test]
fn a_drift_exporter_is_scraped_by_a_third_kustomization_of_the_clusters_own() {
    let dev = crate::change::layout::ClusterDir { name: "dev".into(), path: "clusters/dev".into() };
    let plain = manifests::cluster_files(&dev, "flux-system", &Versions::pinned(), None).unwrap();
    assert_eq!(
        plain.keys().map(String::as_str).collect::<Vec<_>>(),
        ["clusters/dev/platform/monitoring/kustomization.yaml", "clusters/dev/platform/monitoring/sync.yaml"]
    );
    let files = manifests::cluster_files(&dev, "flux-system", &Versions::pinned(), Some("drift.example:9464")).unwrap();
    let syncs = yaml::documents_from_str(&files["clusters/dev/platform/monitoring/sync.yaml"]).unwrap();
    let drift = syncs.iter().find(|sync| sync["metadata"]["name"] == "monitoring-drift").unwrap();
    assert_eq!(drift["spec"]["path"], "./clusters/dev/platform/monitoring/drift");
    assert_eq!(
        drift["spec"]["dependsOn"][0]["name"], "monitoring-controllers",
        "the ScrapeConfig needs the chart's CRDs"
    );
    let scrape = &yaml::documents_from_str(&files["clusters/dev/platform/monitoring/drift/scrape.yaml"]).unwrap()[0];
    assert_eq!(scrape["kind"], "ScrapeConfig");
    assert_eq!(scrape["spec"]["staticConfigs"][0]["targets"][0], "drift.example:9464");
    let config: serde_json::Value =
        yaml::from_str(&files["clusters/dev/platform/monitoring/drift/kustomization.yaml"]).unwrap();
    assert_eq!(config["namespace"], super::NAMESPACE);
    // The overlay lists its sync only: the drift directory is the third Kustomization's alone.
    let overlay: serde_json::Value =
        yaml::from_str(&files["clusters/dev/platform/monitoring/kustomization.yaml"]).unwrap();
    assert_eq!(overlay["resources"], serde_json::json!(["sync.yaml"]));
    // And the stack's Prometheus selects it.
    let stack = manifests::stack_files(&Versions::pinned(), &Thresholds::default()).unwrap();
    let release = &yaml::documents_from_str(&stack["platform/monitoring/controllers/release.yaml"]).unwrap()[0];
    let spec = &release["spec"]["values"]["prometheus"]["prometheusSpec"];
    assert_eq!(spec["scrapeConfigSelector"]["matchLabels"], scrape["metadata"]["labels"]);
}
