//! app status against canned API responses: objects recorded from the real Flux v2.9.3 of the
//! test environment, and hand-written variants of them (testdata/api/app-status/).

use super::super::app_reads::{gather, served_apis};
use super::super::app_report::*;
use super::super::watch::judge;
use super::*;
use crate::error::ExitCode;
use crate::git::log::CommitInfo;
use crate::testing::FakeApi;
use crate::wait::{Verdict, revision_matches};

const KUSTOMIZE: &str = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations";
const HELM: &str = "/apis/helm.toolkit.fluxcd.io/v2/namespaces/flux-system/helmreleases";
const SOURCE: &str = "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system";

const WEB: &str = "/apis/apps/v1/namespaces/default/deployments/web";

fn fake() -> FakeApi {
    without_web().recorded(WEB, "app-status/deployment-web.json")
}

/// Everything `fake` answers but Deployment `web`.
fn without_web() -> FakeApi {
    FakeApi::new()
        .recorded("/apis", "discovery-flux.json")
        .recorded(&format!("{SOURCE}/gitrepositories/apps"), "app-status/gitrepository-apps.json")
        .recorded(&format!("{SOURCE}/helmrepositories/local"), "app-status/helmrepository-local.json")
        .recorded(&format!("{SOURCE}/helmcharts/flux-system-hello"), "app-status/helmchart-hello.json")
        .recorded(
            "/apis/apps/v1/namespaces/default/deployments/default-hello",
            "app-status/deployment-default-hello.json",
        )
}

fn with_kustomization(name: &str) -> FakeApi {
    fake().recorded(&format!("{KUSTOMIZE}/{name}"), &format!("app-status/kustomization-{name}.json"))
}

/// Reads one app the way `app status` does, without git.
async fn look(fake: &FakeApi, name: &str) -> (Gathered, AppReport) {
    let cluster = fake.cluster();
    let served = served_apis(&cluster).await.unwrap();
    let app = AppRef { namespace: "flux-system".into(), name: name.into() };
    let gathered = gather(&cluster, &served, &app, true).await.unwrap().unwrap();
    let report = build_report(&gathered);
    (gathered, report)
}

/// Half an hour after the recorded apply.
fn now() -> u64 {
    crate::duration::parse_timestamp("2026-12-02T14:22:44Z").unwrap()
}

fn tree(report: &AppReport) -> String {
    render_tree(report, Style::plain(), now())
}

