//! `kubectl gitops repo create`: an app repository on the config repo's provider, made from our
//! app layout, a template, a fork or a copy of any git repository ([`crate::change::new_repo`],
//! docs/repositories.md).
//!
//! One plan: `--dry-run` prints it, execution consumes it. A step that fails after the
//! repository was made deletes it again, so nothing is left half-made.

#[cfg(test)]
mod tests;

use clap::Args;

use crate::change::new_repo::{self, NewRepoRequest};
use crate::change::{self, RepoSettings, Target};
use crate::cli::SourceArgs;
use crate::cli::TrustArgs;
use crate::cli::{GlobalArgs, OutputFormat};
use crate::error::{Error, Result};
use crate::output::Printer;

/// `repo create` arguments.
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// The new repository: `OWNER/NAME`, or `NAME` under the config repo's owner.
    #[arg(value_name = "[OWNER/]NAME")]
    pub name: String,

    #[command(flatten)]
    pub source: SourceArgs,

    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub trust: TrustArgs,
}

/// `repo create`, resolved.
#[derive(Debug, Clone)]
pub struct CreateRequest {
    pub repository: NewRepoRequest,
    pub dry_run: bool,
    pub format: OutputFormat,
    /// `--accept-host`.
    pub accepted_hosts: Vec<String>,
}

impl CreateArgs {
    /// Checks the flags before anything is asked.
    pub fn request(&self, global: &GlobalArgs) -> Result<CreateRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
        Ok(CreateRequest {
            repository: self.source.request(&self.name)?,
            dry_run: self.dry_run,
            format,
            accepted_hosts: self.trust.accept_hosts.clone(),
        })
    }
}

/// `repo create`: plans, then (unless `--dry-run`) runs the plan; returns stdout's text.
pub async fn create(request: &CreateRequest, target: &Target, printer: &Printer) -> Result<String> {
    let repo = RepoSettings { accepted_hosts: request.accepted_hosts.clone(), ..RepoSettings::default() };
    let context = change::context(target, &repo, false, printer).await?;
    let hosted = context.hosted_repo(&repo)?.ok_or_else(|| {
        Error::usage(
            "the config repo is not on GitHub, GitLab or Gitea: repo create needs a provider's API",
            "install with --provider github, gitlab or gitea; on a plain git server, create the repository there",
        )
    })?;
    let plan = new_repo::plan(&request.repository, &hosted).await?;
    if request.dry_run {
        let words = plan.steps.iter().map(|(_, words)| words.as_str());
        return Ok(format!("{}(dry run: nothing was created)\n", crate::plan::render_steps(words)));
    }
    let mut progress = new_repo::Progress::default();
    let ran = crate::plan::run_steps(&plan.steps, async |number, step, words: &str| {
        printer.progress(&format!("{number}/{} {words}", plan.steps.len()));
        progress.run(&plan, &hosted, step).await
    })
    .await;
    if let Err(error) = ran {
        return Err(progress.undo(&plan, &hosted, error, printer).await);
    }
    let created = progress.created(&plan)?;
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&crate::output::document(&created), request.format)
        }
        _ => Ok(format!("repository {} created: {}\n", created.repository, created.web_url)),
    }
}
