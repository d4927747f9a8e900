//! `status --wait` and `status --watch`: the listing kept current by one watch per Flux kind in
//! scope (the watches' initial lists stand in for the LISTs of a plain `status`; their events keep
//! the objects current), then judged on every change (`--wait`) or shown again (`--watch`).
//!
//! The config repo sync (the Kustomization `flux-system` of the Flux namespace, what `install`
//! and `flux bootstrap` create) is waited for even outside the scope: `-n team-a` adds a watch of
//! it and of the sources of the Flux namespace.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::discovery::ApiResource;
use kube::runtime::watcher::{self, Event};

use super::app_reads::{git_remote, run_git};
use super::collect::{Key, Lookup, Scope, assemble, detect_flux, kustomization_row, resource, runtime};
use super::render::View;
use super::watch::{WaitRequest, events_hint, judge_row};
use super::{AppKind, AppState, AppStatus, Report, Runtime};
use crate::cluster::{Cluster, DEFAULT_FLUX_NAMESPACE};
use crate::duration;
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{
    FluxKind, GIT_REPOSITORY, HELM_CHART, HELM_RELEASE, HELM_REPOSITORY, KUSTOMIZATION, OCI_REPOSITORY,
};
use crate::flux::bootstrap::SYNC_NAME;
use crate::flux::status::{FluxObject, Listed};
use crate::output::Printer;
use crate::wait::{Change, Followed, Selector, Triggers, Verdict, Waited, forbidden, revision_matches, wait_until};

/// How many blocking objects a timeout names before it only counts the rest.
const NAMED_AT_TIMEOUT: usize = 10;

/// The objects of one watch: a Flux kind, in scope or (`extra`) the sync's namespace out of scope.
/// Each is kept reduced to what a row reads ([`Listed`], as `status` reduces its LIST pages): at
/// 10,000 apps the UI keeps 20,000 of them for as long as it runs. A (re)started watch's list
/// replaces them once it is complete, as kube's reflector does.
struct Store {
    kind: &'static FluxKind,
    /// Watches the Flux namespace outside the scope, for the sync: its rows are not shown.
    extra: bool,
    objects: Objects,
    /// What a (re)started watch has listed so far.
    relisting: Option<Objects>,
    /// The first list completed (or was forbidden).
    listed: bool,
    /// Why the first list has not completed, when a watch call failed.
    error: Option<String>,
}

/// A watch's objects by namespace, then name: a lookup (every row looks up its source) borrows
/// the key instead of building one. Boxed: a hash table keeps up to twice as many slots as
/// entries, and a [`Listed`] inline is 688 bytes (at 10,000 apps, 28 against 15 MB).
type Objects = HashMap<String, HashMap<String, Box<Listed>>>;

fn insert(objects: &mut Objects, object: Watched, kind: &'static str) {
    let listed = object.listed.of_kind(kind);
    let names = objects.entry(listed.namespace().to_string()).or_default();
    names.insert(listed.name().to_string(), Box::new(listed));
}

/// A Flux object as a watch delivers it, parsed straight into what a row reads ([`Listed`]), as
/// `status` parses its LIST pages: a watch's pages of 500 objects then weigh what the rows keep,
/// not a `serde_json::Value` tree per object (at 10,000 apps the UI's peak memory was mostly
/// those pages). The watcher itself reads only the resourceVersion, from `metadata`.
#[derive(Debug, Clone)]
struct Watched {
    metadata: ObjectMeta,
    listed: Listed,
}

impl<'de> serde::Deserialize<'de> for Watched {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Watched, D::Error> {
        let mut listed = Listed::deserialize(deserializer)?;
        let metadata = ObjectMeta { resource_version: listed.take_resource_version(), ..ObjectMeta::default() };
        Ok(Watched { metadata, listed })
    }
}