#[tokio::test]
async fn a_ready_kustomization_shows_source_app_inventory_and_replicas() {
    let (_, report) = look(&with_kustomization("web"), "web").await;
    assert_eq!(exit_code(&report), ExitCode::Ok);
    insta::assert_snapshot!(tree(&report), @r"
    App flux-system/web (kustomize): ready
    GitRepository/flux-system/apps  Ready  main@sha1:7064a335  stored artifact for revision 'main@sha1:7064a335'
    └── Kustomization/flux-system/web  Ready  main@sha1:7064a335  Applied revision: main@sha1:7064a335
        ├── ConfigMap/default/status-app
        └── Deployment/default/web  2/2 ready

    Last deployed: main@sha1:7064a335 at 2026-12-02T13:52:44Z, 30m ago
    Last error:    none
    Waiting on:    none
    ");
}

/// A pod as the API server reports it: `waiting` and `scheduled` say how it is stuck.
fn pod(name: &str, ready: bool, waiting: Option<(&str, &str)>, unscheduled: Option<&str>) -> serde_json::Value {
    let mut pod = serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "status": {"phase": if unscheduled.is_some() { "Pending" } else { "Running" }, "conditions": [
            {"type": "Ready", "status": if ready { "True" } else { "False" }, "reason": if ready { None } else { Some("ContainersNotReady") }},
        ]},
    });
    if let Some((reason, message)) = waiting {
        pod["status"]["containerStatuses"] = serde_json::json!([{"name": "web", "image": "ghcr.io/example/web:v9",
            "imageID": "", "ready": false, "restartCount": 3, "state": {"waiting": {"reason": reason, "message": message}}}]);
    }
    if let Some(message) = unscheduled {
        pod["status"]["conditions"] = serde_json::json!([{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": message}]);
    }
    pod
}

#[test]
fn a_pod_says_why_it_is_not_ready() {
    let state = |value: serde_json::Value| {
        let state = pod_state(&serde_json::from_value(value).unwrap());
        (state.ready, state.reason, state.message, state.restarts)
    };
    assert_eq!(state(pod("a", true, None, None)), (true, None, None, 0));
    assert_eq!(
        state(pod("b", false, Some(("ImagePullBackOff", "Back-off pulling image \"ghcr.io/example/web:v9\"")), None)),
        (false, Some("ImagePullBackOff".into()), Some("Back-off pulling image \"ghcr.io/example/web:v9\"".into()), 3)
    );
    assert_eq!(
        state(pod("c", false, None, Some("0/3 nodes are available: 3 Insufficient cpu."))),
        (false, Some("Unschedulable".into()), Some("0/3 nodes are available: 3 Insufficient cpu.".into()), 0)
    );
    assert_eq!(state(pod("d", false, None, None)), (false, Some("ContainersNotReady".into()), None, 0));
}

#[tokio::test]
async fn a_workload_that_is_not_ready_names_the_pod_that_is_stuck_and_why() {
    let mut deployment: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}/testdata/api/app-status/deployment-web.json", env!("CARGO_MANIFEST_DIR")))
            .unwrap(),
    )
    .unwrap();
    deployment["status"]["readyReplicas"] = 1.into();
    let pods = serde_json::json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [
        pod("web-ok", true, None, None),
        pod("web-bad", false, Some(("CrashLoopBackOff", "back-off 5m0s restarting failed container")), None),
        pod("web-worse", false, Some(("ImagePullBackOff", "Back-off pulling image")), None),
    ]});
    let fake = without_web()
        .route(WEB, 200, deployment.to_string())
        .route("/api/v1/namespaces/default/pods", 200, pods.to_string())
        .recorded(&format!("{KUSTOMIZE}/web"), "app-status/kustomization-web.json");
    let (_, report) = look(&fake, "web").await;
    assert_eq!(report.workloads[0].pods.len(), 3);
    let line = tree(&report).lines().find(|line| line.contains("Deployment/default/web")).unwrap().to_string();
    assert_eq!(
        line,
        "    └── Deployment/default/web  1/2 ready  pod web-bad CrashLoopBackOff: back-off 5m0s restarting failed container (and 1 more)"
    );
    assert!(
        fake.requests().contains(&"GET /api/v1/namespaces/default/pods?&labelSelector=app%3Dweb&limit=50".to_string()),
        "{:?}",
        fake.requests()
    );
}

#[tokio::test]
async fn the_json_is_the_documented_schema() {
    let (_, mut report) = look(&with_kustomization("web"), "web").await;
    report.commit = Some(CommitInfo {
        sha: "7064a3352de59e4342ab91ab628588422731ac29".into(),
        author: "Jane Doe".into(),
        email: "jane@example.invalid".into(),
        time: "2026-12-02T13:52:00Z".into(),
        subject: "Add the web app".into(),
        reverts: None,
    });
    let mut json = serde_json::to_value(&report).unwrap();
    // The row is the listing's, documented with `status`; the rest is app status's own.
    assert_eq!(json["app"]["state"], "ready");
    json["app"] = serde_json::json!("…");
    insta::assert_json_snapshot!(json);
}

