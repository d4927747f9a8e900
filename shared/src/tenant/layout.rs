//! Where tenants live in the config repo (docs/tenants.md):
//!
//! ```text
//! tenants/<team>/kustomization.yaml            rbac.yaml (+ sync.yaml)
//! tenants/<team>/rbac.yaml                     per namespace: Namespace, ServiceAccount, RoleBinding
//! tenants/<team>/sync.yaml                     per namespace: GitRepository + Kustomization <team> (--repo)
//! <cluster>/tenants/kustomization.yaml         the cluster's tenant list
//! <cluster>/tenants/<team>/kustomization.yaml  the shared definition
//! ```
//!
//! `rbac.yaml` is what `flux create tenant --export` prints, object for object, so a repo made
//! with flux reads the same; the RoleBinding binds `--cluster-role` (namespaced `admin` by default, where
//! flux binds cluster-admin). The team's Kustomization impersonates the team's ServiceAccount
//! (`serviceAccountName`) and applies into the namespace (`targetNamespace`), so Kubernetes'
//! RBAC, not the tool, keeps the team inside its namespaces.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::args::{TeamRepo, TenantAddRequest};
use crate::change::layout::{self as repo_layout, ClusterDir, KUSTOMIZATION_FILE};
use crate::error::{Error, Result};
use crate::flux::api;
use crate::flux::api::Versions;
use crate::flux::bootstrap::{APPS_LAYER, PLATFORM_LAYER};
use crate::flux::objects::{self, KustomizationSpec, Meta, SourceRef};
use crate::git::Checkout;
use crate::plan;
use crate::record::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::yaml;

/// The root directory of tenant definitions, and of each cluster's tenant list.
pub const TENANTS_DIR: &str = "tenants";
pub use crate::flux::TENANT_LABEL;
/// kustomize-controller leaves an object with this annotation in place when it leaves the repo.
const PRUNE_ANNOTATION: (&str, &str) = ("kustomize.toolkit.fluxcd.io/prune", "disabled");

/// `tenants/<team>`.
pub fn tenant_dir(team: &str) -> String {
    format!("{TENANTS_DIR}/{team}")
}

/// What the files of one tenant are made from, beyond the request.
pub struct Inputs<'a> {
    /// The API versions the cluster serves.
    pub versions: &'a Versions,
    /// Namespaces that exist already and are no tenant's: written with pruning disabled, so
    /// that removing the tenant never deletes a namespace the tool did not create.
    pub adopted: &'a [String],
}

/// The files of `tenants/<team>/`, path → contents.
pub fn tenant_files(request: &TenantAddRequest, inputs: &Inputs<'_>) -> Result<BTreeMap<String, String>> {
    let dir = tenant_dir(&request.name);
    let mut rbac = Vec::new();
    let mut sync = Vec::new();
    for namespace in &request.namespaces {
        let adopted = inputs.adopted.contains(namespace);
        rbac.extend(rbac_objects(&request.name, namespace, &request.service_account, &request.role, adopted));
        if let Some(repo) = &request.repo {
            sync.extend(sync_objects(request, namespace, repo, inputs.versions)?);
        }
    }
    let mut resources = vec!["rbac.yaml".to_string()];
    let mut files = BTreeMap::from([(format!("{dir}/rbac.yaml"), yaml::to_documents(&rbac)?)]);
    if !sync.is_empty() {
        files.insert(format!("{dir}/sync.yaml"), yaml::to_documents(&sync)?);
        resources.push("sync.yaml".to_string());
    }
    files.insert(format!("{dir}/{KUSTOMIZATION_FILE}"), yaml::to_string(&repo_layout::kustomize_config(resources))?);
    Ok(files)
}

/// One namespace's Namespace, ServiceAccount and RoleBinding, as `flux create tenant --export`
/// writes them.
pub fn rbac_objects(team: &str, namespace: &str, account: &str, role: &str, adopted: bool) -> Vec<Value> {
    let labels = json!({TENANT_LABEL: team});
    let mut namespace_object =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"labels": labels, "name": namespace}});
    if adopted {
        namespace_object["metadata"]["annotations"] = json!({PRUNE_ANNOTATION.0: PRUNE_ANNOTATION.1});
    }
    vec![
        namespace_object,
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"labels": labels, "name": account, "namespace": namespace},
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"labels": labels, "name": format!("{team}-reconciler"), "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": format!("gotk:{namespace}:reconciler")},
                {"kind": "ServiceAccount", "name": account, "namespace": namespace},
            ],
        }),
    ]
}

/// The team's GitRepository and Kustomization in one of its namespaces: the Kustomization runs
/// as the team's ServiceAccount and applies into that namespace.
fn sync_objects(
    request: &TenantAddRequest,
    namespace: &str,
    repo: &TeamRepo,
    versions: &Versions,
) -> Result<Vec<Value>> {
    let meta = Meta {
        name: request.name.clone(),
        namespace: namespace.to_string(),
        labels: BTreeMap::from([
            (MANAGED_BY_LABEL.to_string(), MANAGED_BY_VALUE.to_string()),
            (TENANT_LABEL.to_string(), request.name.clone()),
        ]),
    };
    let (source_kind, release_kind) = (&api::GIT_REPOSITORY, &api::KUSTOMIZATION);
    let source = objects::git_repository(
        source_kind,
        versions.get(source_kind)?,
        &meta,
        &repo.url,
        &repo.git_ref,
        request.interval,
        repo.secret_ref.as_deref(),
    );
    let spec = KustomizationSpec {
        source: SourceRef { kind: source_kind.kind.to_string(), name: request.name.clone() },
        path: repo.path.clone(),
        prune: true,
        interval: request.interval,
        target_namespace: Some(namespace.to_string()),
        depends_on: Vec::new(),
    };
    let mut release = objects::kustomization(release_kind, versions.get(release_kind)?, &meta, &spec);
    // `flux create kustomization --service-account` writes it here.
    release["spec"]["serviceAccountName"] = json!(request.service_account);
    Ok(vec![source, release])
}

