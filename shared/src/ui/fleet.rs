//! The Fleet page (`/fleet`) and `GET /api/v1/fleet`: the matrix of `fleet status` (apps ×
//! clusters) over the clusters the server follows (`ui --context dev,uat`), made from each
//! cluster's latest snapshot, so it costs no request and is as live as the watches: the page swaps
//! its table in on every `fleet` event. With `--allow-writes`, a row whose versions differ has a
//! Promote form: `kubectl gitops promote` of the version its source cluster runs, by the same
//! change engine (its plan first, then the commit or the pull request).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use futures::Stream;
use maud::{Markup, html};
use tokio::sync::watch;

use super::Server;
use super::api::{ApiError, Document};
use super::clusters::Viewed;
use super::fleet_config::{self, FleetConfig};
use super::layout;
use super::pages::{self, PostedForm};
use crate::fleet::matrix::{self, CellState, Column, FleetApp, FleetStatus, Reached};
use crate::fleet::promote_app::PromoteApp;

/// How long a request waits for every cluster's first listing before the matrix is cut anyway
/// (a cluster still listing, or not answering, is a column that says so).
const FIRST_LISTING: Duration = Duration::from_secs(5);

/// The matrix of the clusters' latest snapshots, its columns in the fleet file's order (the
/// clusters it does not name after, in the order the server follows them), each named and placed
/// as it says, and each marked behind when it has not applied the config repo's head.
fn status(server: &Arc<Server>) -> FleetStatus {
    let config = config(server).borrow().clone().unwrap_or_default();
    let mut reached: Vec<(usize, Reached)> = server
        .views
        .iter()
        .map(|view| {
            let place = config.clusters.iter().position(|entry| entry.context.as_deref() == Some(&view.context));
            let entry = place.map(|place| &config.clusters[place]);
            let column = Column {
                context: view.context.clone(),
                name: entry.map(|entry| entry.name.clone()),
                environment: entry.map(|entry| entry.environment.clone()),
            };
            (place.unwrap_or(usize::MAX), Reached { column, report: view.snapshots.borrow().fleet_report() })
        })
        .collect();
    reached.sort_by_key(|(place, _)| *place);
    let reached: Vec<Reached> = reached.into_iter().map(|(_, reached)| reached).collect();
    matrix::build(&reached, config.head.as_deref())
}

/// What the Fleet page knows of the config repo, followed from the first time it is asked.
fn config(server: &Arc<Server>) -> watch::Receiver<Option<FleetConfig>> {
    server.fleet_config.get_or_init(|| fleet_config::follow(server)).clone()
}

/// Waits (at most [`FIRST_LISTING`]) until every cluster listed once or failed to, and the
/// config repo was looked at once.
async fn settled(server: &Arc<Server>) {
    let mut config = config(server);
    let both = async {
        fleet_config::listed(server).await;
        let _ = config.wait_for(Option::is_some).await;
    };
    let _ = tokio::time::timeout(FIRST_LISTING, both).await;
}

/// The matrix's revision: a hash of what it says. The page carries it, and the events say when
/// it moved: a change of the clusters that leaves the matrix as it was (most are: a source
/// fetched, a ledger written) does not swap the table under a user's hand.
fn revision(fleet: &FleetStatus) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(fleet).unwrap_or_default().hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// `GET /api/v1/fleet`: what `fleet status -o json` prints, for the clusters the server follows.
pub(super) async fn api(State(server): State<Arc<Server>>) -> Document<FleetStatus> {
    settled(&server).await;
    Document(status(&server))
}

