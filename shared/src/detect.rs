//! What a cluster holds: nothing reachable, plain Kubernetes, Flux, or Flux with our layout.
//!
//! One discovery round trip and a handful of GETs; nothing lists every object. The steps:
//! 1. `GET /version`: if this fails the cluster is unreachable.
//! 2. Aggregated discovery (`GET /apis`) and the namespaces labelled
//!    `app.kubernetes.io/part-of=flux`, concurrently.
//! 3. In the Flux namespace (the labelled one, else `flux-system` if it exists; of several
//!    labelled ones the one `-n` names, else an error naming them): the Flux Deployments (one
//!    LIST by label) and our install record ConfigMap (one GET).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde::Serialize;

use crate::cluster::{Cluster, DEFAULT_FLUX_NAMESPACE, is_forbidden, is_not_found};
use crate::error::{Error, Result};
use crate::flux::api::ServedApis;
use crate::flux::{self, COMPONENT_LABEL, PART_OF_LABEL, PART_OF_VALUE, VERSION_LABEL};
use crate::record::{self, InstallRecord};

/// The one-word answer of `kubectl gitops detect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClusterState {
    /// The API server did not answer, or refused our credentials.
    Unreachable,
    /// Kubernetes without Flux.
    Unmodified,
    /// Flux is installed, but not by kubectl-gitops.
    Flux2,
    /// Flux with our install record.
    Gitops,
}

impl ClusterState {
    /// The word printed on stdout.
    pub fn word(self) -> &'static str {
        match self {
            ClusterState::Unreachable => "unreachable",
            ClusterState::Unmodified => "unmodified",
            ClusterState::Flux2 => "flux2",
            ClusterState::Gitops => "gitops",
        }
    }
}

/// How the Flux version was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VersionSource {
    /// The `app.kubernetes.io/version` label of the Flux namespace.
    NamespaceLabel,
    /// Guessed from the source-controller image tag (only the minor line is known).
    SourceControllerImage,
}

/// The Flux installation found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FluxInstallation {
    /// The namespace Flux runs in.
    pub namespace: String,
    /// The Flux version, e.g. `v2.9.3`, or `v2.9` when guessed.
    pub version: Option<String>,
    /// Where the version came from.
    #[serde(rename = "versionSource")]
    pub version_source: Option<VersionSource>,
    /// True when the version is a guess from an image tag.
    pub guessed: bool,
}

/// One Flux controller Deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Controller {
    /// e.g. `source-controller`.
    pub name: String,
    /// The container image tag, e.g. `v1.9.3`.
    pub tag: Option<String>,
    /// Ready replicas equal desired replicas (and desired is at least one).
    pub ready: bool,
}

/// Everything `detect` found. `-o json|yaml` prints this; docs/output.md documents it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Detection {
    /// The one-word state.
    pub state: ClusterState,
    /// The API server URL.
    pub server: String,
    /// The kubeconfig context.
    pub context: Option<String>,
    /// The Kubernetes server version, e.g. `v1.36.3`.
    #[serde(rename = "kubernetesVersion")]
    pub kubernetes_version: Option<String>,
    /// The Flux installation, when there is one.
    pub flux: Option<FluxInstallation>,
    /// Flux controller Deployments in the Flux namespace.
    pub controllers: Vec<Controller>,
    /// Served versions per Flux kind, preferred first.
    #[serde(rename = "apiVersions")]
    pub api_versions: ServedApis,
    /// Our install record, when the layout is installed.
    pub gitops: Option<InstallRecord>,
    /// Anything odd worth a look.
    pub warnings: Vec<String>,
    /// Why the cluster is unreachable.
    pub error: Option<String>,
    /// The same, kept to hand back as a command's own error (not printed twice).
    #[serde(skip)]
    pub(crate) unreached: Option<Unreached>,
}

impl crate::output::Kind for Detection {
    const KIND: &'static str = "Detection";
}

/// What made a cluster unreachable: the first request's error, of one of the kinds that make the
/// state `unreachable`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unreached {
    Transport { reason: String },
    Unauthorized,
    Forbidden { message: String },
}

impl Detection {
    /// The error a command that needs the cluster stops with when it is unreachable: the first
    /// request's own (its exit code and hint included); `None` for a reachable cluster.
    pub fn unreachable_error(&self) -> Option<Error> {
        let server = self.server.clone();
        Some(match self.unreached.clone()? {
            Unreached::Transport { reason } => Error::Unreachable { server, reason },
            Unreached::Unauthorized => Error::Unauthorized { server },
            Unreached::Forbidden { message } => Error::Forbidden { message },
        })
    }

