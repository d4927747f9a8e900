//! status against canned API responses: the runtime from recorded responses, the Flux objects
//! hand-written in the shape Flux v2.9 reports them (testdata/api/status/).

use super::*;
use crate::output::style::Style;
use crate::testing::FakeApi;

const FLUX: &str = "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system";

/// What detection reads of a Flux v2.9 cluster that kubectl-gitops installed (its record too).
pub(super) fn detected() -> FakeApi {
    FakeApi::new()
        .recorded("/version", "version.json")
        .recorded("/apis", "discovery-flux.json")
        .recorded("/api/v1/namespaces", "namespaces-flux.json")
        .recorded("/apis/apps/v1/namespaces/flux-system/deployments", "deployments-flux.json")
        .recorded("/api/v1/namespaces/flux-system/configmaps/kubectl-gitops", "configmap-record.json")
}

fn cluster() -> FakeApi {
    detected()
        .recorded(&format!("{FLUX}/gitrepositories"), "status/gitrepositories.json")
        .recorded(&format!("{FLUX}/ocirepositories"), "status/empty-ocirepositories.json")
        .recorded(&format!("{FLUX}/helmrepositories"), "status/helmrepositories.json")
        .recorded(&format!("{FLUX}/helmcharts"), "status/helmcharts.json")
        .recorded(
            "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations",
            "status/kustomizations.json",
        )
        .recorded("/apis/helm.toolkit.fluxcd.io/v2/namespaces/flux-system/helmreleases", "status/helmreleases.json")
}

fn scope() -> Scope {
    Scope::Namespace("flux-system".into())
}

/// 2026-12-02T11:30:00Z: half an hour after the podinfo apply.
const NOW: u64 = 1_796_211_000;

#[tokio::test]
async fn rows_join_sources_and_name_the_first_object_that_is_not_ready() {
    let report = collect(&cluster().cluster(), &scope()).await.unwrap();
    let rows: Vec<(&str, AppKind, AppState, Option<&str>)> =
        report.apps.iter().map(|a| (a.name.as_str(), a.kind, a.state, a.message.as_deref())).collect();
    assert_eq!(rows[0], ("fresh", AppKind::Kustomize, AppState::Progressing, Some("waiting to be reconciled")));
    assert_eq!(
        rows[1],
        (
            "missing-path",
            AppKind::Kustomize,
            AppState::Failing,
            Some("kustomization path not found: stat /tmp/kustomization-1/does-not-exist: no such file or directory")
        )
    );
    assert_eq!(rows[2].0, "paused");
    assert_eq!(rows[2].2, AppState::Suspended);
    assert_eq!((rows[3].0, rows[3].1, rows[3].2), ("podinfo", AppKind::Kustomize, AppState::Ready));
    assert_eq!((rows[4].0, rows[4].1, rows[4].2), ("redis", AppKind::Helm, AppState::Ready));
    assert_eq!(rows[5].0, "unreachable");
    assert_eq!(rows[5].2, AppState::Failing);
    assert!(rows[5].3.unwrap().starts_with("GitRepository broken-url: failed to checkout"), "{:?}", rows[5]);
    let redis = &report.apps[4];
    assert_eq!(redis.applied_revision.as_deref(), Some("1.2.3"));
    let chain: Vec<&str> = redis.objects.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(chain, ["HelmRepository", "HelmChart", "HelmRelease"]);
    let config_repo: Vec<&str> = report.config_repo.iter().map(|row| row.name.as_str()).collect();
    assert_eq!(config_repo, ["flux-system"], "the flux-system sync is not an app");
    assert!(report.other_flux_objects.is_empty());
    assert_eq!(report.summary, Summary { objects: 7, ready: 3, failing: 2, progressing: 1, suspended: 1 });
    assert_eq!(exit_code(&report), crate::ExitCode::No);
}

