//! What every changing command plans for the repo: the files it writes or deletes, each with
//! its contents before and after, computed against a checkout of the branch. `--dry-run` shows
//! them as a diff; [`crate::publish`] writes them, and computes them again on a new head when a
//! push is refused.

use std::collections::BTreeMap;

use crate::error::Result;
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
