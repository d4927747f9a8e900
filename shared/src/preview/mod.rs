//! The preview engine: what a checkout of the config repo would change in the live cluster,
//! Kustomization by Kustomization, as the [`Diff`] document (docs/diff.md). `diff` prints it,
//! `pr comment` posts it, the change engine shows it for a dry run's plan, `drift` builds with
//! it; none of them reaches another through it.
//!
//! The config repo's Kustomizations (those whose source is the sync's GitRepository), and those
//! of any `--local-source`, are each built from their checkout by the pinned flux CLI
//! ([`build`]), and every object built is applied as a server-side dry run under
//! kustomize-controller's field manager, so that the cluster's own defaulting and admission
//! decide what changes ([`compare`]). What a pruning Kustomization's inventory holds and its build
//! no longer makes is listed as pruned. Nothing is written: not to the cluster, not to the
//! checkout. Credentials are the caller's: resolved by it, or when first needed
//! ([`sources::Credentials`]).

pub(crate) mod build;
mod chart;
pub(crate) mod compare;
mod deleted;
mod helm;
pub mod markdown;
mod masked;
mod objects;
mod render;
mod request;
pub mod sources;
mod values;

use self::build::SecretReads;
pub use self::render::text as render_text;
pub use self::request::{RenderArgs, Rendering, SourceRef, existing_dir};

use std::path::{Path, PathBuf};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use serde::Serialize;
use serde_json::Value;

use crate::apply::Applier;
use crate::cluster::{Cluster, list_pages};
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{GIT_REPOSITORY, KUSTOMIZATION, Versions};
use crate::flux::bootstrap::SYNC_NAME;
use crate::flux_cli::{FluxCli, Locator, Tag};
use crate::git::Remote;
use crate::output::Printer;
use crate::secret_value::SecretValues;

/// The field manager kustomize-controller applies with: the dry run must merge as its apply will.
pub(crate) const FLUX_FIELD_MANAGER: &str = "kustomize-controller";

/// The annotation, and its value, that keeps an object out of Flux's pruning.
const KEEP_ANNOTATION: (&str, &str) = ("kustomize.toolkit.fluxcd.io/prune", "disabled");

/// How many Kustomizations are built and compared at once.
const PARALLEL: usize = 4;

/// What the change does to the cluster: `-o json|yaml` prints this (docs/output.md).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    /// The config repo's source in the cluster: `GitRepository/<namespace>/<name>`.
    pub source: String,
    /// What was compared with the cluster: the checkout's directory, or the branch, commit or
    /// pull request with the commit it was cloned at.
    pub compared: String,
    /// The sources the change moves to another ref (an app's repository at a new tag), each
    /// fetched there so that its Kustomizations are compared as Flux will apply them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fetched: Vec<FetchedSource>,
    /// Each of the config repo's Kustomizations, with what would change.
    pub kustomizations: Vec<KustomizationDiff>,
    /// Counts over every Kustomization.
    pub summary: DiffSummary,
}

impl crate::output::Kind for Diff {
    const KIND: &'static str = "Diff";
}

/// One Kustomization: the objects its build at the new state would add, change, prune, or have
/// refused. Unchanged objects are counted, not listed.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationDiff {
    pub namespace: String,
    pub name: String,
    /// Its source: `KIND/NAMESPACE/NAME`, the config repo's or a `--local-source`.
    pub source: String,
    /// Its `spec.path` in its source.
    pub path: String,
    /// The objects that differ.
    pub objects: Vec<ObjectDiff>,
    /// Objects built that would not change.
    pub unchanged: usize,
    /// Objects compared on this machine (changed or not), for lack of the `patch` right.
    #[serde(skip_serializing_if = "is_zero")]
    pub compared_here: usize,
    /// Why it could not be built or compared (then `objects` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The change deletes it (the Kustomization that applies it prunes it): Flux deletes it, and
    /// with `prune: true` everything it applied, listed as pruned.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// The HelmReleases its build makes, each rendered at the new state and compared.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub helm_releases: Vec<HelmReleaseDiff>,
    /// The Secrets its build did not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<Withheld>,
}

