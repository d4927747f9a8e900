//! The MCP tools: each checks its input as the command checks its flags, runs what the command
//! runs, and answers the command's `-o json` document (its type's JSON Schema is the tool's
//! output schema). A failure is a tool error an assistant can read (`error:` and `hint:`, as on
//! the command line), not a protocol error. Lists come in pages; no result is larger than
//! [`MAX_RESULT_BYTES`].

use rmcp::RoleServer;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    ErrorData, Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};

use crate::change::preview_at::{DiffRequest, State};
use crate::cli::{GlobalArgs, OutputFormat, RepoArgs};
use crate::cluster::Cluster;
use crate::detect::Detection;
use crate::drift::Drift;
use crate::error::Error;
use crate::fleet::{FleetStatus, StatusArgs};
use crate::metrics::{DEFAULT_FAILURE_WINDOW, DEFAULT_SINCE, DoraReport, DoraRequest};
use crate::output::Printer;
use crate::pr::Validation;
use crate::preview::{Diff, Rendering};
use crate::readers::apps_query::{AppsPage, AppsParams, Snapshot, checked_limit, page};
use crate::readers::events::{self, EventFilter, EventsPage};
use crate::readers::{AppHistory, AppReport, Scope};
use crate::upgrade::{Check, UpgradeRequest};

/// The largest result a tool gives: an assistant's context is small, and a list pages instead.
pub(super) const MAX_RESULT_BYTES: usize = 100 * 1024;
/// How long `fleet_status` waits for each cluster, and how many it asks at once (the command's
/// defaults).
const FLEET_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);
const FLEET_CONCURRENCY: usize = 8;

/// `list_apps`' input.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ListApps {
    /// Only this namespace (default: every namespace the user may read).
    namespace: Option<String>,
    /// Only apps in this state: ready, failing, progressing or suspended.
    health: Option<String>,
    /// Only apps whose name contains this, any case.
    name: Option<String>,
    /// At most this many apps (1 to 500, default 50).
    limit: Option<u32>,
    /// The `continue` of the previous page, for the next.
    #[serde(rename = "continue")]
    continue_after: Option<String>,
}

/// The input of the tools about one app.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct OneApp {
    /// The app's name (its Kustomization's or HelmRelease's).
    name: String,
    /// Its namespace (default: Flux's, flux-system).
    namespace: Option<String>,
}

/// `events`' input.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Events {
    /// Only this namespace (default: every namespace).
    namespace: Option<String>,
    /// Only events of this type: Normal or Warning.
    #[serde(rename = "type")]
    severity: Option<String>,
    /// Only events about objects of this kind (Kustomization, HelmRelease, Pod).
    kind: Option<String>,
    /// Only events whose object's name, reason or message contains this, any case.
    text: Option<String>,
    /// At most this many events (1 to 500, default 50).
    limit: Option<u32>,
    /// The `continue` of the previous page, for the next.
    #[serde(rename = "continue")]
    continue_after: Option<String>,
}

/// `dora_metrics`' input.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Dora {
    /// Only this namespace (default: every namespace the user may read).
    namespace: Option<String>,
    /// Only this app (with its namespace).
    app: Option<String>,
    /// How far back, as `30d`, `12h` (default 30d).
    since: Option<String>,
}

/// `fleet_status`' input.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Fleet {
    /// The kubeconfig contexts to ask, in the columns' order (default: the clusters the config
    /// repo's fleet.yaml names; every context when there is none).
    contexts: Option<Vec<String>>,
    /// How far this commit of the config repo (a full hash) has rolled out in each cluster.
    rollout: Option<String>,
}

/// `drift`'s input.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct DriftInput {
    /// One Kustomization by name (default: every one in the namespace).
    name: Option<String>,
    /// The Kustomizations' namespace (default: Flux's, flux-system).
    namespace: Option<String>,
    /// Every namespace (not with name).
    #[serde(default)]
    all_namespaces: bool,
}

/// `pr_show`'s input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct PrShow {
    /// The pull request's number (as `pr_list` lists it).
    number: u64,
    /// Also what its head would do to the cluster (`diff`'s preview): objects created, changed,
    /// deleted, HelmReleases' rendered manifests.
    #[serde(default)]
    preview: bool,
}

