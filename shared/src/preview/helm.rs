//! A HelmRelease of a Kustomization's build rendered as helm-controller would at the new state:
//! its chart (from a HelmRepository's index, or from a checkout diff has of its GitRepository),
//! its values composed as the controller composes them ([`super::values`]), rendered by the
//! pinned Helm (`helm template`, with the cluster's Kubernetes version), then helm-controller's
//! origin labels and common metadata added; each object is compared with the cluster by a dry
//! run under helm-controller's field manager, and what the release's inventory holds and the
//! rendering no longer makes is listed as pruned. Nothing is installed, written or run but Helm
//! on files in a scratch directory only this user may read.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use serde_json::{Value, json};

use super::chart;
use super::objects;
use super::values::{self, Layer};
use super::{HelmReleaseDiff, SourceRef, Withheld};
use crate::apply::Applier;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::interrupt::ScratchDir;
use crate::secret_value::SecretValues;

/// The field manager helm-controller applies with (server-side apply, conflicts forced).
const HELM_FIELD_MANAGER: &str = "helm-controller";
/// The annotation, and its value, with which Helm leaves an object in place when the chart
/// stops rendering it.
const KEEP_ANNOTATION: (&str, &str) = ("helm.sh/resource-policy", "keep");
/// Hooks run around an install or upgrade; they are not part of the release's manifest.
const HOOK_ANNOTATION: &str = "helm.sh/hook";
/// The group whose `name` and `namespace` labels helm-controller puts on every object.
const ORIGIN_GROUP: &str = "helm.toolkit.fluxcd.io";
/// Helm's longest release name; helm-controller shortens longer ones with a hash.
const MAX_RELEASE_NAME: usize = 53;

/// What rendering needs besides the HelmRelease: the helm executable, the cluster's version
/// (`.Capabilities.KubeVersion`), and the checkouts of the sources diff has.
pub(super) struct Renderer<'a> {
    pub helm: &'a Path,
    pub kube_version: &'a str,
    pub sources: &'a [(SourceRef, PathBuf)],
    /// `--fetch-new-chart-repositories`: charts may come from a HelmRepository URL the change
    /// introduces.
    pub new_chart_repositories: bool,
    /// Where each value read from a Secret in the cluster is recorded, to be masked.
    pub secrets: &'a SecretValues,
}

/// Why a HelmRelease's values from a Secret in the cluster are not read.
const WITHHELD_CHANGED: &str = "the change adds this valuesFrom entry (or its HelmRelease), and a preview never reads \
     a Secret a change asks for";

/// Every HelmRelease among `built` (a Kustomization's build), rendered and compared.
pub(super) async fn compare_releases(
    mut applier: Applier<'_>,
    renderer: &Renderer<'_>,
    built: &[Value],
) -> Result<Vec<HelmReleaseDiff>> {
    let mut results = Vec::new();
    for release in built.iter().filter(|document| is_kind(document, ORIGIN_GROUP, "HelmRelease")) {
        let text = |pointer: &str| release.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
        let mut result = HelmReleaseDiff {
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name"),
            chart: None,
            objects: Vec::new(),
            unchanged: 0,
            compared_here: 0,
            error: None,
            withheld: Vec::new(),
        };
        let live = applier.get(release).await?;
        let asked = Asked { release, live: live.as_ref(), built };
        let rendered = match render(&mut applier, renderer, &asked, &mut result.withheld).await? {
            Ok((chart, rendered)) => {
                result.chart = Some(chart);
                rendered
            }
            Err(why) => {
                results.push(HelmReleaseDiff { error: Some(why), ..result });
                continue;
            }
        };
        let compared = objects::compare(&mut applier, &rendered, HELM_FIELD_MANAGER).await?;
        (result.objects, result.unchanged, result.compared_here) =
            (compared.objects, compared.unchanged, compared.compared_here);
        if let Some(live) = &live {
            let inventory = &live["status"]["inventory"];
            result.objects.extend(objects::pruned(&mut applier, inventory, &compared.kept, KEEP_ANNOTATION).await?);
        }
        results.push(result);
    }
    Ok(results)
}

fn is_kind(document: &Value, group: &str, kind: &str) -> bool {
    document["kind"] == kind && document["apiVersion"].as_str().is_some_and(|v| v.starts_with(&format!("{group}/")))
}

