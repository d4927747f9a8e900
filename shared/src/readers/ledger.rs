//! The ledger: a ConfigMap per app, in the app's namespace, that keeps its deployments beyond
//! the 5 Flux keeps (docs/history.md).
//!
//! Every look merges what Flux shows into it ([`record`]): read, merge, write with the
//! resourceVersion read as a precondition; when another writer got there first (409), read and
//! merge again. A merge only adds or updates, so nothing either writer saw is lost. The
//! ConfigMap is owned by the app object, so removing the app removes its ledger.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams, ObjectList, PartialObjectMeta, PostParams, TypeMeta};

use crate::cluster::{Cluster, list_pages};
use crate::deployments::{AppKind, Deployment, attach_commits, fingerprint, merge};
use crate::error::Result;
use crate::git::log::CommitInfo;
use crate::record::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};

/// The label every ledger carries, its value the app's name.
pub const APP_LABEL: &str = "kubectl-gitops.io/ledger-of";
/// The label with the app's kind.
pub const KIND_LABEL: &str = "kubectl-gitops.io/ledger-kind";
/// The annotation with the [`fingerprint`] of the Flux history last merged.
pub const FINGERPRINT_ANNOTATION: &str = "kubectl-gitops.io/flux-history";
/// The data key holding the deployments, oldest first, as JSON.
pub const DATA_KEY: &str = "deployments.json";
/// At most this many deployments are kept; the oldest go first.
pub const MAX_KEPT: usize = 500;
/// And at most this many bytes of JSON (a ConfigMap holds 1 MiB).
const MAX_BYTES: usize = 256 * 1024;
/// How often a write that lost a race is merged again before giving up.
const ATTEMPTS: usize = 10;

/// The app a ledger belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AppId {
    pub kind: AppKind,
    pub namespace: String,
    pub name: String,
}

impl AppId {
    /// The ConfigMap's name: `kubectl-gitops-history-ks-<app>` (`-hr-` for a HelmRelease).
    pub fn ledger_name(&self) -> String {
        let short = match self.kind {
            AppKind::Kustomization => "ks",
            AppKind::HelmRelease => "hr",
        };
        format!("kubectl-gitops-history-{short}-{}", self.name)
    }
}

/// The app object that owns its ledger: removing the app removes the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Its `apiVersion`, as the cluster served it.
    pub api_version: String,
    /// Its `metadata.uid`.
    pub uid: String,
}

/// The label selector of every ledger.
pub fn selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE},{APP_LABEL}")
}

/// The deployments `app`'s ledger keeps, only read (none when it has no ledger yet).
pub async fn read(cluster: &Cluster, app: &AppId) -> Result<Vec<Deployment>> {
    let found = ledgers(cluster, Some(&app.namespace)).get_opt(&app.ledger_name()).await;
    Ok(found.map_err(|error| cluster.error(error))?.as_ref().map(deployments_of).unwrap_or_default())
}

/// Merges `flux` (the app's `status.history` now, [`super::from_flux`]) and the `commits`
/// looked up into the app's ledger, and returns everything kept, oldest first.
pub async fn record(
    cluster: &Cluster,
    app: &AppId,
    owner: &Owner,
    flux: &[Deployment],
    commits: &[CommitInfo],
) -> Result<Vec<Deployment>> {
    let api = ledgers(cluster, Some(&app.namespace));
    let name = app.ledger_name();
    let wanted_fingerprint = fingerprint(flux);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let existing = api.get_opt(&name).await.map_err(|error| cluster.error(error))?;
        let (mut kept, fingerprint_kept) = match &existing {
            Some(config_map) => (deployments_of(config_map), annotation(&config_map.metadata)),
            None => (Vec::new(), None),
        };
        let learnt = merge(&mut kept, flux) | attach_commits(&mut kept, commits);
        cap(&mut kept);
        let unchanged = !learnt && fingerprint_kept.as_deref() == Some(wanted_fingerprint.as_str());
        // Nothing deployed yet: no ledger is made for it.
        if unchanged || existing.is_none() && kept.is_empty() {
            return Ok(kept);
        }
        let body = serde_json::to_string(&kept).unwrap_or_else(|_| "[]".into());
        let written = match existing {
            Some(mut config_map) => {
                // The resourceVersion read stays in the object: the API server refuses the
                // write (409) when someone wrote since, and the loop merges again.
                set_contents(&mut config_map, &wanted_fingerprint, body);
                api.replace(&name, &PostParams::default(), &config_map).await
            }
            None => {
                let mut config_map = new_ledger(app, &name, owner);
                set_contents(&mut config_map, &wanted_fingerprint, body);
                api.create(&PostParams::default(), &config_map).await
            }
        };
        match written {
            Ok(_) => return Ok(kept),
            Err(kube::Error::Api(status)) if status.code == 409 && attempts < ATTEMPTS => {}
            Err(error) => return Err(cluster.error(error)),
        }
    }
}

