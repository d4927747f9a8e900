//! What the graphs show: an app's chain (source → Kustomization or HelmRelease → workloads →
//! pods, and the apps it depends on), and the cluster's apps joined by `dependsOn`, collapsed by
//! namespace when there are too many to read. `graph.rs` draws them.

use std::collections::{BTreeMap, HashMap};

use axum::extract::RawQuery;
use axum::response::{Html, IntoResponse, Response};
use maud::{Markup, html};

use super::api::{self, ApiError};
use super::clusters::{Nav, Viewed};
use super::graph::{self, Graph, Link, Node};
use super::layout::{failed, layout};
use crate::readers::apps_query::{AppRow, AppsParams, AppsQuery, matches};
use crate::readers::{AppReport, AppState, ObjectStatus, PodState};

/// The most nodes the cluster graph draws one by one: past it, one node per namespace.
const CLUSTER_NODES: usize = 60;
/// The most pods drawn for one workload: past it, one node says how many more.
const PODS_PER_WORKLOAD: usize = 8;

/// A Flux object's health as a graph shows it.
fn object_state(object: &ObjectStatus) -> &'static str {
    match (object.suspended, object.ready.as_str()) {
        (true, _) => "suspended",
        (false, "True") => "ready",
        (false, "False") => "failing",
        (false, _) => "progressing",
    }
}

fn object_node(object: &ObjectStatus, href: Option<String>, rank: usize) -> Node {
    let reason = object.reason.clone().unwrap_or_default();
    let message = object.message.clone().unwrap_or_default();
    Node {
        label: format!("{} {}", object.kind, object.name),
        state: object_state(object),
        title: [format!("{} {}/{}", object.kind, object.namespace, object.name), reason.clone(), message]
            .into_iter()
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        detail: reason,
        href,
        rank,
    }
}

fn pod_node(pod: &PodState, rank: usize) -> Node {
    let state = match (pod.ready, pod.phase.as_str()) {
        (true, _) | (false, "Succeeded") => "ready",
        (false, "Pending") if pod.reason.is_none() => "progressing",
        (false, _) => "failing",
    };
    let reason = pod.reason.clone().unwrap_or_else(|| pod.phase.clone());
    let restarts = if pod.restarts > 0 { format!(", {} restarts", pod.restarts) } else { String::new() };
    Node {
        label: format!("pod {}", pod.name),
        state,
        detail: format!("{reason}{restarts}"),
        title: format!("{}\n{reason}{restarts}\n{}", pod.name, pod.message.clone().unwrap_or_default())
            .trim_end()
            .to_string(),
        href: None,
        rank,
    }
}

/// An app's graph: its chain left to right, the apps it depends on left of it, what it runs
/// right of it.
pub(crate) fn app_graph(report: &AppReport) -> Graph {
    let mut graph = Graph::default();
    let mut previous = None;
    for (rank, object) in report.app.objects.iter().enumerate() {
        let node = graph.add(object_node(object, None, rank));
        if let Some(previous) = previous {
            graph.connect(previous, node, Link::Feeds);
        }
        previous = Some(node);
    }
    let Some(app) = previous else { return graph };
    for dependency in &report.dependencies {
        let href = format!("/apps/{}/{}", dependency.namespace, dependency.name);
        let node = graph.add(object_node(dependency, Some(href), 0));
        graph.connect(node, app, Link::DependsOn);
    }
    let rank = report.app.objects.len();
    for workload in &report.workloads {
        let node = graph.add(Node {
            label: format!("{} {}", workload.kind, workload.name),
            state: if workload.ready { "ready" } else { "failing" },
            detail: format!("{}/{} ready", workload.ready_replicas, workload.replicas),
            title: workload.message.clone().unwrap_or_else(|| format!("{}/{}", workload.namespace, workload.name)),
            href: None,
            rank,
        });
        graph.connect(app, node, Link::Feeds);
        // The pods that are not ready first: they are why the page is looked at.
        let mut pods: Vec<&PodState> = workload.pods.iter().collect();
        pods.sort_by_key(|pod| pod.ready);
        for pod in pods.iter().take(PODS_PER_WORKLOAD) {
            let pod = graph.add(pod_node(pod, rank + 1));
            graph.connect(node, pod, Link::Feeds);
        }
        let more = &pods[pods.len().min(PODS_PER_WORKLOAD)..];
        if !more.is_empty() {
            let not_ready = more.iter().filter(|pod| !pod.ready).count();
            let pod = graph.add(Node {
                label: format!("{} more pods", more.len()),
                state: "group",
                detail: format!("{not_ready} not ready"),
                title: more.iter().map(|pod| pod.name.as_str()).collect::<Vec<_>>().join("\n"),
                href: None,
                rank: rank + 1,
            });
            graph.connect(node, pod, Link::Feeds);
        }
    }
    graph
}

