use super::*;
use crate::readers::{AppKind, AppStatus, Workload};

fn object(kind: &str, name: &str, ready: &str, reason: &str) -> ObjectStatus {
    ObjectStatus {
        kind: kind.into(),
        namespace: "shop".into(),
        name: name.into(),
        ready: ready.into(),
        reason: Some(reason.into()),
        message: Some(format!("{name}: {reason}")),
        revision: None,
        suspended: false,
    }
}

fn pod(name: &str, ready: bool, reason: Option<&str>) -> PodState {
    PodState {
        name: name.into(),
        phase: if ready { "Running" } else { "Pending" }.into(),
        ready,
        restarts: if ready { 0 } else { 4 },
        reason: reason.map(String::from),
        message: reason.map(|_| "back-off 40s restarting failed container".to_string()),
    }
}

fn report(pods: Vec<PodState>) -> AppReport {
    let mut app = AppStatus::bare("shop", "web", AppKind::Kustomize, AppState::Failing);
    app.objects = vec![
        object("GitRepository", "web", "True", "Succeeded"),
        object("Kustomization", "web", "False", "HealthCheckFailed"),
    ];
    AppReport {
        app,
        dependencies: vec![object("Kustomization", "database", "True", "ReconciliationSucceeded")],
        inventory: Vec::new(),
        workloads: vec![Workload {
            kind: "Deployment".into(),
            namespace: "shop".into(),
            name: "web".into(),
            replicas: pods.len() as i64,
            ready_replicas: pods.iter().filter(|pod| pod.ready).count() as i64,
            ready: pods.iter().all(|pod| pod.ready),
            message: None,
            pods,
        }],
        last_deployed: None,
        last_error: None,
        waiting_on: Vec::new(),
        commit: None,
        history: Vec::new(),
        events: Vec::new(),
    }
}

#[test]
fn an_apps_graph_runs_from_its_source_to_its_pods_and_names_a_failing_pods_reason() {
    let report = report(vec![pod("web-1", true, None), pod("web-2", false, Some("CrashLoopBackOff"))]);
    let graph = app_graph(&report);
    let labels: Vec<&str> = graph.nodes.iter().map(|node| node.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "GitRepository web",
            "Kustomization web",
            "Kustomization database",
            "Deployment web",
            "pod web-2",
            "pod web-1"
        ]
    );
    let layers = graph::layout(&graph).layers;
    assert_eq!(layers.len(), 4, "source and dependency, the app, the workload, its pods: {layers:?}");
    let failing = &graph.nodes[4];
    assert_eq!((failing.state, failing.detail.as_str()), ("failing", "CrashLoopBackOff, 4 restarts"));
    assert!(failing.title.contains("back-off 40s restarting failed container"), "{}", failing.title);
    // The dependency is a link to its page, joined by a dashed edge.
    assert_eq!(graph.nodes[2].href.as_deref(), Some("/apps/shop/database"));
    assert!(graph.edges.contains(&(2, 1, Link::DependsOn)));
    let drawn = app_section(&report).into_string();
    assert!(drawn.contains(r#"aria-label="pod web-2: ✗ failing · CrashLoopBackOff, 4 restarts""#), "{drawn}");
    assert_eq!(watched_apps(&report), "shop/web shop/database");
}

#[test]
fn many_pods_are_a_few_nodes_and_one_that_counts_the_rest() {
    let pods = (0..20).map(|index| pod(&format!("web-{index}"), index != 13, Some("ImagePullBackOff"))).collect();
    let graph = app_graph(&report(pods));
    let pods: Vec<&Node> = graph.nodes.iter().filter(|node| node.rank == 3).collect();
    assert_eq!(pods.len(), PODS_PER_WORKLOAD + 1);
    assert_eq!(pods[0].label, "pod web-13", "the pod that is not ready comes first");
    let rest = pods.last().map(|node| (node.label.as_str(), node.detail.as_str()));
    assert_eq!(rest, Some(("12 more pods", "0 not ready")));
}

fn row(namespace: &str, name: &str, state: AppState, depends_on: &[&str]) -> AppRow {
    let mut app = AppStatus::bare(namespace, name, AppKind::Kustomize, state);
    app.depends_on = depends_on.iter().map(|dependency| dependency.to_string()).collect();
    AppRow { app, managed: true }
}

fn everything() -> AppsQuery {
    AppsParams::default().checked().unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn the_cluster_graph_joins_apps_by_depends_on_in_layers() {
    let mut platform = row("flux-system", "ingress", AppState::Ready, &[]);
    platform.app.platform = true;
    let rows = vec![
        platform,
        row("shop", "database", AppState::Ready, &["flux-system/ingress"]),
        row("shop", "web", AppState::Failing, &["shop/database", "shop/gone"]),
    ];
    let drawn = cluster_graph(&rows, &everything());
    assert!(!drawn.collapsed);
    assert_eq!((drawn.matching, drawn.left_out), (3, 0));
    // A dependency that is not there draws no edge.
    assert_eq!(drawn.graph.edges, [(0, 1, Link::DependsOn), (1, 2, Link::DependsOn)]);
    assert_eq!(graph::layout(&drawn.graph).layers, [[0], [1], [2]]);
    assert_eq!(drawn.graph.nodes[2].href.as_deref(), Some("/apps/shop/web"));
}

#[test]
fn past_sixty_apps_the_cluster_graph_is_one_node_per_namespace() {
    let mut rows: Vec<AppRow> = (0..700)
        .map(|index| row(&format!("team-{}", index % 7), &format!("app-{index:03}"), AppState::Ready, &[]))
        .collect();
    rows.push(row("team-1", "zz-failing", AppState::Failing, &["team-0/app-000"]));
    let drawn = cluster_graph(&rows, &everything());
    assert!(drawn.collapsed);
    assert_eq!(drawn.graph.nodes.len(), 7);
    let team_1 = &drawn.graph.nodes[1];
    assert_eq!((team_1.state, team_1.detail.as_str()), ("failing", "101 apps, 1 failing"));
    assert_eq!(team_1.href.as_deref(), Some("/graph?namespace=team-1"));
    assert_eq!(drawn.graph.edges, [(0, 1, Link::DependsOn)]);
    // One namespace alone: its first sixty, the failing app and the one it depends on among them.
    let one = AppsParams { namespace: Some("team-1".into()), ..AppsParams::default() };
    let drawn = cluster_graph(&rows, &one.checked().unwrap_or_else(|error| panic!("{error}")));
    assert!(!drawn.collapsed);
    assert_eq!((drawn.graph.nodes.len(), drawn.left_out), (CLUSTER_NODES, 41));
    assert!(drawn.graph.nodes.iter().any(|node| node.label == "team-1/zz-failing"));
}
