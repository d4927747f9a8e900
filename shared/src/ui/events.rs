//! The Events page (`/events`): the cluster's Kubernetes events, newest first, filtered by
//! namespace, type, kind and text and paged on the server, live; the same as JSON
//! (`GET /api/v1/cluster/events`), and the stream that says when they changed
//! (`GET /api/v1/cluster/events/stream`). One watch of the events per cluster, started by the
//! first request, serves every client ([`crate::readers::events`]).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::RawQuery;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use futures::Stream;
use maud::{Markup, html};

use super::api::{ApiError, Json};
use super::clusters::{Nav, Viewed};
use super::layout::{failed, filter_choice, filter_form, layout};
use crate::error::Result;
use crate::readers::apps_query::{checked_limit, non_empty};
use crate::readers::events::{ClusterEvent, EventFeed, EventFilter, EventsPage, KEPT};

/// How long a request waits for the watch's first list before it answers with what there is.
const FIRST_LISTING: Duration = Duration::from_secs(5);

/// The query string of `GET /events` and `GET /api/v1/cluster/events`, as sent.
#[derive(Debug, Clone, Default)]
struct EventsParams {
    namespace: Option<String>,
    severity: Option<String>,
    kind: Option<String>,
    q: Option<String>,
    limit: Option<String>,
    continue_after: Option<String>,
}

impl EventsParams {
    /// Reads a query string; other parameters are left alone.
    fn parse(query: Option<&str>) -> EventsParams {
        let mut params = EventsParams::default();
        for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            let field = match &*name {
                "namespace" => &mut params.namespace,
                "type" => &mut params.severity,
                "kind" => &mut params.kind,
                "q" => &mut params.q,
                "limit" => &mut params.limit,
                "continue" => &mut params.continue_after,
                _ => continue,
            };
            *field = Some(value.into_owned());
        }
        params
    }

    fn checked(&self) -> Result<EventFilter> {
        EventFilter::checked(
            non_empty(&self.namespace),
            non_empty(&self.severity),
            non_empty(&self.kind),
            non_empty(&self.q),
            checked_limit(&self.limit)?,
            non_empty(&self.continue_after),
        )
    }

    /// This query, with `continue` set to `after`: the next page's link.
    fn next_page(&self, after: &str) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        let kept = [
            ("namespace", &self.namespace),
            ("type", &self.severity),
            ("kind", &self.kind),
            ("q", &self.q),
            ("limit", &self.limit),
        ];
        for (name, value) in kept {
            if let Some(value) = value.as_deref().filter(|value| !value.is_empty()) {
                query.append_pair(name, value);
            }
        }
        query.append_pair("continue", after);
        format!("/events?{}", query.finish())
    }
}

/// The Events page of one namespace: the App page links to it.
pub(super) fn in_namespace(namespace: &str) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("namespace", namespace);
    format!("/events?{}", query.finish())
}

/// The cluster's events, once the watch has listed them or [`FIRST_LISTING`] has passed.
async fn listed(view: &Viewed) -> EventFeed {
    let feed = view.events(view.server.printer).clone();
    let mut revisions = feed.revisions();
    let _ = tokio::time::timeout(FIRST_LISTING, revisions.wait_for(|revision| *revision > 0)).await;
    feed
}

/// `GET /events`: the filters and a page of events; with `part=rows`, the table's inside alone,
/// which the live updates fetch.
pub(super) async fn page(view: Viewed, RawQuery(query): RawQuery) -> Response {
    let params = EventsParams::parse(query.as_deref());
    let rows_only = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .any(|(name, value)| name == "part" && value == "rows");
    let filter = match params.checked() {
        Ok(filter) => filter,
        Err(error) if rows_only => return ApiError::from(error).into_response(),
        Err(error) => return failed(error.into()),
    };
    let events = listed(&view).await.page(&filter);
    if rows_only {
        return Html(table_body(&params, &events).into_string()).into_response();
    }
    let nav = view.nav();
    layout(&nav, "Events", body(&nav, &params, &events)).into_response()
}

/// `GET /api/v1/cluster/events?namespace=&type=&kind=&q=&limit=&continue=`
pub(super) async fn api(view: Viewed, RawQuery(query): RawQuery) -> Result<Json<EventsPage>, ApiError> {
    let filter = EventsParams::parse(query.as_deref()).checked()?;
    Ok(Json(listed(&view).await.page(&filter)))
}

