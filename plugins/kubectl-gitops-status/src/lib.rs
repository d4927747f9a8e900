//! `kubectl gitops status`: what runs where, at which commit, healthy or not, and why.

use clap::Parser;
use gitops_shared::cli::{GlobalArgs, OutputFormat};
use gitops_shared::cli::{OutputFormats, SelectorArgs};
use gitops_shared::cluster::{Cluster, Connection, default_flux_namespace};
use gitops_shared::readers::{self, Scope, View};
use gitops_shared::runtime;
use gitops_shared::status;
use gitops_shared::{contexts, output};

/// What runs where, at which commit, healthy or not, and why.
///
/// A header for the Flux runtime (version, namespace, controllers, the config repo), then one
/// row per Kustomization or HelmRelease: the apps kubectl-gitops manages, then the other Flux
/// objects. MESSAGE is that of the first object in the app's chain (source, chart, app) that is
/// not ready. Exits 0 when everything shown is ready or suspended, 1 otherwise, so it can gate CI.
/// Reads the Flux namespace (FLUX_SYSTEM_NAMESPACE, else flux-system) unless -n or -A is given. --wait and --watch follow the
/// Flux objects with watches.
#[derive(Debug, Parser)]
#[command(disable_version_flag = true)]
struct Cli {
    /// Every namespace, instead of -n's.
    ///
    /// Show every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,

    /// Show only the Flux runtime header, no apps.
    #[arg(long)]
    cluster_only: bool,

    /// Show only apps that are failing or not ready yet.
    #[arg(long)]
    failed_only: bool,

    #[command(flatten)]
    selector: SelectorArgs,

    #[command(flatten)]
    wait: readers::WaitArgs,

    /// Keep showing it, driven by watches.
    ///
    /// Keep showing the status, driven by watches: redrawn in place on a terminal, otherwise one line per row that changed.
    #[arg(short = 'w', long)]
    watch: bool,

    #[command(flatten)]
    global: GlobalArgs,
}

gitops_shared::command_line!(Cli);

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats =
    &[("", &[OutputFormat::Table, OutputFormat::Wide, OutputFormat::Json, OutputFormat::Yaml])];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops status", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let format = cli.global.output_format();
        output::ensure_supported(
            format,
            &[OutputFormat::Table, OutputFormat::Wide, OutputFormat::Json, OutputFormat::Yaml],
        )?;
        let labels = cli.selector.labels()?;
        let labels = labels.as_deref();
        let connection = Connection::from_args(&cli.global, gitops_shared::timeouts::REQUEST);
        let scope = match (cli.all_namespaces, &cli.global.namespace) {
            (true, _) => Scope::All,
            (false, Some(namespace)) => Scope::Namespace(namespace.clone()),
            (false, None) => Scope::Namespace(default_flux_namespace()?),
        };
        let view = View {
            format,
            all_namespaces: cli.all_namespaces,
            headers: !cli.global.no_headers,
            failed_only: cli.failed_only,
            cluster_only: cli.cluster_only,
            style: printer.stdout_style(),
        };
        if let Some(several) = contexts::several(&cli.global)? {
            status::one_context_at_a_time(cli.watch, cli.wait.request().is_some())?;
            return contexts::in_each(&several, &connection, format, &printer, |connection, format| {
                status::answer(connection, &scope, labels, View { format, ..view }, &printer)
            })
            .await;
        }
        let cluster = Cluster::connect(&connection, &printer).await?;
        if cli.watch {
            return readers::watch_cluster(cluster, &scope, labels, view, printer).await;
        }
        if let Some(wait) = cli.wait.request() {
            return readers::wait_cluster(cluster, &scope, labels, view, &wait, printer).await;
        }
        let keeper = readers::HistoryKeeper::start(&cluster, &scope, printer);
        let report = readers::collect_labelled(&cluster, &scope, labels).await?;
        let keeping = keeper.keep(&report);
        let report = view.shown(report);
        match format {
            OutputFormat::Json | OutputFormat::Yaml => {
                printer.structured(&gitops_shared::output::document(&report), format)?
            }
            _ => printer.data(&view.render(&report)?)?,
        }
        let _ = keeping.await;
        Ok(readers::exit_code(&report))
    })
}
