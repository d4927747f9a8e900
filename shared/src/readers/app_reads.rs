//! What `kubectl gitops app status NAME` reads: the app and what it refers to, with a handful
//! of GETs at the versions discovery says are served (unlike the `status` listing's LISTs), its
//! workloads, and the commit behind the applied revision from git. [`Viewer`] reads again and
//! again for `--wait` and `--watch`.

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;

use super::app_report::{
    AppEvent, AppRef, AppReport, Gathered, InventoryItem, PodState, Workload, applied_commit, build_report, inventory,
    missing, pod_state, recent_events, references, workload,
};
use super::collect::{Index, key, require_flux, resource, text};
use crate::cluster::{Cluster, is_forbidden, is_not_found};
use crate::error::Result;
use crate::flux::api::{self as flux_api, FluxKind, HELM_RELEASE, KUSTOMIZATION, ServedApis};
use crate::flux::status::FluxObject;
use crate::git::Remote;
use crate::git::log::{CommitInfo, LoggedCommit, show_commit};
use crate::output::Printer;

/// The kinds whose replicas the tree shows.
pub(super) const WORKLOAD_KINDS: [&str; 3] = ["Deployment", "StatefulSet", "DaemonSet"];

/// Reads the app again and again (`--wait`, `--watch`), fetching each applied commit from git once.
pub(crate) struct Viewer {
    pub(super) cluster: Cluster,
    pub(super) served: ServedApis,
    pub(crate) app: AppRef,
    git: bool,
    /// Whether a whole look keeps the history in the app's ledger.
    pub(super) ledgers: super::remember::Ledgers,
    pub(super) printer: Printer,
    /// The last commit looked up, by hash; `None` inside when the lookup failed (warned once).
    commit: Option<(String, Option<CommitInfo>)>,
}

impl Viewer {
    pub(crate) fn new(cluster: Cluster, served: ServedApis, app: AppRef, git: bool, printer: Printer) -> Viewer {
        Viewer { cluster, served, app, git, ledgers: super::remember::Ledgers::Keep, printer, commit: None }
    }

    /// Reads the app and builds its report; `None` when it does not exist. `whole` reads its
    /// workloads and the commit too; a wait judges without them and reads them at the end.
    pub(crate) async fn look(&mut self, whole: bool) -> Result<Option<(Gathered, AppReport)>> {
        let Some(gathered) = gather(&self.cluster, &self.served, &self.app, whole).await? else { return Ok(None) };
        let mut report = build_report(&gathered);
        if whole && self.git {
            report.commit = self.commit(&gathered).await;
        }
        if whole {
            // `app status` is not asked for the history: keeping it is a detail.
            let commits = report.commit.as_slice();
            let (_, not_kept) = super::remember::remember(&self.cluster, &gathered, commits, self.ledgers).await;
            if let Some(why) = not_kept {
                self.printer.detail(&why);
            }
        }
        Ok(Some((gathered, report)))
    }

    async fn commit(&mut self, gathered: &Gathered) -> Option<CommitInfo> {
        let (source, reference, sha) = applied_commit(gathered)?;
        if let Some((seen, info)) = &self.commit
            && *seen == sha
        {
            return info.clone();
        }
        let info = match lookup_commit(&self.cluster, source, reference.as_deref(), &sha).await {
            Ok(info) => Some(info),
            Err(why) => {
                self.printer.warning(&format!("cannot show commit {}: {why}", &sha[..sha.len().min(12)]));
                None
            }
        };
        self.commit = Some((sha, info.clone()));
        info
    }
}

/// The Flux kinds this cluster serves, from one discovery request.
pub(crate) async fn served_apis(cluster: &Cluster) -> Result<ServedApis> {
    let discovery = cluster.client.list_api_groups_aggregated().await.map_err(|error| cluster.error(error))?;
    let served = ServedApis::from_discovery(&discovery);
    require_flux(&served)?;
    Ok(served)
}

