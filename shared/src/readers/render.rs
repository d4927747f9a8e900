//! The status screen: a header for the Flux runtime, a table per section, a summary line.

use std::time::Duration;

use super::{AppState, AppStatus, Report, shorten_revision};
use crate::cli::OutputFormat;
use crate::error::{ExitCode, Result};
use crate::output::style::Style;
use crate::output::table::Table;

/// What the flags of `status` select and how the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// table, wide, json or yaml.
    pub format: OutputFormat,
    /// `-A`: a NAMESPACE column.
    pub all_namespaces: bool,
    /// Column headers (`--no-headers` turns them off).
    pub headers: bool,
    /// `--failed-only`.
    pub failed_only: bool,
    /// `--cluster-only`.
    pub cluster_only: bool,
    /// How the table is decorated (the printer's stdout style).
    pub style: Style,
}

impl View {
    /// The report with the rows the flags select.
    pub fn shown(&self, report: Report) -> Report {
        let report = self.scoped(report);
        if self.failed_only { report.failed_only() } else { report }
    }

    /// The report without rows under `--cluster-only` (what `--failed-only` drops is kept).
    pub(super) fn scoped(&self, mut report: Report) -> Report {
        if self.cluster_only {
            report.platform.clear();
            report.apps.clear();
            report.tenants.clear();
            report.config_repo.clear();
            report.other_flux_objects.clear();
            report.summary = super::summarize(std::iter::empty());
        }
        report
    }

    /// The screen (or JSON/YAML) of a report.
    pub fn render(&self, report: &Report) -> Result<String> {
        match self.format {
            OutputFormat::Json | OutputFormat::Yaml => {
                crate::output::render_structured(&crate::output::document(report), self.format)
            }
            _ => Ok(render_table(
                report,
                self.all_namespaces,
                self.format == OutputFormat::Wide,
                self.headers,
                self.style,
                crate::duration::now(),
            )),
        }
    }

    /// Rows on their own, as `status --watch` prints those that changed: table lines without
    /// headers, or one JSON or YAML document per row.
    pub(super) fn render_rows(&self, rows: &[AppStatus]) -> Result<String> {
        match self.format {
            OutputFormat::Json => rows
                .iter()
                .map(|row| crate::output::render_structured(&crate::output::document(row), self.format))
                .collect(),
            OutputFormat::Yaml => rows
                .iter()
                .map(|row| {
                    Ok(format!(
                        "---\n{}",
                        crate::output::render_structured(&crate::output::document(row), self.format)?
                    ))
                })
                .collect(),
            _ if rows.is_empty() => Ok(String::new()),
            _ => Ok(table(rows, self.all_namespaces, self.format == OutputFormat::Wide, crate::duration::now())
                .render(false)),
        }
    }
}

/// Exit 0 when every row shown is ready or suspended, 1 otherwise (a CI gate).
pub fn exit_code(report: &Report) -> ExitCode {
    let not_ready = report.summary.failing + report.summary.progressing;
    if not_ready == 0 { ExitCode::Ok } else { ExitCode::No }
}