/// A HelmRelease to render: as the change builds it, as the cluster holds it (if it does), and
/// the build it is part of.
struct Asked<'a> {
    release: &'a Value,
    live: Option<&'a Value>,
    built: &'a [Value],
}

/// The chart's `NAME@VERSION` and the objects it renders to (hooks left out, as in the release's
/// manifest), or why it cannot be rendered; the values it could not read go to `withheld`.
async fn render(
    applier: &mut Applier<'_>,
    renderer: &Renderer<'_>,
    asked: &Asked<'_>,
    withheld: &mut Vec<Withheld>,
) -> Result<std::result::Result<(String, Vec<Value>), String>> {
    let Asked { release, built, .. } = *asked;
    let spec = &release["spec"];
    if spec["postRenderers"].as_array().is_some_and(|renderers| !renderers.is_empty()) {
        return Ok(Err("it has postRenderers, which diff does not apply yet".into()));
    }
    let namespace = release["metadata"]["namespace"].as_str().unwrap_or("default");
    let io =
        |error: std::io::Error| Error::Io { context: "writing the chart and values for helm".into(), source: error };
    let scratch = ScratchDir::new("kubectl-gitops-helm-").map_err(io)?;
    let (chart_path, chart_label) = match chart_of(applier, renderer, release, built, scratch.path()).await? {
        Ok(found) => found,
        Err(why) => return Ok(Err(why)),
    };
    let mut layers = Vec::new();
    for reference in spec["valuesFrom"].as_array().into_iter().flatten() {
        match values_layer(applier.cluster(), renderer.secrets, reference, namespace, asked).await? {
            Ok(Values::Layer(layer)) => layers.push(layer),
            Ok(Values::Missing) => {}
            Ok(Values::Withheld(entry)) => withheld.push(entry),
            Err(why) => return Ok(Err(why)),
        }
    }
    let own = spec["values"].as_object().cloned().unwrap_or_default();
    let composed = match values::compose(&layers, &own) {
        Ok(composed) => composed,
        Err(why) => return Ok(Err(why)),
    };
    let values_file = scratch.path().join("values.json");
    std::fs::write(&values_file, Value::Object(composed).to_string()).map_err(io)?;
    let release_namespace = spec["targetNamespace"].as_str().filter(|ns| !ns.is_empty()).unwrap_or(namespace);
    let name = release_name(release);
    let documents =
        match helm_template(renderer, &name, release_namespace, &chart_path, &values_file, scratch.path()).await? {
            Ok(documents) => documents,
            Err(why) => return Ok(Err(why)),
        };
    let mut rendered = Vec::new();
    for mut document in documents {
        if document.is_null() || !document["metadata"]["annotations"][HOOK_ANNOTATION].is_null() {
            continue;
        }
        label(&mut document, release, (&name, release_namespace));
        if document["metadata"]["namespace"].is_null() && applier.is_namespaced(&document).await? {
            document["metadata"]["namespace"] = json!(release_namespace);
        }
        rendered.push(document);
    }
    Ok(Ok((chart_label, rendered)))
}

/// What the controller and Helm put on every rendered object before they apply it: the
/// release's `commonMetadata` and helm-controller's origin labels (`helm.toolkit.fluxcd.io/name`
/// and `/namespace`), as its post-renderers do, then Helm's ownership marks
/// (`app.kubernetes.io/managed-by: Helm`, `meta.helm.sh/release-name` and `-namespace`).
fn label(document: &mut Value, release: &Value, helm_release: (&str, &str)) {
    let name = release["metadata"]["name"].clone();
    let namespace = release["metadata"]["namespace"].clone();
    let common = &release["spec"]["commonMetadata"];
    let metadata = &mut document["metadata"];
    for (field, extra) in [("labels", &common["labels"]), ("annotations", &common["annotations"])] {
        if !metadata[field].is_object() {
            metadata[field] = json!({});
        }
        for (key, value) in extra.as_object().into_iter().flatten() {
            metadata[field][key] = value.clone();
        }
    }
    metadata["labels"][format!("{ORIGIN_GROUP}/name")] = name;
    metadata["labels"][format!("{ORIGIN_GROUP}/namespace")] = namespace;
    metadata["labels"]["app.kubernetes.io/managed-by"] = json!("Helm");
    metadata["annotations"]["meta.helm.sh/release-name"] = json!(helm_release.0);
    metadata["annotations"]["meta.helm.sh/release-namespace"] = json!(helm_release.1);
}

