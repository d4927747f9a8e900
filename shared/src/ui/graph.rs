//! Graphs drawn on the server as SVG: a layered layout (Sugiyama's steps, kept small: layers by
//! longest path, order in each layer by the barycentre of the neighbours, a few sweeps), left to
//! right, for the App page's chain and the cluster's dependency graph. No script draws anything:
//! the page is the picture, and its nodes are links a keyboard reaches.

use maud::{Markup, PreEscaped, html};

/// A node's size and the room between them, in pixels.
const NODE_WIDTH: usize = 220;
const NODE_HEIGHT: usize = 46;
const LAYER_GAP: usize = 70;
const ROW_GAP: usize = 14;
const MARGIN: usize = 8;
/// Barycentre sweeps (each one down then up): enough for the few crossings these graphs have.
const SWEEPS: usize = 4;

/// A node: what it is, its health, where it leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    /// First line: the object (`Kustomization web`, `pod web-6d4b…`).
    pub(crate) label: String,
    /// Its health: `ready`, `failing`, `progressing`, `suspended`, or `group` for a collapsed set.
    pub(crate) state: &'static str,
    /// Second line, after the state's word: a reason, a count.
    pub(crate) detail: String,
    /// The hover text (a tooltip, and the link's accessible description): the whole message.
    pub(crate) title: String,
    /// Its page, if it has one.
    pub(crate) href: Option<String>,
    /// The leftmost layer it may go in: a source never right of what it feeds.
    pub(crate) rank: usize,
}

/// How an edge is drawn: a chain's link (solid) or a `dependsOn` (dashed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Link {
    Feeds,
    DependsOn,
}

/// Nodes and edges, by index.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub(crate) nodes: Vec<Node>,
    pub(crate) edges: Vec<(usize, usize, Link)>,
}

impl Graph {
    pub(crate) fn add(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// An edge from `from` to `to` (left to right); the same edge twice is drawn once.
    pub(crate) fn connect(&mut self, from: usize, to: usize, link: Link) {
        if from != to && !self.edges.contains(&(from, to, link)) {
            self.edges.push((from, to, link));
        }
    }
}

/// Where the layout put each node: its layer and its place in it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The nodes of each layer, top to bottom.
    pub(crate) layers: Vec<Vec<usize>>,
}

/// Lays the graph out: each node in the first layer right of everything that feeds it (and not
/// left of its rank); an edge in a cycle (a `dependsOn` loop, which Flux refuses too) does not
/// move anything. Then each layer is ordered by where its neighbours are.
pub(crate) fn layout(graph: &Graph) -> Layout {
    let count = graph.nodes.len();
    let mut layer: Vec<usize> = graph.nodes.iter().map(|node| node.rank).collect();
    // Kahn's order: a node's layer is settled once everything before it is.
    let mut waiting = vec![0usize; count];
    for &(_, to, _) in &graph.edges {
        waiting[to] += 1;
    }
    let mut ready: Vec<usize> = (0..count).filter(|&node| waiting[node] == 0).collect();
    while let Some(node) = ready.pop() {
        for &(from, to, _) in graph.edges.iter().filter(|(from, _, _)| *from == node) {
            layer[to] = layer[to].max(layer[from] + 1);
            waiting[to] -= 1;
            if waiting[to] == 0 {
                ready.push(to);
            }
        }
    }
    let mut layers = vec![Vec::new(); layer.iter().max().map_or(0, |last| last + 1)];
    for (node, &at) in layer.iter().enumerate() {
        layers[at].push(node);
    }
    layers.retain(|nodes| !nodes.is_empty());
    for _ in 0..SWEEPS {
        for index in 1..layers.len() {
            order_by_neighbours(graph, &mut layers, index, index - 1);
        }
        for index in (0..layers.len().saturating_sub(1)).rev() {
            order_by_neighbours(graph, &mut layers, index, index + 1);
        }
    }
    Layout { layers }
}

