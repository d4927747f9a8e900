//! `kubectl gitops fleet status` (docs/fleet.md): many clusters from one laptop, no hub. The
//! clusters are kubeconfig contexts (`--context a,b`, or `--all-contexts`); each is asked what
//! `status -A` asks ([`collect`]), at once and with a bound, and the answers make one matrix of
//! apps × clusters ([`matrix`]): what runs where, at which version, and how it is.

pub mod collect;
pub mod matrix;
mod render;

use std::time::Duration;

use clap::Args;

pub use self::matrix::{FleetStatus, Reached};
use crate::change::{RepoSettings, Target};
use crate::cli::{GlobalArgs, OutputFormat, RepoArgs};
use crate::cluster::Connection;
use crate::duration;
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;
use crate::status::Scope;

/// `fleet status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Every context of the kubeconfig (the default when --context is not given).
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

    /// Do not read the config repo's head (no cluster is then marked behind).
    #[arg(long, help_heading = "Fleet")]
    pub no_config_head: bool,

    #[command(flatten)]
    pub config: RepoArgs,
}

/// `fleet status`, resolved.
#[derive(Debug, Clone)]
pub struct StatusRequest {
    /// The contexts, in the columns' order.
    pub contexts: Vec<String>,
    /// How to reach each (the kubeconfig and the request timeout; the context is each one's).
    pub connection: Connection,
    /// `-n`, else every namespace.
    pub scope: Scope,
    pub timeout: Duration,
    pub concurrency: usize,
    /// Read the config repo's head, with these settings (`None`: `--no-config-head`).
    pub config: Option<RepoSettings>,
    pub format: OutputFormat,
    pub headers: bool,
}

impl StatusArgs {
    /// Checks every flag; the contexts are `--context`'s list, else every context.
    pub fn request(&self, global: &GlobalArgs) -> Result<StatusRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml])?;
        let listed: Option<Vec<String>> = global
            .context
            .as_ref()
            .map(|list| list.split(',').map(str::trim).filter(|name| !name.is_empty()).map(String::from).collect());
        if listed.is_some() && self.all_contexts {
            return Err(Error::usage(
                "--context and --all-contexts both name the clusters",
                "give one: --context dev,uat or --all-contexts",
            ));
        }
        let contexts = match listed {
            Some(list) if list.is_empty() => {
                return Err(Error::usage("--context names no context", "e.g. --context dev,uat"));
            }
            Some(list) => list,
            None => collect::all_contexts(global.kubeconfig.as_deref())?,
        };
        if contexts.is_empty() {
            return Err(Error::usage("the kubeconfig has no context", "add one, or pass --kubeconfig"));
        }
        if contexts.len() > 1 && (global.server.is_some() || global.token.is_some() || global.user.is_some()) {
            return Err(Error::usage(
                "--server, --token and --user name one cluster's connection, and the fleet has several",
                "leave them out: each context's own cluster and user are used",
            ));
        }
        if self.concurrency == 0 {
            return Err(Error::usage("--concurrency 0 asks no cluster", "e.g. --concurrency 8"));
        }
        if self.timeout.is_zero() {
            return Err(Error::usage("--timeout 0 leaves no cluster time to answer", "e.g. --timeout 15s"));
        }
        let mut connection = Connection::from_args(global, crate::timeouts::REQUEST);
        connection.context = None;
        Ok(StatusRequest {
            contexts,
            connection,
            scope: global.namespace.clone().map_or(Scope::All, Scope::Namespace),
            timeout: self.timeout,
            concurrency: self.concurrency,
            config: if self.no_config_head { None } else { Some(self.config.settings()?) },
            format,
            headers: !global.no_headers,
        })
    }
}

/// `fleet status`: the matrix printed; exit 3 when a cluster did not answer (the others are
/// shown), 1 when an app is not ready, differs between clusters or a cluster is behind, else 0.
pub async fn status(request: &StatusRequest, printer: &Printer) -> Result<ExitCode> {
    printer.progress(&format!("asking {} clusters", request.contexts.len()));
    let limits = (request.timeout, request.concurrency);
    let reached = collect::reach_all(&request.connection, &request.contexts, &request.scope, limits, printer).await;
    let head = match &request.config {
        Some(settings) => config_head(request, &reached, settings, printer).await,
        None => None,
    };
    let fleet = matrix::build(&reached, head.as_deref());
    let text = match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&crate::output::document(&fleet), request.format)?
        }
        _ => render::table(&fleet, request.headers, printer.stdout_style()),
    };
    printer.data(&text)?;
    let summary = &fleet.summary;
    Ok(if summary.unreachable > 0 {
        ExitCode::Cluster
    } else if summary.not_ready > 0 || summary.differing > 0 || summary.behind > 0 {
        ExitCode::No
    } else {
        ExitCode::Ok
    })
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
    let connection = Connection { context: Some(first.context.clone()), ..request.connection.clone() };
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
