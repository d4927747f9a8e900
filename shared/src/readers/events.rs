//! The cluster's Kubernetes events, what `kubectl get events -A` lists, followed by one watch
//! ([`EventFeed::follow`], through the wait engine's [`Triggers`]) and filtered and paged on the
//! server ([`EventLog::page`]): the UI's Events page and its API read them.
//!
//! Events are input written by anyone who may create them: each is kept as the few fields shown,
//! cut to [`MESSAGE_CHARS`], and at most [`KEPT`] of them (the newest) are held.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock};

use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::watcher::Event;
use serde::Serialize;
use tokio::sync::watch;

use super::app_reads::core_v1;
use super::collect::text;
use crate::cluster::{Cluster, is_forbidden};
use crate::error::{Error, Result};
use crate::output::Printer;
use crate::wait::{Followed, Selector, Triggers, forbidden};

/// The most events held; past it the oldest are dropped (the API server keeps an event an hour
/// by default, and a busy cluster writes tens of thousands in that hour).
pub const KEPT: usize = 20_000;
/// A longer message is cut here.
pub const MESSAGE_CHARS: usize = 1024;
/// The most characters kept of a reason, a kind, a name or a source.
const FIELD_CHARS: usize = 253;

/// One event, as the Events page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterEvent {
    pub namespace: String,
    /// The kind of the object it is about (its `involvedObject`).
    pub kind: String,
    /// That object's name.
    pub name: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub severity: String,
    pub reason: String,
    pub message: String,
    /// How often it happened.
    pub count: i64,
    /// When it last happened, RFC 3339.
    pub last_seen: Option<String>,
    /// The controller that reported it.
    pub source: Option<String>,
    /// `last_seen` in seconds since the epoch (0 when absent), the order of the listing.
    #[serde(skip)]
    seconds: u64,
    /// The event object's uid: its identity, and the tie-breaker of the order.
    #[serde(skip)]
    uid: String,
}

impl ClusterEvent {
    /// The fields shown of an event object (core/v1), each cut to its length.
    fn of(object: &DynamicObject) -> ClusterEvent {
        let field = |pointer: &str| text(object, pointer).map(|value| cut(&value, FIELD_CHARS));
        let last_seen = ["/series/lastObservedTime", "/lastTimestamp", "/eventTime"]
            .into_iter()
            .find_map(|pointer| text(object, pointer))
            .or_else(|| object.metadata.creation_timestamp.as_ref().map(|time| time.0.to_string()));
        let count = ["/series/count", "/count"]
            .into_iter()
            .find_map(|pointer| object.data.pointer(pointer).and_then(|count| count.as_i64()))
            .unwrap_or(1);
        let namespace = object.metadata.namespace.clone().unwrap_or_default();
        ClusterEvent {
            uid: object
                .metadata
                .uid
                .clone()
                .unwrap_or_else(|| format!("{namespace}/{}", object.metadata.name.as_deref().unwrap_or_default())),
            namespace,
            kind: field("/involvedObject/kind").unwrap_or_default(),
            name: field("/involvedObject/name").unwrap_or_default(),
            severity: field("/type").unwrap_or_else(|| "Normal".to_string()),
            reason: field("/reason").unwrap_or_default(),
            message: text(object, "/message").map(|message| cut(&message, MESSAGE_CHARS)).unwrap_or_default(),
            count,
            seconds: last_seen.as_deref().and_then(crate::duration::parse_timestamp).unwrap_or(0),
            last_seen,
            source: field("/source/component").or_else(|| field("/reportingComponent")).filter(|s| !s.is_empty()),
        }
    }

    /// Where it sorts: newest first.
    fn order(&self) -> (Reverse<u64>, &str) {
        (Reverse(self.seconds), &self.uid)
    }

    /// Whether it is a warning.
    pub fn is_warning(&self) -> bool {
        self.severity == "Warning"
    }
}

/// `text` cut to at most `chars` characters, `…` marking the cut.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Which events a page shows, checked (the UI parses it from a query string).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub namespace: Option<String>,
    /// `Normal` or `Warning`.
    pub severity: Option<String>,
    /// The involved object's kind, exactly.
    pub kind: Option<String>,
    /// A part of the object's name, the reason or the message, in lower case.
    pub text: Option<String>,
    pub limit: usize,
    /// The page starts after this event.
    pub after: Option<EventCursor>,
}