#[tokio::test]
async fn one_list_per_kind_and_no_object_gets() {
    let fake = cluster();
    collect(&fake.cluster(), &scope()).await.unwrap();
    let lists: Vec<String> = fake.requests().into_iter().filter(|r| r.contains("toolkit.fluxcd.io")).collect();
    assert_eq!(lists.len(), 6, "{lists:?}");
    assert!(lists.iter().all(|r| r.contains("?&limit=500") || r.contains("?limit=500")), "{lists:?}");
}

#[tokio::test]
async fn the_table_shows_every_state() {
    let report = collect(&cluster().cluster(), &scope()).await.unwrap();
    insta::assert_snapshot!(render_table(&report, false, false, true, Style::plain(), NOW));
}

#[tokio::test]
async fn wide_shows_full_revisions_and_sources_and_all_namespaces_adds_a_column() {
    let report = collect(&cluster().cluster(), &scope()).await.unwrap();
    let wide = render_table(&report, true, true, true, Style::plain(), NOW);
    assert!(wide.contains("NAMESPACE"), "{wide}");
    assert!(wide.contains("main@sha1:3f2c9a1b0d4e5f60718293a4b5c6d7e8f9012345"), "{wide}");
    assert!(wide.contains("ssh://git@git.example.com/podinfo.git"), "{wide}");
}

#[tokio::test]
async fn the_json_is_the_documented_schema() {
    let report = collect(&cluster().cluster(), &scope()).await.unwrap().failed_only();
    let json = serde_json::to_value(&report).unwrap();
    insta::assert_json_snapshot!(json["apps"][0], @r#"
    {
      "appliedRevision": null,
      "lastDeployed": null,
      "message": "waiting to be reconciled",
      "name": "fresh",
      "namespace": "flux-system",
      "objects": [
        {
          "kind": "GitRepository",
          "message": "stored artifact for revision 'main@sha1:3f2c9a1b0d4e5f60718293a4b5c6d7e8f9012345'",
          "name": "podinfo",
          "namespace": "flux-system",
          "ready": "True",
          "reason": "Succeeded",
          "revision": "main@sha1:3f2c9a1b0d4e5f60718293a4b5c6d7e8f9012345",
          "suspended": false
        },
        {
          "kind": "Kustomization",
          "message": "waiting to be reconciled",
          "name": "fresh",
          "namespace": "flux-system",
          "ready": "Unknown",
          "reason": null,
          "revision": null,
          "suspended": false
        }
      ],
      "sourceRef": "branch main",
      "sourceRevision": "main@sha1:3f2c9a1b0d4e5f60718293a4b5c6d7e8f9012345",
      "sourceUrl": "ssh://git@git.example.com/podinfo.git",
      "state": "progressing",
      "type": "kustomize"
    }
    "#);
    assert_eq!(
        json["summary"],
        serde_json::json!({"objects": 3, "ready": 0, "failing": 2, "progressing": 1, "suspended": 0})
    );
    assert_eq!(json["flux"]["config"]["path"], "clusters/dev");
}

#[tokio::test]
async fn no_flux_crds_is_a_clear_no() {
    let fake = FakeApi::new()
        .recorded("/version", "version.json")
        .recorded("/apis", "discovery-plain.json")
        .recorded("/api/v1/namespaces", "namespaces-none.json");
    let error = collect(&fake.cluster(), &scope()).await.unwrap_err();
    assert_eq!(error.to_string(), "Flux is not installed: this cluster serves no Kustomization or HelmRelease API");
    assert_eq!(error.exit_code(), crate::ExitCode::No);
}

#[test]
fn revisions_are_shortened_like_flux_get() {
    assert_eq!(shorten_revision("main@sha1:3f2c9a1b0d4e5f60718293a4b5c6d7e8f9012345"), "main@sha1:3f2c9a1b");
    assert_eq!(shorten_revision("1.2.3"), "1.2.3");
    assert_eq!(shorten_revision(&format!("v1@sha256:{}", "ab".repeat(32))), "v1@sha256:abababab");
}
