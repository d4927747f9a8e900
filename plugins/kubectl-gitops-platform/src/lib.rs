//! `kubectl gitops platform`: cluster-wide services for every team, in the config repo's platform/.

use clap::Subcommand;
use gitops_shared::app::spec::Tier;
use gitops_shared::app::{self, AddArgs, ListArgs, RemoveArgs};
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::error::ExitCode;
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Cluster-wide services every team uses (an ingress controller, cert-manager, a database
    /// operator): Helm charts or kustomize from git, defined once under platform/<name>/ and listed
    /// per cluster under <cluster>/platform/, with the flags of `app add`. `status` shows them in
    /// their own section; `monitoring install` adds the monitoring stack here too.
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Add a platform app; its chart is checked to exist before anything is committed.
    ///
    /// Examples:
    ///   kubectl gitops platform add ingress-nginx --url https://kubernetes.github.io/ingress-nginx --chart ingress-nginx --chart-version 4.12.0
    ///   kubectl gitops platform add cert-manager --url oci://quay.io/jetstack/charts --chart cert-manager --pr
    #[command(verbatim_doc_comment)]
    Add(Box<AddArgs>),
    /// List the platform apps: from the cluster, or from the config repo with --repo.
    List(ListArgs),
    /// Remove a platform app from the config repo; Flux prunes what it deployed.
    Remove(RemoveArgs),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats =
    &[("add", STRUCTURED), ("list", &gitops_shared::output::LIST_FORMATS), ("remove", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops platform", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let global = &cli.global;
        let target = gitops_shared::change::Target::from_args(global);
        let text = match &cli.command {
            Command::Add(args) => {
                let mut request = args.request()?;
                request.spec.tier = Tier::Platform;
                // Every team relies on a platform app: a chart that is not there is refused
                // before anything is asked of the cluster or committed, not found broken later.
                if !request.export {
                    app::chart::check_exists(&request.spec).await?;
                }
                app::add(&request, &target, &printer).await?
            }
            Command::List(args) => {
                let mut request = args.request(global)?;
                request.tier = Tier::Platform;
                return app::run_list(&request, &target, &printer).await;
            }
            Command::Remove(args) => {
                let mut request = args.request()?;
                request.tier = Tier::Platform;
                app::remove(&request, &target, &printer).await?
            }
        };
        printer.data(&text)?;
        Ok(ExitCode::Ok)
    })
}
