//! `kubectl gitops app status NAME` on screen: the tree (source → Kustomization or HelmRelease →
//! HelmChart → workloads), when it last deployed, its last error, what it waits on and the commit;
//! or the report as JSON or YAML. The model is in app_report.rs, the reads in app_reads.rs,
//! `--wait` and `--watch` in watch.rs.

use std::time::Duration;

use super::app_report::{AppReport, PodState, Workload, describe};
use super::{AppState, ObjectStatus, shorten_revision};
use crate::cli::OutputFormat;
use crate::duration;
use crate::error::Result;
use crate::output::Printer;
use crate::output::style::Style;

/// Prints the report on stdout in the chosen format.
pub(crate) fn print(report: &AppReport, format: OutputFormat, printer: &Printer) -> Result<()> {
    printer.data(&render(report, format, printer.stdout_style())?)
}

/// The report as text in the chosen format (the tree for `table`).
pub(crate) fn render(report: &AppReport, format: OutputFormat, style: Style) -> Result<String> {
    match format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&crate::output::document(report), format)
        }
        _ => Ok(render_tree(report, style, duration::now())),
    }
}

/// The tree, then the last deployment, commit, last error and what the app waits on.
/// `now` (seconds since the epoch) makes ages testable.
pub fn render_tree(report: &AppReport, style: Style, now: u64) -> String {
    let app = &report.app;
    let state = format!("{:?}", app.state).to_lowercase();
    let state = match app.state {
        AppState::Ready => style.good(&state),
        AppState::Failing => style.bad(&state),
        AppState::Progressing | AppState::Suspended => style.warn(&state),
    };
    let kind = format!("{:?}", app.kind).to_lowercase();
    let mut text = format!("{} ({kind}): {state}\n", style.bold(&format!("App {}/{}", app.namespace, app.name)));
    // The chain is a path (source → chart → app), each object a child of the one before.
    let mut indent = String::new();
    for (index, object) in app.objects.iter().enumerate() {
        let branch = if index == 0 { "" } else { "└── " };
        text.push_str(&format!("{indent}{branch}{}\n", node(object, style)));
        if index > 0 {
            indent.push_str("    ");
        }
    }
    let children: Vec<String> = report
        .inventory
        .iter()
        .map(|item| {
            let name = match &item.namespace {
                Some(namespace) => format!("{}/{namespace}/{}", item.kind, item.name),
                None => format!("{}/{}", item.kind, item.name),
            };
            let workload = report
                .workloads
                .iter()
                .find(|w| w.kind == item.kind && Some(&w.namespace) == item.namespace.as_ref() && w.name == item.name);
            match workload {
                Some(workload) => format!("{name}  {}", replicas(workload, style)),
                None => name,
            }
        })
        .collect();
    for (index, child) in children.iter().enumerate() {
        let branch = if index + 1 == children.len() { "└── " } else { "├── " };
        text.push_str(&format!("{indent}{branch}{child}\n"));
    }
    text.push('\n');
    let none = || style.dim("none");
    let deployed = match &report.last_deployed {
        Some(deployed) => {
            let when = deployed.time.as_deref().map_or("time unknown".to_string(), |time| {
                let ago = duration::parse_timestamp(time)
                    .map(|then| {
                        format!(", {} ago", duration::format_age(Duration::from_secs(now.saturating_sub(then))))
                    })
                    .unwrap_or_default();
                format!("{time}{ago}")
            });
            let app_version = deployed.app_version.as_deref().map(|v| format!(" (app {v})")).unwrap_or_default();
            format!("{}{app_version} at {when}", shorten_revision(&deployed.revision))
        }
        None => none(),
    };
    text.push_str(&format!("Last deployed: {deployed}\n"));
    if let Some(commit) = &report.commit {
        text.push_str(&format!(
            "Commit:        {} {} ({} <{}>, {})\n",
            &commit.sha[..commit.sha.len().min(12)],
            commit.subject,
            commit.author,
            commit.email,
            commit.time
        ));
    }
    let error = match &report.last_error {
        Some(failed) => style.bad(&describe(failed)),
        None => none(),
    };
    text.push_str(&format!("Last error:    {error}\n"));
    if report.waiting_on.is_empty() {
        text.push_str(&format!("Waiting on:    {}\n", none()));
    }
    for (index, waiting) in report.waiting_on.iter().enumerate() {
        let label = if index == 0 { "Waiting on:" } else { "" };
        text.push_str(&format!("{label:<15}{}\n", describe(waiting)));
    }
    text
}

/// `Kind/namespace/name  Ready  revision  message` for one Flux object.
fn node(object: &ObjectStatus, style: Style) -> String {
    let ready = match object.ready.as_str() {
        "True" => style.good("Ready"),
        "False" => style.bad("Failed"),
        _ => style.warn("Unknown"),
    };
    let mut line = format!("{}/{}/{}  {ready}", object.kind, object.namespace, object.name);
    if object.suspended {
        line.push_str(&format!("  {}", style.warn("suspended")));
    }
    if let Some(revision) = &object.revision {
        line.push_str(&format!("  {}", shorten_revision(revision)));
    }
    if let Some(message) = &object.message {
        line.push_str(&format!("  {}", style.dim(&shorten_revision(message))));
    }
    line
}

fn replicas(workload: &Workload, style: Style) -> String {
    if let Some(message) = &workload.message {
        return style.warn(message);
    }
    let text = format!("{}/{} ready", workload.ready_replicas, workload.replicas);
    if workload.ready {
        return style.good(&text);
    }
    // The first pod that says why, as `kubectl describe` would, and how many more are stuck.
    let stuck: Vec<&PodState> = workload.pods.iter().filter(|pod| !pod.ready && pod.reason.is_some()).collect();
    match stuck.first() {
        Some(pod) => {
            let why = match &pod.message {
                Some(message) => format!("{}: {message}", pod.reason.as_deref().unwrap_or_default()),
                None => pod.reason.clone().unwrap_or_default(),
            };
            let more = if stuck.len() > 1 { format!(" (and {} more)", stuck.len() - 1) } else { String::new() };
            format!("{}  pod {} {}{more}", style.warn(&text), pod.name, style.bad(&why))
        }
        None => style.warn(&text),
    }
}

#[cfg(test)]
mod tests;
