//! Flux objects as etcd stores them: which CRDs still record an old version in
//! `status.storedVersions` (or hold objects whose managed fields name one), and the migration
//! that rewrites them, as `flux migrate` does in cluster mode. An API server refuses a CRD that
//! drops a version still listed in `storedVersions` (flux2 #5598, #2743, #3362, #3622), so an
//! upgrade migrates before the new CRDs arrive, and again after, for the next one.

use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::{Deserialize, Serialize};

use super::api::is_flux_group;
use crate::cluster::Cluster;
use crate::error::Result;

/// How long a list waits out 429s (the storage of CRDs created a moment ago initializing).
const BUSY_PATIENCE: std::time::Duration = std::time::Duration::from_secs(20);

/// Every object of a kind, waiting out 429s.
async fn list_all(objects: &Api<DynamicObject>) -> kube::Result<kube::api::ObjectList<DynamicObject>> {
    crate::cluster::retry_busy(BUSY_PATIENCE, || {
        let objects = objects.clone();
        async move { objects.list(&ListParams::default()).await }
    })
    .await
}

/// The CustomResourceDefinitions of the cluster, read as [`Crd`]s.
pub(crate) fn crds(cluster: &Cluster) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    };
    Api::all_with(cluster.client.clone(), &resource)
}

/// What we read of a CustomResourceDefinition: its group, names, versions and stored versions.
/// Not k8s-openapi's typed CRD, whose parser of every OpenAPI schema field was about 50 KB of
/// each binary that can run an upgrade step, for these few fields. Every field may be absent.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Crd {
    pub(crate) spec: CrdSpec,
    pub(crate) status: CrdStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CrdSpec {
    pub(crate) group: String,
    pub(crate) names: CrdNames,
    pub(crate) versions: Vec<CrdVersion>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CrdNames {
    pub(crate) kind: String,
    pub(crate) plural: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CrdVersion {
    pub(crate) name: String,
    pub(crate) served: bool,
    pub(crate) storage: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CrdStatus {
    pub(crate) stored_versions: Vec<String>,
}

impl Crd {
    /// The CRD in `object` (a CRD the API server returned, so a field that does not parse reads
    /// as absent).
    pub(crate) fn of(object: DynamicObject) -> Crd {
        serde_json::from_value(object.data).unwrap_or_default()
    }
}

/// One Flux CRD and what its stored objects need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredKind {
    /// The CRD's name, e.g. `alerts.notification.toolkit.fluxcd.io`.
    pub crd: String,
    /// The API group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The plural resource name.
    pub plural: String,
    /// The version the API server stores now.
    pub storage: String,
    /// The versions served now.
    pub served: Vec<String>,
    /// `status.storedVersions`.
    pub stored: Vec<String>,
    /// Objects whose managed fields name another version than `storage`, as `namespace/name`.
    pub stale_objects: Vec<String>,
    /// How many objects there are.
    pub objects: usize,
}

impl StoredKind {
    /// Whether anything is stored or managed at another version than the storage version.
    pub fn needs_migration(&self) -> bool {
        self.stored.iter().any(|version| *version != self.storage) || !self.stale_objects.is_empty()
    }

    /// The words a plan shows for the migration.
    pub fn describe(&self) -> String {
        format!(
            "rewrite {} stored {} object(s) at {}/{} and set CRD {} status.storedVersions to [{}] (now [{}])",
            self.objects,
            self.kind,
            self.group,
            self.storage,
            self.crd,
            self.storage,
            self.stored.join(", ")
        )
    }

    fn resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&self.group, &self.storage, &self.kind), &self.plural)
    }
}

/// Every Flux CRD of the cluster with what it stores (read-only: CRDs and a list per kind).
pub async fn read(cluster: &Cluster) -> Result<Vec<StoredKind>> {
    let list = crds(cluster).list(&ListParams::default()).await.map_err(|error| cluster.error(error))?;
    let mut kinds = Vec::new();
    for object in list.items {
        let name = object.metadata.name.clone().unwrap_or_default();
        let crd = Crd::of(object);
        if !is_flux_group(&crd.spec.group) && !crd.spec.group.ends_with(".fluxcd.io") {
            continue;
        }
        let Some(storage) = crd.spec.versions.iter().find(|v| v.storage).map(|v| v.name.clone()) else { continue };
        let mut kind = StoredKind {
            crd: name,
            served: crd.spec.versions.iter().filter(|v| v.served).map(|v| v.name.clone()).collect(),
            group: crd.spec.group,
            kind: crd.spec.names.kind,
            plural: crd.spec.names.plural,
            stored: crd.status.stored_versions,
            storage,
            stale_objects: Vec::new(),
            objects: 0,
        };
        let objects: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &kind.resource());
        let listed = list_all(&objects).await;
        let items = listed.map_err(|error| cluster.error(error))?.items;
        kind.objects = items.len();
        let wanted = format!("{}/{}", kind.group, kind.storage);
        kind.stale_objects = items
            .iter()
            .filter(|object| {
                object
                    .metadata
                    .managed_fields
                    .iter()
                    .flatten()
                    .any(|entry| entry.api_version.as_deref() != Some(&wanted))
            })
            .map(|object| {
                format!(
                    "{}/{}",
                    object.metadata.namespace.as_deref().unwrap_or_default(),
                    object.metadata.name.as_deref().unwrap_or_default()
                )
            })
            .collect();
        kinds.push(kind);
    }
    kinds.sort_by(|a, b| a.crd.cmp(&b.crd));
    Ok(kinds)
}

/// Rewrites every object of the kind at its storage version (a no-op patch makes the API server
/// encode it again; managed fields naming another version are moved to it, as `flux migrate`
/// does), then sets `status.storedVersions` to the storage version alone. Returns how many
/// objects were rewritten.
pub async fn migrate(cluster: &Cluster, kind: &StoredKind) -> Result<usize> {
    let resource = kind.resource();
    let all: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource);
    let listed = list_all(&all).await;
    let items = listed.map_err(|error| cluster.error(error))?.items;
    let wanted = format!("{}/{}", kind.group, kind.storage);
    for object in &items {
        let name = object.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match &object.metadata.namespace {
            Some(namespace) => Api::namespaced_with(cluster.client.clone(), namespace, &resource),
            None => Api::all_with(cluster.client.clone(), &resource),
        };
        let mut entries = object.metadata.managed_fields.clone().unwrap_or_default();
        let stale = entries.iter().any(|entry| entry.api_version.as_deref() != Some(&wanted));
        // A merge patch replaces the whole list; with nothing stale, the empty patch still
        // makes the API server write the object again, at the storage version.
        let body = if stale {
            for entry in &mut entries {
                entry.api_version = Some(wanted.clone());
            }
            serde_json::json!({"metadata": {"managedFields": entries}})
        } else {
            serde_json::json!({})
        };
        let patched = api.patch(&name, &PatchParams::default(), &Patch::Merge(&body)).await;
        match patched {
            Ok(_) => {}
            // Deleted meanwhile: nothing left to rewrite.
            Err(error) if crate::cluster::is_not_found(&error) => {}
            Err(error) => return Err(cluster.error(error)),
        }
    }
    if kind.stored != [kind.storage.clone()] {
        let status = serde_json::json!({"status": {"storedVersions": [kind.storage]}});
        crds(cluster)
            .patch_status(&kind.crd, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .map_err(|error| cluster.error(error))?;
    }
    Ok(items.len())
}
