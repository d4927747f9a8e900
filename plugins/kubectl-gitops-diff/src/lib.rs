//! `kubectl gitops diff`: what the config repo at another state would change in the cluster.

use gitops_shared::change::Target;
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::diff::{self, DiffArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// What a checkout of the config repo would change in the live cluster, before anyone merges it.
    ///
    /// Each of the config repo's Kustomizations is built from the checkout by the pinned flux CLI,
    /// and every object it builds is compared with the cluster by a server-side dry run under
    /// Flux's field manager (the cluster's own defaulting and admission). Objects added, changed,
    /// pruned and refused, the images that change, then a unified diff per object; Secrets' values
    /// are never shown. Nothing is written.
    ///
    /// Exit 0: nothing would change; 1: something would; 2: an object would be refused or a
    /// Kustomization cannot be built (as kubectl diff and flux diff). docs/diff.md says more.
    ///
    /// Example: kubectl gitops diff --dir ../fleet (or, in a checkout of the config repo, kubectl gitops diff)
    struct Cli { diff: DiffArgs }
}

/// What `-o` offers.
const OUTPUT_FORMATS: OutputFormats = &[("", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops diff", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        diff::run(&cli.diff.request(&cli.global)?, &Target::from_args(&cli.global), &printer).await
    })
}