/// Orders layer `index` by the mean place of each node's neighbours in layer `by`; a node with
/// none there keeps its place.
fn order_by_neighbours(graph: &Graph, layers: &mut [Vec<usize>], index: usize, by: usize) {
    let place = |node: usize| layers[by].iter().position(|&other| other == node);
    let mut keyed: Vec<(f64, usize)> = layers[index]
        .iter()
        .enumerate()
        .map(|(at, &node)| {
            let places: Vec<usize> = graph
                .edges
                .iter()
                .filter_map(|&(from, to, _)| {
                    if from == node {
                        place(to)
                    } else if to == node {
                        place(from)
                    } else {
                        None
                    }
                })
                .collect();
            let key =
                if places.is_empty() { at as f64 } else { places.iter().sum::<usize>() as f64 / places.len() as f64 };
            (key, node)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    layers[index] = keyed.into_iter().map(|(_, node)| node).collect();
}

/// The shape that tells a state beside its colour (the stylesheet's too).
pub(crate) fn shape(state: &str) -> &'static str {
    match state {
        "ready" => "✓",
        "failing" => "✗",
        "progressing" => "◔",
        "suspended" => "‖",
        "group" => "▦",
        _ => "?",
    }
}

/// The graph as an SVG figure, `name` its accessible name. An empty graph is a sentence.
pub(crate) fn svg(graph: &Graph, name: &str) -> Markup {
    if graph.nodes.is_empty() {
        return html! { p.hint { "Nothing to draw." } };
    }
    let Layout { layers } = layout(graph);
    let tallest = layers.iter().map(Vec::len).max().unwrap_or(0);
    let column_height = |rows: usize| rows * NODE_HEIGHT + rows.saturating_sub(1) * ROW_GAP;
    let height = column_height(tallest) + 2 * MARGIN;
    let width = layers.len() * NODE_WIDTH + layers.len().saturating_sub(1) * LAYER_GAP + 2 * MARGIN;
    // Each column centred on the tallest.
    let mut at = vec![(0usize, 0usize); graph.nodes.len()];
    for (column, nodes) in layers.iter().enumerate() {
        let top = MARGIN + (column_height(tallest) - column_height(nodes.len())) / 2;
        for (row, &node) in nodes.iter().enumerate() {
            at[node] = (MARGIN + column * (NODE_WIDTH + LAYER_GAP), top + row * (NODE_HEIGHT + ROW_GAP));
        }
    }
    html! {
        div.figure tabindex="0" role="region" aria-label=(name) {
            svg.graph xmlns="http://www.w3.org/2000/svg" role="group" aria-label=(name)
                width=(width) height=(height) viewBox=(format!("0 0 {width} {height}")) {
                // A node's text is whole (what a screen reader reads, and the link's name) and
                // clipped to the node where it is too long to fit; the hover text shows it all.
                defs { clipPath #node-text { rect x="4" y="0" width=(NODE_WIDTH - 8) height=(NODE_HEIGHT) {} } }
                defs { marker #arrow viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                    path.arrowhead d="M 0 0 L 10 5 L 0 10 z" {}
                } }
                @for &(from, to, link) in &graph.edges {
                    (edge(at[from], at[to], link, (&graph.nodes[from].label, &graph.nodes[to].label)))
                }
                @for (index, node) in graph.nodes.iter().enumerate() {
                    (drawn(node, at[index]))
                }
            }
        }
    }
}

/// An edge: a curve from the right of one node to the left of the other; it names its ends
/// (`data-from`, `data-to`) for scripts and tests.
fn edge(from: (usize, usize), to: (usize, usize), link: Link, ends: (&str, &str)) -> Markup {
    let (x1, y1) = (from.0 + NODE_WIDTH, from.1 + NODE_HEIGHT / 2);
    let (x2, y2) = (to.0, to.1 + NODE_HEIGHT / 2);
    let bend = LAYER_GAP / 2;
    let path = format!("M {x1} {y1} C {} {y1}, {} {y2}, {x2} {y2}", x1 + bend, x2.saturating_sub(bend));
    let class = match link {
        Link::Feeds => "edge",
        Link::DependsOn => "edge depends",
    };
    html! { path class=(class) d=(path) marker-end="url(#arrow)" data-from=(ends.0) data-to=(ends.1) {} }
}

/// A node: a box, its label, its state by shape and word, its message on hover; a link when it
/// has a page.
fn drawn(node: &Node, (x, y): (usize, usize)) -> Markup {
    let state_line = if node.detail.is_empty() {
        format!("{} {}", shape(node.state), node.state)
    } else {
        format!("{} {} · {}", shape(node.state), node.state, node.detail)
    };
    let inside = html! {
        g class=(format!("node {}", node.state)) transform=(format!("translate({x} {y})")) {
            title { (node.title) }
            rect width=(NODE_WIDTH) height=(NODE_HEIGHT) rx="6" {}
            g clip-path="url(#node-text)" {
                text x="10" y="19" { (node.label) }
                text.state x="10" y="36" { (state_line) }
            }
        }
    };
    // A link is named by its text, as what is seen is what is read; a node without a page is an
    // image named the same.
    match &node.href {
        Some(href) => html! { a href=(href) { (inside) } },
        None => html! { g role="img" aria-label=(format!("{}: {state_line}", node.label)) { (inside) } },
    }
}

/// The legend under a graph: what the shapes and lines mean, in words.
pub(crate) fn legend() -> Markup {
    let states = ["ready", "failing", "progressing", "suspended"];
    html! {
        ul.legend {
            @for state in states { li { (shape(state)) " " (state) } }
            li { (PreEscaped("&mdash;")) " feeds" } li { "- - depends on" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(label: &str, rank: usize) -> Node {
        Node { label: label.into(), state: "ready", detail: String::new(), title: String::new(), href: None, rank }
    }

    #[test]
    fn each_node_goes_right_of_what_feeds_it_and_not_left_of_its_rank() {
        let mut graph = Graph::default();
        let source = graph.add(node("source", 0));
        let app = graph.add(node("app", 1));
        let dependency = graph.add(node("dependency", 0));
        let pod = graph.add(node("pod", 3));
        graph.connect(source, app, Link::Feeds);
        graph.connect(dependency, app, Link::DependsOn);
        graph.connect(app, pod, Link::Feeds);
        graph.connect(app, pod, Link::Feeds);
        assert_eq!(graph.edges.len(), 3, "the same edge is drawn once");
        // Layer 2 is empty and left out.
        assert_eq!(layout(&graph).layers, vec![vec![source, dependency], vec![app], vec![pod]]);
    }

    #[test]
    fn a_dependency_chain_is_a_row_of_layers_and_a_cycle_moves_nothing() {
        let mut graph = Graph::default();
        let [platform, apps, tenants] = ["platform", "apps", "tenants"].map(|name| graph.add(node(name, 0)));
        graph.connect(platform, apps, Link::DependsOn);
        graph.connect(apps, tenants, Link::DependsOn);
        assert_eq!(layout(&graph).layers, vec![vec![platform], vec![apps], vec![tenants]]);
        let mut looped = Graph::default();
        let [a, b] = ["a", "b"].map(|name| looped.add(node(name, 0)));
        looped.connect(a, b, Link::DependsOn);
        looped.connect(b, a, Link::DependsOn);
        assert_eq!(layout(&looped).layers, vec![vec![a, b]]);
    }

    #[test]
    fn the_order_in_a_layer_follows_the_neighbours_so_edges_do_not_cross() {
        let mut graph = Graph::default();
        let [left_a, left_b] = ["a", "b"].map(|name| graph.add(node(name, 0)));
        // Added in the other order: b's child first.
        let [right_b, right_a] = ["b2", "a2"].map(|name| graph.add(node(name, 1)));
        graph.connect(left_a, right_a, Link::Feeds);
        graph.connect(left_b, right_b, Link::Feeds);
        assert_eq!(layout(&graph).layers, vec![vec![left_a, left_b], vec![right_a, right_b]]);
    }

    #[test]
    fn a_node_says_its_state_in_words_and_shape_and_long_names_are_clipped() {
        let mut graph = Graph::default();
        let failing = Node {
            state: "failing",
            detail: "CrashLoopBackOff".into(),
            title: "back-off restarting failed container".into(),
            href: Some("/apps/a/b".into()),
            ..node("pod a-very-long-name-that-does-not-fit-on-a-node", 0)
        };
        graph.add(failing);
        let drawn = svg(&graph, "The chain").into_string();
        assert!(drawn.contains("✗ failing · CrashLoopBackOff"), "{drawn}");
        assert!(drawn.contains("<title>back-off restarting failed container</title>"), "{drawn}");
        // Whole, clipped to the node.
        assert!(drawn.contains(r#"<g clip-path="url(#node-text)"><text x="10" y="19">pod a-very-long-name-that-does-not-fit-on-a-node</text>"#), "{drawn}");
        assert!(drawn.contains(r#"<a href="/apps/a/b"><g class="node failing""#), "{drawn}");
        assert_eq!(svg(&Graph::default(), "x").into_string(), r#"<p class="hint">Nothing to draw.</p>"#);
    }
}
