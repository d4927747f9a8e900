//! Requests recorded in a pull request's body, as a reviewer would type them, and what they plan
//! again (`pr show`): the shared parts; each command replans its own words.

use clap::Parser;
use futures::future::BoxFuture;

use super::Context;
use super::plan::{self, FileChange};
use crate::error::{Error, Result};
use crate::git::Workspace;
use crate::output::Printer;

/// A recorded request to plan again: its words, the cluster's context, a checkout of the commit
/// the branch left the config branch at, and the branch's own files (where values files are read
/// from).
pub struct Recorded<'a> {
    pub words: &'a [String],
    pub context: &'a Context,
    pub base: &'a Workspace,
    pub branch_files: &'a [(String, Option<Vec<u8>>)],
    pub printer: &'a Printer,
}

/// Plans a recorded request again with the planner of the command its words name. A recorded
/// request may be any changing command's, so the dispatch is the edge's (`recorded_commands`,
/// above every command), handed to `pr` and the faces by the binaries: `pr` itself imports no
/// other command (docs/ARCHITECTURE.md).
pub type Replanner = for<'a> fn(Recorded<'a>) -> BoxFuture<'a, Result<Replanned>>;

/// `--cluster-name C` for each cluster given.
pub fn cluster_words(clusters: &[String]) -> impl Iterator<Item = String> + '_ {
    clusters.iter().flat_map(|cluster| ["--cluster-name".to_string(), cluster.clone()])
}

/// A command's flags `T`, parsed from recorded words.
#[derive(Parser)]
#[command(no_binary_name = true)]
struct RecordedFlags<T: clap::Args> {
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
        Replanned { branch: plan::pull_request_branch(verb, name, &files), files }
    }
}

/// The command's flags `T`, parsed from recorded `words` (those after the command and its verb);
/// `all` are the whole recorded words, for the error.
pub(crate) fn parse_args<T: clap::Args>(words: &[String], all: &[String]) -> Result<T> {
    RecordedFlags::<T>::try_parse_from(words)
        .map(|recorded| recorded.args)
        .map_err(|error| unreadable(all, &first_line(&error)))
}

/// A recorded request that cannot be planned, and why.
pub(crate) fn unreadable(words: &[String], why: &str) -> Error {
    Error::usage(
        format!("the recorded request `{}{}` cannot be planned: {why}", plan::PREFIX, words.join(" ")),
        "the pull request body was edited, or a newer kubectl-gitops opened it",
    )
}

fn first_line(error: &clap::Error) -> String {
    error.to_string().lines().next().unwrap_or_default().trim_start_matches("error: ").to_string()
}
