//! `kubectl gitops diff`: what the config repo at another state would change in the live
//! cluster, Kustomization by Kustomization, before anyone merges it (docs/diff.md). The flags and
//! the run; the state is resolved and cloned by [`crate::change::preview_at`], compared by the
//! preview engine ([`crate::preview`]), and printed by its renderer.

use std::path::PathBuf;

use crate::change::preview_at::{DiffRequest, PreviewArgs, State};
use crate::change::{self, Target};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::error::{ExitCode, Result};
use crate::output::Printer;

/// `kubectl gitops diff`.
#[derive(Debug, Clone, clap::Args)]
pub struct DiffArgs {
    /// A directory on this machine, for the files to write or to read.
    ///
    /// The checkout of the config repo to compare with the cluster, uncommitted edits included
    /// (default: the git work tree you stand in, when one of its remotes is the config repo).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath, conflicts_with_all = ["git_ref", "pull_request"])]
    pub dir: Option<PathBuf>,

    /// The config repo at a branch's head, or at a commit by its full hash.
    ///
    /// The config repo at a branch's head, or at a commit of the branch Flux follows by its full
    /// 40-character hash, cloned for the comparison (the key flags below, else what the
    /// install record says).
    #[arg(long = "ref", value_name = "BRANCH|SHA", conflicts_with = "pull_request")]
    pub git_ref: Option<String>,

    /// A pull request of the config repo, compared at its head commit: its number or address.
    #[arg(long, value_name = "NUMBER|URL")]
    pub pull_request: Option<String>,

    #[command(flatten)]
    pub preview: PreviewArgs,
}

impl DiffArgs {
    /// The request these flags make: `-o`, the ref and the pull request checked.
    pub fn request(&self, global: &GlobalArgs) -> Result<DiffRequest> {
        let state = State::named(self.dir.clone(), self.git_ref.as_deref(), self.pull_request.as_deref())?;
        self.preview.request(state, global)
    }
}

/// `kubectl gitops diff`: prints the change and exits as [`Diff::exit_code`] says.
pub async fn run(request: &DiffRequest, target: &Target, printer: &Printer) -> Result<ExitCode> {
    let mut context = change::context(target, &request.repo, false, printer).await?;
    let diff = change::preview_at::compute(&mut context, request, printer).await?;
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            printer.structured(&crate::output::document(&diff), request.format)?
        }
        _ => printer.data(&crate::preview::render_text(&diff, request.headers, printer.stdout_style()))?,
    }
    Ok(diff.exit_code())
}
