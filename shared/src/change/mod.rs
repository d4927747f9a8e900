//! The change engine: how every changing command (`app`, `platform`, `tenant`, `monitoring
//! install`, `component upgrade`, `upgrade`, `repo create`, the UI) changes the config repo and the
//! cluster. A command describes its change ([`drive::Change`]: the file changes it computed on a
//! clone, the objects to patch, how to word it) and hands it over; the engine
//! 1. resolves the context once ([`context`]): the cluster, its install record, the config repo
//!    and the provider in front of it, read-only;
//! 2. builds one typed [`plan::Plan`] and the delivery the provider allows (push or pull request);
//! 3. prints it for `--dry-run`, or carries out that same plan ([`deliver`]) through the one git
//!    write path ([`crate::publish`], re-planned on a refused push);
//! 4. with `--wait`, waits on watches until Flux applied the commit ([`wait`]);
//! 5. says what it did: a line, or with `-o json|yaml` one `Change` document ([`result`]).
//!
//! The config repo's layout ([`layout`]), the requests a pull request records ([`recorded`]) and
//! new repositories ([`new_repo`]) live here too: every command above shares them.

pub mod context;
pub mod deliver;
pub mod drive;
pub mod fleet;
pub mod layout;
pub mod new_repo;
pub mod plan;
pub mod preview_at;
pub mod recorded;
pub mod result;
pub mod settings;
pub mod shared_secret;
pub mod sync_wait;
pub mod values_overlay;
pub mod wait;

pub use self::context::{ConfigRepo, Context, HostedRepo, context};
pub(crate) use self::context::{clone, reviewed, target_clusters};
pub(crate) use self::drive::{Awaits, Change, drive, drive_change};
pub use self::settings::{DeliveryMode, DeliverySettings, RepoSettings, Target};

/// A pull request's number (`42`, `#42`, `!42`) or address as a flag or argument gives it, checked.
pub fn pull_request_reference(text: &str) -> crate::error::Result<crate::provider::PullRequestReference> {
    crate::provider::PullRequestReference::parse(text).ok_or_else(|| {
        crate::error::Error::usage(
            format!("{text:?} is not a pull request number or address"),
            "give its number (42) or its address (https://github.com/acme/fleet/pull/42)",
        )
    })
}

/// The pull request `reference` names on the repository `hosted` reaches: by its number, and
/// when an address was given, only if that address is the request's own.
pub async fn pull_request_named(
    hosted: &HostedRepo,
    reference: &crate::provider::PullRequestReference,
) -> crate::error::Result<crate::provider::PullRequestDetails> {
    let (noun, sign) = (hosted.provider.kind().pull_request_noun(), hosted.provider.kind().pull_request_sign());
    let number = reference.number;
    let details = hosted.provider.get_pull_request(&hosted.repo, number).await?.ok_or_else(|| {
        crate::error::Error::usage(
            format!("{} has no {noun} {sign}{number}", hosted.repo),
            "`kubectl gitops pr list` lists the open ones kubectl gitops opened",
        )
    })?;
    match &reference.url {
        Some(given) if details.url.trim_end_matches('/') != given => Err(crate::error::Error::usage(
            format!("{given} is not {noun} {sign}{number} of {}, which is {}", hosted.repo, details.url),
            "give a pull request of the config repo the current cluster was installed from, or its number",
        )),
        _ => Ok(details),
    }
}

/// `--export` prints Flux YAML, as `flux create … --export` does; `-o json|yaml` asks for the
/// `Change` document, which `--export` has none of: the two together are refused.
pub fn exports_yaml(printer: &crate::output::Printer) -> crate::error::Result<()> {
    use crate::cli::OutputFormat;
    match printer.output() {
        OutputFormat::Json | OutputFormat::Yaml => Err(crate::error::Error::usage(
            "--export prints the Flux YAML the change commits; it has no -o",
            "drop -o to get the YAML, or drop --export to make the change and get its Change document",
        )),
        _ => Ok(()),
    }
}