/// The release's name as helm-controller gives it: `spec.releaseName`, else
/// `[TARGET_NAMESPACE-]NAME`, shortened to Helm's 53 characters with a hash of the whole.
fn release_name(release: &Value) -> String {
    let spec = &release["spec"];
    let name = release["metadata"]["name"].as_str().unwrap_or_default();
    let full = match (spec["releaseName"].as_str(), spec["targetNamespace"].as_str()) {
        (Some(given), _) if !given.is_empty() => given.to_string(),
        (_, Some(target)) if !target.is_empty() => format!("{target}-{name}"),
        _ => name.to_string(),
    };
    if full.len() <= MAX_RELEASE_NAME {
        return full;
    }
    let hash = crate::flux_cli::sha256_hex(full.as_bytes());
    format!("{}-{}", &full[..MAX_RELEASE_NAME - 13], &hash[..12])
}

/// The chart to render, on disk (its values replaced by its `valuesFiles`), with its
/// `NAME@VERSION`: from `spec.chart`, or the HelmChart or OCIRepository `spec.chartRef` names.
async fn chart_of(
    applier: &mut Applier<'_>,
    renderer: &Renderer<'_>,
    release: &Value,
    built: &[Value],
    scratch: &Path,
) -> Result<std::result::Result<(PathBuf, String), String>> {
    let spec = &release["spec"];
    let release_namespace = release["metadata"]["namespace"].as_str().unwrap_or_default();
    let reference = &spec["chartRef"];
    if reference.is_null() {
        return chart_from(applier, renderer, &spec["chart"]["spec"], release_namespace, built, scratch).await;
    }
    let kind = reference["kind"].as_str().unwrap_or_default();
    let name = reference["name"].as_str().unwrap_or_default();
    let namespace = reference["namespace"].as_str().unwrap_or(release_namespace);
    let source = match trusted(applier, renderer, built, (kind, namespace, name)).await? {
        Ok(source) => source,
        Err(why) => return Ok(Err(why)),
    };
    match kind {
        "HelmChart" => chart_from(applier, renderer, &source["spec"], namespace, built, scratch).await,
        "OCIRepository" => Ok(chart::fetch_oci_repository(&source, scratch).await.map(|fetched| {
            let url = source["spec"]["url"].as_str().unwrap_or_default();
            let chart = url.rsplit('/').next().unwrap_or(url);
            (fetched.path, format!("{chart}@{}", fetched.version))
        })),
        other => Ok(Err(format!("its chartRef names a {other:?}, which diff does not render"))),
    }
}

/// The source object `(kind, namespace, name)` names, as the change has it (else as the cluster
/// does), when it is at a URL the cluster already pulls from: a change must not make the
/// reviewer's machine fetch from a host it names, unless told otherwise.
async fn trusted(
    applier: &mut Applier<'_>,
    renderer: &Renderer<'_>,
    built: &[Value],
    (kind, namespace, name): (&str, &str, &str),
) -> Result<std::result::Result<Value, String>> {
    let reference = json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
    });
    let built = built.iter().find(|document| same_object(document, &reference));
    let live = match built {
        Some(built) => applier.get(built).await?,
        None => applier.get(&reference).await?,
    };
    let url = |source: &Value| source["spec"]["url"].as_str().unwrap_or_default().to_string();
    Ok(match (built, live) {
        // A HelmChart has no URL: its own source is checked in turn.
        (Some(new), live)
            if renderer.new_chart_repositories || url(new).is_empty() || live.as_ref().map(url) == Some(url(new)) =>
        {
            Ok(new.clone())
        }
        (Some(new), _) => Err(format!(
            "{kind} {namespace}/{name} is at a URL the cluster does not pull from yet ({}); pass --fetch-new-chart-repositories to fetch the chart from it",
            url(new)
        )),
        (None, Some(live)) => Ok(live),
        (None, None) => Err(format!("{kind} {namespace}/{name} is neither built nor in the cluster")),
    })
}

