//! detect against canned API responses (shared/testdata/api).

use super::*;
use crate::testing::{FakeApi, forbidden};

const NAMESPACES: &str = "/api/v1/namespaces";
const FLUX_DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/flux-system/deployments";
const RECORD: &str = "/api/v1/namespaces/flux-system/configmaps/kubectl-gitops";

fn plain_cluster() -> FakeApi {
    FakeApi::new().recorded("/version", "version.json").recorded("/apis", "discovery-plain.json")
}

fn flux_cluster(namespaces: &str) -> FakeApi {
    FakeApi::new()
        .recorded("/version", "version.json")
        .recorded("/apis", "discovery-flux.json")
        .recorded(NAMESPACES, namespaces)
        .recorded(FLUX_DEPLOYMENTS, "deployments-flux.json")
}

#[tokio::test]
async fn a_cluster_without_flux_is_unmodified() {
    let fake = plain_cluster().recorded(NAMESPACES, "namespaces-none.json");
    let detection = detect(&fake.cluster()).await.unwrap();
    assert_eq!(detection.state, ClusterState::Unmodified);
    assert_eq!(detection.kubernetes_version.as_deref(), Some("v1.36.3"));
    assert!(detection.flux.is_none());
    assert!(detection.warnings.is_empty(), "{:?}", detection.warnings);
}

#[tokio::test]
async fn labelled_flux_namespace_gives_flux2_with_version_and_controllers() {
    let fake = flux_cluster("namespaces-flux.json");
    let detection = detect(&fake.cluster()).await.unwrap();
    assert_eq!(detection.state, ClusterState::Flux2);
    let flux = detection.flux.as_ref().unwrap();
    assert_eq!(flux.namespace, "flux-system");
    assert_eq!(flux.version.as_deref(), Some("v2.9.3"));
    assert_eq!(flux.version_source, Some(VersionSource::NamespaceLabel));
    assert!(!flux.guessed);
    let controllers: Vec<(&str, Option<&str>, bool)> =
        detection.controllers.iter().map(|c| (c.name.as_str(), c.tag.as_deref(), c.ready)).collect();
    assert_eq!(
        controllers,
        [
            ("helm-controller", Some("v1.6.3"), true),
            ("image-automation-controller", Some("v1.2.3"), true),
            ("image-reflector-controller", Some("v1.2.3"), true),
            ("kustomize-controller", Some("v1.9.4"), true),
            ("notification-controller", Some("v1.9.2"), true),
            ("source-controller", Some("v1.9.3"), true),
        ]
    );
    assert!(detection.warnings.is_empty(), "{:?}", detection.warnings);
    assert_eq!(detection.api_versions.versions(&crate::flux::api::HELM_RELEASE), ["v2"]);
}

#[tokio::test]
async fn a_controller_that_is_not_ready_is_a_warning() {
    let fake = FakeApi::new()
        .recorded("/version", "version.json")
        .recorded("/apis", "discovery-flux.json")
        .recorded(NAMESPACES, "namespaces-flux.json")
        .recorded(FLUX_DEPLOYMENTS, "deployments-helm-not-ready.json");
    let detection = detect(&fake.cluster()).await.unwrap();
    assert_eq!(detection.state, ClusterState::Flux2);
    assert_eq!(detection.warnings, ["helm-controller is not ready"]);
}