/// `diff`'s input: one state of the config repo.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct DiffInput {
    /// A branch of the config repo (its head), or a commit of the branch Flux follows by its
    /// full hash.
    #[serde(rename = "ref")]
    git_ref: Option<String>,
    /// A pull request of the config repo, at its head commit.
    pull_request: Option<u64>,
}

/// `flux_upgrade_check`'s input.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct UpgradeCheck {
    /// The Flux release to check an upgrade to (default: the one this kubectl-gitops pins).
    flux_version: Option<String>,
}

/// `pr_list`'s answer: the open pull requests kubectl-gitops opened.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(super) struct PullRequests {
    items: Vec<crate::pr::Row>,
}

/// What `--allow-writes` and `--allow-self-merge` allow.
#[derive(Debug, Clone, Copy)]
pub(super) struct Writes {
    pub(super) allowed: bool,
    pub(super) self_merge: bool,
}

/// The server: the cluster of the kubeconfig, and the tools over it.
#[derive(Clone)]
pub(super) struct Tools {
    pub(super) cluster: Cluster,
    /// The contexts fleet_status may ask: those `--context` names, else the one in use.
    pub(super) contexts: Vec<String>,
    /// The pull requests this server opened (merge_pr refuses them without
    /// `--allow-self-merge`), shared by every session of an HTTP server.
    pub(super) opened: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<u64>>>,
    pub(super) writes: Writes,
    /// The command line's connection flags: the fleet tool asks other contexts with them.
    pub(super) global: GlobalArgs,
    /// How the config repo is reached (the fleet file, its head, pull requests, changes).
    pub(super) repo: RepoArgs,
    /// Plans a pull request's recorded request again (validate_pr, merge_pr).
    pub(super) replan: crate::change::recorded::Replanner,
    pub(super) printer: Printer,
    tool_router: ToolRouter<Tools>,
}

/// A failure as the command line says it: `error: …` and its `hint: …`.
pub(super) fn said(error: Error) -> String {
    match error.hint() {
        Some(hint) => format!("error: {error}\nhint: {hint}"),
        None => format!("error: {error}"),
    }
}

/// `value` as the tool's result, unless it is larger than [`MAX_RESULT_BYTES`].
pub(super) fn bounded<T: Serialize>(value: T) -> Result<Json<T>, String> {
    let size = serde_json::to_vec(&value).map(|json| json.len()).unwrap_or(usize::MAX);
    if size > MAX_RESULT_BYTES {
        return Err(said(Error::usage(
            format!("the result is {} KB, over the {} KB a tool answers", size / 1024, MAX_RESULT_BYTES / 1024),
            "ask for fewer (limit) or narrow it (namespace, name)",
        )));
    }
    Ok(Json(value))
}

/// The failure of a tool about app `name`, which `namespace` does not hold.
pub(super) fn no_app(name: &str, namespace: &str) -> String {
    said(Error::usage(
        format!("app {name:?} not found: no Kustomization or HelmRelease {name:?} in namespace {namespace}"),
        "list_apps lists the apps and their namespaces",
    ))
}

/// A value given as text, trimmed; absent when blank.
pub(super) fn given(value: Option<String>) -> Option<String> {
    value.map(|value| value.trim().to_string()).filter(|value| !value.is_empty())
}

#[tool_router]
impl Tools {
    /// The server; the tools that change something only with `allow_writes`.
    pub(super) fn new(
        cluster: Cluster,
        contexts: Vec<String>,
        global: GlobalArgs,
        repo: RepoArgs,
        replan: crate::change::recorded::Replanner,
        printer: Printer,
        writes: Writes,
    ) -> Tools {
        let mut tool_router = Tools::tool_router();
        if writes.allowed {
            tool_router += Tools::write_router();
        }
        let opened = std::sync::Arc::default();
        Tools { cluster, contexts, opened, writes, global, repo, replan, printer, tool_router }
    }

