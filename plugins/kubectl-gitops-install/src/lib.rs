//! `kubectl gitops install`: bootstrap Flux and the GitOps repo layout into a cluster.

use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::error::ExitCode;
use gitops_shared::install::{self, InstallArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Bootstrap Flux and the GitOps repo layout into a cluster from a git repo.
    ///
    /// Writes <path>/flux-system/{gotk-components,gotk-sync,kustomization}.yaml (the layout
    /// `flux bootstrap` writes), <path>/gitops.yaml (the install record) and <path>/apps/, commits
    /// and pushes them, applies Flux to the cluster (reusing a Flux that is already there), stores
    /// the deploy key in Secret <namespace>/flux-system and waits until Flux runs the pushed commit.
    /// Re-running with the same repo and path changes nothing. `--dry-run` prints the steps, files
    /// and objects and changes nothing anywhere.
    ///
    /// Example: kubectl gitops install --url ssh://git@git.example.com/fleet.git --path clusters/dev
    struct Cli { install: InstallArgs }
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops install", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let text = install::run(&cli.install.settings(&cli.global)?, &printer).await?;
        printer.data(&text)?;
        Ok(ExitCode::Ok)
    })
}
