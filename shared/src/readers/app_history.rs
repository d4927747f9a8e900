//! An app's deployments in order, from its ledger and Flux's `status.history`, with the commits
//! of its git source (docs/history.md): what `app history` prints, the UI's history tab and the
//! MCP server's `app_history` show, and `app rollback` keeps first.

use serde::Serialize;

use super::app_reads::{config_log, gather, served_apis, source_log};
use super::app_report::AppRef;
use super::collect::key;
use super::remember::remember;
use crate::cluster::Cluster;
use crate::deployments::timeline::{self, Row};
use crate::error::Result;
use crate::git::log::LoggedCommit;
use crate::output::Printer;

/// What `app history -o json` prints.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppHistory {
    /// `Kustomization` or `HelmRelease` (not `kind`: that names the document).
    #[serde(rename = "fluxKind")]
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// Every deployment kept, oldest first.
    pub deployments: Vec<Row>,
}

impl crate::output::Kind for AppHistory {
    const KIND: &'static str = "AppHistory";
}

/// The timeline of one app (the UI's history tab calls this too).
pub async fn app_history(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    git: bool,
    ledgers: super::remember::Ledgers,
    printer: &Printer,
) -> Result<AppHistory> {
    let served = served_apis(cluster).await?;
    let app = AppRef { namespace: namespace.to_string(), name: name.to_string() };
    let Some(gathered) = gather(cluster, &served, &app, false).await? else { return Err(app.not_found()) };
    let (log, config_log) = if git {
        let (source, config) = tokio::join!(source_log(cluster, &gathered), config_log(cluster, &served, &gathered));
        (read_log(source, "the app's git source", printer), read_log(config, "the config repo", printer))
    } else {
        (Vec::new(), Vec::new())
    };
    let commits: Vec<_> = log.iter().map(|commit| commit.info.clone()).collect();
    let (kept, not_kept) = remember(cluster, &gathered, &commits, ledgers).await;
    if let Some(why) = not_kept {
        printer.warning(&format!("{why}; showing what Flux keeps"));
    }
    Ok(AppHistory {
        kind: key(&gathered.app).0,
        namespace: app.namespace.clone(),
        name: app.name.clone(),
        deployments: timeline::build(&kept, &log, &config_log),
    })
}

/// A log read, or a warning saying why it could not be (the history is shown without it).
fn read_log(
    read: Option<std::result::Result<Vec<LoggedCommit>, String>>,
    what: &str,
    printer: &Printer,
) -> Vec<LoggedCommit> {
    match read {
        Some(Ok(log)) => log,
        Some(Err(why)) => {
            printer.warning(&format!("cannot read {what}: {why}"));
            Vec::new()
        }
        None => Vec::new(),
    }
}
