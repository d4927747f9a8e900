//! The fleet's screen: apps × clusters, then a line per cluster.

use super::matrix::{CellState, FleetCell, FleetStatus};
use crate::output::style::Style;
use crate::output::table::Table;
use crate::readers::shorten_revision;

/// The matrix as a table: a row per app, a column per cluster (its name in the config repo, else
/// its context), a last column saying whether the version is the same everywhere; then each
/// cluster's config revision, `behind` or why it did not answer; then the counts.
pub fn table(fleet: &FleetStatus, headers: bool, style: Style) -> String {
    let mut columns = vec!["APP".to_string()];
    columns
        .extend(fleet.clusters.iter().map(|cluster| cluster.name.clone().unwrap_or_else(|| cluster.context.clone())));
    columns.push("VERSIONS".to_string());
    let mut table = Table::new(columns);
    for app in &fleet.apps {
        let mut row = vec![format!("{}/{}", app.namespace, app.name)];
        row.extend(app.cells.iter().map(|cell| cell_text(cell, style)));
        row.push(if app.differs { style.warn("differ") } else { "same".to_string() });
        table.push(row);
    }
    let mut text = if fleet.apps.is_empty() { "No apps in any cluster.\n".to_string() } else { table.render(headers) };
    text.push('\n');
    for cluster in &fleet.clusters {
        let name = cluster.name.as_deref().unwrap_or(&cluster.context);
        let about = match (&cluster.error, &cluster.config_revision) {
            (Some(error), _) => style.bad(&format!("unreachable: {error}")),
            (None, Some(revision)) if cluster.behind => {
                style.warn(&format!("config {} (behind the config repo's head)", shorten_revision(revision)))
            }
            (None, Some(revision)) => format!("config {}", shorten_revision(revision)),
            (None, None) => "no config repo sync".to_string(),
        };
        let rollout = match (&fleet.commit, cluster.rollout) {
            (Some(commit), Some(state)) => format!("; commit {}: {}", &commit[..8.min(commit.len())], state.words()),
            _ => String::new(),
        };
        text.push_str(&format!("{name} (context {}): {about}{rollout}\n", cluster.context));
    }
    let summary = &fleet.summary;
    text.push_str(&format!(
        "{} apps on {} clusters: {} differ, {} not ready; {} clusters unreachable, {} behind\n",
        summary.apps, summary.clusters, summary.differing, summary.not_ready, summary.unreachable, summary.behind
    ));
    text
}

/// `ready 0.1.0`: the state as a word (a glyph first on a terminal) and what runs.
fn cell_text(cell: &FleetCell, style: Style) -> String {
    let word = match cell.state {
        CellState::Ready => style.good(&format!("{}{}", style.glyph("✓"), cell.state.word())),
        CellState::Failing => style.bad(&format!("{}{}", style.glyph("✗"), cell.state.word())),
        CellState::Progressing | CellState::Suspended | CellState::Unknown => style.warn(cell.state.word()),
        CellState::Absent => return "-".to_string(),
    };
    match &cell.version {
        Some(version) => format!("{word} {}", shorten_revision(version)),
        None => word,
    }
}
