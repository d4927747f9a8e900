//! `kubectl gitops pr show NUMBER`: the validation of one pull request kubectl-gitops opened,
//! and with `--preview` what it would do to the cluster: `diff`'s preview of the very head
//! commit the validation read (pinned by its full hash, so a push in between cannot slip in).

use clap::Args;

use super::{Request, ShowArgs, Validated, Validation, render_validation, validate};
use crate::change::Target;
use crate::change::preview_at::{self, DiffRequest, State};
use crate::change::recorded::Replanner;
use crate::cli::{GlobalArgs, OutputFormat};
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;
use crate::preview::{RenderArgs, Rendering};

/// `pr show` arguments: those of the validation, and the preview's.
#[derive(Debug, Clone, Args)]
pub struct ShowPreviewArgs {
    #[command(flatten)]
    pub show: ShowArgs,

    /// Also show what it would change in the cluster, as `kubectl gitops diff` does.
    ///
    /// Also show what its head commit would change in the cluster of the current context:
    /// `kubectl gitops diff`'s preview of the commit validated, rendered with the flags below.
    #[arg(long)]
    pub preview: bool,

    #[command(flatten)]
    pub render: RenderArgs,
}

/// `pr show`, resolved.
#[derive(Debug, Clone)]
pub struct ShowRequest {
    pub validation: Request,
    /// `--preview`, with how it renders.
    pub preview: Option<Rendering>,
}

impl ShowPreviewArgs {
    /// The validation's request, and the preview's flags checked (given only with `--preview`).
    pub fn request(&self, global: &GlobalArgs, platform: bool) -> Result<ShowRequest> {
        let validation = self.show.request(global, platform)?;
        let preview = match (self.preview, self.render.first_given()) {
            (true, _) if platform => {
                return Err(Error::usage(
                    "--preview compares the config repo's pull requests; the platform repo's are not previewed yet",
                    "check out the pull request's branch and run `kubectl gitops diff --local-source` with it",
                ));
            }
            (true, _) => Some(self.render.rendering()?),
            (false, None) => None,
            (false, Some(flag)) => {
                return Err(Error::usage(
                    format!("{flag} shapes the preview, which only --preview shows"),
                    format!("add --preview, or leave out {flag}"),
                ));
            }
        };
        Ok(ShowRequest { validation, preview })
    }
}

/// `pr show`: validates one pull request we opened and, asked, previews its head. The text to
/// print and the exit code: 0 valid, 1 not valid (or unverified), 2 when the preview holds a
/// refusal or a failure. `replan` plans the recorded request again.
pub async fn show(
    request: &ShowRequest,
    target: &Target,
    replan: Replanner,
    printer: &Printer,
) -> Result<(String, ExitCode)> {
    let validation_request = &request.validation;
    let (validation, sign, code) = checked(request, target, replan, printer).await?;
    let text = match validation_request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&crate::output::document(&validation), validation_request.format)?
        }
        _ => {
            let mut text = render_validation(&validation, sign);
            if let Some(preview) = &validation.preview {
                text.push('\n');
                text.push_str(&crate::preview::render_text(
                    preview,
                    validation_request.headers,
                    printer.stdout_style(),
                ));
            }
            text
        }
    };
    Ok((text, code))
}

/// What `pr show` finds (with the preview when asked), the forge's sign for a pull request
/// (`#`, `!`), and its exit code.
pub async fn checked(
    request: &ShowRequest,
    target: &Target,
    replan: Replanner,
    printer: &Printer,
) -> Result<(Validation, &'static str, ExitCode)> {
    let validation_request = &request.validation;
    let Validated { mut validation, sign, mut context, hosted } =
        validate(validation_request, target, replan, printer).await?;
    if let Some(rendering) = &request.preview {
        let head = validation.head.clone().ok_or_else(|| {
            Error::usage(
                format!("{sign}{}: its branch {} has no head commit to preview", validation.number, validation.branch),
                "a pull request whose branch was deleted has nothing to compare",
            )
        })?;
        let noun = hosted.provider.kind().pull_request_noun();
        let compared = format!("{noun} {sign}{} (branch {} at {head})", validation.number, validation.branch);
        let diff_request = DiffRequest {
            state: State::Pinned { branch: validation.branch.clone(), commit: head, compared },
            rendering: rendering.clone(),
            repo: validation_request.repo.clone(),
            format: validation_request.format,
            headers: validation_request.headers,
        };
        validation.preview = Some(preview_at::compute(&mut context, &diff_request, printer).await?);
    }
    let refused = validation.preview.as_ref().is_some_and(|preview| preview.exit_code() == ExitCode::Usage);
    let code = match (validation.valid, refused) {
        (_, true) => ExitCode::Usage,
        (true, false) => ExitCode::Ok,
        (false, false) => ExitCode::No,
    };
    Ok((validation, sign, code))
}