/// The matrix's revision, worked out once per change for every event stream, by one task the
/// first stream starts: a change of any cluster builds the matrix once, not once per open page.
fn revisions(server: &Arc<Server>) -> watch::Receiver<String> {
    let started = server.fleet_revisions.get_or_init(|| {
        let mut followed: Vec<_> = server.views.iter().map(|view| view.snapshots.clone()).collect();
        for snapshots in &mut followed {
            snapshots.mark_unchanged();
        }
        let (sender, receiver) = watch::channel(revision(&status(server)));
        let mut config = config(server);
        let (server, mut stopping) = (Arc::clone(server), server.stopping.clone());
        tokio::spawn(async move {
            loop {
                let changed =
                    futures::future::select_all(followed.iter_mut().map(|snapshots| Box::pin(snapshots.changed())));
                tokio::select! {
                    (changed, _, _) = changed => if changed.is_err() { return },
                    // The config repo's head moved, or its fleet file changed.
                    Ok(()) = config.changed() => {}
                    _ = stopping.wait_for(|stop| *stop) => return,
                }
                for snapshots in &mut followed {
                    snapshots.mark_unchanged();
                }
                let next = revision(&status(&server));
                sender.send_if_modified(|current| {
                    if *current == next {
                        false
                    } else {
                        *current = next;
                        true
                    }
                });
            }
        });
        receiver
    });
    started.clone()
}

