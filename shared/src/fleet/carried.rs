//! What a promotion carries, by what the app's shared definition in the config repo is
//! (`apps/<app>/source.yaml` and `release.yaml`): a HelmRelease's chart version (its chart from a
//! HelmRepository), the tag of the OCIRepository a HelmRelease's `chartRef` names (an OCI chart),
//! or the tag a Kustomization's GitRepository or OCIRepository runs at in the source cluster (its
//! `ref.tag`, or the tag its `ref.semver` range picked there), with the images that Kustomization
//! overrides there ([`super::images`]). A branch, a commit or a digest is not a version to carry:
//! the source cluster proved one tag, not a range (a Kustomization on a branch is carried by its
//! images alone).

use serde_json::{Value, json};

use super::images::Image;
use crate::change::layout::APPS_DIR;
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::api::{FluxKind, GIT_REPOSITORY, HELM_RELEASE, KUSTOMIZATION, OCI_REPOSITORY, Versions};
use crate::flux::status::FluxObject;
use crate::git::Checkout;

/// What a promotion carries of an app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carried {
    /// A HelmRelease's chart version.
    Chart,
    /// The tag of the app's source: a GitRepository or an OCIRepository.
    Tag(&'static FluxKind),
    /// The tag of the OCIRepository holding a HelmRelease's chart (its `chartRef`).
    ChartRef,
}

/// The field of a HelmRelease that holds its chart's version.
const CHART_VERSION: &str = "/spec/chart/spec/version";

/// The field of a GitRepository or OCIRepository that says what it follows.
const SOURCE_REF: &str = "/spec/ref";

impl Carried {
    /// What the app's shared definition (`apps/<app>/`) is, read from the config repo.
    pub(crate) fn of_definition(checkout: &Checkout, name: &str) -> Result<Carried> {
        let kind_of = |file: &str| -> Result<Option<String>> {
            let text = crate::plan::read(checkout, &format!("{APPS_DIR}/{name}/{file}"))?;
            let documents = text.map(|text| crate::yaml::documents_from_str(&text)).transpose().map_err(|error| {
                Error::usage(format!("{APPS_DIR}/{name}/{file} is not YAML: {error}"), "fix it in the config repo")
            })?;
            Ok(documents.and_then(|documents| documents.first()?["kind"].as_str().map(String::from)))
        };
        match (kind_of("source.yaml")?.as_deref(), kind_of("release.yaml")?.as_deref()) {
            (Some("HelmRepository"), Some("HelmRelease")) => Ok(Carried::Chart),
            (Some("GitRepository"), Some("Kustomization")) => Ok(Carried::Tag(&GIT_REPOSITORY)),
            (Some("OCIRepository"), Some("Kustomization")) => Ok(Carried::Tag(&OCI_REPOSITORY)),
            (Some("OCIRepository"), Some("HelmRelease")) => Ok(Carried::ChartRef),
            (Some(source), Some(release)) => Err(Error::usage(
                format!("promote does not carry the version of a {release} from a {source} ({APPS_DIR}/{name})"),
                "it carries a HelmRelease's chart version (from a HelmRepository or an OCIRepository) and the tag of a Kustomization's GitRepository or OCIRepository",
            )),
            _ => Err(Error::usage(
                format!(
                    "{name} has no shared definition in the config repo ({APPS_DIR}/{name}/source.yaml and release.yaml)"
                ),
                "promote carries apps `kubectl gitops app add` wrote",
            )),
        }
    }