    fn unreachable(cluster: &Cluster, error: &Error) -> Detection {
        let unreached = match error {
            Error::Unreachable { reason, .. } => Unreached::Transport { reason: reason.clone() },
            Error::Unauthorized { .. } => Unreached::Unauthorized,
            Error::Forbidden { message } => Unreached::Forbidden { message: message.clone() },
            other => Unreached::Transport { reason: other.to_string() },
        };
        Detection {
            state: ClusterState::Unreachable,
            server: cluster.server.clone(),
            context: cluster.context.clone(),
            kubernetes_version: None,
            flux: None,
            controllers: Vec::new(),
            api_versions: ServedApis::default(),
            gitops: None,
            warnings: Vec::new(),
            error: Some(error.to_string()),
            unreached: Some(unreached),
        }
    }
}

/// Detects what the cluster holds. Only transport and auth failures on the first request make
/// the state `unreachable`; later failures are returned as errors.
pub async fn detect(cluster: &Cluster) -> Result<Detection> {
    let client = &cluster.client;
    let kubernetes_version = match client.apiserver_version().await {
        Ok(info) => info.git_version,
        Err(error) => {
            let error = cluster.error(error);
            return match error {
                Error::Unreachable { .. } | Error::Unauthorized { .. } | Error::Forbidden { .. } => {
                    Ok(Detection::unreachable(cluster, &error))
                }
                other => Err(other),
            };
        }
    };

    let namespaces = Api::<Namespace>::all(client.clone());
    let flux_selector = ListParams::default().labels(&format!("{PART_OF_LABEL}={PART_OF_VALUE}"));
    let (discovery, flux_namespaces) =
        tokio::join!(client.list_api_groups_aggregated(), namespaces.list_metadata(&flux_selector));
    let api_versions = ServedApis::from_discovery(&discovery.map_err(|error| cluster.error(error))?);
    let mut warnings = Vec::new();

    let labelled: Vec<(String, Option<String>)> = match flux_namespaces {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|ns| {
                let version = ns.metadata.labels.as_ref().and_then(|labels| labels.get(VERSION_LABEL).cloned());
                ns.metadata.name.map(|name| (name, version))
            })
            .collect(),
        Err(error) if is_forbidden(&error) => {
            warnings.push("not allowed to list namespaces; looked only in flux-system".to_string());
            Vec::new()
        }
        Err(error) => return Err(cluster.error(error)),
    };
    let flux_namespace = match chosen_flux_namespace(labelled, &cluster.namespace)? {
        Some(found) => Some(found),
        None => match namespaces.get_metadata_opt(DEFAULT_FLUX_NAMESPACE).await {
            Ok(Some(_)) => Some((DEFAULT_FLUX_NAMESPACE.to_string(), None)),
            Ok(None) => None,
            Err(error) if is_forbidden(&error) => None,
            Err(error) => return Err(cluster.error(error)),
        },
    };

    let mut flux = None;
    let mut controllers = Vec::new();
    let mut gitops = None;
    if let Some((namespace, label_version)) = flux_namespace {
        let (found_controllers, found_record) =
            tokio::join!(read_controllers(cluster, &namespace), read_record(cluster, &namespace));
        controllers = found_controllers?;
        gitops = found_record?;
        flux = Some(flux_installation(namespace, label_version, &controllers));
    }

    if flux.is_none() && !api_versions.is_empty() {
        warnings.push("Flux CRDs are installed but no Flux namespace was found".to_string());
    }
    if flux.is_some() && api_versions.is_empty() {
        warnings.push("a Flux namespace exists but no Flux CRDs are served".to_string());
    }
    if flux.is_some() && !api_versions.is_empty() && controllers.is_empty() {
        warnings.push("Flux CRDs are installed but no Flux controller Deployments were found".to_string());
    }
    for controller in controllers.iter().filter(|c| !c.ready) {
        warnings.push(format!("{} is not ready", controller.name));
    }

    let state = match (&gitops, &flux) {
        (Some(_), _) => ClusterState::Gitops,
        (None, Some(_)) => ClusterState::Flux2,
        (None, None) if !api_versions.is_empty() => ClusterState::Flux2,
        (None, None) => ClusterState::Unmodified,
    };
    Ok(Detection {
        state,
        server: cluster.server.clone(),
        context: cluster.context.clone(),
        kubernetes_version: Some(kubernetes_version),
        flux,
        controllers,
        api_versions,
        gitops,
        warnings,
        error: None,
        unreached: None,
    })
}

