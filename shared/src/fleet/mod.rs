//! `kubectl gitops fleet status` (docs/fleet.md): many clusters from one laptop, no hub. The
//! clusters are kubeconfig contexts (`--context a,b`, or `--all-contexts`); each is asked what
//! `status -A` asks ([`collect`]), at once and with a bound, and the answers make one matrix of
//! apps × clusters ([`matrix`]): what runs where, at which version, and how it is.

mod carried;
pub mod collect;
pub mod images;
pub mod matrix;
pub mod promote;
pub(crate) mod promote_app;
mod render;
pub mod rollout;

use std::time::Duration;

use clap::Args;

pub use self::matrix::{Column, FleetStatus, Reached};
pub use self::promote::{PromoteArgs, promote};
use crate::change::{RepoSettings, Target, fleet};
use crate::cli::{GlobalArgs, OutputFormat, RepoArgs};
use crate::cluster::Connection;
use crate::duration;
use crate::error::{Error, ExitCode, Result};
use crate::git::Workspace;
use crate::output::Printer;
use crate::readers::Scope;

/// `fleet status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Every context of the kubeconfig, instead of the fleet file's clusters.
    ///
    /// Every context of the kubeconfig, instead of the clusters the config repo's fleet.yaml
    /// names (the default; every context when there is no fleet file).
    #[arg(long, help_heading = "Fleet")]
    pub all_contexts: bool,

    /// How long to wait.
    ///
    /// For each cluster: one that has not answered by then is a column that says so, and the
    /// others are shown.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "15s", help_heading = "Fleet")]
    pub timeout: Duration,

    /// How many clusters are asked at once.
    #[arg(long, value_name = "N", default_value_t = 8, help_heading = "Fleet")]
    pub concurrency: usize,

    /// Do not read the config repo: no fleet file, no cluster marked behind its head.
    #[arg(long, conflicts_with = "commit", help_heading = "Fleet")]
    pub no_config_repo: bool,

    /// How far this commit of the config repo has rolled out (a full hash).
    ///
    /// How far this commit of the config repo has rolled out, per cluster: applied (its sync and
    /// layers applied it or a later commit, and are Ready), progressing, failed, not yet there.
    #[arg(long = "rollout", value_name = "COMMIT", help_heading = "Fleet")]
    pub commit: Option<String>,

    #[command(flatten)]
    pub config: RepoArgs,
}

/// `fleet status`, resolved.
#[derive(Debug, Clone)]
pub struct StatusRequest {
    /// The contexts `--context` or `--all-contexts` name, in the columns' order; `None`: the
    /// fleet file's clusters (every context when there is none).
    pub contexts: Option<Vec<String>>,
    /// How to reach each (the kubeconfig and the request timeout; the context is each one's).
    pub connection: Connection,
    /// `-n`, else every namespace.
    pub scope: Scope,
    pub timeout: Duration,
    pub concurrency: usize,
    /// `--rollout`, checked to be a full hash.
    pub commit: Option<String>,
    /// Read the config repo (its fleet file and head), with these settings (`None`:
    /// `--no-config-repo`).
    pub config: Option<RepoSettings>,
    pub format: OutputFormat,
    pub headers: bool,
}

impl StatusArgs {
    /// Checks every flag; the contexts are `--context`'s list, every context with
    /// `--all-contexts`, else (`None`) the fleet file's.
    pub fn request(&self, global: &GlobalArgs) -> Result<StatusRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml])?;
        if global.context.is_some() && self.all_contexts {
            return Err(Error::usage(
                "--context and --all-contexts both name the clusters",
                "give one: --context dev,uat or --all-contexts",
            ));
        }
        let contexts = match &global.context {
            Some(list) => Some(crate::contexts::split(list)?),
            None if self.all_contexts => Some(collect::all_contexts(global.kubeconfig.as_deref())?),
            None => None,
        };
        if contexts.as_ref().is_none_or(|contexts| contexts.len() != 1) {
            crate::contexts::refuse_one_connection(global)?;
        }
        if self.concurrency == 0 {
            return Err(Error::usage("--concurrency 0 asks no cluster", "e.g. --concurrency 8"));
        }
        if self.timeout.is_zero() {
            return Err(Error::usage("--timeout 0 leaves no cluster time to answer", "e.g. --timeout 15s"));
        }
        let commit = match &self.commit {
            Some(text) => Some(crate::names::full_commit(text).ok_or_else(|| {
                Error::usage(
                    format!("--rollout {text:?} is not a full commit hash"),
                    "give all 40 characters (`git rev-parse COMMIT` prints them)",
                )
            })?),
            None => None,
        };
        let mut connection = Connection::from_args(global, crate::timeouts::REQUEST);
        connection.context = None;
        Ok(StatusRequest {
            contexts,
            connection,
            scope: global.namespace.clone().map_or(Scope::All, Scope::Namespace),
            timeout: self.timeout,
            concurrency: self.concurrency,
            commit,
            config: if self.no_config_repo { None } else { Some(self.config.settings()?) },
            format,
            headers: !global.no_headers,
        })
    }
}

/// `fleet status`: the matrix printed; exit 3 when a cluster did not answer (the others are
/// shown), 1 when an app is not ready, differs between clusters, a cluster is behind, or (with
/// `--rollout`) has not applied the commit, else 0.
pub async fn status(request: &StatusRequest, printer: &Printer) -> Result<ExitCode> {
    let fleet = fleet_status(request, printer).await?;
    let text = match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&crate::output::document(&fleet), request.format)?
        }
        _ => render::table(&fleet, request.headers, printer.stdout_style()),
    };
    printer.data(&text)?;
    let summary = &fleet.summary;
    let not_rolled_out = fleet.clusters.iter().any(|cluster| cluster.rollout.is_some_and(|state| !state.is_applied()));
    Ok(if summary.unreachable > 0 {
        ExitCode::Cluster
    } else if summary.not_ready > 0 || summary.differing > 0 || summary.behind > 0 || not_rolled_out {
        ExitCode::No
    } else {
        ExitCode::Ok
    })
}

