//! The request a pull request records in its body, and the plan recomputed from it (`pr show`).
//!
//! Every change that opens a pull request writes the words that give it again, as a reviewer
//! would type them (`kubectl gitops app add hello --url … --cluster dev`): `app`/`platform`
//! add and remove with the app's resolved flags ([`AppSpec::words`]), `app suspend|resume
//! --persist`, `tenant add|remove`, `monitoring install`, `component upgrade` and `upgrade`,
//! each with its flags resolved. `pr show` parses them with the commands' own flags and plans
//! them again on the commit the branch left the config branch at (its merge base), then
//! compares that plan with the branch file by file: a pull request is valid only when it is
//! exactly what the planner gives for the request it records.
//!
//! The recorded words never make `pr show` read a local file: a values file is taken, by its
//! name, from the app's directory on the branch, and flags that name local files are refused.

use std::path::PathBuf;

use clap::Parser;

use super::args::{AddArgs, RemoveArgs, SuspendArgs};
use super::layout::ClusterDir;
use super::plan::{self as app_plan, FileChange};
use super::spec::{AppSpec, Tier};
use super::{Context, add_changes, check_secret_ref, remove_listed, target_clusters};
use crate::error::{Error, Result};
use crate::git::Workspace;

/// The words of an add: `<app|platform> add NAME --url … [--cluster C]… [--update]`.
pub fn add_words(spec: &AppSpec, clusters: &[String], update: bool) -> Vec<String> {
    let mut words = vec![spec.tier.command().to_string(), "add".to_string()];
    words.extend(spec.words());
    words.extend(cluster_words(clusters));
    words.extend(update.then(|| "--update".to_string()));
    words
}

/// The words of a removal: `<app|platform> remove NAME [--cluster C]…`.
pub fn remove_words(tier: Tier, name: &str, clusters: &[String]) -> Vec<String> {
    let mut words = vec![tier.command().to_string(), "remove".to_string(), name.to_string()];
    words.extend(cluster_words(clusters));
    words
}

/// The words of `app suspend|resume NAME --persist`.
pub fn persist_words(name: &str, suspend: bool) -> Vec<String> {
    let verb = if suspend { "suspend" } else { "resume" };
    ["app", verb, name, "--persist"].map(String::from).to_vec()
}

/// `--cluster C` for each cluster given.
pub fn cluster_words(clusters: &[String]) -> impl Iterator<Item = String> + '_ {
    clusters.iter().flat_map(|cluster| ["--cluster".to_string(), cluster.clone()])
}

/// A command's flags `T`, parsed from recorded words.
#[derive(Parser)]
#[command(no_binary_name = true)]
struct Recorded<T: clap::Args> {
    #[command(flatten)]
    args: T,
}

/// What a recorded request plans again: its files, and the branch its pull request goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replanned {
    /// `gitops/<verb>-<name>-<hash of the files>`: the branch a pull request of this plan has.
    pub branch: String,
    /// The file changes, on the base they were planned on.
    pub files: Vec<FileChange>,
}

impl Replanned {
    /// The plan of change `verb` of `name`: `files`, and the branch that names them.
    pub fn of(verb: &str, name: &str, files: Vec<FileChange>) -> Replanned {
        Replanned { branch: app_plan::pull_request_branch(verb, name, &files), files }
    }
}

/// The command's flags `T`, parsed from recorded `words` (those after the command and its verb);
/// `all` are the whole recorded words, for the error.
pub(crate) fn parse_args<T: clap::Args>(words: &[String], all: &[String]) -> Result<T> {
    Recorded::<T>::try_parse_from(words)
        .map(|recorded| recorded.args)
        .map_err(|error| unreadable(all, &first_line(&error)))
}

/// A recorded request that cannot be planned, and why.
pub(crate) fn unreadable(words: &[String], why: &str) -> Error {
    Error::usage(
        format!("the recorded request `{}{}` cannot be planned: {why}", app_plan::PREFIX, words.join(" ")),
        "the pull request body was edited, or a newer kubectl-gitops opened it",
    )
}

/// The file changes the recorded `app`/`platform` `words` plan on `workspace` (a checkout of the
/// commit the branch left the config branch at), for `context`'s cluster. `branch_files` are
/// the branch's own changes, where the values files are read from.
pub(crate) async fn replan(
    words: &[String],
    context: &Context,
    workspace: &Workspace,
    branch_files: &[(String, Option<Vec<u8>>)],
) -> Result<Replanned> {
    let (tier, verb, rest) = match words {
        [command, verb, rest @ ..] if command == "app" => (Tier::App, verb.as_str(), rest),
        [command, verb, rest @ ..] if command == "platform" => (Tier::Platform, verb.as_str(), rest),
        _ => return Err(unreadable(words, "it is not an app or platform command")),
    };
    match verb {
        "add" => {
            let parsed: AddArgs = parse_args(rest, words)?;
            if parsed.create_repo.is_some() || parsed.export || parsed.new_repo.given() {
                return Err(unreadable(words, "it asks for more than an app's definition"));
            }
            let read_values = |paths: &[PathBuf]| {
                let read = |path: &PathBuf| values_on_branch(path, &parsed.name, branch_files);
                super::spec::values_files(paths, &read)
            };
            let mut spec = AppSpec::from_args_reading(&parsed, &read_values)?;
            spec.tier = tier;
            check_secret_ref(&spec, context)?;
            let base = &workspace.files();
            let clusters = target_clusters(base, &parsed.clusters, context.record())?;
            let per_cluster_values = !parsed.clusters.is_empty();
            let (namespace, versions) = (&context.namespace, &context.versions);
            let files = add_changes(&spec, &clusters, per_cluster_values, namespace, versions, parsed.update, base)?;
            Ok(Replanned::of("add", &spec.name, files))
        }
        "remove" => {
            let parsed: RemoveArgs = parse_args(rest, words)?;
            crate::names::validate_name(&parsed.name, "app name")?;
            let base = &workspace.files();
            let clusters: Vec<ClusterDir> = target_clusters(base, &parsed.clusters, context.record())?;
            Ok(Replanned::of("remove", &parsed.name, remove_listed(tier.root(), &parsed.name, &clusters, base)?))
        }
        "suspend" | "resume" if tier == Tier::App => {
            let parsed: SuspendArgs = parse_args(rest, words)?;
            if !parsed.persist {
                return Err(unreadable(words, "without --persist it changes only the cluster"));
            }
            let request = parsed.request(verb == "suspend")?;
            let files = super::persisted(&request, context, workspace).await?;
            Ok(Replanned::of(verb, &request.name, files))
        }
        other => Err(unreadable(words, &format!("{other:?} is not add, remove, suspend or resume"))),
    }
}

/// A values file of app `app` as the branch writes it: `…/<app>/values/<file name>`.
fn values_on_branch(
    path: &std::path::Path,
    app: &str,
    branch_files: &[(String, Option<Vec<u8>>)],
) -> std::io::Result<String> {
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let suffix = format!("/{app}/values/{name}");
    branch_files
        .iter()
        .find_map(|(file, contents)| contents.as_ref().filter(|_| file.ends_with(&suffix)))
        .map(|contents| String::from_utf8_lossy(contents).into_owned())
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("the branch writes no {name} for {app}"))
        })
}

fn first_line(error: &clap::Error) -> String {
    error.to_string().lines().next().unwrap_or_default().trim_start_matches("error: ").to_string()
}