/// The chart a chart template (`spec.chart.spec`, or a HelmChart's spec) names, its sources
/// read from `namespace` unless they name theirs.
async fn chart_from(
    applier: &mut Applier<'_>,
    renderer: &Renderer<'_>,
    chart: &Value,
    namespace: &str,
    built: &[Value],
    scratch: &Path,
) -> Result<std::result::Result<(PathBuf, String), String>> {
    let name = chart["chart"].as_str().unwrap_or_default();
    let source = &chart["sourceRef"];
    let kind = source["kind"].as_str().unwrap_or_default();
    let source_name = source["name"].as_str().unwrap_or_default();
    let source_namespace = source["namespace"].as_str().unwrap_or(namespace);
    let found = match kind {
        "HelmRepository" => {
            let repository = match trusted(applier, renderer, built, (kind, source_namespace, source_name)).await? {
                Ok(repository) => repository,
                Err(why) => return Ok(Err(why)),
            };
            let constraint = chart["version"].as_str().unwrap_or("*");
            chart::fetch(&repository, name, constraint, scratch)
                .await
                .map(|fetched| (fetched.path, format!("{name}@{}", fetched.version)))
        }
        "GitRepository" | "Bucket" => {
            let checkout = renderer.sources.iter().find(|(source, _)| {
                source.kind == kind && source.namespace == source_namespace && source.name == source_name
            });
            let Some((_, root)) = checkout else {
                return Ok(Err(format!(
                    "its chart is in {kind} {source_namespace}/{source_name}, which diff has no checkout of; pass --local-source {kind}/{source_namespace}/{source_name}=DIR"
                )));
            };
            let dir = match super::build::source_dir(root, name) {
                Ok(dir) => dir,
                Err(why) => return Ok(Err(format!("its chart path {why}"))),
            };
            let Ok(chart_yaml) = std::fs::read_to_string(dir.join("Chart.yaml")) else {
                return Ok(Err(format!("{} holds no Chart.yaml", dir.display())));
            };
            let version = crate::yaml::from_str::<Value>(&chart_yaml)
                .ok()
                .and_then(|meta| Some(format!("{}@{}", meta["name"].as_str()?, meta["version"].as_str()?)));
            Ok((dir, version.unwrap_or_else(|| name.to_string())))
        }
        other => Err(format!("its chart comes from a {other:?}, which diff does not render")),
    };
    Ok(found.and_then(|(path, label)| Ok((chart::with_values_files(chart, path, scratch)?, label))))
}

fn same_object(document: &Value, reference: &Value) -> bool {
    document["kind"] == reference["kind"]
        && document["metadata"]["name"] == reference["metadata"]["name"]
        && document["metadata"]["namespace"] == reference["metadata"]["namespace"]
}

/// One `valuesFrom` entry as rendering takes it.
enum Values {
    Layer(Layer),
    /// An optional one that is not there.
    Missing,
    /// A Secret in the cluster the change asks for, not read.
    Withheld(Withheld),
}

/// The key a `valuesFrom` entry reads.
fn values_key(reference: &Value) -> &str {
    reference["valuesKey"].as_str().filter(|key| !key.is_empty()).unwrap_or("values.yaml")
}

/// Whether the HelmRelease as the cluster holds it (`live`) reads the same Secret key as
/// `reference`: only then does its controller read it already.
fn read_already(live: Option<&Value>, reference: &Value) -> bool {
    let same = |entry: &Value| {
        entry["kind"] == reference["kind"]
            && entry["name"] == reference["name"]
            && values_key(entry) == values_key(reference)
    };
    live.is_some_and(|live| live["spec"]["valuesFrom"].as_array().into_iter().flatten().any(same))
}

