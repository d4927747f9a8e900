//! Server-side apply of manifests (field manager `kubectl-gitops`), CRDs first, and waiting
//! for Flux objects to become Ready.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use kube::runtime::wait::{await_condition, conditions};

use crate::cluster::Cluster;
use crate::cluster::FIELD_MANAGER;
use crate::error::{Error, Result};

/// Kinds resolved through discovery, each once.
type Resolved = HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>;

/// Applies manifests with server-side apply, resolving each kind once through discovery. Its
/// clones share what was resolved, so that work running side by side asks once per kind too.
#[derive(Clone)]
pub struct Applier<'a> {
    cluster: &'a Cluster,
    resolved: Arc<Mutex<Resolved>>,
}

/// `kind/name` (with namespace) of an applied object, for progress lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// e.g. `Deployment`.
    pub kind: String,
    /// Namespace, for namespaced kinds.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{}/{}/{}", self.kind, namespace, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// Names an object from its manifest.
pub fn object_ref(document: &serde_json::Value) -> ObjectRef {
    let text = |pointer: &str| document.pointer(pointer).and_then(|v| v.as_str()).map(String::from);
    ObjectRef {
        kind: text("/kind").unwrap_or_default(),
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name").unwrap_or_default(),
    }
}

/// What a server-side dry run of one object answered.
#[derive(Debug, Clone, PartialEq)]
pub enum DryRun {
    /// The object as it would be after the apply, and as it is (`None`: it would be created).
    Applied { live: Option<serde_json::Value>, applied: serde_json::Value },
    /// The API server or an admission webhook refused it, with its message.
    Refused { live: Option<serde_json::Value>, message: String },
    /// This identity may read the object but not patch it, so not dry-run it either.
    NotAllowed { live: Option<serde_json::Value> },
}

/// Whether the API server refused the object itself: invalid (400, 422, an admission webhook's
/// denial), or of the wrong shape for its schema, which server-side apply answers with a 500
/// ("failed to create typed patch object").
fn is_refusal(status: &kube::core::Status) -> bool {
    matches!(status.code, 400 | 422)
        || (status.code == 500 && status.message.starts_with("failed to create typed patch object"))
}

/// The group, version and kind a document names.
fn gvk_of(document: &serde_json::Value) -> GroupVersionKind {
    let api_version = document.get("apiVersion").and_then(|v| v.as_str()).unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = document.get("kind").and_then(|v| v.as_str()).unwrap_or_default();
    GroupVersionKind::gvk(group, version, kind)
}

fn to_value(object: DynamicObject) -> Result<serde_json::Value> {
    serde_json::to_value(object).map_err(|error| Error::Internal(format!("an object the API server sent: {error}")))
}

/// Whether a manifest must be applied (and ready) before the others: CRDs and Namespaces.
pub fn is_foundation(document: &serde_json::Value) -> bool {
    matches!(document.get("kind").and_then(|k| k.as_str()), Some("CustomResourceDefinition" | "Namespace"))
}

impl<'a> Applier<'a> {
    /// An applier for a cluster.
    pub fn new(cluster: &'a Cluster) -> Applier<'a> {
        Applier { cluster, resolved: Arc::default() }
    }

    /// The cluster it applies to.
    pub fn cluster(&self) -> &'a Cluster {
        self.cluster
    }

