//! `kubectl gitops repo`: app repositories on the config repo's provider.

use clap::Subcommand;
use gitops_shared::change::Target;
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::error::ExitCode;
use gitops_shared::repo::{self, CreateArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// App repositories on the provider of the config repo the current cluster was installed from
    /// (GitHub, GitLab or Gitea), made from our app layout, a template, a fork or any git repository.
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create an app repository: our app layout, generated from a template, a fork, or a copy of any git repository.
    ///
    /// Nothing is written when the name is taken or the template is not one (exit 2); a step
    /// that fails once the repository exists deletes it again (exit 4).
    ///
    /// Examples:
    ///   kubectl gitops repo create hello
    ///   kubectl gitops repo create acme/shop --from-template acme/app-template
    ///   kubectl gitops repo create shop --from-template acme/upstream-shop --fork
    ///   kubectl gitops repo create shop --from-url https://git.example.com/demo/shop.git --from-branch main
    ///   kubectl gitops repo create shop --from-template acme/app-template --dry-run
    #[command(verbatim_doc_comment)]
    Create(CreateArgs),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("create", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops repo", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let global = &cli.global;
        let target = Target::from_args(global);
        match &cli.command {
            Command::Create(args) => {
                printer.data(&repo::create(&args.request(global)?, &target, &printer).await?)?;
                Ok(ExitCode::Ok)
            }
        }
    })
}