/// The App page's graph section (what the live updates swap in). It names the apps whose change
/// redraws it: the app and those it depends on.
pub(crate) fn app_section(report: &AppReport) -> Markup {
    let app = &report.app;
    let name =
        format!("The chain of {}/{}: sources, the app, what it depends on, what it runs", app.namespace, app.name);
    html! {
        (graph::svg(&app_graph(report), &name))
        (graph::legend())
    }
}

/// The apps that redraw an App page's graph when they change, `namespace/name`.
pub(crate) fn watched_apps(report: &AppReport) -> String {
    std::iter::once(format!("{}/{}", report.app.namespace, report.app.name))
        .chain(report.dependencies.iter().map(|dependency| format!("{}/{}", dependency.namespace, dependency.name)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The column an app starts in: the platform's first, the tenants' last, as the layers are
/// applied (platform → apps → tenants); `dependsOn` moves it further right.
fn tier(row: &AppRow) -> usize {
    match (row.app.platform, row.app.tenant.is_some(), row.managed) {
        (true, _, _) => 0,
        (false, true, _) => 2,
        (false, false, true) => 1,
        (false, false, false) => 0,
    }
}

fn app_node(row: &AppRow) -> Node {
    let app = &row.app;
    let kind = format!("{:?}", app.kind).to_lowercase();
    Node {
        label: format!("{}/{}", app.namespace, app.name),
        state: app.state.word(),
        detail: kind.clone(),
        title: format!("{kind} {}/{}\n{}", app.namespace, app.name, app.message.clone().unwrap_or_default())
            .trim_end()
            .to_string(),
        href: Some(format!("/apps/{}/{}", app.namespace, app.name)),
        rank: tier(row),
    }
}

/// What the cluster graph drew, and what it left out.
pub(crate) struct ClusterGraph {
    pub(crate) graph: Graph,
    /// The apps that matched.
    pub(crate) matching: usize,
    /// Shown one node per namespace: too many apps matched to draw each.
    pub(crate) collapsed: bool,
    /// Apps of one namespace past the limit, left out (the name filter finds them).
    pub(crate) left_out: usize,
}

/// The cluster's apps that match, joined by `dependsOn`: one node each up to [`CLUSTER_NODES`];
/// past that, one per namespace (its apps counted, its worst state its own, an edge where an
/// app of one depends on an app of another); a namespace that alone is too many keeps the apps
/// that fail or have edges first.
pub(crate) fn cluster_graph(rows: &[AppRow], query: &AppsQuery) -> ClusterGraph {
    let matching: Vec<&AppRow> = rows.iter().filter(|row| matches(&row.app, query)).collect();
    let namespaces: BTreeMap<&str, Vec<&AppRow>> = matching.iter().fold(BTreeMap::new(), |mut by, row| {
        by.entry(row.app.namespace.as_str()).or_insert_with(Vec::new).push(*row);
        by
    });
    if matching.len() > CLUSTER_NODES && namespaces.len() > 1 {
        return ClusterGraph {
            graph: by_namespace(&namespaces),
            matching: matching.len(),
            collapsed: true,
            left_out: 0,
        };
    }
    let depended: std::collections::HashSet<&str> =
        matching.iter().flat_map(|row| row.app.depends_on.iter().map(String::as_str)).collect();
    let mut shown = matching.clone();
    // What matters first: failing apps, and those in a dependency.
    shown.sort_by_cached_key(|row| {
        let key = format!("{}/{}", row.app.namespace, row.app.name);
        (row.app.state != AppState::Failing, row.app.depends_on.is_empty() && !depended.contains(key.as_str()))
    });
    shown.truncate(CLUSTER_NODES);
    shown.sort_by(|a, b| (&a.app.namespace, &a.app.name).cmp(&(&b.app.namespace, &b.app.name)));
    let mut graph = Graph::default();
    // A node is added per row, in order: its index is the row's; its label is `namespace/name`.
    for row in &shown {
        graph.add(app_node(row));
    }
    let index: HashMap<&str, usize> =
        graph.nodes.iter().enumerate().map(|(node, drawn)| (drawn.label.as_str(), node)).collect();
    let mut edges = Vec::new();
    for (app, row) in shown.iter().enumerate() {
        for dependency in &row.app.depends_on {
            if let Some(&dependency) = index.get(dependency.as_str()) {
                edges.push((dependency, app));
            }
        }
    }
    for (dependency, app) in edges {
        graph.connect(dependency, app, Link::DependsOn);
    }
    ClusterGraph { graph, matching: matching.len(), collapsed: false, left_out: matching.len() - shown.len() }
}

/// One node per namespace.
fn by_namespace(namespaces: &BTreeMap<&str, Vec<&AppRow>>) -> Graph {
    let mut graph = Graph::default();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (namespace, rows) in namespaces {
        let failing = rows.iter().filter(|row| row.app.state == AppState::Failing).count();
        let word = if failing > 0 {
            "failing"
        } else if rows.iter().all(|row| row.app.state == AppState::Ready) {
            "ready"
        } else {
            "progressing"
        };
        let node = graph.add(Node {
            label: format!("namespace {namespace}"),
            state: word,
            detail: format!("{} apps, {failing} failing", rows.len()),
            title: format!("{} apps in {namespace}: open its graph", rows.len()),
            href: Some(format!("/graph?namespace={namespace}")),
            rank: rows.iter().map(|row| tier(row)).min().unwrap_or(0),
        });
        index.insert(namespace, node);
    }
    for (namespace, rows) in namespaces {
        for dependency in rows.iter().flat_map(|row| &row.app.depends_on) {
            let other = dependency.split('/').next().unwrap_or_default();
            if let Some(&from) = index.get(other) {
                graph.connect(from, index[namespace], Link::DependsOn);
            }
        }
    }
    graph
}

/// `GET /graph`: the cluster's dependency graph, with the Apps page's filters (namespace, health,
/// name); with `part=graph`, the figure alone, what the live updates swap in.
pub(super) async fn page(view: Viewed, RawQuery(query): RawQuery) -> Response {
    let params = AppsParams::parse(query.as_deref());
    let figure_only = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .any(|(name, value)| name == "part" && value == "graph");
    let drawn = match params.checked().map_err(ApiError::from) {
        Ok(checked) => api::listed(&view).await.map(|snapshot| cluster_graph(&snapshot.rows, &checked)),
        Err(error) => Err(error),
    };
    match drawn {
        Ok(drawn) if figure_only => Html(figure(&drawn).into_string()).into_response(),
        Ok(drawn) => {
            let nav = view.nav();
            layout(&nav, "Graph", body(&nav, &params, &drawn)).into_response()
        }
        Err(error) if figure_only => error.into_response(),
        Err(error) => failed(error),
    }
}

fn figure(drawn: &ClusterGraph) -> Markup {
    html! {
        p.summary {
            (drawn.matching) " apps"
            @if drawn.collapsed { ", one node per namespace: open one to see its apps" }
            @if drawn.left_out > 0 { "; " (drawn.left_out) " more not drawn (failing and dependent apps first): narrow with the name filter" }
            "."
        }
        (graph::svg(&drawn.graph, "The apps and what they depend on"))
        (graph::legend())
    }
}

fn body(nav: &Nav, params: &AppsParams, drawn: &ClusterGraph) -> Markup {
    html! {
        h1 { "Graph" @if let Some(context) = nav.switching() { " of " (context) } }
        form method="get" action="/graph" {
            label { "Namespace " input type="search" name="namespace" value=(params.namespace.clone().unwrap_or_default()); }
            " "
            label { "Health " select name="health" {
                option value="" { "any" }
                @for health in AppState::ALL.map(AppState::word) {
                    option value=(health) selected[params.health.as_deref() == Some(health)] { (health) }
                }
            } }
            " "
            label { "Name " input type="search" name="q" value=(params.q.clone().unwrap_or_default()); }
            " " button type="submit" { "Filter" }
        }
        section #graph data-part="graph" { (figure(drawn)) }
    }
}

#[cfg(test)]
mod tests;