/// The matrix `fleet status` prints (and the MCP tool `fleet_status` answers).
pub async fn fleet_status(request: &StatusRequest, printer: &Printer) -> Result<FleetStatus> {
    let checkout = config_checkout(request, printer).await?;
    let columns = columns(request, checkout.as_ref(), printer)?;
    if columns.is_empty() {
        return Err(Error::usage("no cluster to ask: the kubeconfig has no context", "add one, or pass --kubeconfig"));
    }
    printer.progress(&format!("asking {} clusters", columns.len()));
    let limits = (request.timeout, request.concurrency);
    let reached = collect::reach_all(&request.connection, columns, &request.scope, limits, printer).await;
    let head = match (checkout.as_ref().and_then(|checkout| checkout.files().head()), &request.config) {
        (Some(head), _) => Some(head),
        (None, Some(settings)) => config_head(request, &reached, settings, printer).await,
        (None, None) => None,
    };
    let mut fleet = matrix::build(&reached, head.as_deref());
    if let (Some(commit), Some(checkout)) = (&request.commit, &checkout) {
        let files = checkout.files();
        let has = |at: &str| files.descends_from(at, commit);
        fleet.commit = Some(commit.clone());
        for (cluster, reached) in fleet.clusters.iter_mut().zip(&reached) {
            cluster.rollout = Some(match &reached.report {
                Ok(report) => rollout::state(report, &has),
                Err(_) => rollout::RolloutState::Unknown,
            });
        }
    }
    Ok(fleet)
}

/// A clone of the config repo when something needs it: the fleet file (no `--context`), or
/// `--rollout`'s history. Reached through the first context named, else the current one, with
/// the same trust rules as every command that reads the repo. Without `--rollout`, a repo that
/// cannot be read is a warning (every context is asked); with it, an error.
async fn config_checkout(request: &StatusRequest, printer: &Printer) -> Result<Option<Workspace>> {
    let Some(settings) = &request.config else { return Ok(None) };
    if request.contexts.is_some() && request.commit.is_none() {
        return Ok(None);
    }
    let first = request.contexts.as_ref().and_then(|contexts| contexts.first().cloned());
    let connection = Connection { context: first, ..request.connection.clone() };
    let target = Target { connection, namespace: None };
    let cloned = async {
        let context = crate::change::context(&target, settings, true, printer).await?;
        crate::change::clone(context.repo()?).await
    };
    match cloned.await {
        Ok(checkout) => Ok(Some(checkout)),
        Err(error) if request.commit.is_some() => Err(error),
        Err(error) => {
            printer.warning(&format!("cannot read the config repo, so every context is asked: {error}"));
            Ok(None)
        }
    }
}

/// The columns: `--context`'s or `--all-contexts`' contexts, else the clusters the fleet file
/// names, in its order (every context when there is none). A fleet file that does not parse is
/// an error.
fn columns(request: &StatusRequest, checkout: Option<&Workspace>, printer: &Printer) -> Result<Vec<Column>> {
    let named = |contexts: &[String]| contexts.iter().map(|context| Column::of_context(context)).collect();
    if let Some(contexts) = &request.contexts {
        return Ok(named(contexts));
    }
    let every = || Ok(named(&collect::all_contexts(request.connection.kubeconfig.as_deref())?));
    let Some(checkout) = checkout else { return every() };
    let Some(text) = crate::plan::read(&checkout.files(), fleet::FILE_NAME)? else {
        printer.progress(&format!("the config repo has no {}: every context of the kubeconfig", fleet::FILE_NAME));
        return every();
    };
    let file = fleet::FleetFile::parse(&text)?;
    let mut columns = Vec::new();
    for entry in file.ordered() {
        match &entry.context {
            Some(context) => columns.push(Column {
                context: context.clone(),
                name: Some(entry.name.clone()),
                environment: Some(entry.environment.clone()),
            }),
            None => printer.warning(&format!(
                "cluster {} has no context in {}: left out (name it there, or pass --context)",
                entry.name,
                fleet::FILE_NAME
            )),
        }
    }
    Ok(columns)
}

/// The config repo's head, read through the first cluster that answered (its install record
/// names the repo, with the same trust rules as every command that reads it). `None`, with a
/// warning, when it cannot be read: the matrix is still worth printing.
async fn config_head(
    request: &StatusRequest,
    reached: &[Reached],
    settings: &RepoSettings,
    printer: &Printer,
) -> Option<String> {
    let first =
        reached.iter().find(|reached| reached.report.as_ref().is_ok_and(|report| report.flux.config.is_some()))?;
    let connection = Connection { context: Some(first.column.context.clone()), ..request.connection.clone() };
    let target = Target { connection, namespace: None };
    let read = async {
        let context = crate::change::context(&target, settings, true, printer).await?;
        let repo = context.repo()?;
        crate::git::workspace::remote_head(&repo.remote, &repo.branch).await.map_err(Error::from)
    };
    match read.await {
        Ok(head) => head,
        Err(error) => {
            printer.warning(&format!("cannot read the config repo's head, so no cluster is marked behind: {error}"));
            None
        }
    }
}

#[cfg(test)]
mod tests;
