//! What Flux applied for one Kustomization, object by object: its build at the applied revision,
//! and for each HelmRelease in it the objects of its last Helm release, each with the field
//! manager that applies it and the fields it is told not to correct ([`super::ignore`]).

use serde_json::Value;

use super::{helm, ignore, text};
use crate::apply::Applier;
use crate::error::Result;
use crate::flux_cli::FluxCli;
use crate::preview::FLUX_FIELD_MANAGER;
use crate::preview::build::{self, SecretReads};
use crate::secret_value::SecretValues;

/// One object as Flux applied it.
#[derive(Debug, Clone)]
pub(super) struct Desired {
    /// The object, as applied.
    pub document: Value,
    /// The field manager that applies it (kustomize-controller's or helm-controller's).
    pub manager: &'static str,
    /// The HelmRelease (`NAMESPACE/NAME`) whose release made it.
    pub helm_release: Option<String>,
    /// The JSON pointers Flux is told not to correct in it.
    pub ignored: Vec<String>,
    /// Why it cannot be compared: its Helm release could not be read (`document` is then the
    /// HelmRelease).
    pub unreadable: Option<String>,
}

impl Desired {
    /// The object a HelmRelease's unreadable release stands for.
    fn unreadable(release: &Value, why: String) -> Desired {
        Desired {
            document: release.clone(),
            manager: helm::FIELD_MANAGER,
            helm_release: None,
            ignored: Vec::new(),
            unreadable: Some(why),
        }
    }
}

/// `kustomization` built from `root` (its source at the applied commit), and the objects of the
/// Helm releases of the HelmReleases it applies; or why its build failed.
pub(super) async fn desired(
    applier: &mut Applier<'_>,
    flux: &FluxCli,
    kustomization: &Value,
    root: &std::path::Path,
    secrets: &SecretValues,
) -> Result<std::result::Result<Vec<Desired>, String>> {
    let source_dir = match build::source_dir(root, kustomization["spec"]["path"].as_str().unwrap_or_default()) {
        Ok(dir) => dir,
        Err(why) => return Ok(Err(why)),
    };
    let rules = match ignore::IgnoreRules::parse(&kustomization["spec"]["ignore"]) {
        Ok(rules) => rules,
        Err(why) => return Ok(Err(format!("its spec.ignore: {why}"))),
    };
    // The Kustomization as the cluster holds it: its controller reads these Secrets already.
    let resolved = build::resolved(applier.cluster(), kustomization, SecretReads::Recorded(secrets)).await?;
    let built = match build::build(flux, &resolved.kustomization, root, &source_dir).await? {
        Ok(built) => built,
        Err(why) => return Ok(Err(why)),
    };
    let mut desired: Vec<Desired> = built
        .iter()
        .map(|document| Desired {
            document: document.clone(),
            manager: FLUX_FIELD_MANAGER,
            helm_release: None,
            ignored: owned(rules.paths_for(document)),
            unreadable: None,
        })
        .collect();
    // Each HelmRelease's objects, as its last Helm release applied them.
    for release in built.iter().filter(|document| helm::is_helm_release(document)) {
        let name = format!("{}/{}", text(release, "/metadata/namespace"), text(release, "/metadata/name"));
        let rules = match ignore::IgnoreRules::parse(&release["spec"]["driftDetection"]["ignore"]) {
            Ok(rules) => rules,
            Err(why) => {
                desired.push(Desired::unreadable(release, format!("its spec.driftDetection.ignore: {why}")));
                continue;
            }
        };
        match helm::release_objects(applier, release).await? {
            Ok(documents) => desired.extend(documents.into_iter().map(|document| Desired {
                ignored: owned(rules.paths_for(&document)),
                document,
                manager: helm::FIELD_MANAGER,
                helm_release: Some(name.clone()),
                unreadable: None,
            })),
            Err(why) => desired.push(Desired::unreadable(release, why)),
        }
    }
    Ok(Ok(desired))
}

fn owned(paths: Vec<&str>) -> Vec<String> {
    paths.into_iter().map(String::from).collect()
}
