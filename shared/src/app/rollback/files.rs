//! The files a rollback restores: a directory of the repository as an earlier commit held it,
//! read without leaving the repository (its path is the cluster's word) or following a link.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use crate::error::{Error, Result};
use crate::git::Checkout;
use crate::plan::FileChange;

/// The directory a Kustomization's `spec.path` names, relative to its repository's root (empty:
/// all of it), as the controller reads it (`./app`, `app`, `/app`). The path is the cluster's
/// word: one that leaves the repository is refused, so that it cannot make us read this
/// machine's files into a commit.
pub(super) fn repo_dir(spec_path: &str) -> Result<String> {
    let mut parts = Vec::new();
    for part in Path::new(spec_path.trim_start_matches('/')).components() {
        match part {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => return Err(leaves_the_repository(spec_path)),
        }
    }
    Ok(parts.join("/"))
}

fn leaves_the_repository(spec_path: &str) -> Error {
    Error::Untrusted {
        message: format!("the app's path {spec_path:?} leaves its repository; nothing was read or written"),
        hint: "the Kustomization's spec.path must name a directory inside its source".into(),
    }
}

/// Refuses a directory reached through a symbolic link: a commit could make one point anywhere
/// on this machine, whose files would then be restored into the repository.
fn inside(root: &Path, dir: &str, spec_path: &str) -> Result<()> {
    let mut at = root.to_path_buf();
    for part in dir.split('/').filter(|part| !part.is_empty()) {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
            return Err(leaves_the_repository(spec_path));
        }
    }
    Ok(())
}

/// The files under `dir` (the whole tree when empty) as `earlier` holds them, as changes to
/// `now`'s.
pub(super) fn restored(now: &Checkout, earlier: &Checkout, dir: &str) -> Result<Vec<FileChange>> {
    inside(now.root(), dir, dir)?;
    inside(earlier.root(), dir, dir)?;
    let (now_files, earlier_files) = (files_of(now.root(), dir)?, files_of(earlier.root(), dir)?);
    let mut changes = Vec::new();
    for path in now_files.keys().chain(earlier_files.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (before, after) = (now_files.get(path), earlier_files.get(path));
        if before != after {
            changes.push(FileChange { path: path.clone(), before: before.cloned(), after: after.cloned() });
        }
    }
    Ok(changes)
}

/// Every file under `dir` of a work tree (`.git` left out), by repo path, as text. Symbolic links
/// are not followed (a file type that is neither a directory nor a file is left out).
fn files_of(root: &Path, dir: &str) -> Result<BTreeMap<String, String>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_string()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&current)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if current.is_empty() { name.clone() } else { format!("{current}/{name}") };
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && name != ".git" => pending.push(path),
                Ok(kind) if kind.is_file() => {
                    let bytes = std::fs::read(entry.path())
                        .map_err(|error| Error::Io { context: format!("reading {path}"), source: error })?;
                    found.insert(path, String::from_utf8_lossy(&bytes).into_owned());
                }
                _ => {}
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;
    use crate::error::ExitCode;

    #[test]
    fn the_app_s_path_is_read_as_the_controller_reads_it_and_never_leaves_the_repository() {
        assert_eq!(repo_dir("./app").unwrap(), "app");
        assert_eq!(repo_dir("/deploy/web/").unwrap(), "deploy/web");
        assert_eq!(repo_dir("./").unwrap(), "");
        for escaping in ["../other", "./app/../../etc", "app/.."] {
            let refused = repo_dir(escaping).unwrap_err();
            assert_eq!(refused.exit_code(), ExitCode::Usage, "{escaping}");
            assert!(refused.to_string().contains("leaves its repository"), "{refused}");
        }
    }

    #[test]
    fn a_directory_reached_through_a_symbolic_link_is_refused_and_linked_files_are_not_read() {
        let repository = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("id_ed25519"), "a private key").unwrap();
        std::fs::create_dir(repository.path().join("app")).unwrap();
        std::fs::write(repository.path().join("app/config.yaml"), "kind: ConfigMap\n").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), repository.path().join("deploy")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("id_ed25519"), repository.path().join("app/key")).unwrap();
        assert!(inside(repository.path(), "deploy", "./deploy").is_err());
        assert!(inside(repository.path(), "app", "./app").is_ok());
        let files = files_of(repository.path(), "app").unwrap();
        assert_eq!(files.keys().collect::<Vec<_>>(), ["app/config.yaml"], "the linked file is not read");
        let whole = files_of(repository.path(), "").unwrap();
        assert!(whole.values().all(|text| text != "a private key"), "{whole:?}");
    }
}
