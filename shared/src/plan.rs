//! What every changing command plans: its steps, each with its words, run in order by one
//! executor ([`run_steps`]) that names a failing step; and the files it writes or deletes in the
//! repo, each with its contents before and after, computed against a checkout of the branch.
//! `--dry-run` shows the steps and the files as a diff; [`crate::publish`] writes the files, and
//! computes them again on a new head when a push is refused.

use std::collections::BTreeMap;

use similar::TextDiff;

use crate::error::{Error, Result};
use crate::git::Checkout;

/// One file the change writes or deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Path from the repo root.
    pub path: String,
    /// The contents now; `None` when the file is new.
    pub before: Option<String>,
    /// The contents wanted; `None` deletes the file.
    pub after: Option<String>,
}

impl FileChange {
    /// `add`, `update` or `delete`.
    pub fn verb(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, _) => "add",
            (Some(_), Some(_)) => "update",
            (Some(_), None) => "delete",
        }
    }
}

/// How a branch's own change (every file it changes since it left its base, read back from git)
/// differs from a plan. Contents are compared byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// The plan changes the file; the branch does not.
    Missing {
        /// The path.
        path: String,
        /// What the plan does to it: `add`, `update`, `delete`.
        verb: &'static str,
    },
    /// Both change the file, to other contents (`None`: deleted).
    Contents {
        /// The path.
        path: String,
        /// The branch's contents.
        found: Option<Vec<u8>>,
        /// The planned contents.
        planned: Option<Vec<u8>>,
    },
    /// The branch changes a file the plan does not (`deleted`: it deletes it).
    Extra {
        /// The path.
        path: String,
        /// The branch deletes it.
        deleted: bool,
    },
}

impl Difference {
    /// In words; `plan` names whose plan it is (`the plan`, `the recorded request`).
    pub fn describe(&self, plan: &str) -> String {
        let blob = |contents: &Option<Vec<u8>>| {
            contents.as_deref().map_or_else(|| "deleted".to_string(), |bytes| format!("blob {}", blob_id(bytes)))
        };
        match self {
            Difference::Missing { path, verb } => {
                format!("{plan} plans to {verb} {path}, but the branch does not change it")
            }
            Difference::Contents { path, found, planned } => {
                format!("{path}: {} on the branch, {} as {plan} plans it", blob(found), blob(planned))
            }
            Difference::Extra { path, deleted } => {
                let verb = if *deleted { "deletes" } else { "changes" };
                format!("the branch {verb} {path}, which {plan} does not plan")
            }
        }
    }
}

/// Every difference between `planned` and a branch's own change `held` (each file it changes,
/// with its contents, `None` when deleted): nothing added, removed or changed outside the plan.
pub fn differences(planned: &[FileChange], held: &[(String, Option<Vec<u8>>)]) -> Vec<Difference> {
    let held_files: BTreeMap<&str, &Option<Vec<u8>>> =
        held.iter().map(|(path, contents)| (path.as_str(), contents)).collect();
    let mut found = Vec::new();
    for file in planned {
        let wanted = file.after.as_ref().map(|text| text.as_bytes().to_vec());
        match held_files.get(file.path.as_str()) {
            None => found.push(Difference::Missing { path: file.path.clone(), verb: file.verb() }),
            Some(contents) if **contents != wanted => found.push(Difference::Contents {
                path: file.path.clone(),
                found: (*contents).clone(),
                planned: wanted,
            }),
            Some(_) => {}
        }
    }
    for (path, contents) in held {
        if !planned.iter().any(|file| &file.path == path) {
            found.push(Difference::Extra { path: path.clone(), deleted: contents.is_none() });
        }
    }
    found
}

/// A file's git blob id, shortened to 12 hex digits: what `git hash-object` prints for it.
pub fn blob_id(contents: &[u8]) -> String {
    let oid = git2::Oid::hash_object(git2::ObjectType::Blob, contents)
        .map_or_else(|_| String::from("000000000000"), |oid| oid.to_string());
    oid[..12].to_string()
}

