//! `kubectl gitops pr`: the pull requests kubectl-gitops opened on the config repo.

use clap::{Parser, Subcommand};
use gitops_shared::change::Target;
use gitops_shared::cli::GlobalArgs;
use gitops_shared::cli::TrustArgs;
use gitops_shared::cli::{OutputFormats, STRUCTURED};
use gitops_shared::error::ExitCode;
use gitops_shared::output::Printer;
use gitops_shared::pr::{self, Action, CommentArgs, MergeArgs, ShowArgs, ShowPreviewArgs};
use gitops_shared::recorded_commands;
use gitops_shared::runtime;

/// The pull (merge) requests kubectl-gitops opened on the config repo (app add --pr, platform
/// add, upgrade, …): listed, validated against what was planned, approved and merged. The config repo and its
/// provider are the ones the current cluster was installed with (GitHub, GitLab or Gitea).
#[derive(Debug, Parser)]
#[command(disable_version_flag = true, subcommand_required = true, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The pull requests of the platform repo (`install --platform-repo`): `platform add`,
    /// `platform remove` and `monitoring install` open theirs there.
    #[arg(long, global = true)]
    platform: bool,
    #[command(flatten)]
    global: GlobalArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The open pull requests kubectl-gitops opened: what each changes, whether it can be merged, its age.
    ///
    /// Examples:
    ///   kubectl gitops pr list
    ///   kubectl gitops pr list -o json
    #[command(verbatim_doc_comment)]
    List(TrustArgs),
    /// Validate one: it is open, into the branch Flux follows, opened by you, exactly what its recorded request plans, and it can be merged.
    ///
    /// With --preview, also what the commit validated would change in the cluster of the
    /// current context (`kubectl gitops diff`'s preview, HelmReleases rendered).
    ///
    /// Exit 0 when every check passes, 1 when one fails (each finding named) or another
    /// identity opened it (unverified: --opened-by LOGIN vouches for another's), 2 for a number
    /// that is not a pull request of the config repo or one kubectl-gitops did not open, or a
    /// preview that holds a refusal or a failure.
    ///
    /// Examples:
    ///   kubectl gitops pr show 42
    ///   kubectl gitops pr show 42 --preview
    ///   kubectl gitops pr show https://github.com/acme/fleet/pull/42 -o json
    #[command(verbatim_doc_comment)]
    Show(ShowPreviewArgs),
    /// Validate one as `show` does, then approve it at the commit validated.
    ///
    /// Nothing is approved when a check fails (exit 1, the findings printed), nor when another
    /// identity than the one vouched for opened it (exit 1). The provider refuses an approval by
    /// the request's own author (GitHub, Gitea) and one whose head moved since.
    ///
    /// Examples:
    ///   GITHUB_TOKEN=$REVIEWER_TOKEN kubectl gitops pr approve 42 --opened-by deploy-bot
    #[command(verbatim_doc_comment)]
    Approve(ShowArgs),
    /// Validate one as `show` does, then merge it, guarded by the commit validated.
    ///
    /// Nothing is merged when a check fails or another identity opened it (exit 1, the findings
    /// printed), or when its branch moved after it was validated (the provider refuses: exit 4). With --auto the provider
    /// merges it once its checks pass (GitHub auto-merge, GitLab auto_merge, Gitea's scheduled
    /// merge); with nothing pending it is merged now.
    ///
    /// Examples:
    ///   kubectl gitops pr merge 42
    ///   kubectl gitops pr merge 42 --method squash
    ///   kubectl gitops pr merge 42 --auto
    #[command(verbatim_doc_comment)]
    Merge(MergeArgs),
    /// Post what a pull request would do to the cluster (`diff`'s preview) on it, as one comment updated in place.
    ///
    /// Any pull request of the config repo, compared at its head commit as `kubectl gitops diff
    /// --pull-request` compares it (the same flags), with the cluster of the current context.
    /// The comment is found again by its first line and its author (the token's own user) and
    /// updated on every run, so a new push gets a fresh preview in the same place. It is cut at
    /// the forge's size limit (GitHub's 65,536 characters), linking the full output
    /// (--full-output-url, or the CI job). Exit 0 once posted, 2 when the preview holds a
    /// refusal or a failure (posted too).
    ///
    /// Examples:
    ///   kubectl gitops pr comment 42
    ///   kubectl gitops pr comment 42 --dry-run
    #[command(verbatim_doc_comment)]
    Comment(CommentArgs),
}

gitops_shared::command_line!(Cli);

/// Prints what `approve` or `merge` did, or the findings that stopped it (exit 1).
fn acted(printer: &Printer, (text, done): (String, bool)) -> gitops_shared::error::Result<ExitCode> {
    printer.data(&text)?;
    Ok(if done { ExitCode::Ok } else { ExitCode::No })
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats =
    &[("list", STRUCTURED), ("show", STRUCTURED), ("approve", STRUCTURED), ("merge", STRUCTURED)];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops pr", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let global = &cli.global;
        let target = Target::from_args(global);
        let replan = recorded_commands::replan;
        match &cli.command {
            Command::List(trust) => {
                let mut request = pr::list_request(global, cli.platform)?;
                request.repo.accepted_hosts = trust.accept_hosts.clone();
                printer.data(&pr::list(&request, &target, &printer).await?)?;
                Ok(ExitCode::Ok)
            }
            Command::Show(args) => {
                let (text, code) = pr::show(&args.request(global, cli.platform)?, &target, replan, &printer).await?;
                printer.data(&text)?;
                Ok(code)
            }
            Command::Approve(args) => acted(
                &printer,
                pr::act(Action::Approve, &args.request(global, cli.platform)?, &target, replan, &printer).await?,
            ),
            Command::Merge(args) => {
                let action = Action::Merge { method: args.method, auto: args.auto };
                let request = args.show.request(global, cli.platform)?;
                acted(&printer, pr::act(action, &request, &target, replan, &printer).await?)
            }
            Command::Comment(args) => pr::comment(&args.request(global)?, &target, &printer).await,
        }
    })
}