impl kube::Resource for Watched {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(resource: &ApiResource) -> Cow<'_, str> {
        resource.kind.as_str().into()
    }

    fn group(resource: &ApiResource) -> Cow<'_, str> {
        resource.group.as_str().into()
    }

    fn version(resource: &ApiResource) -> Cow<'_, str> {
        resource.version.as_str().into()
    }

    fn api_version(resource: &ApiResource) -> Cow<'_, str> {
        resource.api_version.as_str().into()
    }

    fn plural(resource: &ApiResource) -> Cow<'_, str> {
        resource.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Store {
    fn new(kind: &'static FluxKind, extra: bool) -> Store {
        Store { kind, extra, objects: HashMap::new(), relisting: None, listed: false, error: None }
    }

    fn apply(&mut self, event: Event<Watched>) {
        let kind = self.kind.kind;
        match event {
            Event::Init => self.relisting = Some(HashMap::new()),
            Event::InitApply(object) => insert(self.relisting.get_or_insert_default(), object, kind),
            Event::InitDone => self.objects = self.relisting.take().unwrap_or_default(),
            Event::Apply(object) => insert(&mut self.objects, object, kind),
            Event::Delete(object) => {
                if let Some(names) = self.objects.get_mut(object.listed.namespace()) {
                    names.remove(object.listed.name());
                }
            }
        }
    }

    fn get(&self, (_, namespace, name): &Key) -> Option<&Listed> {
        self.objects.get(namespace)?.get(name).map(Box::as_ref)
    }

    fn all(&self) -> impl Iterator<Item = &Listed> {
        self.objects.values().flat_map(HashMap::values).map(Box::as_ref)
    }

    fn is_app_kind(&self) -> bool {
        self.kind.kind == KUSTOMIZATION.kind || self.kind.kind == HELM_RELEASE.kind
    }
}

/// The Flux objects in scope as the watches report them (`status --watch`, `status --wait` and
/// the UI's shared listing).
pub(crate) struct Live {
    cluster: Cluster,
    runtime: Runtime,
    flux_namespace: String,
    stores: Vec<Store>,
    triggers: Triggers<Watched>,
    forbidden: Vec<String>,
    printer: Printer,
}

impl Lookup for Live {
    type Object = Listed;

    fn find<'a>(&'a self, key: &Key) -> Option<impl Deref<Target = Listed> + use<'a>> {
        self.stores.iter().filter(|store| store.kind.kind == key.0).find_map(|store| store.get(key))
    }
}

impl Live {
    /// Detects Flux (as `status` does) and starts one watch per kind in scope.
    /// Starts the watches of the Flux objects in `scope`: the Kustomizations and HelmReleases
    /// whose labels match `labels` (`-l`), with every source.
    pub(crate) async fn start(cluster: Cluster, scope: &Scope, labels: Option<&str>, printer: Printer) -> Result<Live> {
        let detection = detect_flux(&cluster).await?;
        let served = detection.api_versions.clone();
        let runtime = runtime(detection);
        let flux_namespace = runtime.namespace.clone().unwrap_or_else(|| DEFAULT_FLUX_NAMESPACE.to_string());
        let in_scope = match scope {
            Scope::All => None,
            Scope::Namespace(namespace) => Some(namespace.clone()),
        };
        let mut wanted: Vec<(&FluxKind, Option<String>, Selector, bool)> = Vec::new();
        for kind in [&GIT_REPOSITORY, &OCI_REPOSITORY, &HELM_REPOSITORY, &HELM_CHART] {
            wanted.push((kind, in_scope.clone(), Selector::Every, false));
        }
        let rows = labels.map_or(Selector::Every, |labels| Selector::Labels(labels.to_string()));
        for kind in [&KUSTOMIZATION, &HELM_RELEASE] {
            wanted.push((kind, in_scope.clone(), rows.clone(), false));
        }
        if in_scope.as_ref().is_some_and(|namespace| *namespace != flux_namespace) {
            let flux = Some(flux_namespace.clone());
            wanted.push((&GIT_REPOSITORY, flux.clone(), Selector::Every, true));
            wanted.push((&OCI_REPOSITORY, flux.clone(), Selector::Every, true));
            wanted.push((&KUSTOMIZATION, flux, Selector::Name(SYNC_NAME.to_string()), true));
        }
        let mut stores = Vec::new();
        let mut followed = Vec::new();
        for (kind, namespace, selector, extra) in wanted {
            let Some(resource) = resource(&served, kind) else { continue };
            stores.push(Store::new(kind, extra));
            followed.push(Followed { resource, namespace, selector });
        }
        let mut triggers = Triggers::new(&cluster, printer);
        triggers.follow(followed);
        Ok(Live { cluster, runtime, flux_namespace, stores, triggers, forbidden: Vec::new(), printer })
    }

