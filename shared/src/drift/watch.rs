//! `drift --watch`: the report kept current from watches, as drift happens.
//!
//! After the first report, every object Flux applied is followed by a watch on its kind (one per
//! kind and namespace, or one per kind across namespaces when its objects are spread over many:
//! at most [`MAX_WATCHES`]), through the one wait engine ([`crate::wait::Triggers`]). An event
//! for an object whose content changed (its fingerprint: status and what the API server keeps
//! for itself left out) compares that object again, by the same dry run; a change of what it
//! reports is printed. The Kustomizations are watched too: one that Flux applied at a new
//! revision is fetched, built and compared again, one that appears in scope is added, one that
//! is deleted is dropped. Nothing is written; Ctrl-C ends it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kube::api::DynamicObject;
use kube::discovery::ApiResource;
use kube::runtime::watcher::Event;
use serde_json::Value;

use super::objects::{self, Outcome};
use super::{Drift, DriftChange, KustomizationDrift, Tracked, compute, render, summarize};
use crate::apply::Applier;
use crate::change::{Context, RepoSettings};
use crate::cli::OutputFormat;
use crate::cluster::Cluster;
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;
use crate::wait::{Followed, Selector, Triggers};

/// The most watches `--watch` starts; beyond, it asks for a narrower scope.
const MAX_WATCHES: usize = 64;
/// A kind whose objects are in more namespaces than this is watched across namespaces.
const NAMESPACES_PER_KIND: usize = 8;

/// Where `--watch` sends what it sees: printed as changes, or served as the Prometheus series
/// (`metrics drift --listen`).
pub(super) enum Sink {
    Print {
        format: OutputFormat,
        headers: bool,
    },
    Serve(tokio::sync::watch::Sender<String>),
    /// The report itself, for the UI.
    Publish(tokio::sync::watch::Sender<super::LiveDrift>),
}

/// What `--watch` looks at and where it sends it.
pub(super) struct Scope<'a> {
    /// The Kustomizations' namespace (`None`: every one).
    pub namespace: Option<String>,
    /// The one Kustomization asked for.
    pub name: Option<String>,
    pub kustomizations: ApiResource,
    pub source_kinds: super::source::SourceKinds,
    pub repo: &'a RepoSettings,
    pub sink: Sink,
}

/// The Kustomizations followed and their objects, with where each object is.
struct Following {
    reports: Vec<KustomizationDrift>,
    tracked: Vec<Vec<Tracked>>,
    /// An object's key → (Kustomization, object) indices.
    index: HashMap<Key, Vec<(usize, usize)>>,
}

/// An object's identity: API group, kind, namespace, name.
type Key = (String, String, Option<String>, String);

/// Prints the report, then keeps it current until Ctrl-C (exit 0).
pub(super) async fn follow(
    cluster: &Cluster,
    context: &mut Context,
    scope: &Scope<'_>,
    (drift, kept): (Drift, Vec<Vec<Tracked>>),
    printer: &Printer,
) -> Result<ExitCode> {
    let mut applier = Applier::new(cluster);
    let mut following = Following { reports: drift.kustomizations, tracked: kept, index: HashMap::new() };
    following.reindex();
    let mut triggers: Triggers<DynamicObject> = Triggers::new(cluster, *printer);
    // List items carry no kind: an event's kind is its watch's.
    let mut wanted = watches(&mut applier, &following, scope).await?;
    triggers.follow(wanted.clone());
    publish_all(&following, scope, printer)?;
    printer.progress(&format!(
        "watching {} objects of {} Kustomizations; Ctrl-C to stop",
        following.index.len(),
        following.reports.len()
    ));
    loop {
        let burst = tokio::select! {
            burst = triggers.burst() => burst,
            () = crate::interrupt::until_requested() => return Ok(ExitCode::Ok),
        };
        let (mut to_compare, mut revised, mut deleted) = (BTreeSet::new(), Vec::new(), BTreeSet::new());
        for (watch, event) in burst {
            let (object, present) = match event {
                Ok(Event::Apply(object) | Event::InitApply(object)) => (object, true),
                Ok(Event::Delete(object)) => (object, false),
                Ok(Event::Init | Event::InitDone) => continue,
                Err(error) => {
                    printer.detail(&format!("watch: {}", crate::diagnostic::describe_watch(&error)));
                    continue;
                }
            };
            let Some(followed) = wanted.get(watch) else { continue };
            let key = key_of(&followed.resource, &object);
            let Ok(value) = serde_json::to_value(object) else { continue };
            if key.0 == scope.kustomizations.group && key.1 == scope.kustomizations.kind {
                match (following.position(&key), present) {
                    (Some(at), false) => drop(deleted.insert(at)),
                    (at, true) if at.is_none_or(|at| following.reports[at].revision != applied(&value)) => {
                        revised.push(value);
                    }
                    _ => {}
                }
                continue;
            }
            let seen = present.then(|| objects::fingerprint(&value));
            for &(at, object) in following.index.get(&key).into_iter().flatten() {
                if following.tracked[at][object].seen != seen {
                    to_compare.insert((at, object));
                }
            }
        }
        let mut changes = Vec::new();
        let compared: BTreeSet<usize> = to_compare.iter().map(|(at, _)| *at).collect();
        for (at, object) in to_compare {
            let tracked = &mut following.tracked[at][object];
            let (outcome, seen) = objects::compare(&mut applier, &tracked.desired).await?;
            tracked.seen = seen;
            if reported_as(&tracked.outcome) != reported_as(&outcome) {
                changes.push(change(&following.reports[at], &tracked.desired.document, &outcome));
            }
            tracked.outcome = outcome;
        }
        // Only the reports of what was compared again change (before any index moves below).
        for at in compared {
            (following.reports[at].objects, following.reports[at].checked) = super::reported(&following.tracked[at]);
        }
        let restructured = !revised.is_empty() || !deleted.is_empty();
        for at in deleted.into_iter().rev() {
            let gone = following.reports.remove(at);
            following.tracked.remove(at);
            printer.progress(&format!("{}/{} was deleted: no longer followed", gone.namespace, gone.name));
        }
        if !revised.is_empty() {
            changes.extend(recheck(cluster, context, scope, &mut following, revised, printer).await?);
        }
        if restructured {
            following.reindex();
            wanted = watches(&mut applier, &following, scope).await?;
            triggers.follow(wanted.clone());
        }
        if changes.is_empty() && !restructured {
            continue;
        }
        match &scope.sink {
            Sink::Print { format: OutputFormat::Table, headers } if printer.redraws() => {
                printer.redraw(&render::text(&following.drift(), *headers, printer.stdout_style()))?;
            }
            Sink::Print { format, .. } if !changes.is_empty() => printer.data(&render_changes(&changes, *format)?)?,
            Sink::Print { .. } => {}
            Sink::Serve(series) => drop(series.send(render::prometheus(&following.drift()))),
            Sink::Publish(report) => drop(report.send(Some(std::sync::Arc::new(Ok(following.drift()))))),
        }
    }
}

