//! The HTML pages: rendered on the server (maud, checked at compile time), usable without
//! JavaScript. `assets/ui.js` adds the live rows: on each `apps` event it fetches `/apps?…&part=rows`
//! with the page's own query and swaps the table body in.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery};
use axum::response::{Html, IntoResponse, Redirect, Response};
use maud::{Markup, html};

use super::api::{self, ApiError};
use super::charts;
use super::clusters::{ClusterView, Nav, Viewed};
use super::layout::{failed, filter_choice, filter_form, layout};
use super::logs;
use super::topology;
use crate::app::requests::{AddApp, RemoveApp};
use crate::change::result::Changed;
use crate::deployments::dora::Metrics;
use crate::drift::LiveDrift;
use crate::metrics::{DEFAULT_FAILURE_WINDOW, DEFAULT_SINCE, DoraRequest, dora_report};
use crate::readers::apps_query::{AppRow, AppsPage, AppsParams, page};
use crate::readers::{AppHistory, AppReport, AppState, ObjectStatus, shorten_revision};

/// `GET /apps`: the listing, filters and one page of rows; with `part=rows`, the table body alone,
/// which the live updates fetch.
pub(super) async fn apps(view: Viewed, RawQuery(query): RawQuery) -> Response {
    let params = AppsParams::parse(query.as_deref());
    let rows_only = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .any(|(name, value)| name == "part" && value == "rows");
    let drift = view.drift.as_ref().map(|drift| drift.borrow().clone());
    // While the watches list, the page comes at once and says how far they are.
    let progress = {
        let snapshot = view.snapshots.borrow();
        let listing = !snapshot.listed && snapshot.error.is_none();
        listing.then(|| snapshot.progress.clone().unwrap_or_else(|| "starting the watches".to_string()))
    };
    if let Some(progress) = progress {
        let nav = view.nav();
        if rows_only {
            return Html(listing(&nav, &progress).into_string()).into_response();
        }
        return layout(&nav, "Apps", html! { h1 { "Apps" } (listing(&nav, &progress)) }).into_response();
    }
    match cut(&view, &params).await {
        Ok(listing) if rows_only => Html(table_body(&params, &listing, drift.as_ref()).into_string()).into_response(),
        Ok(listing) => {
            let panel = view.dora.borrow().clone();
            let nav = view.nav();
            let body = html! { (apps_body(&nav, &params, &listing, drift.as_ref())) (dora_panel(panel)) };
            layout(&nav, "Apps", body).into_response()
        }
        Err(error) if rows_only => error.into_response(),
        Err(error) => failed(error),
    }
}

/// The Apps table before the first listing is complete: how far it is. Without the script, the
/// page reloads itself every 2 s; with it, the first `apps` event (the listing is complete)
/// reloads it.
fn listing(nav: &Nav, progress: &str) -> Markup {
    html! {
        noscript { meta http-equiv="refresh" content="2"; }
        table #apps data-revision="0" data-listing="true" data-context=[nav.switching()] {
            caption.summary role="status" { "Listing the Flux objects: " (progress) "…" }
        }
    }
}

async fn cut(view: &ClusterView, params: &AppsParams) -> Result<AppsPage, ApiError> {
    let query = params.checked()?;
    let snapshot = api::listed(view).await?;
    Ok(page(&snapshot, &query))
}

fn apps_body(nav: &Nav, params: &AppsParams, listing: &AppsPage, drift: Option<&LiveDrift>) -> Markup {
    let fields = html! {
        (filter_choice("Namespace", "namespace", "all", listing.namespaces.iter().map(String::as_str), params.namespace.as_deref()))
        (filter_choice("Health", "health", "any", AppState::ALL.map(AppState::word), params.health.as_deref()))
        label { "Name " input type="search" name="q" value=(params.q.clone().unwrap_or_default()); }
    };
    html! {
        (filter_form(nav, "Apps", "/apps", params.limit.as_deref(), fields))
        @if let Some(namespace) = &listing.watched_namespace {
            p.warning { "You may not list apps in every namespace: showing namespace " (namespace) "." }
        }
        @if !listing.forbidden.is_empty() {
            p.warning { "Not allowed to read: " (listing.forbidden.join("; ")) }
        }
        table #apps data-revision=(listing.revision) data-context=[nav.switching()] { (table_body(params, listing, drift)) }
    }
}

