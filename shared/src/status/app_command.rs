//! The command face of `kubectl gitops app status NAME`: its flags, and the run that picks a
//! look (app_reads.rs, tree.rs), `--watch` or `--wait` (watch.rs). Kept apart so that the model,
//! reads and renderer and the watch engine (watch.rs) do not import each other.

use super::app_reads::{Viewer, served_apis};
use super::app_report::{AppRef, exit_code};
use super::tree::print;
use super::watch::WaitArgs;
use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{Cluster, Connection, DEFAULT_FLUX_NAMESPACE};
use crate::error::{ExitCode, Result};
use crate::output::Printer;

/// `kubectl gitops app status NAME`: one app, how it is deployed, and why it is or is not ready.
#[derive(Debug, Clone, clap::Args)]
pub struct AppStatusArgs {
    /// The app: a Kustomization or HelmRelease of this name in the Flux namespace (-n, default flux-system).
    pub name: String,

    /// Don't fetch the applied commit from git to show its author, time and subject.
    #[arg(long)]
    pub no_git: bool,

    #[command(flatten)]
    pub wait: WaitArgs,

    /// Keep showing the app: redrawn in place on a terminal, printed again on each change otherwise.
    #[arg(long)]
    pub watch: bool,
}

/// Runs `kubectl gitops app status NAME`: prints the tree (or JSON/YAML) on stdout and returns
/// 0 when the app is ready (or suspended, as `status` counts it), 1 otherwise. `--wait` and
/// `--watch` are handled here too.
pub async fn run_app_status(args: &AppStatusArgs, global: &GlobalArgs, printer: &Printer) -> Result<ExitCode> {
    let format = global.output_format();
    crate::output::ensure_supported(format, &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml])?;
    let cluster = Cluster::connect(&Connection::from_args(global, crate::timeouts::REQUEST), printer).await?;
    let app = AppRef {
        namespace: global.namespace.clone().unwrap_or_else(|| DEFAULT_FLUX_NAMESPACE.to_string()),
        name: args.name.clone(),
    };
    let served = served_apis(&cluster).await?;
    let mut viewer = Viewer::new(cluster, served, app, !args.no_git, *printer);
    if args.watch {
        return super::watch::watch(&mut viewer, format).await;
    }
    if args.wait.wait {
        return super::watch::wait(&mut viewer, &args.wait, format).await;
    }
    let Some((_, report)) = viewer.look(true).await? else { return Err(viewer.app.not_found()) };
    print(&report, format, printer)?;
    Ok(exit_code(&report))
}