/// The namespaces each tenant in the repo owns: namespace → team, from `tenants/*/rbac.yaml`.
pub fn namespace_owners(checkout: &Checkout) -> Result<BTreeMap<String, String>> {
    let mut owners = BTreeMap::new();
    for path in plan::files_under(checkout, TENANTS_DIR)?.iter().filter(|path| path.ends_with("/rbac.yaml")) {
        let Some(text) = plan::read(checkout, path)? else { continue };
        let documents = yaml::documents_from_str(&text)
            .map_err(|error| Error::usage(format!("{path} is not valid YAML: {error}"), "fix the file in the repo"))?;
        for document in documents.iter().filter(|document| document["kind"] == "Namespace") {
            if let (Some(namespace), Some(team)) =
                (document["metadata"]["name"].as_str(), document["metadata"]["labels"][TENANT_LABEL].as_str())
            {
                owners.insert(namespace.to_string(), team.to_string());
            }
        }
    }
    Ok(owners)
}

/// The flux2-multi-tenancy lockdown, patched into `<cluster>/flux-system/kustomization.yaml`:
/// no cross-namespace references, no remote bases, the namespace's `default` ServiceAccount
/// for objects that name none, and the sync itself running as kustomize-controller.
pub fn with_lockdown(flux_system: &str) -> Result<String> {
    let args = |value: &str, target: &str| {
        json!({
            "patch": format!("- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: {value}\n"),
            "target": {"kind": "Deployment", "name": target},
        })
    };
    let wanted = [
        args(
            "--no-cross-namespace-refs=true",
            "(kustomize-controller|helm-controller|notification-controller|image-reflector-controller|image-automation-controller)",
        ),
        args("--no-remote-bases=true", "kustomize-controller"),
        args("--default-service-account=default", "(kustomize-controller|helm-controller)"),
        json!({
            "patch": "- op: add\n  path: /spec/serviceAccountName\n  value: kustomize-controller\n",
            "target": {"kind": "Kustomization", "name": crate::flux::bootstrap::SYNC_NAME},
        }),
    ];
    with_patches(flux_system, &wanted, "the cluster's flux-system/kustomization.yaml")
}

/// The cluster directory's root `kustomization.yaml` with what the sync applies, and what the
/// platform and apps layers apply, running as the controllers' own ServiceAccounts: once locked
/// down, a Kustomization or HelmRelease that names no ServiceAccount runs as its namespace's
/// `default`, which may do nothing, and the layers, the components, the platform services and
/// the apps all live in the Flux namespace. The layers' lists may be in another repository (the
/// platform repo), so the layers carry the patches for what they apply (`spec.patches`).
pub fn with_layer_accounts(root: &str) -> Result<String> {
    let account = |kind: &str, account: &str| {
        json!({
            "patch": format!("- op: add\n  path: /spec/serviceAccountName\n  value: {account}\n"),
            "target": {"kind": kind},
        })
    };
    let for_contents = [account("Kustomization", "kustomize-controller"), account("HelmRelease", "helm-controller")];
    let layer_patches = json!([{"op": "add", "path": "/spec/patches", "value": for_contents}]);
    let layers = [PLATFORM_LAYER.name, APPS_LAYER.name].join("|");
    let wanted = [
        account("Kustomization", "kustomize-controller"),
        json!({
            "patch": serde_json::to_string(&layer_patches).map_err(|error| Error::Internal(error.to_string()))?,
            "target": {"kind": "Kustomization", "name": format!("({layers})")},
        }),
    ];
    with_patches(root, &wanted, "the cluster directory's kustomization.yaml")
}

/// `patches` of a kustomize file with each of `wanted` present once; other content kept.
fn with_patches(text: &str, wanted: &[Value], what: &str) -> Result<String> {
    let mut config: Value = yaml::from_str(text)
        .map_err(|error| Error::usage(format!("{what} is not valid YAML: {error}"), "fix the file in the repo"))?;
    let Some(map) = config.as_object_mut() else {
        return Err(Error::usage(format!("{what} is not a mapping"), "fix the file in the repo"));
    };
    let patches = map.entry("patches").or_insert_with(|| json!([]));
    let Some(list) = patches.as_array_mut() else {
        return Err(Error::usage(format!("{what} has `patches` that are not a list"), "fix the file in the repo"));
    };
    for patch in wanted {
        if !list.contains(patch) {
            list.push(patch.clone());
        }
    }
    yaml::to_string(&config)
}

/// The overlay `<cluster>/tenants/<team>/kustomization.yaml`: the shared definition.
pub fn cluster_files(team: &str, cluster: &ClusterDir) -> Result<BTreeMap<String, String>> {
    let dir = cluster.entry_dir(TENANTS_DIR, team);
    let config = repo_layout::overlay_config(&dir, &tenant_dir(team));
    Ok(BTreeMap::from([(format!("{dir}/{KUSTOMIZATION_FILE}"), yaml::to_string(&config)?)]))
}