    /// Applies documents in two stages: CRDs and Namespaces, wait until the CRDs are
    /// Established, then the rest.
    pub async fn apply_staged(&mut self, documents: &[serde_json::Value], timeout: Duration) -> Result<Vec<ObjectRef>> {
        let (foundation, rest): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) =
            documents.iter().partition(|document| is_foundation(document));
        let mut applied = Vec::new();
        for document in &foundation {
            applied.push(self.apply(document).await?);
        }
        let crds: Vec<String> = foundation
            .iter()
            .map(|document| object_ref(document))
            .filter(|object| object.kind == "CustomResourceDefinition")
            .map(|object| object.name)
            .collect();
        self.wait_established(&crds, timeout).await?;
        for document in rest {
            applied.push(self.apply(document).await?);
        }
        Ok(applied)
    }

    /// Applies one document.
    pub async fn apply(&mut self, document: &serde_json::Value) -> Result<ObjectRef> {
        let (object, api) = self.api_for(document).await?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        api.patch(&object.name, &params, &Patch::Apply(document)).await.map_err(|error| self.failed(&object, error))?;
        Ok(object)
    }

    /// What applying one document under the field manager `manager` would make of its object,
    /// as the API server answers a server-side dry run (its defaulting and admission included),
    /// beside the live object. Nothing is changed. A refusal of the object itself (invalid,
    /// denied by admission), and a `patch` this identity may not make, are answers, not errors.
    pub async fn dry_run(&mut self, document: &serde_json::Value, manager: &str) -> Result<DryRun> {
        let live = self.get(document).await?;
        let (object, api) = self.api_for(document).await?;
        let params = PatchParams { dry_run: true, ..PatchParams::apply(manager).force() };
        match api.patch(&object.name, &params, &Patch::Apply(document)).await {
            Ok(applied) => Ok(DryRun::Applied { live, applied: to_value(applied)? }),
            Err(kube::Error::Api(status)) if is_refusal(&status) => {
                Ok(DryRun::Refused { live, message: status.message })
            }
            Err(kube::Error::Api(status)) if status.code == 403 => Ok(DryRun::NotAllowed { live }),
            Err(error) => Err(self.failed(&object, error)),
        }
    }

    /// The live object a document names; `None` when there is none.
    pub async fn get(&mut self, document: &serde_json::Value) -> Result<Option<serde_json::Value>> {
        let (object, api) = self.api_for(document).await?;
        api.get_opt(&object.name).await.map_err(|error| self.cluster.error(error))?.map(to_value).transpose()
    }

    /// Whether the cluster serves the document's kind in namespaces.
    pub async fn is_namespaced(&mut self, document: &serde_json::Value) -> Result<bool> {
        Ok(self.resource(document).await?.1)
    }

    /// The API resource of the document's kind, and whether it lives in namespaces.
    pub async fn resource(&mut self, document: &serde_json::Value) -> Result<(ApiResource, bool)> {
        let (resource, capabilities) = self.resolve(&gvk_of(document)).await?;
        Ok((resource, capabilities.scope == Scope::Namespaced))
    }

    /// Whether the cluster serves the document's kind at all (a CRD may not be applied yet).
    pub async fn serves(&mut self, document: &serde_json::Value) -> Result<bool> {
        let gvk = gvk_of(document);
        if self.known(&gvk).is_some() {
            return Ok(true);
        }
        match kube::discovery::pinned_kind(&self.cluster.client, &gvk).await {
            Ok(found) => {
                self.resolved.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(gvk, found);
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(other) => Err(self.cluster.error(other)),
        }
    }

    /// The object a document names, and the API of its kind and namespace.
    async fn api_for(&mut self, document: &serde_json::Value) -> Result<(ObjectRef, Api<DynamicObject>)> {
        let object = object_ref(document);
        let (resource, capabilities) = self.resolve(&gvk_of(document)).await?;
        let api: Api<DynamicObject> = match (&capabilities.scope, &object.namespace) {
            (Scope::Namespaced, Some(namespace)) => {
                Api::namespaced_with(self.cluster.client.clone(), namespace, &resource)
            }
            (Scope::Namespaced, None) => Api::default_namespaced_with(self.cluster.client.clone(), &resource),
            (Scope::Cluster, _) => Api::all_with(self.cluster.client.clone(), &resource),
        };
        Ok((object, api))
    }

    async fn resolve(&mut self, gvk: &GroupVersionKind) -> Result<(ApiResource, ApiCapabilities)> {
        if let Some(found) = self.known(gvk) {
            return Ok(found);
        }
        let found = kube::discovery::pinned_kind(&self.cluster.client, gvk).await.map_err(|error| match error {
            kube::Error::Api(status) if status.code == 404 => Error::Negative {
                message: format!("the cluster does not serve {}/{} {}", gvk.group, gvk.version, gvk.kind),
                hint: Some("install the CRD that defines it first, or check the Flux version".into()),
            },
            other => self.cluster.error(other),
        })?;
        self.resolved.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(gvk.clone(), found.clone());
        Ok(found)
    }

    fn known(&self, gvk: &GroupVersionKind) -> Option<(ApiResource, ApiCapabilities)> {
        self.resolved.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(gvk).cloned()
    }

    fn failed(&self, object: &ObjectRef, error: kube::Error) -> Error {
        match self.cluster.error(error) {
            Error::Forbidden { message } => Error::Forbidden { message: format!("cannot apply {object}: {message}") },
            Error::Api(kube::Error::Api(status)) => Error::Negative {
                message: format!("cannot apply {object}: {}", status.message),
                hint: Some("the manifest is invalid for this cluster; check its apiVersion and fields".into()),
            },
            other => other,
        }
    }

    /// Waits until every named CRD is Established.
    pub async fn wait_established(&self, names: &[String], timeout: Duration) -> Result<()> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.cluster.client.clone());
        for name in names {
            let established = await_condition(crds.clone(), name, conditions::is_crd_established());
            match tokio::time::timeout(timeout, established).await {
                Ok(Ok(_)) => {}
                Ok(Err(kube::runtime::wait::Error::ProbeFailed(error))) => {
                    return Err(Error::Negative {
                        message: format!("waiting for CRD {name}: {}", crate::diagnostic::describe_watch(&error)),
                        hint: Some(format!("kubectl describe crd {name}")),
                    });
                }
                Err(_) => {
                    return Err(Error::Negative {
                        message: format!("CRD {name} is not Established after {}", crate::duration::format(timeout)),
                        hint: Some(format!("kubectl describe crd {name}")),
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crds_and_namespaces_come_first() {
        assert!(is_foundation(&json!({"kind": "CustomResourceDefinition"})));
        assert!(is_foundation(&json!({"kind": "Namespace"})));
        assert!(!is_foundation(&json!({"kind": "Deployment"})));
    }

    #[test]
    fn object_refs_read_like_kubectl() {
        let deployment = json!({"kind": "Deployment", "metadata": {"name": "x", "namespace": "flux-system"}});
        assert_eq!(object_ref(&deployment).to_string(), "Deployment/flux-system/x");
        let crd = json!({"kind": "CustomResourceDefinition", "metadata": {"name": "gitrepositories.source.toolkit.fluxcd.io"}});
        assert_eq!(object_ref(&crd).to_string(), "CustomResourceDefinition/gitrepositories.source.toolkit.fluxcd.io");
    }
}