/// Where a page ended: the last event's time and uid, as the `continue` token
/// `<seconds>.<uid>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventCursor {
    seconds: u64,
    uid: String,
}

impl EventCursor {
    /// Reads a `continue` token; `None` when it is not one this server gives.
    pub fn parse(token: &str) -> Option<EventCursor> {
        let (seconds, uid) = token.split_once('.')?;
        let seconds = seconds.parse().ok()?;
        (!uid.is_empty()).then(|| EventCursor { seconds, uid: uid.to_string() })
    }

    fn of(event: &ClusterEvent) -> EventCursor {
        EventCursor { seconds: event.seconds, uid: event.uid.clone() }
    }

    fn token(&self) -> String {
        format!("{}.{}", self.seconds, self.uid)
    }
}

impl EventFilter {
    /// A filter as asked (each value trimmed and non-empty, or absent), checked as flags are: a
    /// namespace's name, `Normal` or `Warning` (any case of the first letter), a kind's name, a
    /// `continue` token this server gave.
    pub fn checked(
        namespace: Option<String>,
        severity: Option<String>,
        kind: Option<String>,
        text: Option<String>,
        limit: usize,
        continue_after: Option<String>,
    ) -> Result<EventFilter> {
        if let Some(namespace) = &namespace {
            crate::names::validate_name(namespace, "namespace")?;
        }
        let severity = match severity.as_deref() {
            None => None,
            Some("Normal" | "normal") => Some("Normal".to_string()),
            Some("Warning" | "warning") => Some("Warning".to_string()),
            Some(other) => {
                return Err(Error::usage(
                    format!("type {other:?} is not Normal or Warning"),
                    "use type Normal or Warning, or leave it out",
                ));
            }
        };
        let is_kind = |kind: &str| {
            kind.len() <= 63
                && kind.starts_with(|c: char| c.is_ascii_alphabetic())
                && kind.chars().all(|c| c.is_ascii_alphanumeric())
        };
        if let Some(kind) = kind.as_deref().filter(|kind| !is_kind(kind)) {
            return Err(Error::usage(
                format!("kind {kind:?} is not a Kubernetes kind"),
                "use a kind as kubectl prints it (Kustomization, HelmRelease, Pod), or leave it out",
            ));
        }
        let after = match continue_after {
            None => None,
            Some(token) => Some(EventCursor::parse(&token).ok_or_else(|| {
                Error::usage(
                    format!("continue {token:?} is not a token this server gave"),
                    "pass the `continue` value of the previous page as it came",
                )
            })?),
        };
        Ok(EventFilter { namespace, severity, kind, text: text.map(|text| text.to_lowercase()), limit, after })
    }

    fn keeps(&self, event: &ClusterEvent) -> bool {
        let text = |wanted: &str| {
            [&event.name, &event.reason, &event.message].into_iter().any(|field| field.to_lowercase().contains(wanted))
        };
        self.namespace.as_ref().is_none_or(|namespace| event.namespace == *namespace)
            && self.severity.as_ref().is_none_or(|severity| event.severity == *severity)
            && self.kind.as_ref().is_none_or(|kind| event.kind == *kind)
            && self.text.as_deref().is_none_or(text)
    }
}