impl Following {
    fn reindex(&mut self) {
        self.index.clear();
        for (at, tracked) in self.tracked.iter().enumerate() {
            for (object, tracked) in tracked.iter().enumerate() {
                if tracked.desired.unreadable.is_none() {
                    self.index.entry(key_of_document(&tracked.desired.document)).or_default().push((at, object));
                }
            }
        }
    }

    /// The index of the Kustomization `key` names.
    fn position(&self, key: &Key) -> Option<usize> {
        self.reports.iter().position(|report| Some(&report.namespace) == key.2.as_ref() && report.name == key.3)
    }

    fn drift(&self) -> Drift {
        let kustomizations = self.reports.clone();
        let summary = summarize(&kustomizations);
        Drift { kustomizations, summary }
    }
}

/// The Kustomizations Flux applied at a new revision (or that appeared) fetched, built and
/// compared again; the changes of what is reported for their objects.
async fn recheck(
    cluster: &Cluster,
    context: &mut Context,
    scope: &Scope<'_>,
    following: &mut Following,
    revised: Vec<Value>,
    printer: &Printer,
) -> Result<Vec<DriftChange>> {
    let in_scope = |value: &Value| {
        scope.name.as_deref().is_none_or(|name| value["metadata"]["name"] == name)
            && scope.namespace.as_deref().is_none_or(|namespace| value["metadata"]["namespace"] == namespace)
    };
    let revised: Vec<Value> = revised.into_iter().filter(in_scope).collect();
    let credentials = crate::change::preview_at::credentials_later(context, scope.repo);
    let (drift, kept) = compute(cluster, &scope.source_kinds, revised, credentials, (true, printer)).await?;
    let mut changes = Vec::new();
    for (report, tracked) in drift.kustomizations.into_iter().zip(kept) {
        printer.progress(&format!(
            "{}/{}: Flux applied {}; compared again",
            report.namespace, report.name, report.revision
        ));
        let key = (String::new(), String::new(), Some(report.namespace.clone()), report.name.clone());
        let before: BTreeMap<Key, Option<Value>> = match following.position(&key) {
            Some(at) => following.tracked[at]
                .iter()
                .map(|old| (key_of_document(&old.desired.document), reported_as(&old.outcome)))
                .collect(),
            None => BTreeMap::new(),
        };
        for new in &tracked {
            let was = before.get(&key_of_document(&new.desired.document)).cloned().flatten();
            if was != reported_as(&new.outcome) {
                changes.push(change(&report, &new.desired.document, &new.outcome));
            }
        }
        match following.position(&key) {
            Some(at) => (following.reports[at], following.tracked[at]) = (report, tracked),
            None => {
                following.reports.push(report);
                following.tracked.push(tracked);
            }
        }
    }
    Ok(changes)
}

/// A kind's resource, and the namespaces its objects are in (`None`: cluster-scoped).
type KindObjects = (ApiResource, BTreeSet<Option<String>>);