#[tokio::test]
async fn a_helm_release_shows_its_chart_and_the_deployment_with_replicas() {
    let (_, report) =
        look(&fake().recorded(&format!("{HELM}/hello"), "app-status/helmrelease-hello.json"), "hello").await;
    insta::assert_snapshot!(tree(&report), @r"
    App flux-system/hello (helm): ready
    HelmRepository/flux-system/local  Ready  sha256:1c442260  stored artifact: revision 'sha256:1c442260'
    └── HelmChart/flux-system/flux-system-hello  Ready  0.1.0  pulled 'hello' chart with version '0.1.0'
        └── HelmRelease/flux-system/hello  Ready  0.1.0  Helm install succeeded for release default/default-hello.v1 with chart hello@0.1.0
            ├── ConfigMap/default/default-hello-greeting
            └── Deployment/default/default-hello  0/2 ready

    Last deployed: 0.1.0 (app 1.0.0) at 2026-12-02T13:52:39Z, 30m ago
    Last error:    none
    Waiting on:    none
    ");
}

#[tokio::test]
async fn a_failing_app_names_the_error_and_exits_1() {
    let (gathered, report) = look(&with_kustomization("missing-path"), "missing-path").await;
    assert_eq!(exit_code(&report), ExitCode::No);
    insta::assert_snapshot!(tree(&report), @r"
    App flux-system/missing-path (kustomize): failing
    GitRepository/flux-system/apps  Ready  main@sha1:7064a335  stored artifact for revision 'main@sha1:7064a335'
    └── Kustomization/flux-system/missing-path  Failed  kustomization path not found: stat /tmp/kustomization-3283649579/nope: no such file or directory

    Last deployed: none
    Last error:    Kustomization flux-system/missing-path: ArtifactFailed: kustomization path not found: stat /tmp/kustomization-3283649579/nope: no such file or directory
    Waiting on:    none
    ");
    let verdict = judge(&gathered, &report, None);
    assert!(matches!(&verdict, Verdict::Failing { why, .. } if why.contains("path not found")), "{verdict:?}");
    assert!(
        matches!(judge(&gathered, &report, Some("0123456789abcdef")), Verdict::Waiting { .. }),
        "a failure at another revision than the one waited for is not the answer"
    );
}

#[tokio::test]
async fn a_dependency_that_is_not_ready_is_waited_on_not_an_error() {
    let fake = with_kustomization("dependent")
        .recorded(&format!("{KUSTOMIZE}/missing-path"), "app-status/kustomization-missing-path.json");
    let (gathered, report) = look(&fake, "dependent").await;
    assert_eq!(report.last_error, None);
    let waiting: Vec<String> = report.waiting_on.iter().map(describe).collect();
    assert_eq!(
        waiting,
        [
            "Kustomization flux-system/missing-path: ArtifactFailed: kustomization path not found: stat /tmp/kustomization-3283649579/nope: no such file or directory"
        ]
    );
    assert!(matches!(judge(&gathered, &report, None), Verdict::Waiting { healthy: false, .. }));
}

#[tokio::test]
async fn suspended_progressing_and_never_reconciled_apps() {
    let (gathered, report) = look(&with_kustomization("paused"), "paused").await;
    assert_eq!(report.app.state, AppState::Suspended);
    assert_eq!(exit_code(&report), ExitCode::Ok, "suspended counts as status counts it");
    assert!(tree(&report).contains("Kustomization/flux-system/paused  Ready  suspended  main@sha1:7064a335"));
    assert!(
        matches!(judge(&gathered, &report, None), Verdict::Failing { .. }),
        "a suspended app that is behind will not move"
    );

    let (gathered, report) = look(&with_kustomization("progressing"), "progressing").await;
    assert_eq!(report.app.state, AppState::Progressing);
    assert_eq!(exit_code(&report), ExitCode::No);
    insta::assert_snapshot!(tree(&report).lines().nth(2).unwrap(), @"└── Kustomization/flux-system/progressing  Unknown  main@sha1:7064a335  Reconciliation in progress");
    assert!(matches!(judge(&gathered, &report, None), Verdict::Waiting { .. }));

    let (gathered, report) = look(&with_kustomization("fresh"), "fresh").await;
    insta::assert_json_snapshot!(
        "never_reconciled",
        serde_json::json!({"lastDeployed": report.last_deployed, "lastError": report.last_error, "objects": report.app.objects, "inventory": report.inventory})
    );
    assert!(matches!(judge(&gathered, &report, None), Verdict::Waiting { .. }));
}

#[tokio::test]
async fn wait_is_done_only_at_the_wanted_revision() {
    let (gathered, report) = look(&with_kustomization("web"), "web").await;
    assert_eq!(judge(&gathered, &report, None), Verdict::Ready);
    assert_eq!(judge(&gathered, &report, Some("7064a335")), Verdict::Ready);
    assert_eq!(judge(&gathered, &report, Some("main@sha1:7064a3352de59e4342ab91ab628588422731ac29")), Verdict::Ready);
    let Verdict::Waiting { why, healthy: true } = judge(&gathered, &report, Some("0123456789")) else { panic!() };
    assert_eq!(
        why,
        "Kustomization flux-system/web is at main@sha1:7064a3352de59e4342ab91ab628588422731ac29, waiting for 0123456789"
    );
}

#[tokio::test]
async fn an_app_that_does_not_exist_names_the_namespace_searched() {
    let cluster = fake().cluster();
    let served = served_apis(&cluster).await.unwrap();
    let app = AppRef { namespace: "flux-system".into(), name: "nope".into() };
    assert!(gather(&cluster, &served, &app, true).await.unwrap().is_none());
    let error = app.not_found();
    assert_eq!(
        error.to_string(),
        "app \"nope\" not found: no Kustomization or HelmRelease \"nope\" in namespace flux-system"
    );
    assert_eq!(error.exit_code(), ExitCode::Usage);
}

#[tokio::test]
async fn older_flux_versions_are_read_at_the_versions_discovery_offers() {
    // Flux v2.3 serves helm v2 and v2beta2, source v1 and v1beta2, and no OCIRepository v1: the
    // cluster here serves only the older versions, as a Flux v2.1 would.
    let group = |name: &str, version: &str, kinds: &[(&str, &str)]| {
        let resources: Vec<serde_json::Value> = kinds
            .iter()
            .map(|(kind, plural)| serde_json::json!({"resource": plural, "responseKind": {"group": name, "version": version, "kind": kind}, "scope": "Namespaced", "verbs": ["get", "list", "watch"]}))
            .collect();
        serde_json::json!({"metadata": {"name": name}, "versions": [{"version": version, "resources": resources}]})
    };
    let discovery = serde_json::json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
        group("source.toolkit.fluxcd.io", "v1beta2", &[("GitRepository", "gitrepositories"), ("HelmRepository", "helmrepositories"), ("HelmChart", "helmcharts")]),
        group("kustomize.toolkit.fluxcd.io", "v1", &[("Kustomization", "kustomizations")]),
        group("helm.toolkit.fluxcd.io", "v2beta1", &[("HelmRelease", "helmreleases")]),
    ]});
    let old = |file: &str, api_version: &str| {
        let full = format!("{}/testdata/api/app-status/{file}", env!("CARGO_MANIFEST_DIR"));
        let mut object: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(full).unwrap()).unwrap();
        object["apiVersion"] = api_version.into();
        object
    };
    // helm v2beta1 has no history: the chart version it runs is lastAppliedRevision.
    let mut release = old("helmrelease-hello.json", "helm.toolkit.fluxcd.io/v2beta1");
    release["status"].as_object_mut().unwrap().remove("history");
    release["status"].as_object_mut().unwrap().remove("inventory");
    release["status"]["lastAppliedRevision"] = "0.1.0".into();
    let beta = "/apis/source.toolkit.fluxcd.io/v1beta2/namespaces/flux-system";
    let fake = FakeApi::new()
        .route("/apis", 200, discovery.to_string())
        .route("/apis/helm.toolkit.fluxcd.io/v2beta1/namespaces/flux-system/helmreleases/hello", 200, release.to_string())
        .route(&format!("{beta}/helmrepositories/local"), 200, old("helmrepository-local.json", "source.toolkit.fluxcd.io/v1beta2").to_string())
        .route(&format!("{beta}/helmcharts/flux-system-hello"), 200, old("helmchart-hello.json", "source.toolkit.fluxcd.io/v1beta2").to_string())
        .route(
            "/apis/apps/v1/namespaces/default/deployments",
            200,
            serde_json::json!({"kind": "List", "apiVersion": "v1", "metadata": {}, "items": [
                serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(format!("{}/testdata/api/app-status/deployment-default-hello.json", env!("CARGO_MANIFEST_DIR"))).unwrap()).unwrap()
            ]})
            .to_string(),
        )
        .route("/apis/apps/v1/namespaces/default/statefulsets", 200, r#"{"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}"#)
        .route("/apis/apps/v1/namespaces/default/daemonsets", 200, r#"{"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}"#)
        .recorded("/apis/apps/v1/namespaces/default/deployments/default-hello", "app-status/deployment-default-hello.json");
    let (_, report) = look(&fake, "hello").await;
    let chain: Vec<(&str, &str)> = report.app.objects.iter().map(|o| (o.kind.as_str(), o.ready.as_str())).collect();
    assert_eq!(chain, [("HelmRepository", "True"), ("HelmChart", "True"), ("HelmRelease", "True")]);
    assert_eq!(report.app.applied_revision.as_deref(), Some("0.1.0"));
    let workloads: Vec<&str> = report.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(workloads, ["default-hello"], "found by helm-controller's labels without an inventory");
    let requests = fake.requests();
    assert!(
        requests.iter().any(|r| r.contains("/v1beta2/namespaces/flux-system/helmcharts/flux-system-hello")),
        "{requests:?}"
    );
    assert!(requests.iter().any(|r| r.contains("labelSelector=helm.toolkit.fluxcd.io")), "{requests:?}");
}

#[test]
fn inventory_ids_split_into_their_parts() {
    let item = parse_inventory_id("default_web_apps_Deployment").unwrap();
    assert_eq!(
        (item.namespace.as_deref(), item.name.as_str(), item.group.as_str(), item.kind.as_str()),
        (Some("default"), "web", "apps", "Deployment")
    );
    let core = parse_inventory_id("default_status-app__ConfigMap").unwrap();
    assert_eq!((core.name.as_str(), core.group.as_str()), ("status-app", ""));
    let cluster_scoped = parse_inventory_id("_system__controller_rbac.authorization.k8s.io_ClusterRole").unwrap();
    assert_eq!((cluster_scoped.namespace, cluster_scoped.name.as_str()), (None, "system:controller"));
    assert_eq!(parse_inventory_id("nonsense"), None);
}

#[test]
fn revisions_match_by_hash_start_full_revision_or_version() {
    let revision = "main@sha1:7064a3352de59e4342ab91ab628588422731ac29";
    assert!(revision_matches(revision, "7064a335"));
    assert!(revision_matches(revision, "7064a3352de59e4342ab91ab628588422731ac29"));
    assert!(revision_matches(revision, revision));
    assert!(!revision_matches(revision, "7064"), "too short to be a hash");
    assert!(revision_matches("latest@sha256:abcdef", "latest"), "an OCI tag");
    assert!(revision_matches("0.1.0@sha256:abcdef", "0.1.0"));
    assert!(revision_matches("0.1.0", "0.1.0"));
    assert!(!revision_matches("0.1.10", "0.1.1"));
}

#[tokio::test]
async fn the_report_carries_flux_history_and_the_apps_recent_events_newest_first() {
    let event = |reason: &str, time: &str, kind: &str| {
        serde_json::json!({
            "metadata": {"name": format!("web.{reason}"), "namespace": "flux-system"},
            "involvedObject": {"kind": "Kustomization", "name": "web", "namespace": "flux-system"},
            "reason": reason, "message": format!("{reason} happened"), "type": kind,
            "lastTimestamp": time, "count": 2,
        })
    };
    let events = serde_json::json!({"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": [
        event("ReconciliationSucceeded", "2026-12-02T13:52:44Z", "Normal"),
        event("HealthCheckFailed", "2026-12-02T13:58:48Z", "Warning"),
    ]});
    let with_events = with_kustomization("web").route("/api/v1/namespaces/flux-system/events", 200, events.to_string());
    let (_, report) = look(&with_events, "web").await;
    let statuses: Vec<_> = report.history.iter().map(|entry| entry.status.as_deref().unwrap()).collect();
    assert_eq!(statuses, ["HealthCheckFailed", "ReconciliationSucceeded"]);
    let newest = &report.history[0];
    assert_eq!(newest.revision.as_deref(), Some("main@sha1:7064a3352de59e4342ab91ab628588422731ac29"));
    assert_eq!((newest.reconciliations, newest.duration.as_deref()), (Some(4), Some("30.163840442s")));
    assert_eq!(newest.first.as_deref(), Some("2026-12-02T13:54:17Z"));
    let reasons: Vec<_> = report.events.iter().map(|event| (event.reason.as_str(), event.kind.as_str())).collect();
    assert_eq!(reasons, [("HealthCheckFailed", "Warning"), ("ReconciliationSucceeded", "Normal")]);
    assert_eq!(report.events[0].time.as_deref(), Some("2026-12-02T13:58:48Z"));

    // A HelmRelease's history is its Helm releases; events that cannot be read are none.
    let (_, helm) =
        look(&fake().recorded(&format!("{HELM}/hello"), "app-status/helmrelease-hello.json"), "hello").await;
    let entry = &helm.history[0];
    assert_eq!((entry.revision.as_deref(), entry.status.as_deref()), (Some("0.1.0"), Some("deployed")));
    assert_eq!(entry.first.as_deref(), Some("2026-12-02T13:52:39Z"));
    assert!(helm.events.is_empty());
}