/// The DORA figures of every app, as the last background round made them.
fn dora_panel(panel: super::dora::Panel) -> Markup {
    html! {
        h2 { "Delivery (DORA)" }
        @match panel.as_deref() {
            None => p.hint { "Being worked out from the apps' histories…" },
            Some(Err(why)) => p.warning { "Not available: " (why) },
            Some(Ok(figures)) => {
                (dora_figures(&figures.overall, &format!("Every app, since {}", figures.since)))
                (charts::dora_charts(&figures.overall))
                @for unread in &figures.unread { p.warning { "Not read: " (unread) } }
                p.hint { "As of " (figures.until) "; per app: " code { "kubectl gitops metrics dora -A" } "." }
            }
        }
    }
}

/// The table's inside, what the live updates swap in: the counts, the rows and, in a last row,
/// the link to the next page; with `--drift`, a drift column.
fn table_body(params: &AppsParams, listing: &AppsPage, drift: Option<&LiveDrift>) -> Markup {
    let summary = &listing.summary;
    html! {
        caption.summary {
            (summary.objects) " Flux objects: " (summary.ready) " ready, " (summary.failing) " failing, "
            (summary.progressing) " progressing, " (summary.suspended) " suspended"
        }
        thead { tr {
            th { "NAMESPACE" } th { "NAME" } th { "KIND" } th { "READY" } th { "SUSPENDED" }
            th { "SOURCE REVISION" } th { "APPLIED REVISION" } th { "LAST DEPLOYED" } th { "MESSAGE" }
            @if drift.is_some() { th { "DRIFT" } }
        } }
        tbody { (rows(params, listing, drift)) }
    }
}

fn rows(params: &AppsParams, listing: &AppsPage, drift: Option<&LiveDrift>) -> Markup {
    html! {
        @for row in &listing.items { (app_row(row, drift)) }
        @if listing.items.is_empty() { tr { td colspan="10" { "No apps match." } } }
        @if let Some(after) = &listing.continue_after {
            tr.more { td colspan="10" { a href=(next_page(params, after)) { "Next page" } } }
        }
    }
}

fn app_row(row: &AppRow, drift: Option<&LiveDrift>) -> Markup {
    let app = &row.app;
    let ready = match app.state {
        AppState::Ready => "True",
        AppState::Failing => "False",
        AppState::Progressing | AppState::Suspended => "Unknown",
    };
    html! {
        tr class=(app.state.word()) data-app=(format!("{}/{}", app.namespace, app.name)) {
            td { (app.namespace) }
            td { a href=(format!("/apps/{}/{}", app.namespace, app.name)) { (app.name) } }
            td { (format!("{:?}", app.kind).to_lowercase()) @if !row.managed { " (flux)" } }
            td.state { (ready) }
            td { (if app.state == AppState::Suspended { "True" } else { "False" }) }
            td { (app.source_revision.as_deref().map(shorten_revision).unwrap_or_default()) }
            td { (app.applied_revision.as_deref().map(shorten_revision).unwrap_or_default()) }
            td { (app.last_deployed.clone().unwrap_or_default()) }
            td.message { (app.message.clone().unwrap_or_default()) }
            @if drift.is_some() { td.drift { (super::drift::cell(drift, app)) } }
        }
    }
}

fn next_page(params: &AppsParams, after: &str) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in
        [("namespace", &params.namespace), ("health", &params.health), ("q", &params.q), ("limit", &params.limit)]
    {
        if let Some(value) = value.as_deref().filter(|value| !value.is_empty()) {
            query.append_pair(name, value);
        }
    }
    query.append_pair("continue", after);
    format!("/apps?{}", query.finish())
}

