//! `kubectl gitops component list|upgrade`: components shipped as OCI artifacts (`install
//! --component oci://…`), each an OCIRepository and the Kustomization that applies it, labelled
//! `kubectl-gitops.io/component`. An upgrade moves `.spec.ref.tag` through git, the way the
//! pipeline-controller proposal upgrades: Flux pulls the new artifact and applies it, CRDs included.

mod args;

use std::collections::BTreeMap;

use kube::Api;
use kube::api::{DynamicObject, ListParams};
use serde::Serialize;

pub use self::args::{ComponentUpgradeArgs, ComponentUpgradeRequest};
use crate::change::recorded::{self, Replanned};
use crate::change::{Awaits, Change, Context, Target, clone, context, drive, target_clusters};
use crate::cli::OutputFormat;
use crate::error::{Error, Result};
use crate::flux::api;
use crate::flux::bootstrap::COMPONENT_LABEL;
use crate::flux::status::FluxObject;
use crate::git::Checkout;
use crate::output::table::Table;
use crate::output::{self, Printer};
use crate::plan;
use crate::yaml;

/// One component as `component list` shows it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentRow {
    /// The component's name.
    pub name: String,
    /// `oci://registry/repository`.
    pub url: String,
    /// The tag it follows.
    pub tag: String,
    /// The artifact revision Flux fetched (`<tag>@sha256:<digest>`).
    pub revision: String,
    /// The manifest digest of the artifact Flux fetched (what `artifact push` printed).
    pub digest: String,
    /// The revision its Kustomization last applied.
    pub applied: String,
    /// Whether the Kustomization is Ready (what it applied is healthy, as it waits for it).
    pub ready: bool,
    /// The Ready condition's message.
    pub message: String,
}

impl crate::output::Kind for ComponentRow {
    const KIND: &'static str = "Component";
}

/// `component list`: the components in the Flux namespace, with what Flux fetched and applied.
pub async fn list(target: &Target, listing: &Listing, printer: &Printer) -> Result<String> {
    let Listing { format, headers, .. } = *listing;
    output::ensure_supported(format, crate::cli::STRUCTURED)?;
    let context = context(target, &Default::default(), false, printer).await?;
    let rows = rows(&context, listing.labels.as_deref()).await?;
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::render_structured(&output::list(&rows), format),
        _ if rows.is_empty() => {
            printer.warning(&format!(
                "no components in {} (install adds them with --component oci://…)",
                context.namespace
            ));
            Ok(String::new())
        }
        _ => {
            let mut table = Table::new(["NAME", "TAG", "REVISION", "APPLIED", "READY", "MESSAGE"]);
            for row in &rows {
                table.push([
                    row.name.clone(),
                    row.tag.clone(),
                    row.revision.clone(),
                    row.applied.clone(),
                    if row.ready { "True".to_string() } else { "False".to_string() },
                    row.message.clone(),
                ]);
            }
            Ok(table.render(headers))
        }
    }
}

/// What `component list` shows, and how.
pub struct Listing {
    /// `-o`.
    pub format: OutputFormat,
    /// Column headers (`--no-headers` turns them off).
    pub headers: bool,
    /// `-l`: only the components whose OCIRepository has these labels.
    pub labels: Option<String>,
}