/// `GET /api/v1/cluster/events/stream`: Server-Sent Events, an `events` event with the log's
/// revision when the stream opens (once the first list is done) and whenever the events change.
pub(super) async fn stream(view: Viewed) -> Sse<impl Stream<Item = std::result::Result<Event, Infallible>>> {
    let revisions = view.events(view.server.printer).revisions();
    let stopping = view.server.stopping.clone();
    let state = (revisions, stopping, true);
    let stream = futures::stream::unfold(state, |(mut revisions, mut stopping, first)| async move {
        // The first event once the first list is done, each next one when the log changed again.
        let changed = async {
            if first {
                revisions.wait_for(|revision| *revision > 0).await.map(|_| ())
            } else {
                revisions.changed().await
            }
        };
        tokio::select! {
            changed = changed => changed.ok()?,
            _ = stopping.wait_for(|stop| *stop) => return None,
        };
        let revision = *revisions.borrow_and_update();
        let event = Event::default().event("events").data(format!("{{\"revision\":{revision}}}"));
        Some((Ok(event), (revisions, stopping, false)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn body(nav: &Nav, params: &EventsParams, events: &EventsPage) -> Markup {
    let fields = html! {
        (filter_choice("Namespace", "namespace", "all", events.namespaces.iter().map(String::as_str), params.namespace.as_deref()))
        (filter_choice("Type", "type", "any", ["Normal", "Warning"], params.severity.as_deref()))
        (filter_choice("Kind", "kind", "any", events.kinds.iter().map(String::as_str), params.kind.as_deref()))
        label { "Text " input type="search" name="q" value=(params.q.clone().unwrap_or_default()); }
    };
    html! {
        (filter_form(nav, "Events", "/events", params.limit.as_deref(), fields))
        @if let Some(namespace) = &events.watched_namespace {
            p.warning { "You may not list events in every namespace: showing namespace " (namespace) "." }
        }
        table #cluster-events data-revision=(events.revision) data-listing=[(!events.listed).then_some("true")]
            data-context=[nav.switching()] { (table_body(params, events)) }
        p.hint { "The API server keeps events for an hour by default; the newest "
            (format!("{},{:03}", KEPT / 1000, KEPT % 1000)) " are held here. " code { "kubectl get events -A" } " lists the same." }
    }
}

/// The table's inside, what the live updates swap in: the counts, the rows, and the link to the
/// next page.
fn table_body(params: &EventsParams, events: &EventsPage) -> Markup {
    let now = crate::duration::now();
    html! {
        @if !events.listed {
            noscript { meta http-equiv="refresh" content="2"; }
        }
        caption.summary {
            @if let Some(error) = &events.error { span.error { "Cannot read the events: " (error) } }
            @else if !events.listed { "Listing the events…" }
            @else { (events.matching) " events, " (events.warnings) " warnings" }
        }
        thead { tr {
            th { "LAST SEEN" } th { "NAMESPACE" } th { "TYPE" } th { "OBJECT" } th { "REASON" } th { "MESSAGE" }
            th { "COUNT" } th { "SOURCE" }
        } }
        tbody {
            @for event in &events.items { (row(event, now)) }
            @if events.listed && events.items.is_empty() { tr { td colspan="8" { "No events match." } } }
            @if let Some(after) = &events.continue_after {
                tr.more { td colspan="8" { a href=(params.next_page(after)) { "Next page" } } }
            }
        }
    }
}

fn row(event: &ClusterEvent, now: u64) -> Markup {
    // The objects the UI has a page for: the apps.
    let page = matches!(event.kind.as_str(), "Kustomization" | "HelmRelease")
        .then(|| format!("/apps/{}/{}", event.namespace, event.name));
    let age = event
        .last_seen
        .as_deref()
        .and_then(crate::duration::parse_timestamp)
        .map(|then| crate::duration::format_age(Duration::from_secs(now.saturating_sub(then))));
    html! {
        tr class=(if event.is_warning() { "warning-event" } else { "normal-event" }) {
            td.seen { @if let Some(seen) = &event.last_seen { time datetime=(seen) title=(seen) { (age.unwrap_or_default()) } } }
            td { (event.namespace) }
            td.type { (event.severity) }
            td { (event.kind) "/" @if let Some(page) = page { a href=(page) { (event.name) } } @else { (event.name) } }
            td { (event.reason) }
            td.message { (event.message) }
            td { (event.count) }
            td { (event.source.clone().unwrap_or_default()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_are_checked_as_flags_are() {
        let checked = |query: &str| EventsParams::parse(Some(query)).checked();
        let filter = checked("namespace=apps&type=warning&kind=HelmRelease&q=Back-Off&limit=5").unwrap_or_default();
        assert_eq!(filter.namespace.as_deref(), Some("apps"));
        assert_eq!(filter.severity.as_deref(), Some("Warning"));
        assert_eq!(filter.kind.as_deref(), Some("HelmRelease"));
        assert_eq!((filter.text.as_deref(), filter.limit), (Some("back-off"), 5));
        assert_eq!(checked("").unwrap_or_default().limit, crate::readers::apps_query::DEFAULT_LIMIT);
        for (query, said) in [
            ("namespace=Not_A_Name", "namespace"),
            ("type=Error", "is not Normal or Warning"),
            ("kind=Pod%3Bdrop", "is not a Kubernetes kind"),
            ("limit=0", "is not a number from 1 to 500"),
            ("continue=nope", "is not a token this server gave"),
        ] {
            let error = checked(query).err().map(|error| error.to_string()).unwrap_or_default();
            assert!(error.contains(said), "{query}: {error}");
        }
    }

    #[test]
    fn the_next_page_keeps_the_filters() {
        let params = EventsParams::parse(Some("namespace=apps&type=Warning&q=a b&part=rows"));
        assert_eq!(params.next_page("17.uid"), "/events?namespace=apps&type=Warning&q=a+b&continue=17.uid");
        assert_eq!(in_namespace("apps"), "/events?namespace=apps");
    }
}