/// One `valuesFrom` entry, read from the build (the change's own ConfigMaps and Secrets), else
/// from the cluster: a Secret there only when the release already reads it (each value recorded
/// in `secrets`), else withheld.
async fn values_layer(
    cluster: &Cluster,
    secrets: &SecretValues,
    reference: &Value,
    namespace: &str,
    asked: &Asked<'_>,
) -> Result<std::result::Result<Values, String>> {
    let built = asked.built;
    let kind = reference["kind"].as_str().unwrap_or_default();
    let name = reference["name"].as_str().unwrap_or_default();
    let key = values_key(reference);
    let optional = reference["optional"].as_bool().unwrap_or(false);
    let label = format!("{kind} {namespace}/{name}");
    let wanted = json!({"kind": kind, "metadata": {"name": name, "namespace": namespace}});
    let data: Option<Option<String>> = match (kind, built.iter().find(|document| same_object(document, &wanted))) {
        ("ConfigMap" | "Secret", Some(document)) => Some(document_data(document, key)),
        ("ConfigMap", None) => {
            let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
            let found = api.get_opt(name).await.map_err(|error| cluster.error(error))?;
            found.map(|map| map.data.unwrap_or_default().remove(key))
        }
        ("Secret", None) if !read_already(asked.live, reference) => {
            let entry = Withheld {
                secret: format!("{namespace}/{name}"),
                keys: vec![key.to_string()],
                reason: WITHHELD_CHANGED.into(),
            };
            return Ok(Ok(Values::Withheld(entry)));
        }
        ("Secret", None) => {
            let api: Api<Secret> = Api::namespaced(cluster.client.clone(), namespace);
            let found = api.get_opt(name).await.map_err(|error| cluster.error(error))?;
            found.map(|secret| {
                let data = secret.data.unwrap_or_default().remove(key)?;
                let text = String::from_utf8_lossy(&data.0).into_owned();
                record_values(secrets, (namespace, name, key), &text);
                Some(text)
            })
        }
        _ => return Ok(Err(format!("valuesFrom names a {kind:?}, not a ConfigMap or Secret"))),
    };
    let data = match data {
        Some(Some(data)) => data,
        _ if optional => return Ok(Ok(Values::Missing)),
        None => return Ok(Err(format!("valuesFrom {label} is neither built nor in the cluster"))),
        Some(None) => return Ok(Err(format!("valuesFrom {label} has no key {key}"))),
    };
    let target_path = reference["targetPath"].as_str();
    let literal = reference["literal"].as_bool().unwrap_or(false);
    // Never the value itself in a message: it may be a Secret's.
    Ok(Layer::read(&data, target_path, literal).map(Values::Layer).map_err(|why| format!("valuesFrom {label}: {why}")))
}

/// Records a Secret's values `text` in `secrets`: the whole text, and each string it holds when it
/// is a YAML document (a chart may put one value anywhere), and each number long enough to be
/// masked wherever it lands (a PIN, an account number). Shorter numbers and booleans are not
/// recorded: masking every `1` and `true` of a diff would hide what changes.
fn record_values(secrets: &SecretValues, (namespace, name, key): (&str, &str, &str), text: &str) {
    fn leaves(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::String(text) => found.push(text.clone()),
            Value::Number(number) => {
                let text = number.to_string();
                if text.len() >= crate::secret_value::SHORTEST_MASKED_ANYWHERE {
                    found.push(text);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| leaves(item, found)),
            Value::Object(map) => map.values().for_each(|item| leaves(item, found)),
            _ => {}
        }
    }
    let mut found = vec![text.to_string()];
    if let Ok(document) = crate::yaml::from_str::<Value>(text) {
        leaves(&document, &mut found);
    }
    for value in found {
        secrets.record(namespace, name, key, value);
    }
}

/// A built ConfigMap's or Secret's value at `key` (a Secret's `stringData` over its `data`).
fn document_data(document: &Value, key: &str) -> Option<String> {
    if let Some(text) = document["stringData"][key].as_str() {
        return Some(text.to_string());
    }
    let text = document["data"][key].as_str()?;
    if document["kind"] == "Secret" {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
        return Some(String::from_utf8_lossy(&bytes).into_owned());
    }
    Some(text.to_string())
}