    /// The namespace given, checked, else Flux's (as `-n` defaults for the app commands).
    pub(super) fn namespace_or_flux(namespace: Option<String>) -> Result<String, String> {
        match given(namespace) {
            Some(namespace) => {
                crate::names::validate_name(&namespace, "namespace").map_err(said)?;
                Ok(namespace)
            }
            None => crate::cluster::default_flux_namespace().map_err(said),
        }
    }

    /// What `kubectl gitops status -A` lists: every app (Kustomization and HelmRelease) with its
    /// state, source and applied revisions and why it is not ready; a page at a time.
    #[tool(
        description = "List the apps (Flux Kustomizations and HelmReleases) with their state (ready, failing, progressing, suspended), revisions and the reason one is not ready, as `kubectl gitops status -A -o json`. Filter by namespace, health or a part of the name; results come in pages: pass `continue` for the next."
    )]
    async fn list_apps(&self, Parameters(input): Parameters<ListApps>) -> Result<Json<AppsPage>, String> {
        let params = AppsParams {
            namespace: given(input.namespace),
            health: given(input.health),
            q: given(input.name),
            limit: input.limit.map(|limit| limit.to_string()),
            continue_after: given(input.continue_after),
        };
        let query = params.checked().map_err(said)?;
        let scope = match &query.namespace {
            Some(namespace) => Scope::Namespace(namespace.clone()),
            None => Scope::All,
        };
        let report = crate::readers::collect(&self.cluster, &scope).await.map_err(said)?;
        let listed = Snapshot::next(&Snapshot::starting(), 1, report, scope)
            .ok_or_else(|| said(Error::Internal("the listing was empty of a first snapshot".into())))?;
        bounded(page(&listed, &query))
    }

    /// `kubectl gitops app status NAME -o json`.
    #[tool(
        description = "Why an app is (not) ready, as `kubectl gitops app status NAME -o json`: its chain (source, chart, Kustomization or HelmRelease), what it waits on, its workloads and their pods with each pod's reason (Unschedulable, CrashLoopBackOff…), Flux's history and its recent events."
    )]
    async fn app_status(&self, Parameters(input): Parameters<OneApp>) -> Result<Json<AppReport>, String> {
        let namespace = Tools::namespace_or_flux(input.namespace.clone())?;
        crate::names::validate_name(&input.name, "app").map_err(said)?;
        // A read tool writes nothing: the history is merged in memory, the ledger left as it is.
        let ledgers = crate::readers::Ledgers::ReadOnly;
        let report = crate::readers::app_report(&self.cluster, &namespace, &input.name, ledgers, &self.printer).await;
        match report.map_err(said)? {
            Some(report) => bounded(report),
            None => Err(no_app(&input.name, &namespace)),
        }
    }

    /// `kubectl gitops app history NAME -o json`.
    #[tool(
        description = "Every deployment of an app its ledger kept (revision, outcome, when, how long; rollbacks), as `kubectl gitops app history NAME -o json`, without reading commits from git."
    )]
    async fn app_history(&self, Parameters(input): Parameters<OneApp>) -> Result<Json<AppHistory>, String> {
        let namespace = Tools::namespace_or_flux(input.namespace.clone())?;
        crate::names::validate_name(&input.name, "app").map_err(said)?;
        let ledgers = crate::readers::Ledgers::ReadOnly;
        let history =
            crate::readers::app_history(&self.cluster, &namespace, &input.name, false, ledgers, &self.printer);
        let history = history.await;
        bounded(history.map_err(said)?)
    }

    /// The cluster's Kubernetes events, as the UI's Events page shows them.
    #[tool(
        description = "The cluster's Kubernetes events, newest first (what `kubectl get events -A` lists): each object's kind and name, type, reason, message, count and when. Filter by namespace, type (Normal, Warning), the object's kind or a text; results come in pages: pass `continue` for the next."
    )]
    async fn events(&self, Parameters(input): Parameters<Events>) -> Result<Json<EventsPage>, String> {
        let limit = checked_limit(&input.limit.map(|limit| limit.to_string())).map_err(said)?;
        let filter = EventFilter::checked(
            given(input.namespace),
            given(input.severity),
            given(input.kind),
            given(input.text),
            limit,
            given(input.continue_after),
        )
        .map_err(said)?;
        let log = events::list(&self.cluster, filter.namespace.as_deref()).await.map_err(said)?;
        bounded(log.page(&filter))
    }

    /// `kubectl gitops fleet status -o json`.
    #[tool(
        description = "Apps × clusters, as `kubectl gitops fleet status -o json`: each kubeconfig context asked at once (each within 15 s), per app and cluster its state and version, where versions differ, a cluster behind the config repo's head, an unreachable cluster said so; with `rollout`, how far one config commit has rolled out in each."
    )]
    async fn fleet_status(&self, Parameters(input): Parameters<Fleet>) -> Result<Json<FleetStatus>, String> {
        let asked = input.contexts.unwrap_or_else(|| self.contexts.clone());
        if let Some(other) = asked.iter().find(|context| !self.contexts.contains(context)) {
            return Err(said(Error::usage(
                format!(
                    "the server was not started for the context {other:?}: it answers for {}",
                    self.contexts.join(", ")
                ),
                format!(
                    "start it with `kubectl gitops mcp --context {},{other}` to let it ask that cluster",
                    self.contexts.join(",")
                ),
            )));
        }
        if asked.is_empty() {
            return Err(said(Error::usage("no context to ask", "start the server with --context NAME[,NAME…]")));
        }
        let mut global = self.global.clone();
        global.context = Some(asked.join(","));
        let args = StatusArgs {
            all_contexts: false,
            timeout: FLEET_TIMEOUT,
            concurrency: FLEET_CONCURRENCY,
            no_config_repo: false,
            commit: given(input.rollout),
            config: self.repo.clone(),
        };
        let request = args.request(&global).map_err(said)?;
        bounded(crate::fleet::fleet_status(&request, &self.printer).await.map_err(said)?)
    }

    /// `kubectl gitops drift -o json`.
    #[tool(
        description = "What differs in the cluster from what Flux last applied, as `kubectl gitops drift -o json`: each Kustomization's source fetched at the revision Flux applied, built and compared with the cluster; the fields that differ and the field managers that changed them, objects deleted by hand."
    )]
    async fn drift(&self, Parameters(input): Parameters<DriftInput>) -> Result<Json<Drift>, String> {
        if input.all_namespaces && input.name.is_some() {
            return Err(said(Error::usage("name and allNamespaces both say which", "give one of them")));
        }
        let namespace = (!input.all_namespaces).then(|| given(input.namespace).or(self.global.namespace.clone()));
        let repo = self.repo.settings().map_err(said)?;
        let request =
            crate::drift::DriftRequest::report(given(input.name).as_deref(), namespace, repo).map_err(said)?;
        let target = crate::change::Target::from_args(&self.global);
        bounded(crate::drift::report(&request, &target, &self.printer).await.map_err(said)?)
    }

    /// `kubectl gitops pr list -o json`.
    #[tool(
        description = "The open pull requests kubectl-gitops opened on the config repo, as `kubectl gitops pr list -o json`: number, change (verb and app), mergeable, checks, author, age. Listed, not trusted: pr_show validates one."
    )]
    async fn pr_list(&self) -> Result<Json<PullRequests>, String> {
        let repo = self.repo.settings().map_err(said)?;
        let target = crate::change::Target::from_args(&self.global);
        let (items, _) = crate::pr::open_rows(&repo, &target, &self.printer).await.map_err(said)?;
        bounded(PullRequests { items })
    }

    /// `kubectl gitops pr show NUMBER -o json`.
    #[tool(
        description = "Validate one pull request kubectl-gitops opened, as `kubectl gitops pr show NUMBER -o json`: who opened it, whether its branch is exactly what its recorded request plans on its base (every file, nothing else), mergeable, checks; with `preview`, what its head would do to the cluster (`kubectl gitops diff`'s preview)."
    )]
    async fn pr_show(&self, Parameters(input): Parameters<PrShow>) -> Result<Json<Validation>, String> {
        let repo = self.repo.settings().map_err(said)?;
        let validation = crate::pr::Request::show_number(input.number, repo, crate::cli::OutputFormat::Json);
        let preview = input.preview.then(crate::preview::Rendering::default);
        let request = crate::pr::ShowRequest { validation, preview };
        let target = crate::change::Target::from_args(&self.global);
        let (validation, _, _) =
            crate::pr::checked(&request, &target, self.replan, &self.printer).await.map_err(said)?;
        bounded(validation)
    }

    /// `kubectl gitops diff -o json`.
    #[tool(
        description = "What a state of the config repo would do to the live cluster, as `kubectl gitops diff --ref REF|--pull-request N -o json`: every object created, changed (the fields) or deleted, Kustomizations built by the pinned flux CLI and HelmReleases' manifests rendered, compared by a server-side dry run. Give `ref` (a branch, or a full commit hash) or `pullRequest`. Changes nothing."
    )]
    async fn diff(&self, Parameters(input): Parameters<DiffInput>) -> Result<Json<Diff>, String> {
        let (git_ref, pull_request) = (given(input.git_ref), input.pull_request.map(|number| number.to_string()));
        if git_ref.is_some() == pull_request.is_some() {
            return Err(said(Error::usage(
                "diff compares one state",
                "give ref (a branch or a full commit hash) or pullRequest",
            )));
        }
        let request = DiffRequest {
            state: State::named(None, git_ref.as_deref(), pull_request.as_deref()).map_err(said)?,
            rendering: Rendering::default(),
            repo: self.repo.settings().map_err(said)?,
            format: OutputFormat::Json,
            headers: true,
        };
        let target = crate::change::Target::from_args(&self.global);
        let mut context = crate::change::context(&target, &request.repo, false, &self.printer).await.map_err(said)?;
        bounded(crate::change::preview_at::compute(&mut context, &request, &self.printer).await.map_err(said)?)
    }

    /// `kubectl gitops upgrade --check -o json`.
    #[tool(
        description = "Which Flux runs and whether it is up to date, as `kubectl gitops upgrade --check -o json`: what the cluster runs, what each cluster's install record says, the release this kubectl-gitops pins, and what an upgrade would change (files, manifests to migrate, stored objects, other repos to change first). Changes nothing."
    )]
    async fn flux_upgrade_check(&self, Parameters(input): Parameters<UpgradeCheck>) -> Result<Json<Check>, String> {
        let repo = self.repo.settings().map_err(said)?;
        let request = UpgradeRequest::check(given(input.flux_version).as_deref(), repo).map_err(said)?;
        let target = crate::change::Target::from_args(&self.global);
        bounded(crate::upgrade::check(&request, &target, &self.printer).await.map_err(said)?)
    }

    /// `kubectl gitops detect -o json`.
    #[tool(
        description = "What the cluster is, as `kubectl gitops detect -o json`: its Kubernetes and Flux versions, the Flux controllers and their readiness, the config repo kubectl-gitops installed it from, and warnings."
    )]
    async fn detect(&self) -> Result<Json<Detection>, String> {
        bounded(crate::detect::detect(&self.cluster).await.map_err(said)?)
    }

    /// `kubectl gitops metrics dora -o json`.
    #[tool(
        description = "The DORA metrics (deployment frequency, lead time, change failure rate, time to restore) of every app, of a namespace or of one app, as `kubectl gitops metrics dora -o json`."
    )]
    async fn dora_metrics(&self, Parameters(input): Parameters<Dora>) -> Result<Json<DoraReport>, String> {
        let since = given(input.since).unwrap_or_else(|| DEFAULT_SINCE.to_string());
        let request =
            DoraRequest::new(given(input.namespace), given(input.app), &since, DEFAULT_FAILURE_WINDOW).map_err(said)?;
        bounded(crate::metrics::dora_report(&self.cluster, &request).await.map_err(said)?)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(super::resources::listed()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match super::resources::read(&request.uri) {
            Some(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            None => Err(ErrorData::resource_not_found(
                format!("no resource {:?}: resources/list lists them", request.uri),
                None,
            )),
        }
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("kubectl-gitops", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "GitOps on a Flux cluster, through the user's kubeconfig: list_apps to see what runs and what fails, app_status for why one fails, events and app_history for what happened, pr_list and pr_show for the changes waiting in pull requests. Changes, when the server allows them, go through the config repo: a pull request by default, a dry run first.",
            )
    }
}
