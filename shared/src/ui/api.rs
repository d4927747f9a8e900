//! `/api/v1`: JSON over the same functions the CLI calls (docs/api.md). Errors are
//! `{"error": …, "hint": …}` with the HTTP status the exit code maps to.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Serialize;

use super::clusters::{ClusterView, Viewed};
use crate::app::requests::{AddApp, RemoveApp};
use crate::change::result::Changed;
use crate::error::{Error, ExitCode};
use crate::metrics::{DEFAULT_FAILURE_WINDOW, DEFAULT_SINCE, DoraReport, DoraRequest, dora_report};
use crate::readers::apps_query::{AppsPage, AppsParams, Snapshot, page};
use crate::readers::{self, AppHistory, AppReport, AppStatus};

/// How long a request waits for the watches' first listing before answering 503.
const FIRST_LISTING: Duration = Duration::from_secs(20);

/// An error as the API answers it.
#[derive(Debug, Serialize)]
pub(crate) struct ApiError {
    #[serde(skip)]
    status: StatusCode,
    error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, error: &str, hint: Option<&str>) -> ApiError {
        ApiError { status, error: error.to_string(), hint: hint.map(str::to_string) }
    }

    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    pub(crate) fn message(&self) -> (&str, Option<&str>) {
        (&self.error, self.hint.as_deref())
    }
}

impl From<Error> for ApiError {
    /// The exit codes' HTTP statuses: bad input 400, forbidden 403, cluster 503, git 502, a
    /// request the server's Ctrl-C stopped 503.
    fn from(error: Error) -> ApiError {
        let status = match &error {
            Error::Forbidden { .. } | Error::Unauthorized { .. } => StatusCode::FORBIDDEN,
            _ => match error.exit_code() {
                ExitCode::Usage => StatusCode::BAD_REQUEST,
                ExitCode::Cluster | ExitCode::Interrupted => StatusCode::SERVICE_UNAVAILABLE,
                ExitCode::Git => StatusCode::BAD_GATEWAY,
                ExitCode::No => StatusCode::CONFLICT,
                ExitCode::Ok | ExitCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            },
        };
        ApiError { status, error: error.to_string(), hint: error.hint() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(&self)).into_response()
    }
}

/// A JSON answer: serde_json straight into the body (axum's own `Json` adds a dependency for
/// error paths of request bodies we parse ourselves).
pub(crate) struct Json<T>(pub(crate) T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(body) => ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(error) => {
                (StatusCode::INTERNAL_SERVER_ERROR, format!("cannot render the answer: {error}")).into_response()
            }
        }
    }
}

/// A document as the CLI prints it with `-o json`: `apiVersion`, `kind`, then its fields.
pub(crate) struct Document<T>(pub(crate) T);

impl<T: crate::output::Kind> IntoResponse for Document<T> {
    fn into_response(self) -> Response {
        Json(crate::output::document(&self.0)).into_response()
    }
}

/// The latest snapshot once the watches listed everything once (or failed to start).
pub(super) async fn listed(view: &ClusterView) -> Result<Arc<Snapshot>, ApiError> {
    let mut snapshots = view.snapshots.clone();
    let waited = tokio::time::timeout(FIRST_LISTING, snapshots.wait_for(|s| s.listed || s.error.is_some())).await;
    match waited {
        Ok(Ok(snapshot)) => match &snapshot.error {
            Some(error) => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("cannot watch the Flux objects: {error}"),
                Some("check that `kubectl gitops status -A` works with the same kubeconfig"),
            )),
            None => Ok(Arc::clone(&snapshot)),
        },
        _ => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the Flux objects are still being listed",
            Some("try again in a few seconds"),
        )),
    }
}

/// `GET /api/v1/apps?namespace=&health=&q=&limit=&continue=`
pub(super) async fn apps(view: Viewed, RawQuery(query): RawQuery) -> Result<Json<AppsPage>, ApiError> {
    let query = AppsParams::parse(query.as_deref()).checked()?;
    let snapshot = listed(&view).await?;
    Ok(Json(page(&snapshot, &query)))
}