    /// The word for what is carried: `chart` or `tag`.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Carried::Chart => "chart",
            Carried::Tag(_) | Carried::ChartRef => "tag",
        }
    }

    /// Whether the app is a HelmRelease (it has values to carry).
    pub(crate) fn is_helm(self) -> bool {
        self.release() == &HELM_RELEASE
    }

    /// The object the overlay's patch sets the version on (it has the app's name).
    pub(crate) fn patched(self) -> &'static FluxKind {
        match self {
            Carried::Chart => &HELM_RELEASE,
            Carried::Tag(source) => source,
            Carried::ChartRef => &OCI_REPOSITORY,
        }
    }

    /// The object whose Ready says the app runs what it was given.
    pub(crate) fn release(self) -> &'static FluxKind {
        match self {
            Carried::Chart | Carried::ChartRef => &HELM_RELEASE,
            Carried::Tag(_) => &KUSTOMIZATION,
        }
    }

    /// The overlay's patch entry that sets `version` on the app's object `name`.
    pub(crate) fn patch(self, name: &str, version: &str) -> Result<Value> {
        let operation = match self {
            Carried::Chart => json!({"op": "add", "path": CHART_VERSION, "value": version}),
            // Replaces the whole ref: a semver range or a branch gives way to the one tag.
            Carried::Tag(_) | Carried::ChartRef => json!({"op": "add", "path": SOURCE_REF, "value": {"tag": version}}),
        };
        let target = self.patched();
        Ok(json!({
            "patch": crate::yaml::to_string(&json!([operation]))?,
            "target": {"group": target.group, "kind": target.kind, "name": name},
        }))
    }

    /// Whether an overlay's patch entry is the one [`Carried::patch`] writes (an earlier
    /// promotion's, replaced by the next).
    pub(crate) fn is_patch(self, entry: &Value, name: &str) -> bool {
        let path = match self {
            Carried::Chart => CHART_VERSION,
            Carried::Tag(_) | Carried::ChartRef => SOURCE_REF,
        };
        entry["target"]["kind"] == self.patched().kind
            && entry["target"]["name"] == name
            && entry["patch"].as_str().is_some_and(|text| text.contains(path))
    }

    /// What app `name` runs in `cluster` (named `cluster_name`), Ready at it with nothing else
    /// on its way; refused otherwise: promoting what does not run is not a promotion.
    pub(crate) async fn running(
        self,
        cluster: &Cluster,
        served: &Versions,
        cluster_name: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Running> {
        let release = get(cluster, served, self.release(), namespace, name).await?.ok_or_else(|| {
            Error::usage(
                format!("{cluster_name} runs no {} {namespace}/{name}", self.release().kind),
                "promote an app from a cluster that runs it (`kubectl gitops fleet status` shows where)",
            )
        })?;
        let ready = release.ready_condition().is_some_and(|ready| ready.is_true());
        let value = serde_json::to_value(&release).unwrap_or_default();
        let running = match self {
            Carried::Chart | Carried::ChartRef => {
                let deployed = value.pointer("/status/history/0/chartVersion").and_then(Value::as_str);
                let attempted = value.pointer("/status/lastAttemptedRevision").and_then(Value::as_str);
                deployed.filter(|deployed| ready && attempted == Some(*deployed)).map(String::from)
            }
            Carried::Tag(_) => release
                .last_applied_revision()
                .filter(|applied| ready && release.last_attempted_revision() == Some(*applied))
                .map(String::from),
        };
        let Some(running) = running else {
            return Err(Error::Negative {
                message: format!(
                    "{name} is not Ready at one {} in {cluster_name} ({}): there is nothing proven to promote",
                    self.noun(),
                    if ready { "an upgrade is on its way" } else { "it is not Ready" }
                ),
                hint: Some(format!(
                    "`kubectl gitops app status {name} --context {}` says why",
                    cluster.context.as_deref().unwrap_or_default()
                )),
            });
        };
        let source = |kind| async move {
            let source = get(cluster, served, kind, namespace, name).await?;
            Ok::<Value, Error>(
                source.map(|source| serde_json::to_value(&source).unwrap_or_default()).unwrap_or_default(),
            )
        };
        let version = |version: String| Running { version: Some(version), images: Vec::new() };
        match self {
            Carried::Chart => Ok(version(running)),
            Carried::ChartRef => chart_ref_tag(&value, &source(&OCI_REPOSITORY).await?, cluster_name).map(version),
            Carried::Tag(kind) => {
                let images = super::images::overridden(&value, cluster_name)?;
                let source = source(kind).await?;
                if images.is_empty() || follows_tag(&source) {
                    Ok(Running { version: Some(tag_of(&source, &running, kind, cluster_name)?), images })
                } else {
                    Ok(Running { version: None, images })
                }
            }
        }
    }
}

/// What a cluster runs of an app that promote carries: the chart version or the source's tag,
/// and the images its Kustomization overrides (a Kustomization whose source follows a branch is
/// carried by its images alone). At least one of the two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Running {
    pub(crate) version: Option<String>,
    pub(crate) images: Vec<Image>,
}