    /// Waits for the watches to report a burst of changes and applies them.
    pub(crate) async fn update(&mut self) {
        for change in self.triggers.burst().await {
            self.apply(change);
        }
    }

    fn apply(&mut self, (index, event): Change<Watched>) {
        let Some(store) = self.stores.get_mut(index) else { return };
        match event {
            Ok(event) => {
                let listed = matches!(event, Event::InitDone);
                store.apply(event);
                if listed {
                    store.listed = true;
                    store.error = None;
                }
            }
            Err(error) if forbidden(&error) => {
                // An empty list: what was there can no longer be read.
                store.apply(Event::Init);
                store.apply(Event::InitDone);
                store.listed = true;
                let message = api_message(&error);
                if store.extra {
                    self.printer.warning(&format!(
                        "cannot read the config repo sync in {}: {}: {message}",
                        self.flux_namespace, store.kind.plural
                    ));
                } else {
                    self.forbidden.push(format!("{}: {message}", store.kind.plural));
                }
            }
            Err(error) => {
                let described = crate::diagnostic::describe_watch(&error);
                self.printer.detail(&format!("watch {}: {described}", store.kind.plural));
                if !store.listed {
                    store.error = Some(described);
                }
            }
        }
    }

    /// Whether every watch has listed its objects once.
    pub(crate) fn listed(&self) -> bool {
        self.stores.iter().all(|store| store.listed)
    }

    /// Listing every app kind (Kustomization, HelmRelease) was forbidden: the user may not read
    /// them in this scope at all.
    pub(crate) fn app_kinds_forbidden(&self) -> bool {
        let mut app_kinds = self.stores.iter().filter(|store| !store.extra && store.is_app_kind()).peekable();
        app_kinds.peek().is_some()
            && app_kinds.all(|store| {
                let prefix = format!("{}: ", store.kind.plural);
                self.forbidden.iter().any(|denied| denied.starts_with(&prefix))
            })
    }

    /// How far the first lists are: the kinds listed, the objects read so far.
    pub(crate) fn progress(&self) -> String {
        let listed = self.stores.iter().filter(|store| store.listed).count();
        let read: usize = self
            .stores
            .iter()
            .map(|store| match (&store.relisting, store.listed) {
                (Some(relisting), false) => relisting.values().map(HashMap::len).sum::<usize>(),
                _ => store.objects.values().map(HashMap::len).sum::<usize>(),
            })
            .sum();
        format!("{listed} of {} kinds listed, {read} objects read so far", self.stores.len())
    }

    /// What is still being listed, and why it is not done.
    fn listing(&self) -> String {
        match self.stores.iter().find(|store| !store.listed) {
            Some(Store { kind, error: Some(error), .. }) => format!("cannot list {} yet: {error}", kind.plural),
            Some(Store { kind, .. }) => format!("listing {}", kind.plural),
            None => "listed".to_string(),
        }
    }

    /// The listing as `status` shows it, from what the watches reported.
    pub(crate) fn report(&self) -> Report {
        let apps = self.stores.iter().filter(|store| !store.extra && store.is_app_kind()).flat_map(Store::all);
        assemble(self.runtime.clone(), apps, self, self.forbidden.clone())
    }

