//! Sources a change moves: a GitRepository whose built `spec.ref` differs from the live one (an
//! app moved to a new tag or branch). Each is fetched at its new ref, so that the Kustomizations
//! applying it (and charts in it) are compared as Flux will apply them.
//!
//! A moved source is fetched only from the URL the cluster already pulls it from: a change that
//! also points it at another URL is not fetched (its Kustomizations say why), so that a pull
//! request cannot make the reviewer's machine reach a host of its choosing. Our credentials go
//! only to the config repo's own server; elsewhere the fetch is anonymous.

use std::path::PathBuf;

use kube::discovery::ApiResource;
use serde_json::Value;

use super::build::SecretReads;
use super::{FetchedSource, KustomizationDiff, SourceRef, compare_each, kustomizations_of};
use crate::apply::Applier;
use crate::error::Result;
use crate::flux_cli::FluxCli;
use crate::git::{Auth, Checkout, Remote, Workspace};
use crate::output::Printer;
use crate::repo_access::{parse_url, same_server};

/// Where a fetch's credentials come from: the config repo's remote, known, or resolved from the
/// context on the first fetch (a comparison of a checkout on disk needs none until then).
pub enum Credentials<'a> {
    /// Resolved by the caller: the config repo's remote, or none (fetched anonymously).
    Known(Option<Remote>),
    /// Resolved by the caller when first needed (only a moved source on the config repo's server
    /// needs it): `diff` attaches the config repo then, and not for a change that moves nothing.
    Later(futures::future::BoxFuture<'a, Option<Remote>>),
}

impl Credentials<'_> {
    /// The config repo's remote, resolved on the first call.
    pub(crate) async fn remote(&mut self) -> Option<Remote> {
        if let Credentials::Later(resolve) = self {
            let remote = resolve.await;
            *self = Credentials::Known(remote);
        }
        match self {
            Credentials::Known(remote) => remote.clone(),
            Credentials::Later(_) => None,
        }
    }
}

/// What the sources the change moves change: their Kustomizations, each built from its source
/// fetched at the new ref and compared (or failed, saying why it was not fetched), with their
/// builds (for their HelmReleases), the checkouts (kept until the comparison is over) and what
/// was fetched.
pub(super) struct MovedCompared {
    pub kustomizations: Vec<KustomizationDiff>,
    pub builds: Vec<Vec<Value>>,
    pub sources: Vec<(SourceRef, PathBuf)>,
    pub fetched: Vec<FetchedSource>,
    pub checkouts: Vec<Workspace>,
}

/// Fetches every source in `moved` and compares the Kustomizations that apply it (as the cluster
/// holds them: their Secrets read as `reads` allows).
pub(super) async fn compare_moved(
    applier: &Applier<'_>,
    resource: &ApiResource,
    flux: &FluxCli,
    moved: Vec<Moved>,
    mut credentials: Credentials<'_>,
    reads: SecretReads<'_>,
    printer: &Printer,
) -> Result<MovedCompared> {
    let mut done = MovedCompared {
        kustomizations: Vec::new(),
        builds: Vec::new(),
        sources: Vec::new(),
        fetched: Vec::new(),
        checkouts: Vec::new(),
    };
    // Each source with its checkout, or why it has none.
    let mut unfetched: Vec<(SourceRef, String)> = Vec::new();
    for Moved { source, url, to } in moved {
        let to = match to {
            Ok(to) => to,
            Err(why) => {
                unfetched.push((source, why));
                continue;
            }
        };
        let config = credentials.remote().await;
        printer.progress(&format!("fetching {source} at {to}: the change moves it"));
        match fetch(&url, &to, config.as_ref()).await {
            Ok((checkout, commit)) => {
                done.sources.push((source.clone(), checkout.files().root().to_path_buf()));
                done.fetched.push(FetchedSource { source: source.to_string(), at: to.to_string(), commit });
                done.checkouts.push(checkout);
            }
            Err(why) => unfetched.push((source, format!("{to} could not be fetched: {why}"))),
        }
    }
    let cluster = applier.cluster();
    let listed = kustomizations_of(cluster, resource, &done.sources).await?;
    (done.kustomizations, done.builds) = compare_each(applier, flux, &listed, reads).await?;
    // Their Kustomizations say why they were not compared.
    let placeholders: Vec<(SourceRef, PathBuf)> =
        unfetched.iter().map(|(source, _)| (source.clone(), PathBuf::new())).collect();
    for (kustomization, source, _) in kustomizations_of(cluster, resource, &placeholders).await? {
        let why = unfetched.iter().find(|(unfetched, _)| unfetched == source).map(|(_, why)| why.as_str());
        let error = format!("the change moves its source {source}: {}", why.unwrap_or_default());
        done.kustomizations
            .push(KustomizationDiff { error: Some(error), ..KustomizationDiff::of(&kustomization, source) });
        done.builds.push(Vec::new());
    }
    Ok(done)
}

