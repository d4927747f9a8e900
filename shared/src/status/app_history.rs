//! `kubectl gitops app history NAME`: its flags, and the timeline the cluster readers build
//! ([`crate::readers::app_history`]) printed as a table, or as JSON or YAML.

use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{Cluster, Connection};
use crate::deployments::timeline::Row;
use crate::error::{ExitCode, Result};
use crate::output::Printer;
use crate::output::table::Table;
use crate::readers::app_report::AppRef;
use crate::readers::{Ledgers, app_history, shorten_revision};

/// `kubectl gitops app history NAME`: every deployment of an app, oldest first.
#[derive(Debug, Clone, clap::Args)]
pub struct AppHistoryArgs {
    /// The app: a Kustomization or HelmRelease of this name in the Flux namespace (-n, default flux-system).
    pub name: String,

    /// Don't read the app's git source for commit authors, times and subjects.
    ///
    /// Don't read the app's git source for the commits behind each deployment.
    #[arg(long)]
    pub no_git: bool,
}

impl AppHistoryArgs {
    /// The request these flags and the shared ones make; an `-o` it cannot print is refused here.
    pub fn request(&self, global: &GlobalArgs) -> Result<AppHistoryRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
        crate::names::validate_name(&self.name, "app name")?;
        Ok(AppHistoryRequest {
            app: AppRef::of(&self.name, global)?,
            git: !self.no_git,
            format,
            headers: !global.no_headers,
        })
    }
}

/// `app history NAME`, resolved from its flags.
#[derive(Debug, Clone)]
pub struct AppHistoryRequest {
    app: AppRef,
    git: bool,
    format: OutputFormat,
    headers: bool,
}

/// Runs `kubectl gitops app history NAME`: prints the timeline and keeps what it saw in the
/// app's ledger.
pub async fn run_app_history(
    request: &AppHistoryRequest,
    connection: &Connection,
    printer: &Printer,
) -> Result<ExitCode> {
    let cluster = Cluster::connect(connection, printer).await?;
    let history =
        app_history(&cluster, &request.app.namespace, &request.app.name, request.git, Ledgers::Keep, printer).await?;
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            printer.structured(&crate::output::document(&history), request.format)?
        }
        _ => {
            if history.deployments.is_empty() {
                printer.warning(&format!(
                    "{} {}/{} has no deployment history yet (Flux 2.7 or later records it)",
                    history.kind, history.namespace, history.name
                ));
            }
            printer.data(&render(&history.deployments, request.headers))?;
        }
    }
    Ok(ExitCode::Ok)
}

/// The table: one row per deployment, oldest first.
fn render(rows: &[Row], headers: bool) -> String {
    let mut table =
        Table::new(["first reconciled", "revision", "outcome", "duration", "commit", "author", "changes", "marks"]);
    for row in rows {
        let deployment = &row.deployment;
        let mut marks = Vec::new();
        if row.rollback {
            marks.push("rollback");
        }
        if row.rolled_back {
            marks.push("rolled back");
        }
        if row.reverted {
            marks.push("reverted");
        }
        if deployment.observed {
            marks.push("time as seen");
        }
        let revision = match deployment.release {
            Some(release) => format!("release {release} (chart {})", deployment.revision),
            None => shorten_revision(&deployment.revision),
        };
        let outcome = if row.failed { format!("failed: {}", deployment.status) } else { deployment.status.clone() };
        table.push([
            deployment.first.clone(),
            revision,
            outcome,
            deployment.duration.as_deref().map_or_else(|| "-".into(), rounded),
            deployment.commit.as_ref().map_or_else(|| "-".into(), |commit| commit.subject.clone()),
            deployment.commit.as_ref().map_or_else(|| "-".into(), |commit| commit.author.clone()),
            changes(row),
            if marks.is_empty() { "-".into() } else { marks.join(", ") },
        ]);
    }
    table.render(headers)
}

/// A Go duration as Flux writes it (`223.743723ms`), to the millisecond or tenth of a second.
fn rounded(duration: &str) -> String {
    match crate::duration::parse(duration) {
        Ok(parsed) if parsed.as_secs() == 0 => format!("{}ms", parsed.as_millis()),
        Ok(parsed) => format!("{:.1}s", parsed.as_secs_f64()),
        Err(_) => duration.to_string(),
    }
}

/// The CHANGES cell: the source commits it brought and the config repo commits before it.
fn changes(row: &Row) -> String {
    let count = |count: usize, one: &str, many: &str| match count {
        0 => None,
        1 => Some(format!("1 {one}")),
        count => Some(format!("{count} {many}")),
    };
    let parts: Vec<String> = [
        count(row.changes.len(), "commit", "commits"),
        count(row.config_changes.len(), "config commit", "config commits"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() { "-".into() } else { parts.join(", ") }
}