/// The Flux kind of a `kind:` field (`GitRepository`, …), when it is one we know.
pub(super) fn flux_kind(kind: &str) -> Option<&'static FluxKind> {
    flux_api::ALL.iter().find(|known| known.kind == kind)
}

/// GET one object; `Ok(None)` when it or its kind does not exist.
async fn get(
    cluster: &Cluster,
    resource: Option<ApiResource>,
    namespace: &str,
    name: &str,
) -> Result<Option<DynamicObject>> {
    let Some(resource) = resource else { return Ok(None) };
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), namespace, &resource);
    api.get_opt(name).await.map_err(|error| cluster.error(error))
}

/// GET a Flux object by kind name.
async fn get_flux(
    cluster: &Cluster,
    served: &ServedApis,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<DynamicObject>> {
    get(cluster, flux_kind(kind).and_then(|kind| resource(served, kind)), namespace, name).await
}

/// Reads the app and what it refers to (`with_workloads`: its workloads too); `None` when no
/// Kustomization or HelmRelease has its name.
pub(super) async fn gather(
    cluster: &Cluster,
    served: &ServedApis,
    app: &AppRef,
    with_workloads: bool,
) -> Result<Option<Gathered>> {
    let (kustomization, release) = tokio::join!(
        get(cluster, resource(served, &KUSTOMIZATION), &app.namespace, &app.name),
        get(cluster, resource(served, &HELM_RELEASE), &app.namespace, &app.name),
    );
    // A Kustomization wins over a HelmRelease of the same name: it is what `app add` creates
    // for manifests, and the HelmRelease usually sits inside it.
    let Some(object) = kustomization?.or(release?) else { return Ok(None) };
    let (source_refs, dependency_refs) = references(&object);
    let lookups = source_refs
        .iter()
        .chain(&dependency_refs)
        .map(|(kind, namespace, name)| get_flux(cluster, served, kind, namespace, name));
    let found = futures::future::try_join_all(lookups).await?;
    let (found_sources, found_dependencies) = found.split_at(source_refs.len());
    let mut sources = Index::new();
    let mut missing_objects = Vec::new();
    for (wanted, found) in source_refs.iter().zip(found_sources) {
        match found {
            Some(object) => {
                sources.insert(key(object), object.clone());
            }
            None => missing_objects.push(missing(wanted.clone())),
        }
    }
    let mut dependencies = Vec::new();
    for (wanted, found) in dependency_refs.iter().zip(found_dependencies) {
        match found {
            Some(object) => dependencies.push(object.clone()),
            None => missing_objects.push(missing(wanted.clone())),
        }
    }
    let mut inventory = inventory(&object);
    let mut workloads = Vec::new();
    let mut events = Vec::new();
    if with_workloads {
        if inventory.is_empty() && key(&object).0 == HELM_RELEASE.kind {
            inventory = labelled_workloads(cluster, &object).await?;
        }
        let (read, recent) = tokio::join!(read_workloads(cluster, &inventory), read_events(cluster, &object));
        (workloads, events) = (read?, recent);
    }
    Ok(Some(Gathered { app: object, sources, missing: missing_objects, dependencies, inventory, workloads, events }))
}

/// The app's recent events. They are a help, not the app's state: a user who may not list them
/// (or an API server that dropped them) gets none, not an error.
async fn read_events(cluster: &Cluster, app: &DynamicObject) -> Vec<AppEvent> {
    let (kind, namespace, name) = key(app);
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), &namespace, &core_v1("Event", "events"));
    let selector = format!("involvedObject.kind={kind},involvedObject.name={name}");
    api.list(&ListParams::default().fields(&selector)).await.map(|list| recent_events(list.items)).unwrap_or_default()
}