/// `helm template` of the chart with the values file, as the release `name` in `namespace`, for
/// the cluster's Kubernetes version; the documents it prints, or Helm's own words. Helm's
/// configuration, cache and plugins are the scratch directory's, never the user's: no
/// repository, registry login or post-renderer plugin of theirs takes part.
async fn helm_template(
    renderer: &Renderer<'_>,
    name: &str,
    namespace: &str,
    chart: &Path,
    values: &Path,
    scratch: &Path,
) -> Result<std::result::Result<Vec<Value>, String>> {
    let mut command = tokio::process::Command::new(renderer.helm);
    command
        .args(["template", name])
        .arg(chart)
        .args(["--namespace", namespace, "--kube-version", renderer.kube_version, "--values"])
        .arg(values)
        .env("HELM_CONFIG_HOME", scratch.join("config"))
        .env("HELM_CACHE_HOME", scratch.join("cache"))
        .env("HELM_DATA_HOME", scratch.join("data"))
        .env("GOMAXPROCS", "1");
    let output = match super::build::bounded(command, "helm", renderer.helm).await? {
        Ok(output) => output,
        Err(words) => return Ok(Err(format!("helm cannot render it: {}", words.trim_start_matches("Error: ")))),
    };
    Ok(crate::yaml::documents_from_str(&String::from_utf8_lossy(&output))
        .map_err(|error| format!("helm printed YAML we cannot read: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_names_are_helm_controller_s() {
        let release = |spec: Value| json!({"metadata": {"name": "web", "namespace": "flux-system"}, "spec": spec});
        assert_eq!(release_name(&release(json!({}))), "web");
        assert_eq!(release_name(&release(json!({"targetNamespace": "shop"}))), "shop-web");
        assert_eq!(release_name(&release(json!({"targetNamespace": "shop", "releaseName": "front"}))), "front");
        let target = "team-with-a-really-quite-remarkably-long-name-for-a-namespace";
        let long = release_name(&release(json!({"targetNamespace": target})));
        let hash = crate::flux_cli::sha256_hex(format!("{target}-web").as_bytes());
        assert_eq!(long, format!("team-with-a-really-quite-remarkably-long-{}", &hash[..12]));
        assert_eq!(long.len(), MAX_RELEASE_NAME);
    }

    #[test]
    fn rendered_objects_get_the_controller_s_labels_common_metadata_and_helm_s_ownership() {
        let release = json!({
            "metadata": {"name": "web", "namespace": "flux-system"},
            "spec": {"commonMetadata": {"labels": {"team": "a"}, "annotations": {"owner": "ops"}}},
        });
        let mut document = json!({"kind": "ConfigMap", "metadata": {"name": "x", "labels": {"app": "web"}}});
        label(&mut document, &release, ("shop-web", "shop"));
        assert_eq!(
            document["metadata"],
            json!({
                "name": "x",
                "labels": {
                    "app": "web",
                    "team": "a",
                    "helm.toolkit.fluxcd.io/name": "web",
                    "helm.toolkit.fluxcd.io/namespace": "flux-system",
                    "app.kubernetes.io/managed-by": "Helm",
                },
                "annotations": {"owner": "ops", "meta.helm.sh/release-name": "shop-web", "meta.helm.sh/release-namespace": "shop"},
            })
        );
    }

    #[test]
    fn a_built_secret_s_values_are_decoded_and_string_data_wins() {
        let secret = json!({"kind": "Secret", "data": {"values.yaml": "YTogMQo="}, "stringData": {"other": "b: 2"}});
        assert_eq!(document_data(&secret, "values.yaml").as_deref(), Some("a: 1\n"));
        assert_eq!(document_data(&secret, "other").as_deref(), Some("b: 2"));
        assert_eq!(document_data(&secret, "missing"), None);
        let map = json!({"kind": "ConfigMap", "data": {"values.yaml": "a: 1"}});
        assert_eq!(document_data(&map, "values.yaml").as_deref(), Some("a: 1"));
    }

    #[test]
    fn a_secret_s_strings_and_long_numbers_are_masked_wherever_a_chart_puts_them() {
        let secrets = SecretValues::default();
        let values = "db:\n  password: hunter22\n  pin: 482913\n  replicas: 3\n  tls: true\n";
        record_values(&secrets, ("shop", "db", "values.yaml"), values);
        let rendered = "env:\n- value: \"hunter22\"\n- value: \"482913\"\nspec:\n  count: 3\nenabled: true\n";
        assert_eq!(
            secrets.mask(rendered),
            "env:\n- value: \"[secret shop/db:values.yaml]\"\n- value: \"[secret shop/db:values.yaml]\"\nspec:\n  count: \
             3\nenabled: true\n"
        );
    }
}