/// Every ledger in `namespace` (all namespaces when `None`), by app.
pub async fn list(cluster: &Cluster, namespace: Option<&str>) -> Result<HashMap<AppId, Vec<Deployment>>> {
    let api = ledgers(cluster, namespace);
    let mut kept = HashMap::new();
    let each = |config_map: DynamicObject| {
        if let Some(app) = app_of(&config_map.metadata) {
            kept.insert(app, deployments_of(&config_map));
        }
    };
    list_pages(page_params(), |params| list_page(api.clone(), params), each)
        .await
        .map_err(|error| cluster.error(error))?;
    Ok(kept)
}

/// The fingerprints of the ledgers in `namespace` (all when `None`), from a metadata LIST: what
/// `status` compares with Flux's histories before it reads or writes anything.
pub async fn fingerprints(cluster: &Cluster, namespace: Option<&str>) -> Result<HashMap<AppId, String>> {
    let api = ledgers(cluster, namespace);
    let mut fingerprints = HashMap::new();
    let each = |object: PartialObjectMeta<DynamicObject>| {
        if let (Some(app), Some(fingerprint)) = (app_of(&object.metadata), annotation(&object.metadata)) {
            fingerprints.insert(app, fingerprint);
        }
    };
    list_pages(page_params(), |params| metadata_page(api.clone(), params), each)
        .await
        .map_err(|error| cluster.error(error))?;
    Ok(fingerprints)
}

/// The ConfigMaps, read and written as `DynamicObject`s: the API calls the binaries already make
/// for Flux objects, instead of a second copy of each for the typed ConfigMap (the UI's binary
/// stays within its size budget).
fn ledgers(cluster: &Cluster, namespace: Option<&str>) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<ConfigMap>(&());
    match namespace {
        Some(namespace) => Api::namespaced_with(cluster.client.clone(), namespace, &resource),
        None => Api::all_with(cluster.client.clone(), &resource),
    }
}

/// The ledgers' pages, from the API server's watch cache: a ledger written a moment ago may be
/// missed, which costs an idempotent merge again, not a wrong answer.
fn page_params() -> ListParams {
    ListParams::default().labels(&selector()).limit(500).match_any()
}

async fn list_page(api: Api<DynamicObject>, params: ListParams) -> kube::Result<ObjectList<DynamicObject>> {
    api.list(&params).await
}

async fn metadata_page(
    api: Api<DynamicObject>,
    params: ListParams,
) -> kube::Result<ObjectList<PartialObjectMeta<DynamicObject>>> {
    api.list_metadata(&params).await
}

fn new_ledger(app: &AppId, name: &str, owner: &Owner) -> DynamicObject {
    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY_VALUE.to_string()),
        (APP_LABEL.to_string(), app.name.clone()),
        (KIND_LABEL.to_string(), app.kind.as_str().to_string()),
    ]);
    let owner = (!owner.uid.is_empty()).then(|| OwnerReference {
        api_version: owner.api_version.clone(),
        kind: app.kind.as_str().to_string(),
        name: app.name.clone(),
        uid: owner.uid.clone(),
        ..OwnerReference::default()
    });
    DynamicObject {
        types: Some(TypeMeta { api_version: "v1".into(), kind: "ConfigMap".into() }),
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(app.namespace.clone()),
            labels: Some(labels),
            owner_references: owner.map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        data: serde_json::json!({}),
    }
}

