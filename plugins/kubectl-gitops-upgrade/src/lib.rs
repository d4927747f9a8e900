//! `kubectl gitops upgrade`: Flux and every manifest we generated, moved to a new release through
//! one commit or pull request of the config repo.

use clap::{CommandFactory, Parser};
use gitops_shared::change::Target;
use gitops_shared::cli::GlobalArgs;
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::runtime;
use gitops_shared::upgrade::{self, UpgradeArgs};

/// Move Flux to a new release (default: the one this kubectl-gitops pins) through git.
///
/// One change of the config repo regenerates each cluster's flux-system/gotk-components.yaml for
/// the target, updates its install record, and migrates the Flux manifests we generated to the API
/// versions the target serves, keeping comments and every field you edited. Before it, a preflight
/// scans the repo and the cluster (CRD status.storedVersions) for API versions the target no longer
/// serves. Objects stored at such a version are rewritten first (the only direct cluster write), so
/// that Flux can apply the new CRDs. One release line at a time; never down.
///
/// Exit codes: 0 done (--check: up to date), 1 not there (--check: an upgrade is available;
/// --wait: the rollout did not finish), 2 bad input, 3 cluster, 4 git or provider, 5 internal.
///
/// Examples:
///   kubectl gitops upgrade --check
///   kubectl gitops upgrade --dry-run
///   kubectl gitops upgrade                      # a pull request on GitHub and GitLab
///   kubectl gitops upgrade --wait               # once it is merged: the rollout, storage, Ready
///   kubectl gitops upgrade --auto-merge --wait
///   kubectl gitops upgrade --flux-version v2.9.4 --cluster-name staging --cluster-name production --pr
#[derive(Debug, Parser)]
#[command(disable_version_flag = true, verbatim_doc_comment)]
struct Cli {
    #[command(flatten)]
    upgrade: UpgradeArgs,
    #[command(flatten)]
    global: GlobalArgs,
}

gitops_shared::command_line!(Cli);

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[("", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    let name = "kubectl gitops upgrade";
    let command = Cli::command()
        .name(name)
        .bin_name(name)
        // The same flags as every change's, with upgrade's own defaults and wait in their long help.
        .mut_arg("pr", |arg| {
            arg.long_help(
                "Push to a new branch and open a pull request (GitLab: merge request).\n\n\
                 The default on GitHub and GitLab.",
            )
        })
        .mut_arg("auto_merge", |arg| {
            arg.long_help(
                "Push the commit to the config branch.\n\n\
                 The default on a plain git server, which has no pull requests.",
            )
        })
        .mut_arg("wait", |arg| {
            arg.long_help(
                "Wait until Flux has applied the change and it is Ready.\n\n\
                 Once the change is on the config branch (pushed now, or merged): wait until Flux applied it, the \
                 controllers run the target, the CRDs are its own, storage is migrated to the new storage versions, \
                 and every Kustomization and HelmRelease is Ready.",
            )
        });
    runtime::main_with(command, OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let request = cli.upgrade.request()?;
        let target = Target::from_args(&cli.global);
        let (text, code) = upgrade::run(&request, &target, cli.global.output_format(), &printer).await?;
        printer.data(&text)?;
        Ok(code)
    })
}