    /// The config repo sync: Kustomization `flux-system` in the Flux namespace.
    fn sync_key(&self) -> Key {
        (KUSTOMIZATION.kind.to_string(), self.flux_namespace.clone(), SYNC_NAME.to_string())
    }
}

/// The message of the API server's answer, without kube's wrapping.
fn api_message(error: &watcher::Error) -> String {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.message.clone(),
        watcher::Error::WatchError(status) => status.message.clone(),
        other => crate::diagnostic::describe_watch(other),
    }
}

/// A row's object: (Kustomization or HelmRelease, namespace, name).
fn row_key(row: &AppStatus) -> Key {
    let kind = if row.kind == AppKind::Helm { HELM_RELEASE.kind } else { KUSTOMIZATION.kind };
    (kind.to_string(), row.namespace.clone(), row.name.clone())
}

/// What a cluster-wide wait judges.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Part {
    /// The watches have not listed everything yet.
    Listing,
    /// The config repo sync.
    Sync,
    /// A row of the listing.
    Row(Key),
}

/// Judges a row for the cluster-wide wait: suspended counts as done (as the listing's exit code
/// counts it); otherwise Ready with its spec observed at what its source offers.
pub(super) fn judge_listed(object: &impl FluxObject, row: &AppStatus) -> Verdict {
    if row.state == AppState::Suspended {
        return Verdict::Ready;
    }
    judge_row(object, row, None, None)
}

/// Judges the config repo sync: Ready at `target` (a commit or revision; `None`: at what its
/// source fetched). While its source has not fetched the target yet, that is what is waited for.
pub(super) fn judge_sync(sync: &impl FluxObject, row: &AppStatus, target: Option<&str>) -> Verdict {
    match judge_row(sync, row, target, None) {
        Verdict::Waiting { why, healthy } => {
            let source = row.objects.len().checked_sub(2).map(|index| &row.objects[index]);
            let why = match (source, target) {
                (Some(source), Some(target))
                    if source.ready == "True"
                        && !source.revision.as_deref().is_some_and(|revision| revision_matches(revision, target)) =>
                {
                    format!(
                        "{} {}/{} has {}, not yet {target} (it fetches at its interval; `flux reconcile source git {} -n {}` fetches now)",
                        source.kind,
                        source.namespace,
                        source.name,
                        source.revision.as_deref().unwrap_or("nothing"),
                        source.name,
                        source.namespace,
                    )
                }
                _ => why,
            };
            Verdict::Waiting { why, healthy }
        }
        other => other,
    }
}

/// `status --wait`.
struct ClusterWait {
    live: Live,
    view: View,
    /// `--revision`.
    revision: Option<String>,
    /// The head of the sync's branch, asked of the git server once: `None` until asked,
    /// `Some(None)` when that failed (the GitRepository's artifact is waited for instead).
    head: Option<Option<String>>,
}

impl ClusterWait {
    /// The revision the sync must reach: `--revision`, else the head of its branch.
    async fn target(&mut self, sync: &Listed) -> Option<String> {
        if let Some(revision) = &self.revision {
            return Some(revision.clone());
        }
        if let Some(head) = &self.head {
            return head.clone();
        }
        let head = match self.ask_head(sync).await {
            Ok(head) => {
                self.live.printer.detail(&format!("the config repo's branch is at {head}"));
                Some(head)
            }
            Err(why) => {
                self.live.printer.warning(&format!(
                    "cannot ask the config repo for its branch head ({why}); waiting for the revision the GitRepository fetched"
                ));
                None
            }
        };
        self.head = Some(head.clone());
        head
    }

