//! `kubectl gitops tenant`: teams connected to namespaces through the config repo.

use clap::Subcommand;
use gitops_shared::change::Target;
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::error::ExitCode;
use gitops_shared::runtime;
use gitops_shared::tenant::{self, TenantAddArgs, TenantListArgs, TenantRemoveArgs};

gitops_shared::command_line! {
    /// Connect teams to namespaces: each tenant is a directory of the config repo (tenants/<team>/)
    /// with its namespaces, the ServiceAccount Flux impersonates for it and what that account may
    /// do there, and the team's own repo synced into each namespace as that account.
    ///
    /// Kubernetes' RBAC keeps a team inside its namespaces: a team repo that creates an object
    /// elsewhere, or a cluster-wide one, fails with the API server's forbidden error (docs/tenants.md).
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Connect a team to one or more namespaces, with its own repo synced into them.
    ///
    /// The namespaces, a ServiceAccount and a RoleBinding (as `flux create tenant` writes them;
    /// the namespaced admin role by default), and with --repo a GitRepository and a
    /// Kustomization per namespace that apply as that ServiceAccount. Adding it again with other
    /// flags updates it.
    ///
    /// Examples:
    ///   kubectl gitops tenant add team-a --with-namespace team-a --repo https://git.example.com/team-a/deploy
    ///   kubectl gitops tenant add team-b -n b-dev --with-namespace b-test --role edit --lockdown --pr
    #[command(verbatim_doc_comment)]
    Add(Box<TenantAddArgs>),
    /// The tenants: namespaces, repo, what was applied, and whether it is healthy.
    List(TenantListArgs),
    /// Disconnect a team; Flux prunes the namespaces it created and what the team deployed.
    Remove(Box<TenantRemoveArgs>),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("add", STRUCTURED), ("list", &tenant::LIST_FORMATS), ("remove", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops tenant", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let global = &cli.global;
        let target = Target::from_args(global);
        let text = match &cli.command {
            Command::Add(args) => tenant::add(&args.request()?, &target, &printer).await?,
            Command::List(args) => tenant::list(&args.request(global)?, &target, &printer).await?,
            Command::Remove(args) => tenant::remove(&args.request()?, &target, &printer).await?,
        };
        printer.data(&text)?;
        Ok(ExitCode::Ok)
    })
}