/// A HelmRelease without an inventory (helm-controller before Flux v2.9): its workloads are found
/// by the labels helm-controller puts on every object it releases, or else by Helm's instance label.
async fn labelled_workloads(cluster: &Cluster, release: &DynamicObject) -> Result<Vec<InventoryItem>> {
    let (_, namespace, name) = key(release);
    let target = text(release, "/spec/targetNamespace").unwrap_or_else(|| namespace.clone());
    let release_name = text(release, "/status/history/0/name").unwrap_or_else(|| name.clone());
    let selectors = [
        format!("helm.toolkit.fluxcd.io/name={name},helm.toolkit.fluxcd.io/namespace={namespace}"),
        format!("app.kubernetes.io/instance={release_name}"),
    ];
    for selector in selectors {
        let mut found = Vec::new();
        for kind in WORKLOAD_KINDS {
            let api: Api<DynamicObject> =
                Api::namespaced_with(cluster.client.clone(), &target, &workload_resource(kind));
            match api.list(&ListParams::default().labels(&selector)).await {
                Ok(list) => found.extend(list.items.iter().map(|object| InventoryItem {
                    kind: kind.to_string(),
                    group: "apps".to_string(),
                    namespace: Some(target.clone()),
                    name: object.metadata.name.clone().unwrap_or_default(),
                })),
                Err(error) if is_forbidden(&error) => {}
                Err(error) => return Err(cluster.error(error)),
            }
        }
        if !found.is_empty() {
            return Ok(found);
        }
    }
    Ok(Vec::new())
}

/// `apps/v1` Deployment, StatefulSet or DaemonSet.
pub(super) fn workload_resource(kind: &str) -> ApiResource {
    let plural = format!("{}s", kind.to_lowercase());
    ApiResource::from_gvk_with_plural(&kube::core::GroupVersionKind::gvk("apps", "v1", kind), &plural)
}

/// Reads every workload of the inventory, concurrently.
async fn read_workloads(cluster: &Cluster, inventory: &[InventoryItem]) -> Result<Vec<Workload>> {
    let wanted = inventory.iter().filter(|item| item.group == "apps" && WORKLOAD_KINDS.contains(&item.kind.as_str()));
    let reads = wanted.map(|item| async move {
        let namespace = item.namespace.clone().unwrap_or_default();
        let api: Api<DynamicObject> =
            Api::namespaced_with(cluster.client.clone(), &namespace, &workload_resource(&item.kind));
        let read = api.get_opt(&item.name).await;
        let unread = |message: &str| Workload {
            kind: item.kind.clone(),
            namespace: namespace.clone(),
            name: item.name.clone(),
            replicas: 0,
            ready_replicas: 0,
            ready: false,
            message: Some(message.to_string()),
            pods: Vec::new(),
        };
        match read {
            Ok(Some(object)) => {
                let mut found = workload(&item.kind, &object);
                found.pods = read_pods(cluster, &namespace, &object).await?;
                Ok(found)
            }
            Ok(None) => Ok(unread("not found")),
            Err(error) if is_forbidden(&error) => Ok(unread("forbidden")),
            Err(error) => Err(cluster.error(error)),
        }
    });
    futures::future::try_join_all(reads).await
}

/// A kind of the core group, read untyped: k8s-openapi's typed objects (a `Pod`, an `Event`)
/// bring their whole deserializers into every binary that shows a few of their fields.
pub(super) fn core_v1(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The pods a workload's selector matches (at most `PODS_SHOWN`); none when its selector uses
/// expressions or pods may not be listed.
async fn read_pods(cluster: &Cluster, namespace: &str, workload: &DynamicObject) -> Result<Vec<PodState>> {
    const PODS_SHOWN: u32 = 50;
    let Some(labels) = workload.data.pointer("/spec/selector/matchLabels").and_then(|labels| labels.as_object()) else {
        return Ok(Vec::new());
    };
    let selector: Vec<String> =
        labels.iter().filter_map(|(key, value)| value.as_str().map(|value| format!("{key}={value}"))).collect();
    if selector.is_empty() {
        return Ok(Vec::new());
    }
    let pods: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), namespace, &core_v1("Pod", "pods"));
    match pods.list(&ListParams::default().labels(&selector.join(",")).limit(PODS_SHOWN)).await {
        Ok(list) => Ok(list.items.iter().map(pod_state).collect()),
        Err(error) if is_forbidden(&error) || is_not_found(&error) => Ok(Vec::new()),
        Err(error) => Err(cluster.error(error)),
    }
}