/// The group of Flux's source kinds.
const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";

/// A source the change moves, and where it moves to.
pub(super) struct Moved {
    pub source: SourceRef,
    /// The URL the cluster pulls it from.
    pub url: String,
    /// Its new ref, or why it cannot be fetched.
    pub to: std::result::Result<GitRef, String>,
}

/// What a GitRepository's `spec.ref` names, as far as diff fetches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GitRef {
    Branch(String),
    Tag(String),
    /// A commit of a branch (Flux's `ref.commit` with `ref.branch`).
    Commit {
        branch: String,
        commit: String,
    },
}

impl std::fmt::Display for GitRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitRef::Branch(branch) => write!(f, "branch {branch}"),
            GitRef::Tag(tag) => write!(f, "tag {tag}"),
            GitRef::Commit { branch, commit } => write!(f, "commit {commit} of branch {branch}"),
        }
    }
}

/// The ref `spec.ref` names, in Flux's order of precedence (commit, name, semver, tag, branch);
/// why not, for those diff does not resolve.
pub(crate) fn git_ref(spec_ref: &Value) -> std::result::Result<GitRef, String> {
    let text = |key: &str| spec_ref[key].as_str().filter(|value| !value.is_empty()).map(String::from);
    match (text("commit"), text("name"), text("semver"), text("tag"), text("branch")) {
        (Some(commit), _, _, _, Some(branch)) => Ok(GitRef::Commit { branch, commit }),
        (Some(commit), ..) => Err(format!("ref.commit {commit} names no branch to fetch it from")),
        (_, Some(name), ..) => Err(format!("ref.name {name} is not resolved by diff yet")),
        (_, _, Some(semver), ..) => Err(format!("ref.semver {semver:?} is not resolved by diff yet")),
        (_, _, _, Some(tag), _) => Ok(GitRef::Tag(tag)),
        (_, _, _, _, Some(branch)) => Ok(GitRef::Branch(branch)),
        _ => Err("it names no ref".into()),
    }
}

/// The GitRepositories among `builds` whose ref differs from the live one's, leaving out the
/// sources already compared (the config repo's, `--local-source`s).
pub(super) async fn moved(
    applier: &mut Applier<'_>,
    builds: &[Vec<Value>],
    compared: &[(SourceRef, PathBuf)],
) -> Result<Vec<Moved>> {
    let mut found: Vec<Moved> = Vec::new();
    let repositories = builds.iter().flatten().filter(|document| {
        document["kind"] == "GitRepository"
            && document["apiVersion"].as_str().is_some_and(|version| version.starts_with(&format!("{SOURCE_GROUP}/")))
    });
    for built in repositories {
        let text = |pointer: &str| built.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
        let source = SourceRef {
            kind: "GitRepository".into(),
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name"),
        };
        if compared.iter().any(|(known, _)| *known == source) || found.iter().any(|moved| moved.source == source) {
            continue;
        }
        // A new source applies nothing yet: its Kustomizations, new too, are not live.
        let Some(live) = applier.get(built).await? else { continue };
        if live["spec"]["ref"] == built["spec"]["ref"] && live["spec"]["url"] == built["spec"]["url"] {
            continue;
        }
        let url = live["spec"]["url"].as_str().unwrap_or_default().to_string();
        let to = if built["spec"]["url"] != live["spec"]["url"] {
            Err(format!(
                "the change points it at {}, a URL the cluster does not pull from yet; pass its checkout with --local-source",
                built["spec"]["url"].as_str().unwrap_or_default()
            ))
        } else {
            git_ref(&built["spec"]["ref"])
        };
        found.push(Moved { source, url, to });
    }
    Ok(found)
}