/// `GET /apps/{namespace}/{name}`: the `app status` tree, its graph and its drift; with
/// `part=graph` or `part=drift`, that section alone (what the live updates swap in).
pub(super) async fn app(
    view: Viewed,
    Path((namespace, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    let asked = |wanted: &str| {
        form_urlencoded::parse(query.as_deref().unwrap_or_default().as_bytes())
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.into_owned())
    };
    let (part, pod) = (asked("part"), asked("pod"));
    let drift = view.drift.as_ref().map(|drift| drift.borrow().clone());
    let report = api::app_report(&view, &namespace, &name).await;
    match (report, part.as_deref()) {
        (Ok(report), Some("drift")) => {
            Html(super::drift::section(drift.as_ref(), &report.app).into_string()).into_response()
        }
        (Ok(report), Some("graph")) => Html(topology::app_section(&report).into_string()).into_response(),
        (Ok(report), _) => {
            let body = html! {
                (app_body(&report, view.server.allow_writes, logs::section(&view, &report, pod.as_deref()).await))
                section #drift data-part="drift" { (super::drift::section(drift.as_ref(), &report.app)) }
            };
            layout(&view.nav(), &name, body).into_response()
        }
        (Err(error), Some(_)) => error.into_response(),
        (Err(error), None) => failed(error),
    }
}

fn object_row(object: &ObjectStatus) -> Markup {
    html! {
        tr class=(if object.ready == "True" { "ready" } else if object.ready == "False" { "failing" } else { "progressing" }) {
            td { (object.kind) } td { (object.namespace) "/" (object.name) } td.state { (object.ready) }
            td { (object.reason.clone().unwrap_or_default()) }
            td { (object.revision.as_deref().map(shorten_revision).unwrap_or_default()) }
            td.message { (object.message.clone().unwrap_or_default()) }
        }
    }
}

fn app_body(report: &AppReport, allow_writes: bool, log: Markup) -> Markup {
    let app = &report.app;
    let base = format!("/apps/{}/{}", app.namespace, app.name);
    html! {
        h1 { (app.namespace) "/" (app.name) " " span class=(format!("badge {}", app.state.word())) { (app.state.word()) } }
        @if let Some(message) = &app.message { p.message { (message) } }
        @if allow_writes {
            div.actions {
                @for action in ["reconcile", "suspend", "resume"] {
                    form method="post" action=(format!("/api/v1{base}/{action}")) { button type="submit" { (action) } }
                }
                // `app remove` says so when the app is not in the config repo.
                form.remove method="post" action=(format!("{base}/remove")) {
                    label { input type="checkbox" name="pr"; " as a pull request" } " "
                    button type="submit" { "remove…" }
                }
            }
        }
        h2 { "Graph" }
        section #graph data-part="graph" data-apps=(topology::watched_apps(report)) { (topology::app_section(report)) }
        h2 { "Chain" }
        table { thead { tr { th { "KIND" } th { "OBJECT" } th { "READY" } th { "REASON" } th { "REVISION" } th { "MESSAGE" } } }
            tbody { @for object in &app.objects { (object_row(object)) } } }
        @if let Some(error) = &report.last_error {
            h2 { "Last error" } p.error { (error.kind) " " (error.name) ": " (error.message.clone().unwrap_or_default()) }
        }
        @if !report.waiting_on.is_empty() {
            h2 { "Waiting on" }
            ul { @for waiting in &report.waiting_on {
                li { (waiting.kind) " " (waiting.namespace) "/" (waiting.name) ": " (waiting.message.clone().unwrap_or_default()) }
            } }
        }
        @if !report.dependencies.is_empty() {
            h2 { "Dependencies" }
            table { tbody { @for object in &report.dependencies { (object_row(object)) } } }
        }
        @if let Some(commit) = &report.commit {
            h2 { "Commit" }
            p { code { (shorten_revision(&commit.sha)) } " " (commit.subject) " · " (commit.author) " · " (commit.time) }
        }
        @if let Some(deployed) = &report.last_deployed {
            h2 { "Last deployed" }
            p { (deployed.revision) @if let Some(time) = &deployed.time { " at " (time) } }
        }
        h2 { "Workloads" }
        @if report.workloads.is_empty() { p { "None applied." } } @else {
            table { thead { tr { th { "KIND" } th { "NAME" } th { "READY" } th { "MESSAGE" } } }
                tbody { @for workload in &report.workloads {
                    tr class=(if workload.ready { "ready" } else { "failing" }) {
                        td { (workload.kind) } td { (workload.namespace) "/" (workload.name) }
                        td.state { (workload.ready_replicas) "/" (workload.replicas) }
                        td.message { (workload.message.clone().unwrap_or_default()) } }
                } } }
            h2 { "Pods" }
            table #pods { thead { tr { th { "POD" } th { "PHASE" } th { "READY" } th { "RESTARTS" } th { "REASON" } th { "MESSAGE" } } }
                tbody { @for workload in &report.workloads { @for pod in &workload.pods {
                    tr class=(if pod.ready { "ready" } else { "failing" }) {
                        td { (workload.namespace) "/" (pod.name) " " a href=(format!("{base}?pod={}#logs", pod.name)) { "log" } } td { (pod.phase) }
                        td.state { (if pod.ready { "True" } else { "False" }) } td { (pod.restarts) }
                        td { (pod.reason.clone().unwrap_or_default()) } td.message { (pod.message.clone().unwrap_or_default()) }
                    }
                } } } }
            section #logs { (log) }
        }
        h2 { "History" }
        p { a #all-deployments href=(format!("{base}/history")) { "Every deployment kept, with DORA figures →" } }
        @if report.history.is_empty() { p { "Flux has recorded no deployment yet." } } @else {
            table #history { thead { tr { th { "REVISION" } th { "STATUS" } th { "FIRST" } th { "LAST" } th { "DURATION" } th { "TIMES" } } }
                tbody { @for entry in &report.history {
                    tr { td { (entry.revision.as_deref().map(shorten_revision).unwrap_or_default()) } td { (entry.status.clone().unwrap_or_default()) }
                        td { (entry.first.clone().unwrap_or_default()) } td { (entry.last.clone().unwrap_or_default()) }
                        td { (entry.duration.clone().unwrap_or_default()) } td { (entry.reconciliations.map(|times| times.to_string()).unwrap_or_default()) } }
                } } }
        }
        h2 { "Events" }
        @if report.events.is_empty() { p { "No recent events." } } @else {
            table #events { thead { tr { th { "TIME" } th { "TYPE" } th { "REASON" } th { "MESSAGE" } } }
                tbody { @for event in &report.events {
                    tr class=(if event.kind == "Warning" { "failing" } else { "ready" }) {
                        td { (event.time.clone().unwrap_or_default()) } td { (event.kind) } td { (event.reason) }
                        td.message { (event.message) @if event.count > 1 { " (×" (event.count) ")" } } }
                } } }
        }
        p { a href=(super::events::in_namespace(&report.app.namespace)) { "Every event in namespace " (report.app.namespace) " →" } }
        h2 { "Inventory" }
        p { (report.inventory.len()) " objects applied." }
    }
}