fn set_contents(config_map: &mut DynamicObject, fingerprint: &str, body: String) {
    config_map
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(FINGERPRINT_ANNOTATION.to_string(), fingerprint.to_string());
    config_map.data = serde_json::json!({ "data": { DATA_KEY: body } });
}

/// Drops the oldest deployments beyond [`MAX_KEPT`] or [`MAX_BYTES`].
fn cap(kept: &mut Vec<Deployment>) {
    if kept.len() > MAX_KEPT {
        kept.drain(..kept.len() - MAX_KEPT);
    }
    while kept.len() > 1 && serde_json::to_string(kept).map_or(0, |json| json.len()) > MAX_BYTES {
        kept.drain(..kept.len().div_ceil(10));
    }
}

/// The deployments a ledger holds; a ledger edited into something unreadable counts as empty
/// (the next write replaces it with what Flux still shows).
fn deployments_of(config_map: &DynamicObject) -> Vec<Deployment> {
    config_map
        .data
        .get("data")
        .and_then(|data| data.get(DATA_KEY))
        .and_then(|json| json.as_str())
        .and_then(|json| serde_json::from_slice(json.as_bytes()).ok())
        .unwrap_or_default()
}

fn annotation(metadata: &ObjectMeta) -> Option<String> {
    metadata.annotations.as_ref()?.get(FINGERPRINT_ANNOTATION).cloned()
}

fn app_of(metadata: &ObjectMeta) -> Option<AppId> {
    let labels = metadata.labels.as_ref()?;
    Some(AppId {
        kind: AppKind::of(labels.get(KIND_LABEL)?)?,
        namespace: metadata.namespace.clone()?,
        name: labels.get(APP_LABEL)?.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(first: u64) -> Deployment {
        Deployment {
            revision: format!("main@sha1:{first:040}"),
            digest: format!("sha256:{first}"),
            status: "ReconciliationSucceeded".into(),
            first: crate::duration::format_timestamp(first as i64),
            observed: false,
            last: crate::duration::format_timestamp(first as i64),
            duration: None,
            reconciliations: Some(1),
            release: None,
            commit: None,
        }
    }

    #[test]
    fn the_ledger_keeps_the_newest_within_its_caps() {
        let mut kept: Vec<Deployment> = (0..MAX_KEPT as u64 + 7).map(|at| deployment(1_000 + at)).collect();
        cap(&mut kept);
        assert_eq!(kept.len(), MAX_KEPT);
        assert_eq!(kept[0].first_seconds(), 1_007);
        assert!(serde_json::to_string(&kept).unwrap().len() <= MAX_BYTES);
    }

    #[test]
    fn a_ledger_is_named_and_labelled_after_its_app() {
        let app = AppId { kind: AppKind::HelmRelease, namespace: "team".into(), name: "db".into() };
        let owner = Owner { api_version: "helm.toolkit.fluxcd.io/v2".into(), uid: "uid-1".into() };
        let config_map = new_ledger(&app, &app.ledger_name(), &owner);
        assert_eq!(config_map.metadata.name.as_deref(), Some("kubectl-gitops-history-hr-db"));
        assert_eq!(app_of(&config_map.metadata), Some(app));
        let owner = &config_map.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.api_version.as_str()), ("HelmRelease", "helm.toolkit.fluxcd.io/v2"));
        let mut unreadable = config_map.clone();
        set_contents(&mut unreadable, "0", "{".into());
        assert!(deployments_of(&unreadable).is_empty());
        let mut readable = config_map.clone();
        set_contents(&mut readable, "0", serde_json::to_string(&[deployment(1_000)]).unwrap());
        assert_eq!(deployments_of(&readable), [deployment(1_000)]);
        assert_eq!(annotation(&readable.metadata).as_deref(), Some("0"));
    }
}