    /// `git ls-remote` of the sync's GitRepository branch, with the credentials of its Secret.
    async fn ask_head(&self, sync: &Listed) -> std::result::Result<String, String> {
        let source_ref = sync.source_ref().ok_or("the sync has no sourceRef")?;
        if source_ref.kind != Some(GIT_REPOSITORY.kind) {
            return Err("its source is not a GitRepository".into());
        }
        let source_key = source_ref.key("", sync.namespace()).ok_or("the sync's sourceRef has no name")?;
        let (_, namespace, name) = &source_key;
        let source = self.live.find(&source_key).ok_or(format!("GitRepository {namespace}/{name} not found"))?;
        let branch = source.branch().ok_or("the GitRepository follows no branch")?.to_string();
        let remote = git_remote(&self.live.cluster, &*source).await?;
        let asked = branch.clone();
        match run_git(move || crate::git::remote_head(&remote, &asked)).await? {
            Some(head) => Ok(head),
            None => Err(format!("branch {branch} not found")),
        }
    }

    fn label(&self, part: &Part) -> String {
        match part {
            Part::Listing => "the Flux objects".to_string(),
            Part::Sync => format!("the config repo sync {}/{SYNC_NAME}", self.live.flux_namespace),
            Part::Row((_, namespace, name)) => format!("app {namespace}/{name}"),
        }
    }
}

impl Waited for ClusterWait {
    type Part = Part;

    async fn look(&mut self) -> Result<Vec<(Part, Verdict)>> {
        if !self.live.listed() {
            return Ok(vec![(Part::Listing, Verdict::Waiting { why: self.live.listing(), healthy: false })]);
        }
        let mut verdicts = Vec::new();
        let sync_key = self.live.sync_key();
        match self.live.find(&sync_key).map(|sync| (*sync).clone()) {
            Some(sync) => {
                let row = kustomization_row(&sync, &self.live);
                let target = self.target(&sync).await;
                verdicts.push((Part::Sync, judge_sync(&sync, &row, target.as_deref())));
            }
            // Without our install record or --revision, a cluster without the sync has none to wait for.
            None if self.live.runtime.config.is_some() || self.revision.is_some() => {
                let why = format!("Kustomization {}/{SYNC_NAME} (the config repo sync) not found", sync_key.1);
                verdicts.push((Part::Sync, Verdict::Waiting { why, healthy: false }));
            }
            None => {}
        }
        if !self.view.cluster_only {
            let report = self.live.report();
            for row in report.rows() {
                let key = row_key(row);
                if key == sync_key {
                    continue;
                }
                if let Some(object) = self.live.find(&key) {
                    verdicts.push((Part::Row(key), judge_listed(&*object, row)));
                }
            }
        }
        Ok(verdicts)
    }

    async fn changed(&mut self) {
        self.live.update().await;
    }

    /// Prints the screen once, with the header read again.
    async fn finish(&mut self) -> Result<()> {
        if !self.live.listed() {
            return Ok(());
        }
        if let Ok(detection) = detect_flux(&self.live.cluster).await {
            self.live.runtime = runtime(detection);
        }
        let report = self.view.shown(self.live.report());
        self.live.printer.data(&self.view.render(&report)?)
    }

    fn failed(&self, part: &Part, why: &str, grace_period: Duration) -> Error {
        let hint = match part {
            Part::Row((_, namespace, name)) => {
                format!("`kubectl gitops app status {name} -n {namespace}` explains it; {}", events_hint(namespace))
            }
            _ => events_hint(&self.live.flux_namespace),
        };
        Error::Negative {
            message: format!("{} failed (for {} and more): {why}", self.label(part), duration::format(grace_period)),
            hint: Some(hint),
        }
    }