/// `GET /api/v1/apps/{namespace}/{name}`: what `app status -o json` prints.
pub(super) async fn app(
    view: Viewed,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Document<AppReport>, ApiError> {
    Ok(Document(app_report(&view, &namespace, &name).await?))
}

pub(super) async fn app_report(view: &Viewed, namespace: &str, name: &str) -> Result<AppReport, ApiError> {
    crate::names::validate_name(namespace, "namespace")?;
    crate::names::validate_name(name, "app name")?;
    match readers::app_report(&view.cluster, namespace, name, readers::Ledgers::Keep, &view.server.printer).await? {
        Some(report) => Ok(report),
        None => Err(not_found_app(namespace, name)),
    }
}

/// `GET /api/v1/apps/{namespace}/{name}/history`: what `app history -o json` prints, with the
/// commits read from the app's git source as the command reads them.
pub(super) async fn history(
    view: Viewed,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Document<AppHistory>, ApiError> {
    Ok(Document(app_history(&view, &namespace, &name).await?))
}

pub(super) async fn app_history(view: &Viewed, namespace: &str, name: &str) -> Result<AppHistory, ApiError> {
    crate::names::validate_name(namespace, "namespace")?;
    crate::names::validate_name(name, "app name")?;
    match readers::app_history(&view.cluster, namespace, name, true, readers::Ledgers::Keep, &view.server.printer).await
    {
        Err(Error::Usage { .. }) => Err(not_found_app(namespace, name)),
        other => Ok(other?),
    }
}

/// `GET /api/v1/metrics/dora?since=&failureWindow=&namespace=&app=`: what `metrics dora -o json`
/// prints (every namespace unless `namespace` is given).
pub(super) async fn dora(view: Viewed, RawQuery(query): RawQuery) -> Result<Document<DoraReport>, ApiError> {
    let (mut since, mut failure_window) = (DEFAULT_SINCE.to_string(), DEFAULT_FAILURE_WINDOW.to_string());
    let (mut namespace, mut app) = (None, None);
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match name.as_ref() {
            "since" => since = value.into_owned(),
            "failureWindow" => failure_window = value.into_owned(),
            "namespace" => namespace = Some(value.into_owned()),
            "app" => app = Some(value.into_owned()),
            // Which cluster: read by `Viewed`.
            "context" => {}
            other => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    &format!("unknown parameter {other:?}"),
                    Some("use since, failureWindow, namespace and app"),
                ));
            }
        }
    }
    let request = DoraRequest::new(namespace, app, &since, &failure_window)?;
    Ok(Document(dora_report(&view.cluster, &request).await?))
}

/// Checks that `app remove NAME` would remove this app: it takes an app by name from the config
/// repo, so the path's namespace must be where that app is, and the app must be one we added.
pub(super) async fn removable(view: &ClusterView, namespace: &str, name: &str) -> Result<(), ApiError> {
    crate::names::validate_name(namespace, "namespace")?;
    crate::names::validate_name(name, "app name")?;
    let snapshot = listed(view).await?;
    let key = (namespace, name);
    match snapshot.rows.binary_search_by(|row| (row.app.namespace.as_str(), row.app.name.as_str()).cmp(&key)) {
        Ok(index) if snapshot.rows[index].managed => Ok(()),
        Ok(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            &format!("{namespace}/{name} was not added by kubectl gitops"),
            Some("remove it from the repo that defines it"),
        )),
        Err(_) => Err(not_found_app(namespace, name)),
    }
}

fn not_found_app(namespace: &str, name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        &format!("no Kustomization or HelmRelease {name:?} in namespace {namespace}"),
        Some("GET /api/v1/apps lists the apps you may read"),
    )
}

/// `GET /api/v1/cluster`: what `detect -o json` prints.
pub(super) async fn cluster(view: Viewed) -> Result<impl IntoResponse, ApiError> {
    Ok(Document(crate::detect::detect(&view.cluster).await?))
}

/// What `POST …/{action}` did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Acted {
    pub(crate) action: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// What the command printed, as `kubectl gitops app suspend` prints it.
    pub(crate) result: String,
}

/// The request body's media type, without parameters.
pub(super) fn media_type(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(axum::http::header::CONTENT_TYPE)?.to_str().ok()?;
    value.split(';').next().map(str::trim)
}

/// Suspends, resumes or reconciles an app, as `app suspend|resume` and `flux reconcile` do.
pub(super) async fn perform(view: &ClusterView, namespace: &str, name: &str, action: &str) -> Result<Acted, ApiError> {
    crate::names::validate_name(namespace, "namespace")?;
    crate::names::validate_name(name, "app name")?;
    let result = match action {
        "reconcile" => match readers::request_reconcile(&view.cluster, namespace, name).await? {
            Some(requested) => format!("reconcile requested (reconcile.fluxcd.io/requestedAt={requested})"),
            None => return Err(not_found_app(namespace, name)),
        },
        "suspend" | "resume" => readers::set_suspended(&view.cluster, namespace, name, action == "suspend")
            .await?
            .ok_or_else(|| not_found_app(namespace, name))?,
        other => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                &format!("no action {other:?}"),
                Some("the actions are suspend, resume and reconcile"),
            ));
        }
    };
    Ok(Acted { action: action.to_string(), namespace: namespace.to_string(), name: name.to_string(), result })
}

/// `POST /api/v1/apps`: `app add` with the body's fields as its flags (docs/api.md); with
/// `dryRun` the plan and its diff, else the commit or the pull request.
pub(super) async fn add(view: Viewed, headers: axum::http::HeaderMap, body: Bytes) -> Result<Json<Changed>, ApiError> {
    let hint = Some("send the fields of `app add` as JSON (docs/api.md)");
    if media_type(&headers) != Some("application/json") {
        return Err(ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "the body must be application/json", hint));
    }
    let request: AddApp = serde_json::from_slice(&body).map_err(|error| {
        ApiError::new(StatusCode::BAD_REQUEST, &format!("the body is not an app to add: {error}"), hint)
    })?;
    Ok(Json(request.run(&view.server.repo, &view.target, &view.server.printer).await?))
}

