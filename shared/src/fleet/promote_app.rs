//! `promote` as the faces ask for it (the UI's Fleet page, the MCP server's `promote` tool): plain
//! data checked the way `promote` checks its flags, then the same promotion.

use crate::change::Target;
use crate::change::result::Changed;
use crate::change::settings::delivery;
use crate::cli::RepoArgs;
use crate::error::{Error, Result};
use crate::output::Printer;

use super::promote::PromoteRequest;

/// The Fleet page's Promote form: `promote NAME --from FROM --to TO --expect-version VERSION`,
/// the version the page showed running in FROM.
#[derive(Debug, Clone)]
pub(crate) struct PromoteApp {
    pub(crate) name: String,
    /// The clusters' names in the fleet file.
    pub(crate) from: String,
    pub(crate) to: String,
    /// The version the page showed (the MCP server's `promote` may leave it out: what FROM runs).
    pub(crate) version: Option<String>,
    pub(crate) with_values: bool,
    pub(crate) pr: bool,
    pub(crate) dry_run: bool,
}

impl PromoteApp {
    /// Checks the request the way `promote` checks its flags, then promotes.
    pub(crate) async fn run(&self, repo: &RepoArgs, target: &Target, printer: &Printer) -> Result<Changed> {
        let name = crate::names::validate_name(&self.name, "the app")?;
        if self.from == self.to {
            return Err(Error::usage(format!("from and to are both {}", self.from), "promote between two clusters"));
        }
        let request = PromoteRequest {
            name,
            from: self.from.clone(),
            to: self.to.clone(),
            expect_version: self.version.clone(),
            // The matrix shows versions, not images: the plan shown first names those it carries.
            expect_images: Vec::new(),
            with_values: self.with_values,
            config: repo.settings()?,
            delivery: delivery(self.pr, None, self.dry_run, false),
        };
        let output = super::promote(&request, target, printer).await?;
        Ok(Changed { name: self.name.clone(), dry_run: self.dry_run, output })
    }
}