#[tokio::test]
async fn one_discovery_round_trip_and_a_handful_of_requests() {
    let fake = flux_cluster("namespaces-flux.json");
    detect(&fake.cluster()).await.unwrap();
    let mut requests = fake.requests();
    requests.sort();
    insta::assert_debug_snapshot!(requests, @r#"
    [
        "GET /api/v1/namespaces/flux-system/configmaps/kubectl-gitops",
        "GET /api/v1/namespaces?&labelSelector=app.kubernetes.io%2Fpart-of%3Dflux",
        "GET /apis",
        "GET /apis/apps/v1/namespaces/flux-system/deployments?&labelSelector=app.kubernetes.io%2Fpart-of%3Dflux",
        "GET /version",
    ]
    "#);
}

/// The budget of docs/performance.md: one discovery round trip (`GET /apis`; the core group is
/// not discovered, its paths are fixed) and at most five other GETs, on every path detect can take,
/// including the costliest one (no labelled namespace, so flux-system is looked up by name).
#[tokio::test]
async fn every_path_stays_within_one_discovery_and_five_gets() {
    let labelled = flux_cluster("namespaces-flux.json").recorded(RECORD, "configmap-record.json");
    let unlabelled = flux_cluster("namespaces-none.json")
        .recorded("/api/v1/namespaces/flux-system", "namespace-flux-system-unlabelled.json")
        .recorded(RECORD, "configmap-record.json");
    let forbidden_listing = plain_cluster().route(NAMESPACES, 403, forbidden("namespaces is forbidden"));
    let plain = plain_cluster().recorded(NAMESPACES, "namespaces-none.json");
    for (path, fake) in
        [("labelled", labelled), ("unlabelled", unlabelled), ("forbidden", forbidden_listing), ("plain", plain)]
    {
        detect(&fake.cluster()).await.unwrap();
        let requests = fake.requests();
        assert!(requests.iter().all(|request| request.starts_with("GET ")), "{path}: {requests:?}");
        let discovery = requests.iter().filter(|request| *request == "GET /apis" || *request == "GET /api").count();
        assert_eq!(discovery, 1, "{path}: {requests:?}");
        assert!(
            requests.len() - discovery <= 5,
            "{path}: {} GETs besides discovery: {requests:?}",
            requests.len() - discovery
        );
    }
}

#[tokio::test]
async fn our_install_record_makes_it_gitops() {
    let fake = flux_cluster("namespaces-flux.json").recorded(RECORD, "configmap-record.json");
    let detection = detect(&fake.cluster()).await.unwrap();
    assert_eq!(detection.state, ClusterState::Gitops);
    let record = detection.gitops.unwrap();
    assert_eq!(record.path, "clusters/dev");
    assert_eq!(record.cluster_name, "dev");
    assert_eq!(record.components.len(), 4);
}

#[tokio::test]
async fn without_a_version_label_the_version_is_guessed_from_the_image() {
    let fake = flux_cluster("namespaces-none.json")
        .recorded("/api/v1/namespaces/flux-system", "namespace-flux-system-unlabelled.json");
    let detection = detect(&fake.cluster()).await.unwrap();
    assert_eq!(detection.state, ClusterState::Flux2);
    let flux = detection.flux.unwrap();
    assert_eq!(flux.version.as_deref(), Some("v2.9"));
    assert_eq!(flux.version_source, Some(VersionSource::SourceControllerImage));
    assert!(flux.guessed);
}

#[tokio::test]
async fn two_flux_installations_are_an_error_unless_the_namespace_names_one() {
    let fake = flux_cluster("namespaces-two-flux.json");
    let error = detect(&fake.cluster()).await.unwrap_err();
    assert_eq!(error.to_string(), "this cluster has 2 Flux installations: namespaces flux-system, flux-legacy");
    assert_eq!(error.hint().as_deref(), Some("pass -n NAMESPACE to say which one, e.g. -n flux-system"));
    assert_eq!(error.exit_code(), crate::error::ExitCode::Usage);
    let mut cluster = fake.cluster();
    cluster.namespace = "flux-system".into();
    let detection = detect(&cluster).await.unwrap();
    assert_eq!(detection.flux.unwrap().namespace, "flux-system");
    assert!(detection.warnings.is_empty(), "{:?}", detection.warnings);
}

#[tokio::test]
async fn crds_without_controllers_are_a_warning() {
    let fake = FakeApi::new()
        .recorded("/version", "version.json")
        .recorded("/apis", "discovery-flux.json")
        .recorded(NAMESPACES, "namespaces-flux.json")
        .recorded(FLUX_DEPLOYMENTS, "deployments-none.json");
    let detection = detect(&fake.cluster()).await.unwrap();
    assert_eq!(detection.state, ClusterState::Flux2);
    assert_eq!(detection.warnings, ["Flux CRDs are installed but no Flux controller Deployments were found"]);
}

#[tokio::test]
async fn forbidden_namespace_listing_falls_back_to_flux_system() {
    let fake = plain_cluster().route(
        NAMESPACES,
        403,
        forbidden("namespaces is forbidden: User \"viewer\" cannot list resource \"namespaces\""),
    );
    let detection = detect(&fake.cluster()).await.unwrap();
    assert_eq!(detection.state, ClusterState::Unmodified);
    assert_eq!(detection.warnings, ["not allowed to list namespaces; looked only in flux-system"]);
}

#[tokio::test]
async fn rejected_credentials_are_unreachable() {
    let unauthorized = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401});
    let fake = FakeApi::new().route("/version", 401, unauthorized.to_string());
    let detection = detect(&fake.cluster()).await.unwrap();
    assert_eq!(detection.state, ClusterState::Unreachable);
    let error = detection.unreachable_error().expect("an unreachable cluster's error");
    assert!(matches!(error, Error::Unauthorized { .. }), "{error:?}");
    assert!(detection.error.unwrap().contains("rejected our credentials"));
    assert_eq!(fake.requests(), ["GET /version"]);
}

#[test]
fn image_tags_ignore_registry_ports_and_digests() {
    assert_eq!(image_tag("ghcr.io/fluxcd/source-controller:v1.9.3"), Some("v1.9.3"));
    assert_eq!(image_tag("registry.local:5000/fluxcd/source-controller:v1.9.3@sha256:abc"), Some("v1.9.3"));
    assert_eq!(image_tag("registry.local:5000/fluxcd/source-controller"), None);
}