/// The one labelled Flux namespace; among several, the one `-n` (or the context) names, else an
/// error naming them all: which installation's record and credentials a command uses is never
/// a silent choice.
fn chosen_flux_namespace(
    mut labelled: Vec<(String, Option<String>)>,
    asked: &str,
) -> Result<Option<(String, Option<String>)>> {
    if labelled.len() < 2 {
        return Ok(labelled.pop());
    }
    if let Some(at) = labelled.iter().position(|(name, _)| name == asked) {
        return Ok(Some(labelled.swap_remove(at)));
    }
    let names: Vec<&str> = labelled.iter().map(|(name, _)| name.as_str()).collect();
    Err(Error::usage(
        format!("this cluster has {} Flux installations: namespaces {}", names.len(), names.join(", ")),
        format!("pass -n NAMESPACE to say which one, e.g. -n {}", names[0]),
    ))
}

fn flux_installation(namespace: String, label_version: Option<String>, controllers: &[Controller]) -> FluxInstallation {
    if let Some(version) = label_version {
        return FluxInstallation {
            namespace,
            version: Some(version),
            version_source: Some(VersionSource::NamespaceLabel),
            guessed: false,
        };
    }
    let guess = controllers
        .iter()
        .find(|c| c.name == "source-controller")
        .and_then(|c| c.tag.as_deref())
        .and_then(flux::flux_line_from_source_controller);
    FluxInstallation {
        namespace,
        version_source: guess.as_ref().map(|_| VersionSource::SourceControllerImage),
        guessed: guess.is_some(),
        version: guess,
    }
}

/// The Flux controller Deployments in a namespace (one LIST by label), sorted by name.
///
/// Read as `DynamicObject`s: the typed Deployment's parser (its pod spec, volumes, …) weighs about
/// 150 KB in every binary that detects, for the four fields read here.
pub async fn read_controllers(cluster: &Cluster, namespace: &str) -> Result<Vec<Controller>> {
    let resource = ApiResource::erase::<Deployment>(&());
    let deployments = Api::<DynamicObject>::namespaced_with(cluster.client.clone(), namespace, &resource);
    let list = match deployments.list(&ListParams::default().labels(&format!("{PART_OF_LABEL}={PART_OF_VALUE}"))).await
    {
        Ok(list) => list,
        Err(error) if is_forbidden(&error) => return Ok(Vec::new()),
        Err(error) => return Err(cluster.error(error)),
    };
    let mut controllers: Vec<Controller> = list.items.iter().filter_map(controller_from_deployment).collect();
    controllers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(controllers)
}

fn controller_from_deployment(deployment: &DynamicObject) -> Option<Controller> {
    let labels = deployment.metadata.labels.as_ref();
    let name =
        labels.and_then(|labels| labels.get(COMPONENT_LABEL).cloned()).or_else(|| deployment.metadata.name.clone())?;
    let containers = deployment.data.pointer("/spec/template/spec/containers").and_then(|c| c.as_array());
    let image = containers.and_then(|containers| {
        let named = |container: &&serde_json::Value| container.get("name").and_then(|n| n.as_str()) == Some("manager");
        containers.iter().find(named).or(containers.first())?.get("image")?.as_str()
    });
    let tag = image.and_then(image_tag).map(String::from);
    let desired = deployment.data.pointer("/spec/replicas").and_then(|r| r.as_i64()).unwrap_or(1);
    let ready_replicas = deployment.data.pointer("/status/readyReplicas").and_then(|r| r.as_i64()).unwrap_or(0);
    Some(Controller { name, tag, ready: desired > 0 && ready_replicas >= desired })
}

/// The tag of an image reference: `ghcr.io/fluxcd/source-controller:v1.9.3@sha256:…` → `v1.9.3`.
fn image_tag(image: &str) -> Option<&str> {
    let without_digest = image.split('@').next()?;
    let last_segment = without_digest.rsplit('/').next()?;
    last_segment.split_once(':').map(|(_, tag)| tag)
}

/// Our install record in `namespace`, `None` when there is none or it may not be read.
pub(crate) async fn read_record(cluster: &Cluster, namespace: &str) -> Result<Option<InstallRecord>> {
    let configmaps = Api::<ConfigMap>::namespaced(cluster.client.clone(), namespace);
    match configmaps.get_opt(record::CONFIGMAP_NAME).await {
        Ok(found) => Ok(found.as_ref().and_then(InstallRecord::from_configmap)),
        Err(error) if is_forbidden(&error) || is_not_found(&error) => Ok(None),
        Err(error) => Err(cluster.error(error)),
    }
}

#[cfg(test)]
mod tests;