impl KustomizationDiff {
    /// `kustomization`, applying `source`, with nothing compared yet.
    fn of(kustomization: &Value, source: &SourceRef) -> KustomizationDiff {
        let text =
            |pointer: &str| kustomization.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
        KustomizationDiff {
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name"),
            source: source.to_string(),
            path: text("/spec/path"),
            objects: Vec::new(),
            unchanged: 0,
            compared_here: 0,
            error: None,
            deleted: false,
            helm_releases: Vec::new(),
            withheld: Vec::new(),
        }
    }
}

/// One HelmRelease: the objects its chart, rendered at the new chart version and values, would
/// add, change, prune or have refused. Unchanged objects are counted, not listed.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmReleaseDiff {
    pub namespace: String,
    pub name: String,
    /// The chart rendered, `NAME@VERSION`, once it was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chart: Option<String>,
    /// The objects that differ.
    pub objects: Vec<ObjectDiff>,
    /// Objects rendered that would not change.
    pub unchanged: usize,
    /// Objects compared on this machine (changed or not), for lack of the `patch` right.
    #[serde(skip_serializing_if = "is_zero")]
    pub compared_here: usize,
    /// Why it could not be rendered or compared (then `objects` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The Secrets its values did not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<Withheld>,
}

/// What happens to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    /// Created: the cluster has no such object.
    Added,
    /// Changed in place.
    Changed,
    /// Deleted by the Kustomization's pruning: in its inventory, no longer built.
    Pruned,
    /// The API server or an admission webhook refuses it.
    Refused,
}

/// One object that differs.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDiff {
    /// `apiVersion` (for a pruned object, its group and version from the inventory).
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub action: Action,
    /// The unified diff of the object as it is and as it would be (Secrets' values hidden);
    /// absent for a refused object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Container images it would run that it does not now, and those it would stop running.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageChange>,
    /// The refusal, for a refused object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Worked out on this machine, not by the API server: this identity may not patch it, so
    /// not dry-run it either (no defaulting, no admission).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub compared_here: bool,
}

/// A source the change moves, fetched at its new ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FetchedSource {
    /// `GitRepository/<namespace>/<name>`.
    pub source: String,
    /// Where the change moves it: `tag v2`, `branch release`, `commit … of branch …`.
    pub at: String,
    /// The commit fetched there.
    pub commit: String,
}

/// Secret data the preview did not read: what it would have given is a visible placeholder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Withheld {
    /// `NAMESPACE/NAME` of the Secret.
    pub secret: String,
    /// A HelmRelease's values key it would have given; a Kustomization's variables that nothing
    /// else defines, which it (or another Secret withheld beside it) would have given.
    pub keys: Vec<String>,
    /// Why it was not read.
    pub reason: String,
}

/// How the screen and the comment say a source was fetched.
fn fetched_line(fetched: &FetchedSource) -> String {
    let commit = fetched.commit.get(..12).unwrap_or(&fetched.commit);
    format!("The change moves {} to {}: fetched at {commit}", fetched.source, fetched.at)
}

/// An image an object stops running (`from`) or starts running (`to`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ImageChange {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// Counts of objects by what happens to them, and Kustomizations that failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffSummary {
    pub added: usize,
    pub changed: usize,
    pub pruned: usize,
    pub refused: usize,
    pub unchanged: usize,
    /// Objects compared on this machine, for lack of the `patch` right the dry run needs.
    pub compared_here: usize,
    /// Kustomizations that could not be built, and HelmReleases that could not be rendered.
    pub failed: usize,
}

impl DiffSummary {
    /// `1 added, 2 changed, 0 pruned, 0 refused, 3 unchanged`, and `; N not built or rendered`
    /// when some were not: the last line of the screen, the title of the comment.
    pub fn counts(&self) -> String {
        let failed = if self.failed > 0 { format!("; {} not built or rendered", self.failed) } else { String::new() };
        format!(
            "{} added, {} changed, {} pruned, {} refused, {} unchanged{failed}",
            self.added, self.changed, self.pruned, self.refused, self.unchanged
        )
    }
}

impl Diff {
    /// 0: nothing would change; 1: something would; 2: an object would be refused or a
    /// Kustomization could not be built (as `kubectl diff` and `flux diff` exit).
    pub fn exit_code(&self) -> ExitCode {
        let summary = &self.summary;
        if summary.refused > 0 || summary.failed > 0 {
            ExitCode::Usage
        } else if summary.added + summary.changed + summary.pruned > 0 {
            ExitCode::No
        } else {
            ExitCode::Ok
        }
    }
}

