//! `kubectl gitops monitoring`: Prometheus, Grafana and alerts for Flux, through the config repo.

use clap::Subcommand;
use gitops_shared::change::Target;
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::error::ExitCode;
use gitops_shared::monitoring::{self, InstallArgs, StatusArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Prometheus, Grafana and alerts for Flux: kube-prometheus-stack with kube-state-metrics'
    /// state of every Flux object, a PodMonitor for the controllers, alert rules and dashboards,
    /// committed to the config repo's platform/ directory (docs/monitoring.md).
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Commit the monitoring stack to platform/monitoring/ and list it for the cluster.
    ///
    /// Examples:
    ///   kubectl gitops monitoring install --dry-run
    ///   kubectl gitops monitoring install --pr
    ///   kubectl gitops monitoring install --not-ready-for 5m --slow-reconcile 30s --wait
    #[command(verbatim_doc_comment)]
    Install(Box<InstallArgs>),
    /// Each alert's state and the slowest reconciliations, from Prometheus; exit 1 when an alert fires.
    ///
    /// Examples:
    ///   kubectl gitops monitoring status
    ///   kubectl gitops monitoring status --prometheus-url http://127.0.0.1:9090 -o json
    #[command(verbatim_doc_comment)]
    Status(StatusArgs),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("install", STRUCTURED), ("status", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops monitoring", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let global = &cli.global;
        let target = Target::from_args(global);
        match &cli.command {
            Command::Install(args) => {
                printer.data(&monitoring::install(&args.request()?, &target, &printer).await?)?;
                Ok(ExitCode::Ok)
            }
            Command::Status(args) => {
                let (text, firing) = monitoring::status(&args.request(global)?, &target, &printer).await?;
                printer.data(&text)?;
                Ok(if firing { ExitCode::No } else { ExitCode::Ok })
            }
        }
    })
}
