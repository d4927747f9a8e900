//! `kubectl gitops fleet`: many clusters from one config repo, seen from one place.

use clap::Subcommand;
use gitops_shared::cli::{OutputFormat, OutputFormats};
use gitops_shared::fleet::{self, StatusArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Many clusters from one config repo, seen from this machine, with no hub: each cluster is a
    /// kubeconfig context, asked directly with your own credentials (docs/fleet.md).
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apps × clusters: what each cluster runs of each app, at which version, and how it is.
    ///
    /// A row per app (the apps kubectl-gitops manages), a column per cluster: the app's state and
    /// what runs (a HelmRelease's chart version, a Kustomization's applied revision); VERSIONS says
    /// `differ` when the clusters that run it do not all run the same. Then each cluster's config
    /// repo revision, marked behind when it is not the config repo's head, or why it did not
    /// answer. The clusters are --context's list (comma-separated), else every context of the
    /// kubeconfig; they are asked at once (--concurrency), each within --timeout, and a cluster
    /// that does not answer is a column that says so while the others are shown.
    ///
    /// Exit 0: every app ready and the same everywhere; 1: an app not ready or differing, or a
    /// cluster behind; 3: a cluster did not answer.
    ///
    /// Examples:
    ///   kubectl gitops fleet status --context dev,uat,prod
    ///   kubectl gitops fleet status --all-contexts -o json
    #[command(verbatim_doc_comment)]
    Status(StatusArgs),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("status", &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml])];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops fleet", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        match &cli.command {
            Command::Status(args) => fleet::status(&args.request(&cli.global)?, &printer).await,
        }
    })
}
