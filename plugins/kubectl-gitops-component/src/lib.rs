//! `kubectl gitops component`: components shipped as OCI artifacts, listed from the cluster and
//! upgraded through git.

use clap::Subcommand;
use gitops_shared::cli::{OutputFormats, STRUCTURED, SelectorArgs};
use gitops_shared::component;
use gitops_shared::component::ComponentUpgradeArgs;
use gitops_shared::error::ExitCode;
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Components delivered as OCI artifacts (`kubectl gitops install --component oci://…`): an
    /// OCIRepository following a tag and the Kustomization that applies it. List them with what Flux
    /// fetched and applied; upgrade one by moving its tag in the config repo.
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The components in the Flux namespace: tag, fetched and applied revisions, readiness.
    List(SelectorArgs),
    /// Move a component to another artifact tag, through git (a commit, or a pull request with --pr).
    ///
    /// Examples:
    ///   kubectl gitops component upgrade pipeline-controller --tag v0.0.2
    ///   kubectl gitops component upgrade pipeline-controller --tag v0.0.2 --pr --dry-run
    #[command(verbatim_doc_comment)]
    Upgrade(Box<ComponentUpgradeArgs>),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("list", STRUCTURED), ("upgrade", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops component", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let global = &cli.global;
        let target = gitops_shared::change::Target::from_args(global);
        let text = match &cli.command {
            Command::List(selector) => {
                let listing = component::Listing {
                    format: global.output_format(),
                    headers: !global.no_headers,
                    labels: selector.labels()?,
                };
                component::list(&target, &listing, &printer).await?
            }
            Command::Upgrade(args) => component::upgrade(&args.request()?, &target, &printer).await?,
        };
        printer.data(&text)?;
        Ok(ExitCode::Ok)
    })
}
