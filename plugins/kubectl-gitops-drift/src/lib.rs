//! `kubectl gitops drift`: what differs in the cluster from what Flux last applied.

use gitops_shared::change::Target;
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::drift::{self, DriftCommandArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// What differs in the cluster right now from what Flux last applied, and who changed it.
    ///
    /// Each Kustomization's source is fetched at the commit Flux last applied
    /// (status.lastAppliedRevision) and built by the pinned flux CLI as the controller builds it;
    /// every object is compared with the cluster by a server-side dry run under Flux's field
    /// manager, so only what Flux would put back shows: the fields that differ, the field manager
    /// that owns each now (kubectl-edit, another controller) and since when, and the objects
    /// deleted by hand. Objects annotated kustomize.toolkit.fluxcd.io/ssa: Ignore (or IfNotPresent,
    /// while they exist) are skipped, as Flux skips them, and so are the fields a Kustomization's
    /// spec.ignore or a HelmRelease's spec.driftDetection.ignore names. Nothing is written.
    ///
    /// --watch keeps following every object Flux applied and prints each change as it happens.
    ///
    /// Exit 0: no drift; 1: drift; 2: something could not be checked. docs/drift.md says more.
    ///
    /// Example: kubectl gitops drift -A (or kubectl gitops drift web -n team-a -o json)
    struct Cli { drift: DriftCommandArgs }
}

/// What `-o` offers.
const OUTPUT_FORMATS: OutputFormats = &[("", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops drift", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        drift::run(&cli.drift.request(&cli.global)?, &Target::from_args(&cli.global), &printer).await
    })
}
