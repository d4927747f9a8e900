//! `kubectl gitops app status NAME`: its flags, and the run that picks a look (the cluster
//! readers' `app_reads.rs`, `tree.rs`), `--watch` or `--wait` (their `watch.rs`).

use super::in_contexts::one_context_at_a_time;
use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{Cluster, Connection};
use crate::contexts::Answer;
use crate::error::{ExitCode, Result};
use crate::output::Printer;
use crate::readers::app_reads::{Viewer, served_apis};
use crate::readers::app_report::{AppRef, exit_code};
use crate::readers::tree::{print, render};
use crate::readers::watch::{self, WaitArgs, WaitRequest};

/// `kubectl gitops app status NAME`: one app, how it is deployed, and why it is or is not ready.
#[derive(Debug, Clone, clap::Args)]
pub struct AppStatusArgs {
    /// The app: a Kustomization or HelmRelease of this name in the Flux namespace (-n, default flux-system).
    pub name: String,

    /// Don't read the app's git source for commit authors, times and subjects.
    ///
    /// Don't fetch the applied commit from git to show its author, time and subject.
    #[arg(long)]
    pub no_git: bool,

    #[command(flatten)]
    pub wait: WaitArgs,

    /// Keep showing it, driven by watches.
    ///
    /// Keep showing the app: redrawn in place on a terminal, printed again on each change otherwise.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

impl AppStatusArgs {
    /// The request these flags and the shared ones make; an `-o` it cannot print is refused here.
    pub fn request(&self, global: &GlobalArgs) -> Result<AppStatusRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
        let contexts = crate::contexts::several(global)?;
        if contexts.is_some() {
            one_context_at_a_time(self.watch, self.wait.request().is_some())?;
        }
        let follow = match (self.watch, self.wait.request()) {
            (true, _) => Follow::Watch,
            (false, Some(wait)) => Follow::Wait(wait),
            (false, None) => Follow::Once,
        };
        Ok(AppStatusRequest { app: AppRef::of(&self.name, global)?, git: !self.no_git, format, follow, contexts })
    }
}

/// `app status NAME`, resolved from its flags.
#[derive(Debug, Clone)]
pub struct AppStatusRequest {
    app: AppRef,
    /// Fetch the applied commit from git.
    git: bool,
    format: OutputFormat,
    follow: Follow,
    /// `--context dev,uat`: the app in each of these contexts.
    contexts: Option<Vec<String>>,
}

/// Whether `app status` looks once, keeps showing the app, or waits for it.
#[derive(Debug, Clone)]
enum Follow {
    Once,
    Watch,
    Wait(WaitRequest),
}

/// Runs `kubectl gitops app status NAME`: prints the tree (or JSON/YAML) on stdout and returns
/// 0 when the app is ready (or suspended, as `status` counts it), 1 otherwise. `--wait` and
/// `--watch` are handled here too.
pub async fn run_app_status(
    request: &AppStatusRequest,
    connection: &Connection,
    printer: &Printer,
) -> Result<ExitCode> {
    if let Some(contexts) = &request.contexts {
        return crate::contexts::in_each(contexts, connection, request.format, printer, |connection, format| {
            answer(connection, request, format, printer)
        })
        .await;
    }
    let cluster = Cluster::connect(connection, printer).await?;
    let served = served_apis(&cluster).await?;
    let mut viewer = Viewer::new(cluster, served, request.app.clone(), request.git, *printer);
    match &request.follow {
        Follow::Watch => watch::watch(&mut viewer, request.format).await,
        Follow::Wait(wait) => watch::wait(&mut viewer, wait, request.format).await,
        Follow::Once => {
            let Some((_, report)) = viewer.look(true).await? else { return Err(viewer.app.not_found()) };
            print(&report, request.format, printer)?;
            Ok(exit_code(&report))
        }
    }
}

/// The app in one context of several (`--context dev,uat`), in `format`.
async fn answer(
    connection: Connection,
    request: &AppStatusRequest,
    format: OutputFormat,
    printer: &Printer,
) -> Result<Answer> {
    let cluster = Cluster::connect(&connection, printer).await?;
    let served = served_apis(&cluster).await?;
    let mut viewer = Viewer::new(cluster, served, request.app.clone(), request.git, *printer);
    let Some((_, report)) = viewer.look(true).await? else { return Err(viewer.app.not_found()) };
    Ok(Answer { text: render(&report, format, printer.stdout_style())?, code: exit_code(&report) })
}