/// `DELETE /api/v1/apps/{namespace}/{name}?dryRun=&pr=&wait=`: `app remove NAME` from the config
/// repo of the Flux namespace `namespace`; with `dryRun` the plan and its diff, else the commit or
/// the pull request.
pub(super) async fn remove(
    view: Viewed,
    Path((namespace, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Json<Changed>, ApiError> {
    removable(&view, &namespace, &name).await?;
    let mut request = RemoveApp { name, ..RemoveApp::default() };
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let flag = match key.as_ref() {
            "dryRun" => &mut request.dry_run,
            "pr" => &mut request.pr,
            "wait" => &mut request.wait,
            // Which cluster: read by `Viewed`.
            "context" => continue,
            other => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    &format!("unknown parameter {other:?}"),
                    Some("DELETE takes dryRun, pr and wait (docs/api.md)"),
                ));
            }
        };
        *flag = match value.as_ref() {
            "true" | "1" | "" => true,
            "false" | "0" => false,
            other => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    &format!("{key}={other:?} is not true or false"),
                    Some("DELETE takes dryRun, pr and wait as true or false (docs/api.md)"),
                ));
            }
        };
    }
    Ok(Json(request.run(&namespace, &view.server.repo, &view.target, &view.server.printer).await?))
}

/// One `apps` event: the snapshot's revision, and the rows that changed since the previous event
/// (none in the first; a deleted row comes with the message `deleted`). `resync`: this stream fell
/// further behind than the snapshots remember (or the watches restarted), so `changed` is empty
/// and the client reads the rows it wants again.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct AppsChanged {
    revision: u64,
    changed: Vec<AppStatus>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    resync: bool,
}

/// `GET /api/v1/events`: Server-Sent Events, an `apps` event on every change the watches see.
/// Each client reads the shared snapshots, whose changes are worked out once for all of them; no
/// client starts a watch or keeps a snapshot of its own.
pub(super) async fn events(view: Viewed) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let snapshots = view.snapshots.clone();
    let stopping = view.server.stopping.clone();
    // Without --drift, a channel that never changes.
    let drift = view.drift.clone().unwrap_or_else(|| tokio::sync::watch::channel(None).1);
    let state = (snapshots, drift, stopping, None::<u64>);
    let stream = futures::stream::unfold(state, |(mut snapshots, mut drift, mut stopping, last)| async move {
        loop {
            let current = Arc::clone(&snapshots.borrow_and_update());
            if current.listed && last != Some(current.revision) {
                // The first event carries the revision only: a client reads the rows it wants
                // with GET /apps. Sending every row to every new client would hold, at 10,000
                // apps and 50 clients, half a gigabyte of JSON at once.
                let (changed, resync) = match last.map(|last| current.changed_since(last)) {
                    None => (Vec::new(), false),
                    Some(Some(changed)) => (changed, false),
                    Some(None) => (Vec::new(), true),
                };
                let body = AppsChanged { revision: current.revision, changed, resync };
                let event = Event::default().event("apps").data(serde_json::to_string(&body).unwrap_or_default());
                return Some((Ok(event), (snapshots, drift, stopping, Some(current.revision))));
            }
            let drifted = tokio::select! {
                changed = snapshots.changed() => if changed.is_err() { return None } else { false },
                Ok(()) = drift.changed() => true,
                _ = stopping.wait_for(|stop| *stop) => return None,
            };
            if drifted {
                // A new drift report: the pages read what they show of it again.
                let report = drift.borrow_and_update().clone();
                let summary =
                    report.as_ref().and_then(|report| report.as_ref().as_ref().ok().map(|drift| drift.summary));
                let event = Event::default().event("drift").data(serde_json::to_string(&summary).unwrap_or_default());
                return Some((Ok(event), (snapshots, drift, stopping, last)));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// `GET /api/v1/openapi.json`
pub(super) async fn openapi() -> impl IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], include_str!("openapi.json"))
}

/// `GET /api/v1/schemas/{kind}.json`: the JSON Schema of the documents the API answers with,
/// the files docs/schemas/ publishes; openapi.json's components name them.
pub(super) async fn schema(Path(file): Path<String>) -> Result<Json<serde_json::Value>, ApiError> {
    use crate::output::document::schema_of;
    let schema = match file.as_str() {
        "AppReport.json" => schema_of::<AppReport>(),
        "AppHistory.json" => schema_of::<AppHistory>(),
        "DoraMetrics.json" => schema_of::<DoraReport>(),
        "Detection.json" => schema_of::<crate::detect::Detection>(),
        "FleetStatus.json" => schema_of::<crate::fleet::FleetStatus>(),
        _ => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "no such schema",
                Some("GET /api/v1/openapi.json names the schemas (components.schemas)"),
            ));
        }
    };
    Ok(Json(schema))
}

/// Any other path under `/api/v1`.
pub(super) async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no such endpoint", Some("GET /api/v1/openapi.json lists the endpoints"))
}
