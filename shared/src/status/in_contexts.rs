//! `status` and `app status` with `--context dev,uat`: each context's answer, as the command
//! prints it for one context, for [`crate::contexts::in_each`] to show side by side.

use crate::cli::OutputFormat;
use crate::cluster::{Cluster, Connection};
use crate::contexts::Answer;
use crate::error::{Error, Result};
use crate::output::Printer;
use crate::readers::{Scope, View, collect_labelled, exit_code};

/// `status` in one context of several: its report, in `view`'s format.
pub async fn answer(
    connection: Connection,
    scope: &Scope,
    labels: Option<&str>,
    view: View,
    printer: &Printer,
) -> Result<Answer> {
    let cluster = Cluster::connect(&connection, printer).await?;
    let report = view.shown(collect_labelled(&cluster, scope, labels).await?);
    let text = match view.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&crate::output::document(&report), view.format)?
        }
        _ => view.render(&report)?,
    };
    Ok(Answer { text, code: exit_code(&report) })
}

/// `--watch` and `--wait` follow one context: refused with several.
pub fn one_context_at_a_time(watch: bool, wait: bool) -> Result<()> {
    match (watch, wait) {
        (false, false) => Ok(()),
        _ => Err(Error::usage(
            format!("--{} follows one context, and --context names several", if watch { "watch" } else { "wait" }),
            "give one context, or leave it out to see each context once",
        )),
    }
}