/// One page of events (`GET /api/v1/cluster/events`, docs/api.md; the MCP tool `events`).
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsPage {
    /// This page's events, newest first.
    pub items: Vec<ClusterEvent>,
    /// Pass as `continue` for the next page; absent on the last.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_after: Option<String>,
    /// Events matching the filters, on every page.
    pub matching: usize,
    /// How many of those are warnings.
    pub warnings: usize,
    /// The namespaces and the kinds that have events, for the filters.
    pub namespaces: Vec<String>,
    pub kinds: Vec<String>,
    /// Changes with every change the watch sees; the event stream carries the same number.
    pub revision: u64,
    /// Whether the watch has listed the events once (until then the page is empty).
    pub listed: bool,
    /// The one namespace watched when RBAC does not let the user list events in every namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watched_namespace: Option<String>,
    /// Why no event can be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The events the watch has seen.
#[derive(Debug, Default)]
pub struct EventLog {
    events: HashMap<String, ClusterEvent>,
    /// What a relist (the watch's first list, or one after it was cut) has seen so far.
    relisting: Option<HashMap<String, ClusterEvent>>,
    revision: u64,
    listed: bool,
    watched_namespace: Option<String>,
    error: Option<String>,
}

impl EventLog {
    /// Takes one watch event in; whether what a page shows may have changed.
    fn apply(&mut self, event: Event<DynamicObject>) -> bool {
        match event {
            Event::Init => {
                self.relisting = Some(HashMap::new());
                false
            }
            Event::InitApply(object) => {
                let event = ClusterEvent::of(&object);
                self.relisting.get_or_insert_default().insert(event.uid.clone(), event);
                false
            }
            Event::InitDone => {
                self.events = self.relisting.take().unwrap_or_default();
                self.listed = true;
                self.error = None;
                self.keep_newest();
                true
            }
            Event::Apply(object) => {
                let event = ClusterEvent::of(&object);
                self.events.insert(event.uid.clone(), event);
                self.keep_newest();
                true
            }
            Event::Delete(object) => self.events.remove(&ClusterEvent::of(&object).uid).is_some(),
        }
    }

    /// Drops the oldest events past [`KEPT`], a tenth more at once so that it is not done on
    /// every new event.
    fn keep_newest(&mut self) {
        if self.events.len() <= KEPT {
            return;
        }
        let mut times: Vec<(Reverse<u64>, String)> =
            self.events.values().map(|event| (Reverse(event.seconds), event.uid.clone())).collect();
        times.sort_unstable();
        for (_, uid) in times.into_iter().skip(KEPT - KEPT / 10) {
            self.events.remove(&uid);
        }
    }

    /// The page `filter` asks for.
    pub fn page(&self, filter: &EventFilter) -> EventsPage {
        let mut namespaces = BTreeSet::new();
        let mut kinds = BTreeSet::new();
        let mut matching: Vec<&ClusterEvent> = Vec::new();
        for event in self.events.values() {
            namespaces.insert(event.namespace.as_str());
            kinds.insert(event.kind.as_str());
            if filter.keeps(event) {
                matching.push(event);
            }
        }
        matching.sort_unstable_by(|a, b| a.order().cmp(&b.order()));
        let start = match &filter.after {
            Some(after) => matching.partition_point(|event| event.order() <= (Reverse(after.seconds), &after.uid)),
            None => 0,
        };
        let items: Vec<ClusterEvent> =
            matching.iter().skip(start).take(filter.limit).map(|event| (*event).clone()).collect();
        let more = start + items.len() < matching.len();
        EventsPage {
            continue_after: items.last().filter(|_| more).map(|last| EventCursor::of(last).token()),
            items,
            warnings: matching.iter().filter(|event| event.is_warning()).count(),
            matching: matching.len(),
            namespaces: namespaces.into_iter().filter(|n| !n.is_empty()).map(String::from).collect(),
            kinds: kinds.into_iter().filter(|k| !k.is_empty()).map(String::from).collect(),
            revision: self.revision,
            listed: self.listed,
            watched_namespace: self.watched_namespace.clone(),
            error: self.error.clone(),
        }
    }
}

/// The events of one namespace (`None`: every namespace) as they are now, read by one paged LIST
/// (what a one-off question, such as an MCP tool's, needs; the UI follows them instead).
pub async fn list(cluster: &Cluster, namespace: Option<&str>) -> Result<EventLog> {
    let resource = core_v1("Event", "events");
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(cluster.client.clone(), namespace, &resource),
        None => Api::all_with(cluster.client.clone(), &resource),
    };
    let mut log = EventLog::default();
    log.apply(Event::Init);
    let page = |params: ListParams| {
        let api = api.clone();
        async move { api.list(&params).await }
    };
    crate::cluster::list_pages(ListParams::default().limit(500), page, |object| {
        log.apply(Event::InitApply(object));
    })
    .await
    .map_err(|error| cluster.error(error))?;
    log.apply(Event::InitDone);
    Ok(log)
}