/// The log of the app's git source (a Kustomization's GitRepository: its branch or tag, marked
/// with the commits that changed the Kustomization's path); `None` when the app has no git
/// source.
pub(super) async fn source_log(
    cluster: &Cluster,
    gathered: &Gathered,
) -> Option<std::result::Result<Vec<LoggedCommit>, String>> {
    let source = gathered.sources.values().find(|object| key(object).0 == "GitRepository")?;
    let reference = applied_commit(gathered).and_then(|(_, reference, _)| reference).or_else(|| {
        let field = |name: &str| text(source, &format!("/spec/ref/{name}"));
        field("name")
            .or_else(|| field("branch").map(|branch| format!("refs/heads/{branch}")))
            .or_else(|| field("tag").map(|tag| format!("refs/tags/{tag}")))
    })?;
    let paths: Vec<String> =
        if gathered.is_helm() { Vec::new() } else { text(&gathered.app, "/spec/path").into_iter().collect() };
    Some(
        async {
            let remote = git_remote(cluster, source).await?;
            run_git(move || crate::git::log::log(&remote, &reference, &paths)).await
        }
        .await,
    )
}

/// The config repo's log for an app `app add` added (docs/layout.md): the commits that changed
/// its definition (`apps/<app>/`) or this cluster's overlay (`<cluster path>/apps/<app>/`),
/// read with the credentials of the GitRepository the cluster syncs from. `None` for an app we
/// did not add, or on a cluster without our install record.
pub(super) async fn config_log(
    cluster: &Cluster,
    served: &ServedApis,
    gathered: &Gathered,
) -> Option<std::result::Result<Vec<LoggedCommit>, String>> {
    if !gathered.app.is_ours() {
        return None;
    }
    let namespace = gathered.app.namespace();
    let record = crate::detect::read_record(cluster, namespace).await.ok()??;
    let sync = get_flux(cluster, served, "GitRepository", namespace, "flux-system").await.ok()??;
    let name = gathered.app.name();
    let paths = vec![format!("apps/{name}"), format!("{}/apps/{name}", record.path.trim_end_matches('/'))];
    let reference = format!("refs/heads/{}", record.branch);
    Some(
        async {
            let remote = git_remote(cluster, &sync).await?;
            run_git(move || crate::git::log::log(&remote, &reference, &paths)).await
        }
        .await,
    )
}

/// Fetches one commit with the credentials of the GitRepository's Secret.
async fn lookup_commit(
    cluster: &Cluster,
    source: &DynamicObject,
    reference: Option<&str>,
    sha: &str,
) -> std::result::Result<CommitInfo, String> {
    let remote = git_remote(cluster, source).await?;
    let (reference, sha) = (reference.map(String::from), sha.to_string());
    run_git(move || show_commit(&remote, reference.as_deref(), &sha)).await
}

/// The URL of a GitRepository and the credentials of its Secret, as Flux reaches it.
pub(super) async fn git_remote(cluster: &Cluster, source: &impl FluxObject) -> std::result::Result<Remote, String> {
    let url = source.url().ok_or("the GitRepository has no URL")?;
    crate::repo_access::flux_remote(cluster, source.namespace(), url, source.secret_name()).await
}

/// Runs a libgit2 call off the async threads, giving up after [`crate::timeouts::GIT_READ`].
pub(super) async fn run_git<T: Send + 'static>(
    call: impl FnOnce() -> std::result::Result<T, crate::git::GitError> + Send + 'static,
) -> std::result::Result<T, String> {
    crate::git::off_runtime(crate::timeouts::GIT_READ, call).await.map_err(|error| error.to_string())
}