/// `GET /apps/{namespace}/{name}/history`: the history tab, `app history` and the app's DORA
/// figures.
pub(super) async fn history(view: Viewed, Path((namespace, name)): Path<(String, String)>) -> Response {
    let request = DoraRequest::new(Some(namespace.clone()), Some(name.clone()), DEFAULT_SINCE, DEFAULT_FAILURE_WINDOW);
    let history = api::app_history(&view, &namespace, &name).await;
    let figures = match (&history, request) {
        (Ok(history), Ok(request)) if !history.deployments.is_empty() => {
            dora_report(&view.cluster, &request).await.ok().map(|report| report.overall)
        }
        _ => None,
    };
    match history {
        Ok(history) => layout(
            &view.nav(),
            &format!("{name} history"),
            history_body(&history, figures.as_ref(), crate::duration::now()),
        )
        .into_response(),
        Err(error) => failed(error),
    }
}

fn history_body(history: &AppHistory, figures: Option<&Metrics>, until: u64) -> Markup {
    html! {
        h1 { a href=(format!("/apps/{}/{}", history.namespace, history.name)) { (history.namespace) "/" (history.name) } " · history" }
        @if history.deployments.is_empty() { p { "Flux has recorded no deployment yet (Flux 2.7 or later records them)." } } @else {
            h2 { "Timeline" }
            (charts::timeline(&history.deployments, until))
        }
        @if let Some(figures) = figures { (dora_figures(figures, "Last 30 days")) (charts::dora_charts(figures)) }
        @if !history.deployments.is_empty() {
            h2 { "Deployments" }
            table #deployments { thead { tr { th { "FIRST RECONCILED" } th { "REVISION" } th { "OUTCOME" } th { "COMMIT" } th { "AUTHOR" } th { "MARKS" } } }
                tbody { @for row in history.deployments.iter().rev() {
                    @let deployment = &row.deployment;
                    tr class=(if row.failed_change() { "failing" } else { "ready" }) {
                        td { (deployment.first) } td { (shorten_revision(&deployment.revision)) }
                        td.state { (deployment.status) }
                        td { (deployment.commit.as_ref().map(|commit| commit.subject.clone()).unwrap_or_default()) }
                        td { (deployment.commit.as_ref().map(|commit| commit.author.clone()).unwrap_or_default()) }
                        td { (charts::marks(row).join(", ")) }
                    }
                } } }
            p.hint { "Newest first. Flux keeps 5 deployments per app; the ledger ConfigMap keeps what every look saw." }
        }
    }
}

