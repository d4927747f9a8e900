//! The screen of `drift`: a row per drifted object (the Kustomization, the object, its fields,
//! who changed them and how long ago), what could not be checked, then the counts.

use super::{Drift, DriftChange, DriftState, DriftedObject};
use crate::output::style::Style;
use crate::output::table::Table;

/// The text exposition format, for node-exporter's textfile collector (`metrics drift`): per
/// Kustomization, the objects that differ by state, and whether it could be checked.
pub fn prometheus(drift: &Drift) -> String {
    use std::fmt::Write;
    let mut text = String::from(
        "# HELP gitops_drifted_objects Objects that differ from what Flux last applied, by Kustomization and state (changed, missing).\n\
         # TYPE gitops_drifted_objects gauge\n",
    );
    let labels = |kustomization: &super::KustomizationDrift| {
        format!(
            "namespace=\"{}\",name=\"{}\"",
            crate::output::exposition_label(&kustomization.namespace),
            crate::output::exposition_label(&kustomization.name)
        )
    };
    for kustomization in &drift.kustomizations {
        for (state, word) in [(DriftState::Changed, "changed"), (DriftState::Missing, "missing")] {
            let count = kustomization.objects.iter().filter(|object| object.state == state).count();
            let _ = writeln!(text, "gitops_drifted_objects{{{},state=\"{word}\"}} {count}", labels(kustomization));
        }
    }
    text.push_str(
        "# HELP gitops_drift_checked Whether every object of the Kustomization could be checked (1) or not (0).\n\
         # TYPE gitops_drift_checked gauge\n",
    );
    for kustomization in &drift.kustomizations {
        let unchecked = kustomization.error.is_some()
            || kustomization.objects.iter().any(|object| object.state == DriftState::Unchecked);
        let _ = writeln!(text, "gitops_drift_checked{{{}}} {}", labels(kustomization), u8::from(!unchecked));
    }
    text
}

/// How many field paths a row shows before it says how many more.
const FIELDS_SHOWN: usize = 3;

/// The whole screen.
pub fn text(drift: &Drift, headers: bool, style: Style) -> String {
    let summary = drift.summary;
    let line = format!(
        "{} drifted ({} deleted) of {} objects in {} Kustomization{}{}",
        summary.drifted,
        summary.missing,
        summary.checked,
        summary.kustomizations,
        if summary.kustomizations == 1 { "" } else { "s" },
        if summary.failed > 0 { format!(", {} not checked", summary.failed) } else { String::new() }
    );
    with_summary(rows(drift, headers, style), &line, summary.failed > 0 || summary.drifted > 0, style)
}

/// The screen of a preview ([`super::preview`]): the same rows, counted as what would change.
pub fn preview_text(drift: &Drift, headers: bool, style: Style) -> String {
    let summary = drift.summary;
    let line = format!(
        "{} objects would change ({} created), {} stay as they are{}",
        summary.drifted,
        summary.missing,
        summary.checked.saturating_sub(summary.drifted),
        if summary.failed > 0 { format!(", {} not checked", summary.failed) } else { String::new() }
    );
    with_summary(rows(drift, headers, style), &line, summary.failed > 0, style)
}

/// `text` with the summary line after it, in red when `bad`.
fn with_summary(mut text: String, line: &str, bad: bool, style: Style) -> String {
    let line = if bad { style.bad(line) } else { style.good(line) };
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&line);
    text.push('\n');
    text
}

/// An object's cells: its name (and HelmRelease), its fields, its managers, since when.
fn cells(object: &DriftedObject, now: u64) -> [String; 4] {
    let name = match &object.namespace {
        Some(namespace) => format!("{}/{namespace}/{}", object.kind, object.name),
        None => format!("{}/{}", object.kind, object.name),
    };
    let name = match &object.helm_release {
        Some(release) => format!("{name} (HelmRelease {release})"),
        None => name,
    };
    let name = if object.compared_here { format!("{name} (compared here)") } else { name };
    let fields = match object.state {
        DriftState::Missing => "(deleted)".to_string(),
        DriftState::Unchecked => "(not checked)".to_string(),
        DriftState::Changed => {
            let mut shown: Vec<&str> = object.fields.iter().take(FIELDS_SHOWN).map(|f| f.path.as_str()).collect();
            let more = object.fields.len().saturating_sub(FIELDS_SHOWN);
            let more = (more > 0).then(|| format!("+{more} more"));
            shown.extend(more.as_deref());
            shown.join(", ")
        }
    };
    let managers = if object.managers.is_empty() { "-".to_string() } else { object.managers.join(",") };
    let since = object.since.as_deref().and_then(crate::duration::parse_timestamp).map_or_else(
        || "-".to_string(),
        |at| crate::duration::format_age(std::time::Duration::from_secs(now.saturating_sub(at))),
    );
    [name, fields, managers, since]
}

/// `drift --watch`'s rows, one per change, without headers: the time, then the row `drift`
/// shows (`(as applied)` for an object that is as Flux applied it again).
pub fn change_rows(changes: &[DriftChange]) -> String {
    let mut table = Table::new(["TIME", "KUSTOMIZATION", "OBJECT", "FIELDS", "MANAGER", "SINCE"]);
    let now = crate::duration::now();
    for change in changes {
        let [name, fields, managers, since] = match &change.drift {
            Some(object) => cells(object, now),
            None => [change.object.clone(), "(as applied)".to_string(), "-".to_string(), "-".to_string()],
        };
        let time = change.time.split_once('T').map_or(change.time.as_str(), |(_, time)| time.trim_end_matches('Z'));
        table.push([time.to_string(), change.kustomization.clone(), name, fields, managers, since]);
    }
    table.render(false)
}

/// The table, then what could not be checked.
fn rows(drift: &Drift, headers: bool, style: Style) -> String {
    let mut table = Table::new(["KUSTOMIZATION", "OBJECT", "FIELDS", "MANAGER", "SINCE"]);
    let now = crate::duration::now();
    for kustomization in &drift.kustomizations {
        for object in &kustomization.objects {
            let [name, fields, managers, since] = cells(object, now);
            table.push([format!("{}/{}", kustomization.namespace, kustomization.name), name, fields, managers, since]);
        }
    }
    let mut text = table.render(headers);
    for kustomization in &drift.kustomizations {
        if let Some(error) = &kustomization.error {
            text.push_str(
                &style.bad(&format!("{}/{}: not checked: {error}", kustomization.namespace, kustomization.name)),
            );
            text.push('\n');
        }
        for object in kustomization.objects.iter().filter(|object| object.state == DriftState::Unchecked) {
            let message = object.message.as_deref().unwrap_or_default();
            text.push_str(&style.bad(&format!("{} {}: not checked: {message}", object.kind, object.name)));
            text.push('\n');
        }
    }
    text
}
