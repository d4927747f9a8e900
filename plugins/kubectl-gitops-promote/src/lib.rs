//! `kubectl gitops promote`: what one environment runs of an app, carried to another through git.

use gitops_shared::change::Target;
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::error::ExitCode;
use gitops_shared::fleet::{self, PromoteArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Carry the chart version one environment runs of an app to another, through git.
    ///
    /// The environments are those of the config repo's fleet.yaml (docs/fleet.md), each reached
    /// through the kubeconfig context it names. The version is what --from's cluster runs and is
    /// Ready at (read from the cluster, refused when it is not Ready at one version); it is written
    /// into --to's overlay of the app as a patch of the shared HelmRelease, in one commit or pull
    /// request, like every change: --dry-run prints the plan, --preview what --to's cluster would
    /// get, --wait follows it there until the HelmRelease is Ready.
    ///
    /// Example: kubectl gitops promote mccp --from dev --to uat --pr
    struct Cli { promote: PromoteArgs }
}

/// What `-o` offers.
const OUTPUT_FORMATS: OutputFormats = &[("", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops promote", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let request = cli.promote.request(&cli.global)?;
        printer.data(&fleet::promote(&request, &Target::from_args(&cli.global), &printer).await?)?;
        Ok(ExitCode::Ok)
    })
}