/// The followed events, shared by every reader: the log, and a channel whose value is its
/// revision (it changes with every change the watch sees).
#[derive(Clone)]
pub struct EventFeed {
    log: Arc<RwLock<EventLog>>,
    revisions: watch::Receiver<u64>,
}

impl EventFeed {
    /// Starts following the cluster's events in the background: every namespace, or, when RBAC
    /// forbids listing them cluster-wide, the namespace of the kubeconfig context.
    pub fn follow(cluster: Cluster, printer: Printer) -> EventFeed {
        let log = Arc::new(RwLock::new(EventLog::default()));
        let (sender, revisions) = watch::channel(0);
        let written = Arc::clone(&log);
        tokio::spawn(async move {
            let resource = core_v1("Event", "events");
            let everywhere: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource);
            let namespace = match everywhere.list(&ListParams::default().limit(1)).await {
                Err(error) if is_forbidden(&error) => {
                    printer.detail(&format!(
                        "not allowed to list events in every namespace; watching namespace {}",
                        cluster.namespace
                    ));
                    Some(cluster.namespace.clone())
                }
                _ => None,
            };
            written.write().unwrap_or_else(PoisonError::into_inner).watched_namespace = namespace.clone();
            let mut triggers = Triggers::<DynamicObject>::new(&cluster, printer);
            triggers.follow(vec![Followed { resource, namespace, selector: Selector::Every }]);
            let mut listed = false;
            loop {
                // Until the first list is done, each page is taken in as it comes and its end
                // shown at once; then changes are taken a settled burst at a time.
                let burst = if listed { triggers.burst().await } else { vec![triggers.next().await] };
                let mut log = written.write().unwrap_or_else(PoisonError::into_inner);
                let mut changed = false;
                for (_, change) in burst {
                    match change {
                        Ok(event) => changed |= log.apply(event),
                        Err(error) => {
                            let described = crate::diagnostic::describe_watch(&error);
                            printer.detail(&format!("watch events: {described}"));
                            if forbidden(&error) || !log.listed {
                                log.error = Some(described);
                                changed = true;
                            }
                        }
                    }
                }
                listed = log.listed;
                if changed {
                    log.revision += 1;
                    let revision = log.revision;
                    drop(log);
                    sender.send_replace(revision);
                }
            }
        });
        EventFeed { log, revisions }
    }

    /// The page `filter` asks for, of the events as they are now.
    pub fn page(&self, filter: &EventFilter) -> EventsPage {
        self.log.read().unwrap_or_else(PoisonError::into_inner).page(filter)
    }

    /// The log's revision, changing with it.
    pub fn revisions(&self) -> watch::Receiver<u64> {
        self.revisions.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(namespace: &str, uid: &str, kind: &str, severity: &str, time: &str, message: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{uid}.17f"), "namespace": namespace, "uid": uid},
            "involvedObject": {"kind": kind, "name": format!("{uid}-object"), "namespace": namespace},
            "type": severity, "reason": "Reason", "message": message,
            "lastTimestamp": time, "count": 2, "source": {"component": "kustomize-controller"},
        }))
        .unwrap_or_else(|error| panic!("{error}"))
    }

    fn listed(objects: Vec<DynamicObject>) -> EventLog {
        let mut log = EventLog::default();
        log.apply(Event::Init);
        for object in objects {
            log.apply(Event::InitApply(object));
        }
        assert!(log.apply(Event::InitDone));
        log
    }

    fn all(limit: usize) -> EventFilter {
        EventFilter { limit, ..EventFilter::default() }
    }

    fn uids(page: &EventsPage) -> Vec<String> {
        page.items.iter().map(|event| event.name.trim_end_matches("-object").to_string()).collect()
    }

    #[test]
    fn events_are_listed_newest_first_and_paged_by_a_token_that_survives_new_events() {
        let mut log = listed(vec![
            event("apps", "a", "Kustomization", "Normal", "2026-12-07T10:00:00Z", "applied"),
            event("apps", "b", "Kustomization", "Warning", "2026-12-07T10:05:00Z", "path not found"),
            event("web", "c", "Pod", "Warning", "2026-12-07T10:01:00Z", "Back-off restarting"),
            event("web", "d", "HelmRelease", "Normal", "2026-12-07T10:01:00Z", "installed"),
        ]);
        let first = log.page(&all(2));
        assert_eq!(uids(&first), ["b", "c"]);
        assert_eq!((first.matching, first.warnings, first.listed), (4, 2, true));
        assert_eq!(first.namespaces, ["apps", "web"]);
        assert_eq!(first.kinds, ["HelmRelease", "Kustomization", "Pod"]);
        let token = first.continue_after.clone().unwrap_or_default();
        assert_eq!(token, format!("{}.c", crate::duration::parse_timestamp("2026-12-07T10:01:00Z").unwrap_or(0)));
        // A newer event comes between the pages: the next page goes on where the first ended.
        assert!(log.apply(Event::Apply(event("apps", "e", "Pod", "Normal", "2026-12-07T11:00:00Z", "pulled"))));
        let after = EventCursor::parse(&token);
        let second = log.page(&EventFilter { after, ..all(2) });
        assert_eq!(uids(&second), ["d", "a"]);
        assert_eq!(second.continue_after, None, "the last page");
        assert_eq!(uids(&log.page(&all(1))), ["e"]);
        assert!(log.apply(Event::Delete(event("apps", "e", "Pod", "Normal", "2026-12-07T11:00:00Z", ""))));
        assert_eq!(log.page(&all(10)).matching, 4);
    }

    #[test]
    fn the_filters_take_the_namespace_the_type_the_kind_and_a_text_in_any_case() {
        let log = listed(vec![
            event("apps", "a", "Kustomization", "Normal", "2026-12-07T10:00:00Z", "applied"),
            event("apps", "b", "Kustomization", "Warning", "2026-12-07T10:05:00Z", "Path not found"),
            event("web", "c", "Pod", "Warning", "2026-12-07T10:01:00Z", "Back-off restarting"),
        ]);
        let page = |filter: EventFilter| uids(&log.page(&EventFilter { limit: 10, ..filter }));
        assert_eq!(page(EventFilter { namespace: Some("web".into()), ..all(10) }), ["c"]);
        assert_eq!(page(EventFilter { severity: Some("Warning".into()), ..all(10) }), ["b", "c"]);
        assert_eq!(page(EventFilter { kind: Some("Kustomization".into()), ..all(10) }), ["b", "a"]);
        assert_eq!(page(EventFilter { text: Some("path".into()), ..all(10) }), ["b"]);
        assert_eq!(page(EventFilter { text: Some("c-obj".into()), ..all(10) }), ["c"], "the object's name");
        let none = log.page(&EventFilter { kind: Some("Pod".into()), namespace: Some("apps".into()), ..all(10) });
        assert_eq!((none.matching, none.items.len()), (0, 0));
        assert_eq!(none.kinds, ["Kustomization", "Pod"], "the filters' choices are every event's");
    }

    #[test]
    fn an_event_is_kept_as_its_few_fields_cut_to_their_length() {
        let long = "x".repeat(5000);
        let kept = ClusterEvent::of(&event("apps", "a", "Pod", "Warning", "2026-12-07T10:00:00Z", &long));
        assert_eq!(kept.message.chars().count(), MESSAGE_CHARS + 1);
        assert!(kept.message.ends_with('…'));
        assert_eq!((kept.count, kept.source.as_deref()), (2, Some("kustomize-controller")));
        let json = serde_json::to_value(&kept).unwrap_or_default();
        assert_eq!(json["type"], "Warning");
        assert_eq!(json["lastSeen"], "2026-12-07T10:00:00Z");
        assert!(json.get("uid").is_none() && json.get("seconds").is_none(), "{json}");
        assert_eq!(EventCursor::parse("not-a-token"), None);
        assert_eq!(EventCursor::parse("12."), None);
    }

    #[test]
    fn past_the_most_kept_the_oldest_events_go() {
        let mut log = listed(Vec::new());
        for second in 0..=KEPT {
            let time = crate::duration::format_timestamp(1_800_000_000 + i64::try_from(second).unwrap_or(0));
            log.apply(Event::Apply(event("apps", &format!("e{second}"), "Pod", "Normal", &time, "")));
        }
        let page = log.page(&all(1));
        assert_eq!(page.matching, KEPT - KEPT / 10);
        assert_eq!(uids(&page), [format!("e{KEPT}")], "the newest stays");
    }
}