    fn timed_out(&self, waiting: &[(&Part, &str)], timeout: Duration) -> Error {
        let target = match (&self.revision, &self.head) {
            (Some(revision), _) => format!(" (config repo at {revision})"),
            (None, Some(Some(head))) => format!(" (config repo at {})", &head[..head.len().min(12)]),
            _ => String::new(),
        };
        let mut message = format!("not everything is ready{target} after {}; waiting on:", duration::format(timeout));
        for (part, why) in waiting.iter().take(NAMED_AT_TIMEOUT) {
            message.push_str(&format!("\n  {}: {why}", self.label(part)));
        }
        if waiting.len() > NAMED_AT_TIMEOUT {
            message.push_str(&format!("\n  … and {} more", waiting.len() - NAMED_AT_TIMEOUT));
        }
        Error::Negative {
            message,
            hint: Some(
                "`kubectl gitops app status NAME` explains one app; `kubectl gitops status --failed-only` lists what is not ready"
                    .into(),
            ),
        }
    }
}

/// `status --wait`: until the config repo sync is Ready at the wanted revision and every row in
/// scope is Ready or suspended (exit 0), a row has failed for the grace period (exit 1), or the
/// timeout passes (exit 1, naming what blocks). The screen is printed at the end either way.
pub async fn wait_cluster(
    cluster: Cluster,
    scope: &Scope,
    labels: Option<&str>,
    view: View,
    request: &WaitRequest,
    printer: Printer,
) -> Result<ExitCode> {
    let live = Live::start(cluster, scope, labels, printer).await?;
    let mut waited = ClusterWait { live, view, revision: request.revision.clone(), head: None };
    wait_until(&mut waited, "waiting for Flux to sync", request.limits, &printer).await
}

/// `status --watch`: the screen, then again on every change until interrupted, which ends it as
/// asked (exit 0). On a terminal the screen is redrawn in place; otherwise each row that changed is printed on its own (a table line,
/// or a JSON or YAML document), as `kubectl get -w` does.
pub async fn watch_cluster(
    cluster: Cluster,
    scope: &Scope,
    labels: Option<&str>,
    view: View,
    printer: Printer,
) -> Result<ExitCode> {
    let mut live = Live::start(cluster, scope, labels, printer).await?;
    let terminal = printer.redraws();
    let mut last: Option<Report> = None;
    loop {
        tokio::select! {
            () = live.update() => {}
            () = crate::interrupt::until_requested() => return Ok(ExitCode::Ok),
        }
        if !live.listed() {
            continue;
        }
        let report = view.scoped(live.report());
        match &last {
            Some(old) if *old == report => {}
            Some(old) if !terminal => {
                printer.data(&view.render_rows(&changed_rows(old, &report, view.failed_only))?)?
            }
            _ if terminal => printer.redraw(&view.render(&view.shown(report.clone()))?)?,
            _ => printer.data(&view.render(&view.shown(report.clone()))?)?,
        }
        last = Some(report);
    }
}

/// The rows that differ between two listings, in listing order; a row that is gone is shown as it
/// was with the message `deleted`. With `failed_only`, only rows that are or were not ready.
fn changed_rows(old: &Report, new: &Report, failed_only: bool) -> Vec<AppStatus> {
    let rows = |report: &Report| -> BTreeMap<(String, String, String), AppStatus> {
        report
            .rows()
            .map(|row| {
                let (kind, namespace, name) = row_key(row);
                ((namespace, name, kind), row.clone())
            })
            .collect()
    };
    let (before, after) = (rows(old), rows(new));
    let not_ready = |row: &AppStatus| matches!(row.state, AppState::Failing | AppState::Progressing);
    let mut changed: BTreeMap<(String, String, String), AppStatus> = BTreeMap::new();
    for (key, row) in &after {
        let was = before.get(key);
        if was == Some(row) {
            continue;
        }
        if !failed_only || not_ready(row) || was.is_some_and(not_ready) {
            changed.insert(key.clone(), row.clone());
        }
    }
    for (key, was) in &before {
        if !after.contains_key(key) && (!failed_only || not_ready(was)) {
            changed.insert(key.clone(), AppStatus { message: Some("deleted".into()), ..was.clone() });
        }
    }
    changed.into_values().collect()
}

#[cfg(test)]
mod tests;