/// The watches that follow every object of `following` and the Kustomizations in scope.
async fn watches(applier: &mut Applier<'_>, following: &Following, scope: &Scope<'_>) -> Result<Vec<Followed>> {
    let mut kinds: BTreeMap<(String, String), KindObjects> = BTreeMap::new();
    for tracked in following.tracked.iter().flatten().filter(|tracked| tracked.desired.unreadable.is_none()) {
        let document = &tracked.desired.document;
        let (resource, namespaced) = applier.resource(document).await?;
        let namespace = document["metadata"]["namespace"].as_str().filter(|_| namespaced).map(String::from);
        kinds
            .entry((resource.group.clone(), resource.kind.clone()))
            .or_insert_with(|| (resource, BTreeSet::new()))
            .1
            .insert(namespace);
    }
    let kustomization_selector = scope.name.clone().map_or(Selector::Every, Selector::Name);
    let mut wanted = vec![Followed {
        resource: scope.kustomizations.clone(),
        namespace: scope.namespace.clone(),
        selector: kustomization_selector,
    }];
    for (resource, namespaces) in kinds.into_values() {
        if namespaces.len() > NAMESPACES_PER_KIND || namespaces.contains(&None) {
            wanted.push(Followed { resource, namespace: None, selector: Selector::Every });
        } else {
            wanted.extend(namespaces.into_iter().map(|namespace| Followed {
                resource: resource.clone(),
                namespace,
                selector: Selector::Every,
            }));
        }
    }
    if wanted.len() > MAX_WATCHES {
        return Err(Error::usage(
            format!("following these objects takes {} watches, more than {MAX_WATCHES}", wanted.len()),
            "watch fewer Kustomizations at once: name one, or one namespace with -n",
        ));
    }
    Ok(wanted)
}

/// What an outcome reports, to tell whether it changed: nothing for an object as applied (or
/// skipped), the drifted object otherwise (when it was last written included).
fn reported_as(outcome: &Outcome) -> Option<Value> {
    match outcome {
        Outcome::Drifted(object) => serde_json::to_value(object).ok(),
        Outcome::Clean | Outcome::Skipped => None,
    }
}

fn change(report: &KustomizationDrift, document: &Value, outcome: &Outcome) -> DriftChange {
    let object = crate::apply::object_ref(document);
    DriftChange {
        time: crate::duration::format_timestamp(i64::try_from(crate::duration::now()).unwrap_or_default()),
        kustomization: format!("{}/{}", report.namespace, report.name),
        object: match &object.namespace {
            Some(namespace) => format!("{}/{namespace}/{}", object.kind, object.name),
            None => format!("{}/{}", object.kind, object.name),
        },
        drift: match outcome {
            Outcome::Drifted(object) => Some((**object).clone()),
            Outcome::Clean | Outcome::Skipped => None,
        },
    }
}

/// The report as it is, the way `drift` prints it (or the series, served).
fn publish_all(following: &Following, scope: &Scope<'_>, printer: &Printer) -> Result<()> {
    let drift = following.drift();
    match &scope.sink {
        Sink::Print { format: format @ (OutputFormat::Json | OutputFormat::Yaml), .. } => {
            printer.structured(&crate::output::document(&drift), *format)
        }
        Sink::Print { headers, .. } if printer.redraws() => {
            printer.redraw(&render::text(&drift, *headers, printer.stdout_style()))
        }
        Sink::Print { headers, .. } => printer.data(&render::text(&drift, *headers, printer.stdout_style())),
        Sink::Serve(series) => {
            drop(series.send(render::prometheus(&drift)));
            Ok(())
        }
        Sink::Publish(report) => {
            drop(report.send(Some(std::sync::Arc::new(Ok(drift)))));
            Ok(())
        }
    }
}

/// The changes, one row (or one document) each.
fn render_changes(changes: &[DriftChange], format: OutputFormat) -> Result<String> {
    match format {
        OutputFormat::Json => changes
            .iter()
            .map(|change| crate::output::render_structured(&crate::output::document(change), format))
            .collect(),
        OutputFormat::Yaml => changes
            .iter()
            .map(|change| {
                Ok(format!("---\n{}", crate::output::render_structured(&crate::output::document(change), format)?))
            })
            .collect(),
        _ => Ok(render::change_rows(changes)),
    }
}

/// The revision a Kustomization says Flux last applied.
fn applied(kustomization: &Value) -> String {
    kustomization["status"]["lastAppliedRevision"].as_str().unwrap_or_default().to_string()
}

fn key_of_document(document: &Value) -> Key {
    let api_version = document["apiVersion"].as_str().unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let object = crate::apply::object_ref(document);
    (group.to_string(), object.kind, object.namespace, object.name)
}

/// The key of an object a watch on `resource` delivered.
fn key_of(resource: &ApiResource, object: &DynamicObject) -> Key {
    let (namespace, name) = (object.metadata.namespace.clone(), object.metadata.name.clone().unwrap_or_default());
    (resource.group.clone(), resource.kind.clone(), namespace, name)
}
