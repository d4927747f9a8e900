//! Tenants without a cluster or a server: flags to requests, requests to repo files, against
//! `flux create tenant --export`'s goldens. End to end: tests/tests/it/tenant.rs.

use clap::Parser;

use super::args::{CLUSTER_ADMIN, TenantAddArgs, TenantAddRequest};
use super::layout::{self, Inputs};
use crate::cli::GlobalArgs;
use crate::error::Error;
use crate::flux::api::Versions;
use crate::testing::flux_fixture;
use crate::yaml;

#[derive(Parser)]
struct Add {
    #[command(flatten)]
    add: TenantAddArgs,
    #[command(flatten)]
    global: GlobalArgs,
}

fn request(args: &[&str]) -> Result<TenantAddRequest, Error> {
    let parsed = Add::try_parse_from(std::iter::once("add").chain(args.iter().copied())).unwrap();
    parsed.add.request()
}

fn usage_message(args: &[&str]) -> String {
    match request(args) {
        Err(Error::Usage { message, .. }) => message,
        other => panic!("{args:?} should be a usage error, got {other:?}"),
    }
}

#[test]
#[cfg_attr(shared_fixtures_absent, ignore = "needs ../shared/fixtures beside the checkout")]
fn rbac_is_what_flux_create_tenant_exports() {
    let cases = [
        ("tenant-basic.yaml", "dev-team", CLUSTER_ADMIN),
        ("tenant-with-service-account.yaml", "flux-tenant", CLUSTER_ADMIN),
        ("tenant-with-cluster-role.yaml", "dev-team", "custom-role"),
    ];
    for (golden, account, role) in cases {
        let objects = layout::rbac_objects("dev-team", "apps", account, role, false);
        let ours = yaml::to_documents(&objects).unwrap();
        assert_eq!(ours, flux_fixture(&format!("testdata/create_tenant/{golden}")), "{golden}");
    }
}

#[test]
fn the_default_role_is_the_namespaced_admin_and_cluster_admin_must_be_meant() {
    let plain = request(&["team-a", "--with-namespace", "a"]).unwrap();
    assert_eq!(plain.role, "admin");
    assert_eq!(plain.service_account, "team-a");
    assert!(
        usage_message(&["team-a", "--with-namespace", "a", "--cluster-role", "cluster-admin"])
            .contains("cluster-admin")
    );
    let meant =
        request(&["team-a", "--with-namespace", "a", "--cluster-role", "cluster-admin", "--allow-cluster-admin"]);
    assert_eq!(meant.unwrap().role, "cluster-admin");
}

#[test]
fn bad_input_stops_before_any_io() {
    assert!(usage_message(&["Team_A", "--with-namespace", "a"]).contains("\"Team_A\" is not a valid name"));
    assert!(usage_message(&["team-a"]).contains("needs at least one namespace"));
    assert!(usage_message(&["team-a", "--with-namespace", "a..b"]).contains("not a valid name"));
    assert!(
        usage_message(&["team-a", "--with-namespace", "a", "--cluster-role", "Admin!"])
            .contains("not a ClusterRole name")
    );
    assert!(
        usage_message(&["team-a", "--with-namespace", "a", "--repo", "https://h/x", "--path", "../up"])
            .contains("leaves the source")
    );
    assert!(
        usage_message(&["team-a", "--with-namespace", "a", "--service-account", "Bad_SA"]).contains("not a valid name")
    );
}

#[test]
fn namespaces_come_from_with_namespace_sorted_once_and_n_is_not_one_of_them() {
    let parsed =
        request(&["team-a", "--with-namespace", "b", "--with-namespace", "a", "--with-namespace", "a"]).unwrap();
    assert_eq!(parsed.namespaces, ["a", "b"]);
    // -n is the Flux namespace, as for every command (docs/cli.md).
    let flux = request(&["team-a", "--with-namespace", "b", "-n", "flux-system"]).unwrap();
    assert_eq!(flux.namespaces, ["b"]);
}