/// What a dry run's plan, written into the scratch clone of the config repo, would change in the
/// cluster: `diff`'s screen, for the plan's (the change engine asks for it with `--preview` and
/// the UI's and MCP's dry runs).
pub async fn plan_text(input: PlanInput<'_>) -> Result<String> {
    let diff = of_plan(input).await?;
    Ok(render::text(&diff, true, crate::output::style::Style::plain()))
}

/// What the scratch clone of the config repo, a change written into it, would change in the
/// cluster, as a [`Diff`] (`app rollback --dry-run` keeps it in its document).
pub async fn of_plan(input: PlanInput<'_>) -> Result<Diff> {
    let (resource, source) = config_of(input.cluster, input.versions, input.namespace).await?;
    let checkout = Compared { resource, source, dir: input.dir.to_path_buf(), compared: input.compared };
    let credentials = sources::Credentials::Known(input.config_remote.cloned());
    compare_checkout(input.cluster, checkout, &Rendering::default(), credentials, input.printer).await
}

/// What a plan's preview is asked with.
pub struct PlanInput<'a> {
    pub cluster: &'a Cluster,
    pub versions: &'a Versions,
    /// The Flux namespace.
    pub namespace: &'a str,
    /// The scratch clone of the config repo, the plan written into it.
    pub dir: &'a Path,
    /// How the preview names what it compares.
    pub compared: String,
    /// The config repo's remote: its credentials fetch the sources the plan moves, when they
    /// are on the same server.
    pub config_remote: Option<&'a Remote>,
    pub printer: &'a Printer,
}

/// The config repo's sync source, and the Kustomization API the cluster serves.
pub async fn config_of(cluster: &Cluster, versions: &Versions, namespace: &str) -> Result<(ApiResource, SourceRef)> {
    let Some(version) = versions.lookup(&KUSTOMIZATION).map(String::from) else {
        return Err(Error::Negative {
            message: "Flux is not installed: this cluster serves no Kustomization API".into(),
            hint: Some("install it with `kubectl gitops install`".into()),
        });
    };
    let resource = KUSTOMIZATION.at(&version);
    let source = config_source(cluster, &resource, namespace).await?;
    Ok((resource, source))
}

/// A checkout of the config repo to compare, and how to name it.
pub struct Compared {
    /// The Kustomization API the cluster serves.
    pub resource: ApiResource,
    /// The config repo's GitRepository.
    pub source: SourceRef,
    /// The checkout.
    pub dir: PathBuf,
    /// How the result names it.
    pub compared: String,
}

/// What `checkout` would change in the cluster: every Kustomization of its source (and of
/// `rendering`'s other sources) built, compared, and its HelmReleases rendered. Every value read
/// from a Secret on the way is masked in the result, and in the error.
pub async fn compare_checkout(
    cluster: &Cluster,
    checkout: Compared,
    rendering: &Rendering,
    credentials: sources::Credentials<'_>,
    printer: &Printer,
) -> Result<Diff> {
    let secrets = SecretValues::default();
    match compare_reading(cluster, checkout, rendering, credentials, printer, &secrets).await {
        Ok(diff) => Ok(masked::diff(diff, &secrets)),
        Err(error) => Err(secrets.masked_error(error)),
    }
}