/// The components: their OCIRepositories (those `labels` select too, when given) and the
/// Kustomizations that apply them.
async fn rows(context: &Context, labels: Option<&str>) -> Result<Vec<ComponentRow>> {
    let cluster = context.cluster()?;
    let sources_selector = match labels {
        Some(labels) => format!("{COMPONENT_LABEL},{labels}"),
        None => COMPONENT_LABEL.to_string(),
    };
    let list = |kind: &'static api::FluxKind, selector: &str| {
        let labelled = ListParams::default().labels(selector);
        async move {
            let Some(version) = context.versions.lookup(kind) else { return Ok(Vec::new()) };
            let objects: Api<DynamicObject> =
                Api::namespaced_with(cluster.client.clone(), &context.namespace, &kind.at(version));
            objects.list(&labelled).await.map(|list| list.items).map_err(|error| cluster.error(error))
        }
    };
    let sources = list(&api::OCI_REPOSITORY, &sources_selector).await?;
    let applied: BTreeMap<String, DynamicObject> = list(&api::KUSTOMIZATION, COMPONENT_LABEL)
        .await?
        .into_iter()
        .map(|object| (object.name().to_string(), object))
        .collect();
    let text = |object: &DynamicObject, pointer: &'static str| {
        object.data.pointer(pointer).and_then(|value| value.as_str()).unwrap_or_default().to_string()
    };
    let mut rows: Vec<ComponentRow> = sources
        .iter()
        .map(|source| {
            let kustomization = applied.get(source.name());
            let ready = kustomization.and_then(|k| k.ready_condition());
            ComponentRow {
                name: source.name().to_string(),
                url: text(source, "/spec/url"),
                tag: text(source, "/spec/ref/tag"),
                revision: source.artifact_revision().unwrap_or_default().to_string(),
                // An OCIRepository's revision is `<tag>@<manifest digest>`; status.artifact.digest
                // is source-controller's own digest of the tarball it stored.
                digest: source
                    .artifact_revision()
                    .and_then(|revision| revision.rsplit_once('@'))
                    .map(|(_, digest)| digest.to_string())
                    .unwrap_or_default(),
                applied: kustomization.and_then(|k| k.last_applied_revision()).unwrap_or_default().to_string(),
                ready: ready.is_some_and(|ready| ready.is_true()),
                message: match (kustomization, ready) {
                    (None, _) => "no Kustomization applies it".to_string(),
                    (Some(_), Some(ready)) => ready.message().to_string(),
                    (Some(_), None) => "not reconciled yet".to_string(),
                },
            }
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// `component upgrade`: `.spec.ref.tag` moved in `<cluster>/components/<name>.yaml`, committed
/// (or through a pull request) on the one git write path.
pub async fn upgrade(request: &ComponentUpgradeRequest, target: &Target, printer: &Printer) -> Result<String> {
    let context = context(target, &request.repo, true, printer).await?;
    let checkout = clone(context.repo()?).await?;
    let replan =
        |checkout: &Checkout| upgrade_changes(&request.name, &request.tag, &request.clusters, &context, checkout);
    let files = replan(&checkout.files())?;
    let cluster = context.record().map_or("the cluster", |record| record.path.as_str());
    let change = Change {
        noun: "component",
        verb: "upgrade",
        done: "upgraded",
        app: &request.name,
        message: request
            .delivery
            .message
            .clone()
            .unwrap_or_else(|| format!("Upgrade component {} to {} in {cluster}", request.name, request.tag)),
        files,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects: Vec::new(),
        wait: None,
        notes: Vec::new(),
        awaits: Awaits::one(&context.namespace, &request.name, true, None),
        new_repo: None,
        request: upgrade_words(request),
        already_there: Some(format!("component {} follows {} already; nothing to change\n", request.name, request.tag)),
    };
    drive(&context, &request.delivery, change, Some(checkout), &replan).await
}

/// The file changes of an upgrade of component `name` to `tag` in `clusters` (default: the
/// current cluster): `.spec.ref.tag` moved in `<cluster>/components/<name>.yaml`.
fn upgrade_changes(
    name: &str,
    tag: &str,
    clusters: &[String],
    context: &Context,
    checkout: &Checkout,
) -> Result<Vec<plan::FileChange>> {
    let mut wanted = BTreeMap::new();
    for cluster in &target_clusters(checkout, clusters, context.record())? {
        let path = format!("{}/components/{name}.yaml", cluster.path);
        let existing = plan::read(checkout, &path)?.ok_or_else(|| {
            Error::usage(
                format!("component {name} is not in the config repo for {}", cluster.path),
                "`kubectl gitops component list` shows the components; `kubectl gitops install --component oci://…` adds one",
            )
        })?;
        wanted.insert(path.clone(), with_tag(&existing, tag, &path)?);
    }
    plan::diff(checkout, &wanted, &[])
}

/// The words that record a `component upgrade` in its pull request.
fn upgrade_words(request: &ComponentUpgradeRequest) -> Vec<String> {
    let mut words = ["component", "upgrade", &request.name, "--tag", &request.tag].map(String::from).to_vec();
    words.extend(recorded::cluster_words(&request.clusters));
    words
}

/// A recorded `component upgrade` (`args`: its words after the verb; `words`: all of them),
/// planned again on `base`.
pub(crate) fn replan(args: &[String], words: &[String], context: &Context, base: &Checkout) -> Result<Replanned> {
    let request = recorded::parse_args::<ComponentUpgradeArgs>(args, words)?.request()?;
    let files = upgrade_changes(&request.name, &request.tag, &request.clusters, context, base)?;
    Ok(Replanned::of("upgrade", &request.name, files))
}

/// The component file with its OCIRepository's `.spec.ref.tag` set to `tag`.
fn with_tag(text: &str, tag: &str, path: &str) -> Result<String> {
    let unreadable = |why: String| {
        Error::usage(
            format!("{path} in the config repo is not a component file: {why}"),
            "it should hold the OCIRepository and Kustomization `install --component` wrote; fix or re-create it",
        )
    };
    let mut documents = yaml::documents_from_str(text).map_err(unreadable)?;
    let source = documents
        .iter_mut()
        .find(|document| document["kind"] == "OCIRepository")
        .ok_or_else(|| unreadable("it has no OCIRepository".into()))?;
    source["spec"]["ref"] = serde_json::json!({"tag": tag});
    yaml::to_documents(&documents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flux::bootstrap::OciComponent;

    #[test]
    fn an_upgrade_moves_only_the_tag() {
        let component =
            OciComponent::parse("oci://127.0.0.1:5000/manifests/widgets:v0.0.1?path=./config/default").unwrap();
        let before = component.manifest("flux-system", "v1").unwrap();
        let after = with_tag(&before, "v0.0.2", "clusters/dev/components/widgets.yaml").unwrap();
        let changed: Vec<_> = before.lines().zip(after.lines()).filter(|(a, b)| a != b).collect();
        assert_eq!(changed, [("    tag: v0.0.1", "    tag: v0.0.2")]);
        assert_eq!(before.lines().count(), after.lines().count());
        assert!(with_tag("kind: ConfigMap\n", "v1", "x.yaml").is_err());
    }

    #[test]
    fn a_recorded_upgrade_parses_back_to_the_same_request() {
        let given = [
            "component",
            "upgrade",
            "widgets",
            "--cluster-name",
            "dev",
            "--tag",
            "v0.0.2",
            "--cluster-name",
            "prod",
            "--pr",
        ]
        .map(String::from);
        let args: ComponentUpgradeArgs = recorded::parse_args(&given[2..], &given).unwrap();
        let words = upgrade_words(&args.request().unwrap());
        assert_eq!(words.join(" "), "component upgrade widgets --tag v0.0.2 --cluster-name dev --cluster-name prod");
        let parsed: ComponentUpgradeArgs = recorded::parse_args(&words[2..], &words).unwrap();
        assert_eq!(upgrade_words(&parsed.request().unwrap()), words);
        let bad = ["component", "upgrade", "widgets", "--tag", "v1", "--bogus"].map(String::from);
        let error = recorded::parse_args::<ComponentUpgradeArgs>(&bad[2..], &bad).err().unwrap();
        assert!(
            error.to_string().starts_with("the recorded request `kubectl gitops component upgrade widgets"),
            "{error}"
        );
    }
}