#[test]
fn a_team_repo_syncs_into_each_namespace_as_the_team() {
    let parsed =
        request(&["team-a", "--with-namespace", "a1", "--with-namespace", "a2", "--repo", "https://git.example.com/a"])
            .unwrap();
    let inputs = Inputs { versions: &Versions::pinned(), adopted: &["a2".to_string()] };
    let files = layout::tenant_files(&parsed, &inputs).unwrap();
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["tenants/team-a/kustomization.yaml", "tenants/team-a/rbac.yaml", "tenants/team-a/sync.yaml"]
    );
    let sync = yaml::documents_from_str(&files["tenants/team-a/sync.yaml"]).unwrap();
    let kustomizations: Vec<_> = sync.iter().filter(|object| object["kind"] == "Kustomization").collect();
    assert_eq!(kustomizations.len(), 2);
    for (object, namespace) in kustomizations.iter().zip(["a1", "a2"]) {
        assert_eq!(object["metadata"]["namespace"], namespace);
        assert_eq!(object["spec"]["targetNamespace"], namespace);
        assert_eq!(object["spec"]["serviceAccountName"], "team-a");
        assert_eq!(object["spec"]["path"], "./");
        assert_eq!(object["metadata"]["labels"][layout::TENANT_LABEL], "team-a");
    }
    let rbac = yaml::documents_from_str(&files["tenants/team-a/rbac.yaml"]).unwrap();
    let namespaces: Vec<_> = rbac.iter().filter(|object| object["kind"] == "Namespace").collect();
    assert!(namespaces[0]["metadata"].get("annotations").is_none(), "a1 is ours: pruned with the tenant");
    assert_eq!(
        namespaces[1]["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"], "disabled",
        "a2 existed before: kept when the tenant goes"
    );
    let without_repo = request(&["team-a", "--with-namespace", "a1"]).unwrap();
    let files = layout::tenant_files(&without_repo, &inputs).unwrap();
    assert!(!files.contains_key("tenants/team-a/sync.yaml"));
    assert!(files["tenants/team-a/kustomization.yaml"].contains("- rbac.yaml"));
}

#[test]
fn lockdown_patches_are_added_once_and_keep_the_rest() {
    let flux_system = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- gotk-components.yaml\n- gotk-sync.yaml\n";
    let once = layout::with_lockdown(flux_system).unwrap();
    assert_eq!(layout::with_lockdown(&once).unwrap(), once, "idempotent");
    let parsed: serde_json::Value = yaml::from_str(&once).unwrap();
    assert_eq!(parsed["resources"], serde_json::json!(["gotk-components.yaml", "gotk-sync.yaml"]));
    let patches = parsed["patches"].as_array().unwrap();
    let values: Vec<&str> = patches.iter().map(|patch| patch["patch"].as_str().unwrap()).collect();
    for flag in ["--no-cross-namespace-refs=true", "--no-remote-bases=true", "--default-service-account=default"] {
        assert!(values.iter().any(|patch| patch.contains(flag)), "{flag} in {once}");
    }
    assert!(patches.iter().any(|patch| patch["target"]["kind"] == "Kustomization"
        && patch["target"]["name"] == "flux-system"
        && patch["patch"].as_str().unwrap().contains("value: kustomize-controller")));
    let root = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-system\n- platform.yaml\n";
    let accounts = layout::with_layer_accounts(root).unwrap();
    assert_eq!(layout::with_layer_accounts(&accounts).unwrap(), accounts, "idempotent");
    let parsed: serde_json::Value = yaml::from_str(&accounts).unwrap();
    assert_eq!(parsed["resources"], serde_json::json!(["flux-system", "platform.yaml"]));
    let patches = parsed["patches"].as_array().unwrap();
    assert_eq!(
        patches[0]["target"],
        serde_json::json!({"kind": "Kustomization"}),
        "every Kustomization the sync applies"
    );
    assert_eq!(patches[1]["target"]["name"], "(platform|apps)");
    // The layers' own patches, for what they apply: a JSON patch, its value Flux's `spec.patches`.
    let layer: serde_json::Value = serde_json::from_str(patches[1]["patch"].as_str().unwrap()).unwrap();
    assert_eq!(layer[0]["path"], "/spec/patches");
    let kinds: Vec<(&str, bool)> = layer[0]["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|patch| {
            (patch["target"]["kind"].as_str().unwrap(), patch["patch"].as_str().unwrap().contains("-controller\n"))
        })
        .collect();
    assert_eq!(kinds, [("Kustomization", true), ("HelmRelease", true)]);
    assert!(layout::with_lockdown("- a list").is_err());
    // A re-run of install writes both files again, and keeps the lockdown as it is.
    let bootstrap = crate::flux::bootstrap::flux_system_kustomization();
    let locked = layout::with_lockdown(&bootstrap).unwrap();
    assert_eq!(crate::flux::bootstrap::flux_system_kustomization_keeping(Some(&locked)).unwrap(), locked);
    assert_eq!(crate::flux::bootstrap::flux_system_kustomization_keeping(Some(&bootstrap)).unwrap(), bootstrap);
    let root = crate::flux::bootstrap::root_kustomization(None, &[]).unwrap();
    let accounts = layout::with_layer_accounts(&root).unwrap();
    assert_eq!(crate::flux::bootstrap::root_kustomization(Some(&accounts), &[]).unwrap(), accounts);
}