impl Running {
    /// The words for it: `chart 0.2.0`, `tag v1.1.0 and images web:1.1.0`, `images web:1.1.0`.
    pub(crate) fn describe(&self, noun: &str) -> String {
        let version = self.version.as_ref().map(|version| format!("{noun} {version}"));
        let images = (!self.images.is_empty()).then(|| {
            let plural = if self.images.len() == 1 { "" } else { "s" };
            format!("image{plural} {}", super::images::listed(&self.images))
        });
        version.into_iter().chain(images).collect::<Vec<_>>().join(" and ")
    }
}

/// Whether a source follows a tag (`ref.tag`, or the tag a `ref.semver` range picks) and is not
/// pinned by a commit, digest or name.
fn follows_tag(source: &Value) -> bool {
    let reference = &source["spec"]["ref"];
    let by_tag = reference["tag"].is_string() || reference["semver"].is_string();
    let pinned = ["commit", "digest", "name"].iter().any(|field| reference[field].is_string());
    by_tag && !pinned
}

/// The tag of the OCIRepository a HelmRelease's chart came from: the one its artifact has, when
/// that artifact's digest is the one the release deployed (helm-controller records it as
/// `status.history[0].ociDigest`); refused when the source fetched another since, or the
/// release does not say which it deployed.
fn chart_ref_tag(release: &Value, source: &Value, cluster_name: &str) -> Result<String> {
    let deployed = release.pointer("/status/history/0/ociDigest").and_then(Value::as_str);
    let fetched = source.pointer("/status/artifact/revision").and_then(Value::as_str);
    match (deployed, fetched) {
        (Some(digest), Some(revision)) if revision.strip_suffix(digest).is_some_and(|tag| tag.ends_with('@')) => {
            tag_of(source, revision, &OCI_REPOSITORY, cluster_name)
        }
        (None, _) => Err(Error::Negative {
            message: format!(
                "its HelmRelease in {cluster_name} does not say which chart artifact it deployed (no ociDigest in its history)"
            ),
            hint: Some(
                "promote needs helm-controller v1 or later there; `kubectl gitops flux version` says which runs".into(),
            ),
        }),
        (Some(digest), _) => Err(Error::Negative {
            message: format!(
                "its OCIRepository in {cluster_name} fetched {} since it deployed {digest}: an upgrade is on its way",
                fetched.unwrap_or("nothing")
            ),
            hint: Some("wait until it is applied, then promote".into()),
        }),
    }
}

/// Object `kind` `namespace/name` in `cluster`, at the version it serves.
async fn get(
    cluster: &Cluster,
    served: &Versions,
    kind: &FluxKind,
    namespace: &str,
    name: &str,
) -> Result<Option<kube::api::DynamicObject>> {
    let Some(version) = served.lookup(kind) else {
        return Err(Error::usage(format!("the cluster serves no {}", kind.kind), "is Flux installed there?"));
    };
    let api: kube::Api<kube::api::DynamicObject> =
        kube::Api::namespaced_with(cluster.client.clone(), namespace, &kind.at(version));
    api.get_opt(name).await.map_err(|error| cluster.error(error))
}