/// `url` with the config repo's credentials when it is on the config repo's server, anonymous
/// elsewhere.
pub(crate) fn remote_for(url: &str, config: Option<&Remote>) -> Remote {
    let ours = |config: &Remote| -> bool {
        matches!((parse_url(url), parse_url(&config.url)), (Ok(a), Ok(b)) if same_server(&a, &b))
    };
    let auth = config.filter(|config| ours(config)).map_or(Auth::Anonymous, |config| config.auth.clone());
    Remote { url: url.to_string(), auth }
}

/// Clones `url` at `to`, with the config repo's credentials when it is on the config repo's
/// server, anonymously elsewhere; the checkout and its commit, or why not.
pub(crate) async fn fetch(
    url: &str,
    to: &GitRef,
    config: Option<&Remote>,
) -> std::result::Result<(Workspace, String), String> {
    let remote = remote_for(url, config);
    let wanted = to.clone();
    let fetched = crate::git::network(move || -> Result<(Workspace, Option<String>)> {
        let checkout = match &wanted {
            GitRef::Tag(tag) => Checkout::clone_tag(&remote, tag)?,
            GitRef::Branch(branch) => Checkout::clone(&remote, branch)?,
            GitRef::Commit { branch, commit } => {
                let mut checkout = Checkout::clone(&remote, branch)?;
                checkout.reset_to_commit(commit)?;
                checkout
            }
        };
        let head = checkout.head();
        Ok((checkout.into(), head))
    })
    .await;
    match fetched {
        Ok((checkout, Some(head))) => Ok((checkout, head)),
        Ok((_, None)) => Err(format!("{to} holds no commit")),
        Err(error) => Err(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ref_is_read_in_flux_s_order_of_precedence() {
        let read = |text: &str| git_ref(&serde_json::from_str(text).unwrap());
        assert_eq!(read(r#"{"branch": "main"}"#), Ok(GitRef::Branch("main".into())));
        assert_eq!(read(r#"{"branch": "main", "tag": "v2"}"#), Ok(GitRef::Tag("v2".into())));
        assert_eq!(
            read(r#"{"branch": "main", "tag": "v2", "commit": "abc"}"#),
            Ok(GitRef::Commit { branch: "main".into(), commit: "abc".into() })
        );
        assert!(read(r#"{"tag": "v2", "semver": ">=1.0"}"#).unwrap_err().contains("semver"));
        assert!(read(r#"{"name": "refs/pull/1/head"}"#).unwrap_err().contains("ref.name"));
        assert!(read(r#"{"commit": "abc"}"#).unwrap_err().contains("names no branch"));
        assert_eq!(read("{}"), Err("it names no ref".into()));
    }

    #[tokio::test]
    async fn credentials_resolved_later_are_resolved_once_and_kept_for_every_source() {
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let remote = Remote { url: "https://git.example.com/fleet.git".into(), auth: Auth::Anonymous };
        let mut credentials = Credentials::Later(Box::pin(async {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Some(remote.clone())
        }));
        for _ in 0..3 {
            assert_eq!(credentials.remote().await.map(|remote| remote.url), Some(remote.url.clone()));
        }
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
