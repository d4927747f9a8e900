//! `kubectl gitops artifact`: Flux OCI artifacts, pushed and pulled exactly as the flux CLI does.

use clap::{CommandFactory, Subcommand};
use gitops_shared::artifact::{self, BuildArgs, DiffArgs, ListArgs, PullArgs, PushArgs, TagArgs};
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Push, pull, list, tag and compare Flux OCI artifacts: a directory of manifests as an OCI
    /// artifact, exactly as `flux push artifact` makes it, for an OCIRepository to deploy.
    ///
    /// Credentials come from --creds, else the docker config file (`docker login`). Plain HTTP is
    /// used only for a registry on this machine, or with --insecure.
    struct Cli { subcommand: Command }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Push a directory as a Flux artifact and print its digest
    ///
    /// Examples:
    ///   kubectl gitops artifact push oci://ghcr.io/org/manifests/app:v1.0.0 --path ./config \
    ///     --source "$(git config --get remote.origin.url)" --revision "main@sha1:$(git rev-parse HEAD)"
    ///   kubectl gitops artifact push oci://localhost:5000/app:v1 --path ./deploy --source x --revision v1 --reproducible -o json
    #[command(verbatim_doc_comment)]
    Push(Box<PushArgs>),
    /// Write the artifact's tarball to a file, without pushing it.
    Build(BuildArgs),
    /// Pull an artifact into a directory, checking its digest and every path in it.
    Pull(PullArgs),
    /// List a repository's tags with their source, revision and digest.
    List(ListArgs),
    /// Add tags to an artifact (its digest does not change).
    Tag(TagArgs),
    /// Compare a directory with an artifact: exit 1 and name the files when they differ.
    Diff(DiffArgs),
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("push", STRUCTURED), ("list", STRUCTURED), ("diff", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    let command = Cli::command()
        .bin_name("kubectl gitops artifact")
        .name("kubectl gitops artifact")
        // Artifacts live in registries: the cluster flags mean nothing here.
        .mut_args(|arg| match arg.get_help_heading() {
            Some("Cluster options") => arg.hide(true),
            _ => arg,
        });
    runtime::main_with(command, OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let format = cli.global.output_format();
        match &cli.command {
            Command::Push(args) => artifact::push(args, format, &printer).await,
            Command::Build(args) => artifact::build(args, &printer),
            Command::Pull(args) => artifact::pull(args, &printer).await,
            Command::List(args) => artifact::list(args, format, !cli.global.no_headers, &printer).await,
            Command::Tag(args) => artifact::tag(args, &printer).await,
            Command::Diff(args) => artifact::diff(args, format, &printer).await,
        }
    })
}