/// The four figures, as a small table.
fn dora_figures(figures: &Metrics, title: &str) -> Markup {
    let seconds = |value: Option<u64>| {
        value.map_or_else(|| "-".to_string(), |value| crate::duration::format(std::time::Duration::from_secs(value)))
    };
    html! {
        table.facts #dora { caption.summary { (title) ": DORA" }
            tbody {
                tr { th { "Deployments" } td { (figures.deployments) " (" (figures.succeeded) " ready), "
                    (format!("{:.2}", figures.deployment_frequency.per_day)) " a day" } }
                tr { th { "Lead time" } td { "median " (seconds(figures.lead_time.median_seconds)) ", p90 "
                    (seconds(figures.lead_time.p90_seconds)) " (n=" (figures.lead_time.samples) ")" } }
                tr { th { "Change failure rate" } td { @match figures.change_failure_rate.rate {
                    Some(rate) => { (format!("{:.0}%", rate * 100.0)) " (" (figures.change_failure_rate.failed) "/" (figures.change_failure_rate.deployments) ")" }
                    None => { "-" }
                } } }
                tr { th { "Time to restore" } td { "median " (seconds(figures.time_to_restore.median_seconds))
                    " (n=" (figures.time_to_restore.samples) ")" } }
            }
        }
        @for unseen in &figures.unseen { p.hint { "Not seen: " (unseen) } }
    }
}

/// The answer to the App page's buttons (form posts to the API's action): the page again, or the
/// failure as a page, so they work without JavaScript.
/// `POST /api/v1/apps/{namespace}/{name}/suspend|resume|reconcile`: the API's action
/// ([`api::perform`]), which the App page's buttons post to as a form; a form gets the page back
/// instead of JSON.
pub(super) async fn act(
    view: Viewed,
    Path((namespace, name, action)): Path<(String, String, String)>,
    headers: axum::http::HeaderMap,
) -> Response {
    let acted = api::perform(&view, &namespace, &name, &action).await;
    if api::media_type(&headers) == Some("application/x-www-form-urlencoded") {
        return acted_page(&namespace, &name, acted.map(drop));
    }
    match acted {
        Ok(acted) => api::Json(acted).into_response(),
        Err(error) => error.into_response(),
    }
}

fn acted_page(namespace: &str, name: &str, result: Result<(), ApiError>) -> Response {
    match result {
        Ok(()) => Redirect::to(&format!("/apps/{namespace}/{name}")).into_response(),
        Err(error) => failed(error),
    }
}

/// A form as a browser posts it (the Add form, the App page's Remove button): its pairs by name
/// (a checkbox is there only when checked; `confirm`, set by the button under the plan, means
/// do it).
#[derive(Debug, Clone, Default)]
pub(super) struct PostedForm(BTreeMap<String, String>);

/// The text fields of the form: name, label, help.
const ADD_FIELDS: [(&str, &str, &str); 9] = [
    ("name", "Name", "a DNS-1123 label: the app's directory and Flux objects"),
    ("url", "URL", "git (ssh://, https://), an https Helm repository, or oci://"),
    ("branch", "Branch", "git sources; default main"),
    ("tag", "Tag", "git or OCI tag"),
    ("path", "Path", "kustomize directory in the source; default ./"),
    ("chart", "Chart", "Helm chart name (Helm repository or OCI)"),
    ("chartVersion", "Chart version", "version or semver range"),
    ("secretRef", "Secret", "credentials Secret in the Flux namespace"),
    ("targetNamespace", "Target namespace", "default: default"),
];

impl PostedForm {
    /// Reads a posted form (application/x-www-form-urlencoded).
    pub(super) fn parse(body: &[u8]) -> PostedForm {
        PostedForm(form_urlencoded::parse(body).into_owned().collect())
    }

