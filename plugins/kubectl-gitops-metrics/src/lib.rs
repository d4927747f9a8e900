//! `kubectl gitops metrics`: DORA metrics from the apps' deployment history.

use clap::Subcommand;
use gitops_shared::change::Target;
use gitops_shared::cli::{OutputFormat, OutputFormats};
use gitops_shared::cluster::Connection;
use gitops_shared::drift::{self, MetricsDriftArgs};
use gitops_shared::metrics::{self, DoraArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// DORA metrics from the apps' deployment history: what Flux keeps in status.history and what
    /// kubectl-gitops kept beyond it in each app's ledger (docs/history.md).
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Deployment frequency, lead time for changes, change failure rate and time to restore.
    ///
    /// Per app and overall, each with its sample size and what it could not see. -o prometheus
    /// prints the text exposition format for node-exporter's textfile collector.
    ///
    /// Examples:
    ///   kubectl gitops metrics dora -A
    ///   kubectl gitops metrics dora --app web --since 7d -o json
    ///   kubectl gitops metrics dora -A -o prometheus > /var/lib/node-exporter/gitops.prom
    #[command(verbatim_doc_comment)]
    Dora(DoraArgs),

    /// What differs from what Flux last applied, per Kustomization: -o prometheus for the series.
    ///
    /// `kubectl gitops drift`'s report; -o prometheus prints gitops_drifted_objects (per
    /// Kustomization, the objects that differ by state: changed, missing) and gitops_drift_checked
    /// (0 when something could not be checked) for node-exporter's textfile collector, and exits 0
    /// whenever it printed them. --listen serves them for Prometheus to scrape instead, kept
    /// current by watches. docs/drift.md says what is compared.
    ///
    /// Examples:
    ///   kubectl gitops metrics drift -A -o prometheus > /var/lib/node-exporter/gitops-drift.prom
    ///   kubectl gitops metrics drift -A --listen 127.0.0.1:9477
    #[command(verbatim_doc_comment)]
    Drift(MetricsDriftArgs),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[
    ("dora", &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml, OutputFormat::Prometheus]),
    ("drift", &[OutputFormat::Table, OutputFormat::Prometheus]),
];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops metrics", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let connection = Connection::from_args(&cli.global, gitops_shared::timeouts::REQUEST);
        match &cli.command {
            Command::Dora(args) => metrics::run_dora(&args.request(&cli.global)?, &connection, &printer).await,
            Command::Drift(args) => {
                drift::run(&args.request(&cli.global)?, &Target::from_args(&cli.global), &printer).await
            }
        }
    })
}