#[test]
fn a_namespace_of_another_tenant_is_refused() {
    let parsed = request(&["team-a", "--with-namespace", "shared"]).unwrap();
    let error = super::refuse_owned(&parsed, [("shared", "team-b")], "the config repo").unwrap_err();
    assert!(error.to_string().contains("namespace shared already belongs to tenant team-b"), "{error}");
    super::refuse_owned(&parsed, [("shared", "team-a"), ("other", "team-b")], "the cluster").unwrap();
}

#[test]
fn the_flux_namespace_and_kubernetes_own_are_no_tenants() {
    for namespace in ["flux-system", "kube-system", "kube-public"] {
        let parsed = request(&["team-a", "--with-namespace", "a", "--with-namespace", namespace]).unwrap();
        let error = super::refuse_reserved(&parsed, "flux-system").unwrap_err();
        assert!(error.to_string().contains(&format!("namespace {namespace} cannot be a tenant's")), "{error}");
    }
    super::refuse_reserved(&request(&["team-a", "--with-namespace", "a"]).unwrap(), "flux-system").unwrap();
}

#[test]
fn a_recorded_add_parses_back_to_the_same_request() {
    let args = [
        "team-a",
        "--with-namespace",
        "b",
        "--with-namespace",
        "a",
        "--repo",
        "https://git.example.com/a",
        "--path",
        "deploy",
        "--secret-ref",
        "team-a-git",
        "--cluster-role",
        "cluster-admin",
        "--allow-cluster-admin",
        "--cluster-name",
        "dev",
        "--lockdown",
    ];
    let words = super::add_words(&request(&args).unwrap());
    assert_eq!(
        shlex::try_join(words.iter().map(String::as_str)).unwrap(),
        "tenant add team-a --with-namespace a --with-namespace b --cluster-role cluster-admin --service-account team-a \
         --repo https://git.example.com/a --branch main --path ./deploy --secret-ref team-a-git --interval 1m0s \
         --cluster-name dev --allow-cluster-admin --lockdown"
    );
    let parsed: TenantAddArgs = crate::change::recorded::parse_args(&words[2..], &words).unwrap();
    let again = parsed.request().unwrap();
    assert_eq!(super::add_words(&again), words, "planned again from the very same request");
    let plain = super::add_words(&request(&["team-b", "--with-namespace", "b"]).unwrap());
    assert_eq!(
        plain.join(" "),
        "tenant add team-b --with-namespace b --cluster-role admin --service-account team-b --interval 1m0s"
    );
}

#[test]
#[cfg_attr(shared_fixtures_absent, ignore = "needs ../shared/fixtures beside the checkout")]
fn export_prints_what_flux_create_tenant_exports_without_a_cluster() {
    let exported = super::export(
        &request(&[
            "dev-team",
            "--with-namespace",
            "apps",
            "--cluster-role",
            "cluster-admin",
            "--allow-cluster-admin",
            "--export",
        ])
        .unwrap(),
    )
    .unwrap();
    assert_eq!(exported, flux_fixture("testdata/create_tenant/tenant-basic.yaml"));
    let with_repo = super::export(
        &request(&["dev-team", "--with-namespace", "apps", "--repo", "https://git.example.com/team.git", "--export"])
            .unwrap(),
    )
    .unwrap();
    let documents = yaml::documents_from_str(&with_repo).unwrap();
    let kinds: Vec<&str> = documents.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds, ["Namespace", "ServiceAccount", "RoleBinding", "GitRepository", "Kustomization"]);
}

#[test]
fn export_and_dry_run_do_not_go_together() {
    let parsed = Add::try_parse_from(["add", "dev-team", "--with-namespace", "apps", "--export", "--dry-run"]);
    assert!(parsed.is_err());
}