/// [`compare_checkout`], each Secret value it reads recorded in `secrets`.
async fn compare_reading(
    cluster: &Cluster,
    checkout: Compared,
    rendering: &Rendering,
    credentials: sources::Credentials<'_>,
    printer: &Printer,
    secrets: &SecretValues,
) -> Result<Diff> {
    let Compared { resource, source, dir, compared } = checkout;
    let recorded = SecretReads::Recorded(secrets);
    let mut sources = vec![(source.clone(), dir)];
    sources.extend(rendering.local_sources.iter().cloned());
    let ours = kustomizations_of(cluster, &resource, &sources).await?;
    let flux_cli = Locator::new(None).locate(&Tag::pinned(), printer).await?;
    // One discovery of each kind for every comparison.
    let applier = Applier::new(cluster);
    let spinner = printer.spinner(format!("building and comparing {} Kustomizations", ours.len()));
    let (mut kustomizations, mut builds) = compare_each(&applier, &flux_cli, &ours, recorded).await?;
    drop(spinner);
    deleted::deleted_with_their_objects(applier.clone(), &ours, &mut kustomizations).await?;
    // The sources the change moves, fetched at their new ref: what their Kustomizations apply.
    let moved = sources::moved(&mut applier.clone(), &builds, &sources).await?;
    let moved = sources::compare_moved(&applier, &resource, &flux_cli, moved, credentials, recorded, printer).await?;
    kustomizations.extend(moved.kustomizations);
    builds.extend(moved.builds);
    sources.extend(moved.sources);
    // The Kustomizations the change adds, of the sources compared: built and compared too.
    let new_kustomizations = added_kustomizations(applier.clone(), &builds, &sources).await?;
    // Their spec is the change's own: they read no Secret.
    let (added, added_builds) = compare_each(&applier, &flux_cli, &new_kustomizations, SecretReads::Withheld).await?;
    kustomizations.extend(added);
    builds.extend(added_builds);
    render_helm_releases(&applier, rendering, &sources, &mut kustomizations, &builds, secrets, printer).await?;
    let elsewhere = deleted::deleted_elsewhere(applier.clone(), &kustomizations).await?;
    kustomizations.extend(elsewhere);
    kustomizations.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let summary = summarize(&kustomizations);
    let diff = Diff { source: source.to_string(), compared, fetched: moved.fetched, kustomizations, summary };
    drop(moved.checkouts);
    let here = diff.summary.compared_here;
    if here > 0 {
        printer.warning(&format!(
            "{here} objects were compared on this machine, not by the API server's dry run (no defaulting, no \
             admission): this identity may not patch them, or their namespace or kind does not exist yet; \
             docs/diff.md says why and names the rights a full preview needs"
        ));
    }
    Ok(diff)
}

/// The GitRepository the sync (`flux-system` in the Flux namespace) applies the config repo from.
async fn config_source(cluster: &Cluster, resource: &ApiResource, namespace: &str) -> Result<SourceRef> {
    let in_namespace: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), namespace, resource);
    let sync = in_namespace.get_opt(SYNC_NAME).await.map_err(|error| cluster.error(error))?.ok_or_else(|| {
        Error::Negative {
            message: format!("there is no Kustomization {namespace}/{SYNC_NAME}, the sync of a config repo"),
            hint: Some(
                "install with `kubectl gitops install` (or `flux bootstrap`), or name the Flux namespace with -n"
                    .into(),
            ),
        }
    })?;
    let reference = &sync.data["spec"]["sourceRef"];
    if reference["kind"] != GIT_REPOSITORY.kind {
        return Err(Error::Negative {
            message: format!("the sync {namespace}/{SYNC_NAME} applies a {}, not a GitRepository", reference["kind"]),
            hint: Some("diff compares a git checkout; the config repo must be a GitRepository".into()),
        });
    }
    Ok(SourceRef {
        kind: GIT_REPOSITORY.kind.to_string(),
        namespace: reference["namespace"].as_str().unwrap_or(namespace).to_string(),
        name: reference["name"].as_str().unwrap_or_default().to_string(),
    })
}

/// The work tree of the current directory, when one of its remotes is the config repo's URL.
pub async fn work_tree(cluster: &Cluster, versions: &Versions, source: &SourceRef) -> Result<PathBuf> {
    let version = versions.lookup(&GIT_REPOSITORY).unwrap_or(GIT_REPOSITORY.version);
    let repositories: Api<DynamicObject> =
        Api::namespaced_with(cluster.client.clone(), &source.namespace, &GIT_REPOSITORY.at(version));
    let repository = repositories.get_opt(&source.name).await.map_err(|error| cluster.error(error))?;
    let url = repository.as_ref().and_then(|repository| repository.data["spec"]["url"].as_str()).unwrap_or_default();
    let here = std::env::current_dir()
        .map_err(|error| Error::Io { context: "reading the current directory".into(), source: error })?;
    let hint = format!("run it in a checkout of {url}, or pass --dir PATH, --ref BRANCH or --pull-request NUMBER");
    let (root, remotes) = crate::git::work_tree_of(&here)
        .map_err(|_| Error::usage(format!("{} is not in a git work tree", here.display()), hint.clone()))?;
    if !remotes.iter().any(|remote| crate::git::same_repository(remote, url)) {
        return Err(Error::usage(
            format!("the work tree {} is not a checkout of the config repo {url}", root.display()),
            hint,
        ));
    }
    Ok(root)
}

