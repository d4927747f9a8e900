//! The ImageUpdateAutomations that would undo a rollback: those that write to the repository it
//! commits to, refused unless `--suspend-image-automation` suspends them.

use kube::api::{Api, DynamicObject, ListParams};

use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::output::Printer;
use crate::preview::SourceRef;

/// The ImageUpdateAutomations that write to the app's repository and run: they would move the
/// image forward again after the rollback.
pub(super) struct ImageAutomations {
    api: Option<Api<DynamicObject>>,
    /// Their names, in the source's namespace.
    pub(super) names: Vec<String>,
}

impl ImageAutomations {
    /// Suspends (or resumes) each of them, as `flux suspend image update` does.
    pub(super) async fn set_suspended(&self, cluster: &Cluster, suspend: bool, printer: &Printer) -> Result<()> {
        let Some(api) = &self.api else { return Ok(()) };
        for name in &self.names {
            crate::flux::reconcile::set_suspended(api, name, suspend).await.map_err(|error| cluster.error(error))?;
            let done = if suspend { "suspended" } else { "resumed" };
            printer.done(&format!("{done} ImageUpdateAutomation {name}"));
        }
        Ok(())
    }
}

/// The running ImageUpdateAutomations that write to `source`; refused unless `suspend` (the
/// flag that suspends them) is given.
pub(super) async fn image_automations(
    cluster: &Cluster,
    source: &SourceRef,
    suspend: bool,
) -> Result<ImageAutomations> {
    let none = ImageAutomations { api: None, names: Vec::new() };
    let Ok(group) = kube::discovery::group(&cluster.client, "image.toolkit.fluxcd.io").await else { return Ok(none) };
    let Some((resource, _)) = group.recommended_kind("ImageUpdateAutomation") else { return Ok(none) };
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), source.namespace(), &resource);
    let listed = api.list(&ListParams::default()).await.map_err(|error| cluster.error(error))?;
    let names: Vec<String> = listed
        .items
        .into_iter()
        .filter(|automation| {
            let spec = &automation.data["spec"];
            !spec["suspend"].as_bool().unwrap_or(false)
                && spec["sourceRef"]["name"] == source.name()
                && spec["sourceRef"]["kind"] != "OCIRepository"
        })
        .filter_map(|automation| automation.metadata.name)
        .collect();
    if let (Some(name), false) = (names.first(), suspend) {
        return Err(Error::usage(
            format!(
                "ImageUpdateAutomation {}/{name} writes to {source}: it would move the image forward again after the rollback",
                source.namespace()
            ),
            format!(
                "suspend it first (`flux suspend image update {name} -n {}`), or pass --suspend-image-automation",
                source.namespace()
            ),
        ));
    }
    Ok(ImageAutomations { api: Some(api), names })
}