/// The tag a source follows by `ref.tag` or picked by `ref.semver`, read from the revision the
/// app applied (`TAG@sha1:…`, `TAG@sha256:…`), when its source has fetched nothing newer.
fn tag_of(source: &Value, applied: &str, kind: &FluxKind, cluster_name: &str) -> Result<String> {
    if !follows_tag(source) {
        let reference = &source["spec"]["ref"];
        let follows = crate::yaml::to_string(reference).unwrap_or_default().trim().replace('\n', ", ");
        return Err(Error::usage(
            format!("its {} in {cluster_name} follows no tag ({follows}): there is no version to promote", kind.kind),
            "promote carries a tag or the tag a semver range picked; move a branch with a commit to the overlay",
        ));
    }
    let fetched = source.pointer("/status/artifact/revision").and_then(Value::as_str);
    let tag = applied.split_once('@').map(|(tag, _)| tag).filter(|tag| !tag.is_empty());
    match tag {
        Some(tag) if fetched == Some(applied) => Ok(tag.to_string()),
        Some(_) => Err(Error::Negative {
            message: format!(
                "its {} in {cluster_name} fetched {} since: an upgrade is on its way",
                kind.kind,
                fetched.unwrap_or("nothing")
            ),
            hint: Some("wait until it is applied, then promote".into()),
        }),
        None => Err(Error::usage(
            format!("the revision {applied:?} names no tag"),
            "promote carries a tag or the tag a semver range picked",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_what_a_tag_or_a_semver_range_picked_and_nothing_else() {
        let source = |reference: Value, fetched: &str| json!({"spec": {"ref": reference}, "status": {"artifact": {"revision": fetched}}});
        let applied = "v1.2.0@sha1:0123456789abcdef0123456789abcdef01234567";
        for reference in [json!({"tag": "v1.2.0"}), json!({"semver": ">=1.0.0"})] {
            assert_eq!(tag_of(&source(reference, applied), applied, &GIT_REPOSITORY, "dev").unwrap(), "v1.2.0");
        }
        let oci = "1.2.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(tag_of(&source(json!({"tag": "1.2.0"}), oci), oci, &OCI_REPOSITORY, "dev").unwrap(), "1.2.0");
        let branch = tag_of(&source(json!({"branch": "main"}), applied), applied, &GIT_REPOSITORY, "dev");
        assert!(branch.unwrap_err().to_string().contains("follows no tag (branch: main)"));
        let commit = source(json!({"tag": "v1.2.0", "commit": "0123456789abcdef0123456789abcdef01234567"}), applied);
        assert!(tag_of(&commit, applied, &GIT_REPOSITORY, "dev").is_err(), "a commit pins, it is not carried");
        let newer = source(json!({"semver": ">=1.0.0"}), "v1.3.0@sha1:fedcba9876543210fedcba9876543210fedcba98");
        let moving = tag_of(&newer, applied, &GIT_REPOSITORY, "dev").unwrap_err().to_string();
        assert!(moving.contains("fetched v1.3.0@sha1:") && moving.contains("on its way"), "{moving}");
    }

    #[test]
    fn an_oci_charts_tag_is_its_sources_when_the_release_deployed_that_artifact() {
        let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let release =
            |digest: Option<&str>| json!({"status": {"history": [{"chartVersion": "0.2.0", "ociDigest": digest}]}});
        let source = |revision: &str| json!({"spec": {"ref": {"semver": ">=0.1.0"}}, "status": {"artifact": {"revision": revision}}});
        let fetched = format!("0.2.0@{digest}");
        assert_eq!(chart_ref_tag(&release(Some(digest)), &source(&fetched), "dev").unwrap(), "0.2.0");
        let newer = source("0.3.0@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210");
        let moving = chart_ref_tag(&release(Some(digest)), &newer, "dev").unwrap_err().to_string();
        assert!(moving.contains("fetched 0.3.0@sha256:") && moving.contains("on its way"), "{moving}");
        let unknown = chart_ref_tag(&release(None), &source(&fetched), "dev").unwrap_err().to_string();
        assert!(unknown.contains("no ociDigest"), "{unknown}");
        let patch = Carried::ChartRef.patch("mccp", "0.2.0").unwrap();
        assert_eq!(patch["target"]["kind"], "OCIRepository");
        assert_eq!(patch["patch"], "- op: add\n  path: /spec/ref\n  value:\n    tag: \"0.2.0\"\n");
        assert!(Carried::ChartRef.is_helm() && Carried::Chart.is_helm() && !Carried::Tag(&OCI_REPOSITORY).is_helm());
    }

    #[test]
    fn a_tag_replaces_the_whole_ref_of_the_source_and_a_chart_version_the_version() {
        let tag = Carried::Tag(&GIT_REPOSITORY).patch("web", "v1.2.0").unwrap();
        assert_eq!(tag["target"], json!({"group": "source.toolkit.fluxcd.io", "kind": "GitRepository", "name": "web"}));
        assert_eq!(tag["patch"], "- op: add\n  path: /spec/ref\n  value:\n    tag: v1.2.0\n");
        assert!(Carried::Tag(&GIT_REPOSITORY).is_patch(&tag, "web"));
        assert!(!Carried::Tag(&GIT_REPOSITORY).is_patch(&tag, "shop"));
        assert!(!Carried::Chart.is_patch(&tag, "web"));
        let chart = Carried::Chart.patch("mccp", "0.2.0").unwrap();
        assert_eq!(chart["target"]["kind"], "HelmRelease");
        assert!(Carried::Chart.is_patch(&chart, "mccp"));
    }
}
