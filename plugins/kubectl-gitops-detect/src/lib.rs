//! `kubectl gitops detect`: one word for what the cluster holds.

use clap::Parser;
use gitops_shared::cli::{GlobalArgs, OutputFormat};
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::cluster::{Cluster, Connection};
use gitops_shared::detect::{self, ClusterState};
use gitops_shared::error::{Error, ExitCode};
use gitops_shared::output;
use gitops_shared::runtime;
use gitops_shared::timeouts;

/// Report what the cluster holds: unreachable, unmodified, flux2 or gitops.
///
/// Prints exactly one word on stdout, so `state=$(kubectl gitops detect)` works in scripts:
/// `unreachable` (exit 3), `unmodified` (no Flux), `flux2` (Flux, not installed by
/// kubectl-gitops) or `gitops` (Flux with the kubectl-gitops layout). `-o json|yaml` adds the
/// Kubernetes and Flux versions, the Flux controllers, the Flux API versions the cluster
/// serves, the installed layout and warnings.
#[derive(Debug, Parser)]
#[command(disable_version_flag = true)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
}

gitops_shared::command_line!(Cli);

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops detect", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let format = cli.global.output_format();
        output::ensure_supported(format, STRUCTURED)?;
        let detection = match Cluster::connect(&Connection::from_args(&cli.global, timeouts::PROBE), &printer).await {
            Ok(cluster) => detect::detect(&cluster).await?,
            // No usable kubeconfig means no cluster to reach: scripts still get the word.
            Err(error @ Error::Kubeconfig(_)) => {
                printer.data(&format!("{}\n", ClusterState::Unreachable.word()))?;
                return Err(error);
            }
            Err(error) => return Err(error),
        };
        match format {
            OutputFormat::Json | OutputFormat::Yaml => printer.structured(&output::document(&detection), format)?,
            _ => {
                printer.data(&format!("{}\n", detection.state.word()))?;
                for warning in &detection.warnings {
                    printer.warning(warning);
                }
            }
        }
        if detection.state == ClusterState::Unreachable {
            let reason = detection.error.unwrap_or_default();
            printer.error(
                &reason,
                Some(
                    "check that the cluster is running and that `kubectl cluster-info` works with the same kubeconfig and context",
                ),
            );
            return Ok(ExitCode::Cluster);
        }
        Ok(ExitCode::Ok)
    })
}