/// The files under `dirs` that `wanted` leaves out are deleted; files in `wanted` are written.
/// Only files that really change are returned, sorted by path.
pub fn diff(checkout: &Checkout, wanted: &BTreeMap<String, String>, dirs: &[String]) -> Result<Vec<FileChange>> {
    let mut changes = Vec::new();
    for (path, contents) in wanted {
        let before = read(checkout, path)?;
        if before.as_deref() != Some(contents.as_str()) {
            changes.push(FileChange { path: path.clone(), before, after: Some(contents.clone()) });
        }
    }
    for dir in dirs {
        for path in files_under(checkout, dir)? {
            if !wanted.contains_key(&path) {
                let before = read(checkout, &path)?;
                changes.push(FileChange { path, before, after: None });
            }
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(changes)
}

/// A file of the checkout as text; `None` when absent.
pub fn read(checkout: &Checkout, path: &str) -> Result<Option<String>> {
    Ok(checkout.read(path)?.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

/// Every file under a directory of the checkout, as repo paths, sorted.
pub fn files_under(checkout: &Checkout, dir: &str) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_string()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(checkout.root().join(&current)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = format!("{current}/{}", entry.file_name().to_string_lossy());
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(path),
                Ok(kind) if kind.is_file() => found.push(path),
                _ => {}
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The start of every `--dry-run`: the steps, numbered as execution names them.
pub fn render_steps<'a>(steps: impl IntoIterator<Item = &'a str>) -> String {
    let mut text = String::from("Plan:\n");
    for (number, words) in steps.into_iter().enumerate() {
        text.push_str(&format!("  {}. {words}\n", number + 1));
    }
    text
}

/// `git diff`-style text of one file change.
pub fn unified_diff(file: &FileChange) -> String {
    let before = file.before.as_deref().unwrap_or_default();
    let after = file.after.as_deref().unwrap_or_default();
    let old_name = if file.before.is_some() { format!("a/{}", file.path) } else { "/dev/null".to_string() };
    let new_name = if file.after.is_some() { format!("b/{}", file.path) } else { "/dev/null".to_string() };
    let diff = TextDiff::from_lines(before, after);
    let mut text = format!("diff --git a/{0} b/{0}\n", file.path);
    text.push_str(&diff.unified_diff().context_radius(3).header(&old_name, &new_name).to_string());
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// Runs a plan's steps in order, each given with its words (what `--dry-run` numbered); `run`
/// gets the step's number, the step and its words. A failure ends the run as [`Error::Step`],
/// naming the step's number and words, so that every command reports a failed step alike. No step
/// starts after Ctrl-C or SIGTERM ([`Error::Interrupted`]).
pub async fn run_steps<S>(
    steps: &[(S, String)],
    mut run: impl AsyncFnMut(usize, &S, &str) -> Result<()>,
) -> Result<()> {
    for (index, (step, words)) in steps.iter().enumerate() {
        may_start_step()?;
        run(index + 1, step, words).await.map_err(|source| failed_step(index + 1, steps.len(), words, source))?;
    }
    Ok(())
}

/// Whether the next step may start: not after Ctrl-C or SIGTERM.
pub fn may_start_step() -> Result<()> {
    match crate::interrupt::requested() {
        true => Err(Error::Interrupted),
        false => Ok(()),
    }
}

/// Step `number` of `total`, described by `words`, failed with `source`.
pub fn failed_step(number: usize, total: usize, words: &str, source: Error) -> Error {
    Error::Step { number, total, step: words.to_string(), source: Box::new(source) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failing_step_stops_the_run_and_is_named_with_its_number() {
        let steps = vec![(1, "first".to_string()), (2, "second".to_string()), (3, "third".to_string())];
        let mut ran = Vec::new();
        let outcome = run_steps(&steps, async |number, step: &i32, _: &str| {
            ran.push((number, *step));
            if *step == 2 { Err(Error::Internal("broken".into())) } else { Ok(()) }
        })
        .await;
        assert_eq!(ran, vec![(1, 1), (2, 2)], "the third step never ran");
        let error = outcome.unwrap_err();
        assert_eq!(error.to_string(), "step 2/3 (second) failed: internal error: broken");
        assert_eq!(error.exit_code(), crate::error::ExitCode::Internal, "the step's own exit code");
    }
}
