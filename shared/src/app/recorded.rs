//! The request a pull request records in its body, and the plan recomputed from it (`pr show`).
//!
//! Every change that opens a pull request writes the words that give it again, as a reviewer
//! would type them (`kubectl gitops app add hello --url … --cluster-name dev`): `app`/`platform`
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

use super::args::{AddArgs, RemoveArgs, SuspendArgs};
use super::spec::{AppSpec, Tier};
use super::{add_changes, check_secret_ref};
use crate::change::Context;
use crate::change::context::target_clusters;
use crate::change::layout::{ClusterDir, remove_listed};
use crate::change::recorded::{Replanned, cluster_words, parse_args, unreadable};
use crate::error::Result;
use crate::git::Workspace;

/// The words of an add: `<app|platform> add NAME --url … [--cluster-name C]… [--update]`.
pub fn add_words(spec: &AppSpec, clusters: &[String], update: bool) -> Vec<String> {
    let mut words = vec![spec.tier.command().to_string(), "add".to_string()];
    words.extend(spec.words());
    words.extend(cluster_words(clusters));
    words.extend(update.then(|| "--update".to_string()));
    words
}

/// The words of a removal: `<app|platform> remove NAME [--cluster-name C]…`.
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
            super::settings::checked_clusters(&parsed.clusters)?;
            let mut spec = AppSpec::from_definition(&parsed.definition(), None, &read_values)?;
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