/// `GET /api/v1/fleet/events`: Server-Sent Events, a `fleet` event (the matrix's revision) when
/// the stream opens and whenever the matrix changes.
pub(super) async fn events(State(server): State<Arc<Server>>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let state = (revisions(&server), server.stopping.clone(), true);
    let stream = futures::stream::unfold(state, |(mut revisions, mut stopping, first)| async move {
        if !first {
            tokio::select! {
                changed = revisions.changed() => if changed.is_err() { return None },
                _ = stopping.wait_for(|stop| *stop) => return None,
            }
        }
        let current = revisions.borrow_and_update().clone();
        let event = Event::default().event("fleet").data(format!("{{\"revision\":\"{current}\"}}"));
        Some((Ok(event), (revisions, stopping, false)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// `GET /fleet`: the matrix; with `part=rows`, the table alone, which the live updates fetch.
pub(super) async fn page(view: Viewed, RawQuery(query): RawQuery) -> Response {
    let rows_only = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .any(|(name, value)| name == "part" && value == "rows");
    settled(&view.server).await;
    let fleet = status(&view.server);
    let table = table(&fleet, view.server.allow_writes);
    if rows_only {
        return Html(table.into_string()).into_response();
    }
    let body = html! {
        h1 { "Fleet" }
        p { "What each cluster runs of the apps kubectl-gitops manages, as its watches see it now. A cluster's name opens its Apps page." }
        @if !view.server.allow_writes {
            p.hint { "Read-only: restart with `kubectl gitops ui --allow-writes` to promote a version from one cluster to another." }
        }
        table #fleet data-revision=(revision(&fleet)) { (table) }
    };
    layout::layout(&view.nav(), "Fleet", body).into_response()
}

/// The table's caption, head and rows.
fn table(fleet: &FleetStatus, allow_writes: bool) -> Markup {
    let summary = &fleet.summary;
    html! {
        caption.summary {
            (summary.apps) " apps on " (summary.clusters) " clusters: " (summary.differing) " differ, "
            (summary.not_ready) " not ready, " (summary.unreachable) " unreachable, " (summary.behind) " behind"
            @if let Some(head) = &fleet.config_head { " the config repo's head " code { (&head[..head.len().min(12)]) } }
        }
        thead { tr {
            th scope="col" { "APP" }
            @for cluster in &fleet.clusters {
                th scope="col" {
                    a href=(format!("/apps?context={}", encoded(&cluster.context))) { (cluster.name.as_deref().unwrap_or(&cluster.context)) }
                    @if cluster.name.as_deref().is_some_and(|name| name != cluster.context) { " (" (cluster.context) ")" }
                    @if let Some(environment) = cluster.environment.as_deref().filter(|environment| Some(*environment) != cluster.name.as_deref()) {
                        br; span.hint { (environment) }
                    }
                    @if cluster.behind { br; span.warning { "behind the config repo" } }
                    @if let Some(error) = &cluster.error { br; span.error { "unreachable: " (error) } }
                }
            }
            th scope="col" { "VERSIONS" }
            @if allow_writes { th scope="col" { "PROMOTE" } }
        } }
        tbody {
            @for app in &fleet.apps {
                tr data-app=(format!("{}/{}", app.namespace, app.name)) class=[app.differs.then_some("differs")] {
                    th scope="row" { (app.namespace) "/" (app.name) }
                    @for cell in &app.cells {
                        td class=(format!("cell {}", cell.state.word().trim_matches('-'))) title=[cell.message.as_deref()] {
                            (cell.state.word()) @if let Some(version) = &cell.version { " " (version) }
                        }
                    }
                    td { (if app.differs { "differ" } else { "same" }) }
                    @if allow_writes { td { @if app.differs { (promote_form(fleet, app)) } } }
                }
            }
        }
    }
}

fn bad_request(message: &str, hint: &str) -> ApiError {
    ApiError::new(axum::http::StatusCode::BAD_REQUEST, message, Some(hint))
}

fn encoded(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A differing row's Promote form: from a cluster where the app is ready, to another; the plan
/// comes first.
fn promote_form(fleet: &FleetStatus, app: &FleetApp) -> Markup {
    let name = |context: &str| {
        let cluster = fleet.clusters.iter().find(|cluster| cluster.context == context);
        cluster.and_then(|cluster| cluster.name.clone()).unwrap_or_else(|| context.to_string())
    };
    let sources: Vec<_> =
        app.cells.iter().filter(|cell| cell.state == CellState::Ready && cell.version.is_some()).collect();
    let targets: Vec<_> =
        app.cells.iter().filter(|cell| !matches!(cell.state, CellState::Absent | CellState::Unknown)).collect();
    let from = sources.first().map(|cell| cell.context.as_str());
    let to = targets.iter().map(|cell| cell.context.as_str()).find(|context| Some(*context) != from);
    html! {
        form.promote method="post" action="/fleet/promote" {
            input type="hidden" name="namespace" value=(app.namespace);
            input type="hidden" name="name" value=(app.name);
            label { "from " select name="from" {
                @for cell in &sources {
                    option value=(cell.context) selected[Some(cell.context.as_str()) == from] {
                        (name(&cell.context)) " (" (cell.version.as_deref().unwrap_or_default()) ")"
                    }
                }
            } }
            " "
            label { "to " select name="to" {
                @for cell in &targets {
                    option value=(cell.context) selected[Some(cell.context.as_str()) == to] { (name(&cell.context)) }
                }
            } }
            " " label { input type="checkbox" name="pr" checked; " pull request" }
            " " label { input type="checkbox" name="withValues"; " with values" }
            " " button type="submit" { "Plan the promotion" }
        }
    }
}

/// `POST /fleet/promote`: the Promote form. The version is the one the source cluster runs in
/// the snapshot the page showed, passed as `--expect-version`: what is promoted is what the user
/// saw, or nothing (promote reads the cluster again and refuses another version). First the plan
/// and what it would change in the target cluster, then, with the go-ahead, the commit or the
/// pull request.
pub(super) async fn promote(view: Viewed, body: Bytes) -> Response {
    let form = PostedForm::parse(&body);
    let request = match promotion(&view.server, &form) {
        Ok(request) => request,
        Err(error) => return layout::failed(error),
    };
    match request.run(&view.server.repo, &view.target, &view.server.printer).await {
        Ok(changed) => {
            let then = "Flux applies it once it is on the config repo's branch; the matrix follows.";
            let body = pages::changed_body("Promote", &changed, "/fleet/promote", &form, then);
            layout::layout(&view.nav(), "Promote", body).into_response()
        }
        Err(error) => layout::failed(error.into()),
    }
}

/// The promotion the form asks for, checked against the matrix the server sees now.
fn promotion(server: &Arc<Server>, form: &PostedForm) -> Result<PromoteApp, ApiError> {
    let field = |name: &str| {
        form.text(name)
            .ok_or_else(|| bad_request(&format!("the form has no {name}"), "use the Promote form of the Fleet page"))
    };
    let (namespace, name, from, to) = (field("namespace")?, field("name")?, field("from")?, field("to")?);
    let fleet = status(server);
    let app = fleet.apps.iter().find(|app| app.namespace == namespace && app.name == name).ok_or_else(|| {
        bad_request(&format!("no cluster runs {namespace}/{name}"), "promote an app of the Fleet page")
    })?;
    let cluster_name = |context: &str| {
        let cluster = fleet.clusters.iter().find(|cluster| cluster.context == context);
        cluster.and_then(|cluster| cluster.name.clone()).ok_or_else(|| {
            bad_request(
                &format!("context {context} names no cluster installed by kubectl gitops"),
                "promote between the clusters of the Fleet page",
            )
        })
    };
    let version = app
        .cells
        .iter()
        .find(|cell| cell.context == from && cell.state == CellState::Ready)
        .and_then(|cell| cell.version.clone())
        .ok_or_else(|| {
            bad_request(
                &format!("{name} is not ready in {from}"),
                "promote from a cluster where it is ready; the Fleet page shows where",
            )
        })?;
    Ok(PromoteApp {
        name,
        from: cluster_name(&from)?,
        to: cluster_name(&to)?,
        version: Some(version),
        with_values: form.checked("withValues"),
        pr: form.checked("pr"),
        dry_run: !form.checked("confirm"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::{AppKind, AppState, AppStatus, Report};
    use crate::record::InstallRecord;

    fn cluster(name: &str, versions: &[(&str, &str)]) -> Reached {
        let apps = versions
            .iter()
            .map(|(app, version)| AppStatus {
                applied_revision: Some(version.to_string()),
                ..AppStatus::bare("flux-system", app, AppKind::Helm, AppState::Ready)
            })
            .collect();
        let report = Report::of(apps, Vec::new(), Some(InstallRecord::of_cluster(name)));
        Reached { column: Column::of_context(&format!("kind-{name}")), report: Ok(report) }
    }

    #[test]
    fn a_cluster_is_marked_behind_the_config_repos_head_and_shows_its_environment() {
        let mut uat = cluster("uat", &[("mccp", "0.1.0")]);
        uat.column.environment = Some("staging".into());
        let head = "0123456789abcdef0123456789abcdef01234567";
        let fleet = matrix::build(&[cluster("dev", &[("mccp", "0.1.0")]), uat], Some(head));
        let page = table(&fleet, false).into_string();
        assert_eq!(page.matches(">behind the config repo<").count(), 2, "neither applied the head: {page}");
        assert!(page.contains("2 behind the config repo's head <code>0123456789ab</code>"), "{page}");
        assert!(page.contains("<span class=\"hint\">staging</span>"), "{page}");
    }

    #[test]
    fn only_a_row_whose_versions_differ_offers_a_promotion_and_only_with_writes_allowed() {
        let fleet = matrix::build(
            &[
                cluster("dev", &[("mccp", "0.2.0"), ("shop", "1.0.0")]),
                cluster("uat", &[("mccp", "0.1.0"), ("shop", "1.0.0")]),
                Reached { column: Column::of_context("gone"), report: Err("no answer within 15s".into()) },
            ],
            None,
        );
        let page = table(&fleet, true).into_string();
        assert_eq!(page.matches("<form class=\"promote\"").count(), 1, "{page}");
        let mccp = &page
            [page.find("data-app=\"flux-system/mccp\"").unwrap()..page.find("data-app=\"flux-system/shop\"").unwrap()];
        // From a cluster where it is ready, its version said; to another; never to one that did
        // not answer.
        assert!(mccp.contains("<option value=\"kind-dev\" selected>dev (0.2.0)</option>"), "{mccp}");
        assert!(mccp.contains("<option value=\"kind-uat\" selected>uat</option>"), "{mccp}");
        assert!(!mccp.contains("value=\"gone\""), "{mccp}");
        assert!(page.contains("<a href=\"/apps?context=kind-dev\">dev</a> (kind-dev)"), "{page}");
        assert!(page.contains("unreachable: no answer within 15s"), "{page}");
        assert!(page.contains("3 clusters: 1 differ, 0 not ready, 1 unreachable"), "{page}");
        assert!(!table(&fleet, false).into_string().contains("<form"), "read-only: no form");
    }
}