/// Every Kustomization that applies one of `sources`, with that source and its checkout, by
/// namespace and name.
async fn kustomizations_of<'a>(
    cluster: &Cluster,
    resource: &ApiResource,
    sources: &'a [(SourceRef, PathBuf)],
) -> Result<Vec<(Value, &'a SourceRef, &'a Path)>> {
    let kustomizations: Api<DynamicObject> = Api::all_with(cluster.client.clone(), resource);
    let mut found = Vec::new();
    let page = |params: ListParams| {
        let kustomizations = kustomizations.clone();
        async move { kustomizations.list(&params).await }
    };
    let each = |object: DynamicObject| {
        let Ok(object) = serde_json::to_value(object) else { return };
        if let Some((source, root)) = sources.iter().find(|(source, _)| source.is_applied_by(&object)) {
            found.push((object, source, root.as_path()));
        }
    };
    list_pages(ListParams::default().limit(500), page, each).await.map_err(|error| cluster.error(error))?;
    found.sort_by_key(|(object, _, _)| {
        (object["metadata"]["namespace"].to_string(), object["metadata"]["name"].to_string())
    });
    Ok(found)
}

/// Each of `listed` (a Kustomization, its source and that source's checkout) built, reading its
/// Secrets as `reads` allows, and compared, [`PARALLEL`] at a time; the results and the builds
/// kept, in the order of `listed`.
async fn compare_each(
    applier: &Applier<'_>,
    flux: &FluxCli,
    listed: &[(Value, &SourceRef, &Path)],
    reads: SecretReads<'_>,
) -> Result<(Vec<KustomizationDiff>, Vec<Vec<Value>>)> {
    // The futures are made first, so that the stream holds no closure over borrowed items (which
    // would keep the whole future from being `Send`, as the UI's preview needs it to be).
    let comparisons: Vec<_> = listed
        .iter()
        .map(|(kustomization, source, root)| compare_one(applier.clone(), flux, kustomization, (source, root), reads))
        .collect();
    let compared: Vec<Result<(KustomizationDiff, Vec<Value>)>> =
        futures::stream::iter(comparisons).buffered(PARALLEL).collect().await;
    Ok(compared.into_iter().collect::<Result<Vec<_>>>()?.into_iter().unzip())
}

/// One Kustomization built from `dir`, the checkout of its source, and compared with the cluster,
/// object by object.
async fn compare_one(
    mut applier: Applier<'_>,
    flux: &FluxCli,
    kustomization: &Value,
    (source, dir): (&SourceRef, &Path),
    reads: SecretReads<'_>,
) -> Result<(KustomizationDiff, Vec<Value>)> {
    let mut result = KustomizationDiff::of(kustomization, source);
    let source_dir = match build::source_dir(dir, &result.path) {
        Ok(source_dir) => source_dir,
        Err(why) => return Ok((KustomizationDiff { error: Some(why), ..result }, Vec::new())),
    };
    let mut resolved = build::resolved(applier.cluster(), kustomization, reads).await?;
    let keys = build::withheld_placeholders(flux, &mut resolved, dir, &source_dir).await?;
    result.withheld = resolved
        .withheld
        .iter()
        .map(|secret| Withheld { secret: secret.clone(), keys: keys.clone(), reason: build::WITHHELD_ADDED.into() })
        .collect();
    let built = match build::build(flux, &resolved.kustomization, dir, &source_dir).await? {
        Ok(built) => built,
        Err(why) => return Ok((KustomizationDiff { error: Some(why), ..result }, Vec::new())),
    };
    let compared = objects::compare(&mut applier, &built, FLUX_FIELD_MANAGER).await?;
    (result.objects, result.unchanged, result.compared_here) =
        (compared.objects, compared.unchanged, compared.compared_here);
    if kustomization["spec"]["prune"].as_bool().unwrap_or(false) {
        let inventory = &kustomization["status"]["inventory"];
        result.objects.extend(objects::pruned(&mut applier, inventory, &compared.kept, KEEP_ANNOTATION).await?);
    }
    // The build is kept only when its HelmReleases are to be rendered, its sources may move or it
    // adds Kustomizations.
    let kept = built
        .iter()
        .any(|document| matches!(document["kind"].as_str(), Some("HelmRelease" | "GitRepository" | "Kustomization")));
    Ok((result, if kept { built } else { Vec::new() }))
}