    /// A field's value; an empty one counts as left out.
    pub(super) fn text(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|value| !value.trim().is_empty()).cloned()
    }

    pub(super) fn checked(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    fn add_request(&self) -> AddApp {
        AddApp {
            name: self.text("name").unwrap_or_default(),
            url: self.text("url").unwrap_or_default(),
            branch: self.text("branch"),
            tag: self.text("tag"),
            path: self.text("path"),
            chart: self.text("chart"),
            chart_version: self.text("chartVersion"),
            secret_ref: self.text("secretRef"),
            target_namespace: self.text("targetNamespace"),
            create_namespace: self.checked("createNamespace"),
            pr: Some(self.checked("pr")),
            dry_run: !self.checked("confirm"),
            ..AddApp::default()
        }
    }
}

fn add_form(form: &PostedForm, allow_writes: bool) -> Markup {
    html! {
        @if !allow_writes {
            p.warning { "This UI is read-only: restart it with `kubectl gitops ui --allow-writes` to add apps." }
        }
        form.add method="post" action="/apps/new" {
            table.facts { tbody {
                @for (name, label, help) in ADD_FIELDS {
                    tr { th { label for=(name) { (label) } }
                        td { input id=(name) name=(name) value=(form.text(name).unwrap_or_default()); } td.hint { (help) } }
                }
                tr { th { label for="createNamespace" { "Create namespace" } } td { input #createNamespace type="checkbox" name="createNamespace" checked[form.checked("createNamespace")]; } td {} }
                tr { th { label for="pr" { "Pull request" } } td { input #pr type="checkbox" name="pr" checked[form.checked("pr")]; } td.hint { "open a pull request instead of pushing" } }
            } }
            button type="submit" { "Show the plan" }
        }
    }
}

/// `GET /apps/new`: the Add form.
pub(super) async fn new_app(view: Viewed) -> Response {
    let form = add_form(&PostedForm::default(), view.server.allow_writes);
    layout(&view.nav(), "Add an app", html! { h1 { "Add an app" } (form) }).into_response()
}

/// `POST /apps/new`: first the plan and its diff (the dry run of `app add`) with a button to go
/// on; then the commit or the pull request.
pub(super) async fn add(view: Viewed, body: Bytes) -> Response {
    let form = PostedForm::parse(&body);
    let request = form.add_request();
    let nav = view.nav();
    let added = match request.run(&view.server.repo, &view.target, &view.server.printer).await {
        Ok(added) => added,
        Err(error) => {
            let error = ApiError::from(error);
            let (message, hint) = error.message();
            let body = html! {
                h1 { "Add an app" }
                p.error { (message) } @if let Some(hint) = hint { p.hint { "hint: " (hint) } }
                (add_form(&form, view.server.allow_writes))
            };
            return (error.status(), layout(&nav, "Add an app", body)).into_response();
        }
    };
    let then = "Flux applies it at its next reconcile; it then appears on the Apps page.";
    layout(&nav, "Add an app", changed_body("Add", &added, "/apps/new", &form, then)).into_response()
}

/// `POST /apps/{namespace}/{name}/remove` (the App page's Remove button): first the plan and its
/// diff (the dry run of `app remove`) with a button to go on; then the commit or the pull request.
pub(super) async fn remove(view: Viewed, Path((namespace, name)): Path<(String, String)>, body: Bytes) -> Response {
    if let Err(error) = api::removable(&view, &namespace, &name).await {
        return failed(error);
    }
    let form = PostedForm::parse(&body);
    let request = RemoveApp { name, pr: form.checked("pr"), dry_run: !form.checked("confirm"), wait: false };
    match request.run(&namespace, &view.server.repo, &view.target, &view.server.printer).await {
        Ok(removed) => {
            let action = format!("/apps/{namespace}/{}/remove", removed.name);
            let then = "Flux prunes it at its next reconcile; it then leaves the Apps page.";
            layout(&view.nav(), "Remove an app", changed_body("Remove", &removed, &action, &form, then)).into_response()
        }
        Err(error) => failed(error.into()),
    }
}

/// What a change's form answers: the plan and its diff, with a button that posts the same form
/// again with the go-ahead; then what was done (the commit, or a link to the pull request).
pub(super) fn changed_body(verb: &str, changed: &Changed, action: &str, form: &PostedForm, then: &str) -> Markup {
    if changed.dry_run {
        html! {
            h1 { (verb) " " (changed.name) ": the plan" }
            pre.plan tabindex="0" { (changed.output) }
            form method="post" action=(action) {
                // What was posted goes back as it came, with the go-ahead.
                @for (name, value) in form.0.iter().filter(|(name, _)| *name != "confirm") {
                    input type="hidden" name=(name) value=(value);
                }
                input type="hidden" name="confirm" value="1";
                button type="submit" { (if form.checked("pr") { "Open the pull request" } else { "Commit and push" }) }
            }
        }
    } else {
        html! {
            h1 { (verb) "d " (changed.name) }
            pre.plan tabindex="0" { (linked(&changed.output)) }
            @if let Some(number) = opened_pull_request(&changed.output) {
                p { a href=(format!("/pulls/{number}")) { "Its checks and what it would do to the cluster" } }
            }
            p { (then) " " a href="/apps" { "Apps" } }
        }
    }
}

/// The number of the pull request `app add --pr` (or `app remove --pr`) says it opened or
/// updated: the last part of the address on its `pull request opened: URL` line.
fn opened_pull_request(output: &str) -> Option<u64> {
    let line = output.lines().find_map(|line| {
        let said = line.split_once("request opened: ").or_else(|| line.split_once("request updated: "));
        said.map(|(_, url)| url)
    })?;
    line.trim().trim_end_matches('/').rsplit('/').next()?.parse().ok()
}

/// Text with its web addresses as links: the pull request `app add --pr` opened.
fn linked(text: &str) -> Markup {
    html! {
        @for (index, word) in text.split(' ').enumerate() {
            @if index > 0 { " " }
            @let (address, rest) = word.split_at(word.find(char::is_whitespace).unwrap_or(word.len()));
            @if address.starts_with("https://") || address.starts_with("http://") {
                a href=(address) { (address) } (rest)
            } @else { (word) }
        }
    }
}

/// `GET /pulls/{number}`: a pull request kubectl-gitops opened on the config repo, as `kubectl
/// gitops pr show NUMBER --preview` shows it: its checks, then what its head commit would change
/// in the cluster. Read-only: nothing is written anywhere.
pub(super) async fn pull(view: Viewed, Path(number): Path<u64>) -> Response {
    let repo = match view.server.repo.settings() {
        Ok(repo) => repo,
        Err(error) => return failed(error.into()),
    };
    let validation = crate::pr::Request::show_number(number, repo, crate::cli::OutputFormat::Table);
    let request = crate::pr::ShowRequest { validation, preview: Some(crate::preview::Rendering::default()) };
    match crate::pr::show(&request, &view.target, view.server.replan, &view.server.printer).await {
        Ok((text, _)) => {
            let title = format!("Pull request {number}");
            layout(&view.nav(), &title, html! { h1 { (title) } pre.plan tabindex="0" { (linked(&text)) } })
                .into_response()
        }
        Err(error) => failed(error.into()),
    }
}

/// `GET /cluster`: what `detect` reports, and the Flux runtime.
pub(super) async fn cluster(view: Viewed) -> Response {
    let detection = match crate::detect::detect(&view.cluster).await {
        Ok(detection) => detection,
        Err(error) => return failed(error.into()),
    };
    let body = html! {
        h1 { "Cluster " (view.context) }
        table.facts { tbody {
            tr { th { "State" } td { (detection.state.word()) } }
            tr { th { "Server" } td { (detection.server) } }
            tr { th { "Kubernetes" } td { (detection.kubernetes_version.clone().unwrap_or_default()) } }
            @if let Some(flux) = &detection.flux {
                tr { th { "Flux" } td { (flux.version.clone().unwrap_or_else(|| "unknown".into())) " in " (flux.namespace) } }
            }
            @if let Some(record) = &detection.gitops {
                tr { th { "Config repo" } td { (record.url) " (" (record.branch) ") " (record.path) } }
            }
        } }
        h2 { "Controllers" }
        table { thead { tr { th { "NAME" } th { "VERSION" } th { "READY" } } }
            tbody { @for controller in &detection.controllers {
                tr class=(if controller.ready { "ready" } else { "failing" }) {
                    td { (controller.name) } td { (controller.tag.clone().unwrap_or_default()) }
                    td.state { (if controller.ready { "True" } else { "False" }) }
                }
            } } }
        @if !detection.warnings.is_empty() {
            h2 { "Warnings" } ul { @for warning in &detection.warnings { li { (warning) } } }
        }
    };
    layout(&view.nav(), "Cluster", body).into_response()
}
