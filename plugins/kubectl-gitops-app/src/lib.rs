//! `kubectl gitops app`: add, list, remove, suspend and resume apps in the config repo.

use clap::Subcommand;
use gitops_shared::app::{self, AddArgs, ListArgs, RemoveArgs, RollbackArgs, SuspendArgs};
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::error::ExitCode;
use gitops_shared::runtime;
use gitops_shared::status::{self, AppHistoryArgs, AppStatusArgs};

gitops_shared::command_line! {
    /// Add, list, remove, suspend and resume apps: Flux manifests in the config repo, committed
    /// directly or through a pull request, deployed by Flux.
    ///
    /// An app is defined once under apps/<app>/ (its source and its Kustomization or HelmRelease)
    /// and listed per cluster under <cluster>/apps/, with per-cluster values there. The config repo
    /// is the one the current cluster was installed from (see `kubectl gitops detect -o yaml`).
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Add an app from git (kustomize or a Helm chart), a Helm repository or an OCI registry.
    ///
    /// Re-adding the same app changes nothing; a different definition needs --update.
    ///
    /// Examples:
    ///   kubectl gitops app add podinfo --url https://github.com/stefanprodan/podinfo --path ./kustomize
    ///   kubectl gitops app add db --url https://charts.bitnami.com/bitnami --chart postgresql --values db.yaml
    ///   kubectl gitops app add mccp --url oci://ghcr.io/acme/charts --chart mccp --values uat.yaml --cluster-name uat
    #[command(verbatim_doc_comment)]
    Add(Box<AddArgs>),
    /// List the apps: from the cluster, or from the config repo with --repo.
    List(ListArgs),
    /// Remove an app from the config repo; Flux prunes what it deployed.
    Remove(RemoveArgs),
    /// Stop Flux from reconciling an app (spec.suspend: true on its objects).
    Suspend(SuspendArgs),
    /// Let Flux reconcile a suspended app again.
    Resume(SuspendArgs),
    /// One app as a tree: source, Kustomization or HelmRelease, chart, workloads; why it is not ready.
    Status(AppStatusArgs),
    /// Every deployment of an app, oldest first: revision, commit, outcome, rollbacks
    ///
    /// Flux keeps an app's last 5 deployments; each look (this command, app status, status and
    /// the UI) keeps them in the app's ledger ConfigMap, so the history goes back further.
    ///
    /// Examples:
    ///   kubectl gitops app history web
    ///   kubectl gitops app history web -o json
    #[command(verbatim_doc_comment)]
    History(AppHistoryArgs),
    /// Go back to an earlier deployment through git: the app's files restored in one commit.
    ///
    /// The app's directory in the repository Flux applies it from is restored to what it held at
    /// the earlier deployment's commit (--to, default: the last one that was Ready), in one commit
    /// pushed to the branch Flux follows; Flux applies it, and `app history` marks it as a
    /// rollback. Refused when a newer commit is on its way or an image automation writes to the
    /// repository. docs/drift.md says more.
    ///
    /// Examples:
    ///   kubectl gitops app rollback web --dry-run
    ///   kubectl gitops app rollback web --to main@sha1:4f0c… --wait
    #[command(verbatim_doc_comment)]
    Rollback(RollbackArgs),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[
    ("add", STRUCTURED),
    ("list", &gitops_shared::output::LIST_FORMATS),
    ("remove", STRUCTURED),
    ("suspend", STRUCTURED),
    ("resume", STRUCTURED),
    ("status", STRUCTURED),
    ("history", STRUCTURED),
    ("rollback", STRUCTURED),
];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops app", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let global = &cli.global;
        let target = gitops_shared::change::Target::from_args(global);
        let text = match &cli.command {
            Command::Status(args) => {
                return status::run_app_status(&args.request(global)?, &target.connection, &printer).await;
            }
            Command::History(args) => {
                return status::run_app_history(&args.request(global)?, &target.connection, &printer).await;
            }
            Command::Rollback(args) => return app::rollback(&args.request(global)?, &target, &printer).await,
            Command::Add(args) => app::add(&args.request()?, &target, &printer).await?,
            Command::List(args) => return app::run_list(&args.request(global)?, &target, &printer).await,
            Command::Remove(args) => app::remove(&args.request()?, &target, &printer).await?,
            Command::Suspend(args) => app::suspend(&args.request(true)?, &target, &printer).await?,
            Command::Resume(args) => app::suspend(&args.request(false)?, &target, &printer).await?,
        };
        printer.data(&text)?;
        Ok(ExitCode::Ok)
    })
}