/// The Kustomizations among `builds` that the cluster does not hold yet and that apply one of
/// `sources`, each with its source and checkout.
async fn added_kustomizations<'a>(
    mut applier: Applier<'_>,
    builds: &[Vec<Value>],
    sources: &'a [(SourceRef, PathBuf)],
) -> Result<Vec<(Value, &'a SourceRef, &'a Path)>> {
    let mut added: Vec<(Value, &'a SourceRef, &'a Path)> = Vec::new();
    let built = builds.iter().flatten().filter(|document| {
        document["kind"] == KUSTOMIZATION.kind
            && document["apiVersion"]
                .as_str()
                .is_some_and(|version| version.starts_with(&format!("{}/", KUSTOMIZATION.group)))
    });
    for kustomization in built {
        let Some((source, root)) = sources.iter().find(|(source, _)| source.is_applied_by(kustomization)) else {
            continue;
        };
        if added.iter().any(|(known, _, _)| known["metadata"] == kustomization["metadata"])
            || applier.get(kustomization).await?.is_some()
        {
            continue;
        }
        added.push((kustomization.clone(), source, root.as_path()));
    }
    Ok(added)
}

/// The HelmReleases of every build (`builds` is in the order of `kustomizations`), each rendered
/// by the pinned helm (found, or downloaded and verified, only when there is one) and compared.
async fn render_helm_releases(
    applier: &Applier<'_>,
    rendering: &Rendering,
    sources: &[(SourceRef, PathBuf)],
    kustomizations: &mut [KustomizationDiff],
    builds: &[Vec<Value>],
    secrets: &SecretValues,
    printer: &Printer,
) -> Result<()> {
    // Helm is looked for (and downloaded) only when a build makes a HelmRelease.
    let renders = |kustomization: &KustomizationDiff, built: &[Value]| {
        !kustomization.deleted && built.iter().any(|document| document["kind"] == "HelmRelease")
    };
    let wanted = kustomizations.iter().zip(builds).filter(|(k, built)| renders(k, built)).count();
    if wanted == 0 {
        return Ok(());
    }
    let helm = crate::helm_cli::locate(rendering.helm_bin.clone(), crate::timeouts::FLUX_DOWNLOAD, printer).await?;
    let cluster = applier.cluster();
    let version = cluster.client.apiserver_version().await.map_err(|error| cluster.error(error))?;
    let renderer = helm::Renderer {
        helm: &helm,
        kube_version: &version.git_version,
        sources,
        new_chart_repositories: rendering.fetch_new_chart_repositories,
        secrets,
    };
    let spinner = printer.spinner("rendering HelmReleases".to_string());
    let renderings: Vec<_> = kustomizations
        .iter()
        .zip(builds)
        .map(|(kustomization, built)| {
            let skip = !renders(kustomization, built);
            let renderer = &renderer;
            let applier = applier.clone();
            async move { if skip { Ok(Vec::new()) } else { helm::compare_releases(applier, renderer, built).await } }
        })
        .collect();
    let rendered: Vec<Result<Vec<HelmReleaseDiff>>> =
        futures::stream::iter(renderings).buffered(PARALLEL).collect().await;
    drop(spinner);
    for (kustomization, releases) in kustomizations.iter_mut().zip(rendered) {
        kustomization.helm_releases = releases?;
    }
    Ok(())
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

fn summarize(kustomizations: &[KustomizationDiff]) -> DiffSummary {
    let mut summary = DiffSummary::default();
    let releases = kustomizations.iter().flat_map(|kustomization| &kustomization.helm_releases);
    let counted = kustomizations
        .iter()
        .map(|k| (&k.objects, k.unchanged, k.compared_here, k.error.is_some()))
        .chain(releases.map(|r| (&r.objects, r.unchanged, r.compared_here, r.error.is_some())));
    for (objects, unchanged, compared_here, failed) in counted {
        summary.unchanged += unchanged;
        summary.compared_here += compared_here;
        summary.failed += usize::from(failed);
        for object in objects {
            match object.action {
                Action::Added => summary.added += 1,
                Action::Changed => summary.changed += 1,
                Action::Pruned => summary.pruned += 1,
                Action::Refused => summary.refused += 1,
            }
        }
    }
    summary
}

#[cfg(test)]
mod tests;