/// The human-readable screen. `now` (seconds since the epoch) makes ages testable.
pub fn render_table(
    report: &Report,
    all_namespaces: bool,
    wide: bool,
    headers: bool,
    style: Style,
    now: u64,
) -> String {
    let mut text = String::new();
    let flux = &report.flux;
    let ready = flux.controllers.iter().filter(|c| c.ready).count();
    let runtime = match (&flux.namespace, &flux.version) {
        (Some(namespace), version) => format!(
            "Flux {} in {namespace}: {ready}/{} controllers ready",
            version.as_deref().unwrap_or("(version unknown)"),
            flux.controllers.len()
        ),
        (None, _) => "Flux: no Flux namespace found".to_string(),
    };
    text.push_str(&format!("{}\n", style.bold(&runtime)));
    match &flux.config {
        Some(config) => text.push_str(&format!(
            "Config repo: {} (branch {}, path {}, cluster {})\n",
            config.url, config.branch, config.path, config.cluster_name
        )),
        None => text.push_str("Config repo: none (not installed by kubectl-gitops)\n"),
    }
    let sections = [
        ("Platform", &report.platform),
        ("Apps", &report.apps),
        ("Tenants", &report.tenants),
        ("Config repo", &report.config_repo),
        ("Other Flux objects", &report.other_flux_objects),
    ];
    for (title, rows) in sections {
        if rows.is_empty() {
            continue;
        }
        text.push_str(&format!("\n{}\n", style.bold(title)));
        text.push_str(&table(rows, all_namespaces, wide, now).render(headers));
    }
    for forbidden in &report.forbidden {
        text.push_str(&format!("\n{} {forbidden}\n", style.warn("forbidden, skipped:")));
    }
    let summary = report.summary;
    let line = format!(
        "{}: {} ready, {} failing, {} progressing, {} suspended",
        counted(report),
        summary.ready,
        summary.failing,
        summary.progressing,
        summary.suspended
    );
    let line = if summary.failing > 0 { style.bad(&line) } else { style.good(&line) };
    text.push_str(&format!("\n{line}\n"));
    text
}

/// What the rows are, section by section: "2 apps, 4 config repo layers". The apps are always
/// counted, none as "0 apps"; the other sections only when they have rows.
fn counted(report: &Report) -> String {
    let sections = [
        (report.apps.len(), "app", "apps"),
        (report.platform.len(), "platform app", "platform apps"),
        (report.tenants.len(), "tenant object", "tenant objects"),
        (report.config_repo.len(), "config repo layer", "config repo layers"),
        (report.other_flux_objects.len(), "other Flux object", "other Flux objects"),
    ];
    let parts: Vec<String> = sections
        .iter()
        .enumerate()
        .filter(|(index, (count, _, _))| *index == 0 || *count > 0)
        .map(|(_, (count, one, many))| format!("{count} {}", if *count == 1 { one } else { many }))
        .collect();
    parts.join(", ")
}

fn table(rows: &[AppStatus], all_namespaces: bool, wide: bool, now: u64) -> Table {
    let mut headers: Vec<&str> = Vec::new();
    if all_namespaces {
        headers.push("namespace");
    }
    headers.extend(["name", "kind", "source revision", "applied revision", "ready", "suspended", "last deployed"]);
    if wide {
        headers.extend(["source", "ref"]);
    }
    headers.push("message");
    let mut table = Table::new(headers);
    for row in rows {
        let revision = |value: &Option<String>| match value {
            Some(text) if wide => text.clone(),
            Some(text) => shorten_revision(text),
            None => "-".to_string(),
        };
        let ready = match row.state {
            AppState::Ready => "True",
            AppState::Failing => "False",
            AppState::Progressing => "Unknown",
            AppState::Suspended => row.objects.last().map_or("Unknown", |app| app.ready.as_str()),
        };
        let mut cells: Vec<String> = Vec::new();
        if all_namespaces {
            cells.push(row.namespace.clone());
        }
        cells.extend([
            row.name.clone(),
            format!("{:?}", row.kind).to_lowercase(),
            revision(&row.source_revision),
            revision(&row.applied_revision),
            ready.to_string(),
            if row.state == AppState::Suspended { "True" } else { "False" }.to_string(),
            row.last_deployed.as_deref().map_or("-".to_string(), |time| age(time, now)),
        ]);
        if wide {
            cells.push(row.source_url.clone().unwrap_or_else(|| "-".into()));
            cells.push(row.source_ref.clone().unwrap_or_else(|| "-".into()));
        }
        let message = row.message.clone().unwrap_or_default();
        cells.push(if wide { message } else { shorten_revision(&message) });
        table.push(cells);
    }
    table
}

fn age(time: &str, now: u64) -> String {
    match crate::duration::parse_timestamp(time) {
        Some(then) => crate::duration::format_age(Duration::from_secs(now.saturating_sub(then))),
        None => "-".to_string(),
    }
}
