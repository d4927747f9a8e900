//! Unpacking an artifact's tarball into a directory, refusing anything that would land outside it.
//!
//! Every entry is checked before anything is written: an absolute name, a `..` component, a
//! symlink or a hard link is refused, and the whole pull fails with nothing written. The files go
//! to a staging directory beside the output first and are moved in only when all were written.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use flate2::read::GzDecoder;

use crate::error::{Error, Result};

/// One file or directory of an artifact, read into memory (artifacts are manifests: small).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedFile {
    /// The relative path, with `/` separators.
    pub path: String,
    /// `None` for a directory.
    pub contents: Option<Vec<u8>>,
    /// The permission bits.
    pub mode: u32,
}

/// Every entry of a gzipped tarball, checked: no entry may leave the directory it is unpacked in.
pub fn read(layer: &[u8]) -> Result<Vec<ArchivedFile>> {
    read_tar(GzDecoder::new(layer))
}

/// [`read`] of a tar stream that is not compressed (`artifact diff`'s own directory).
pub fn read_tar(stream: impl Read) -> Result<Vec<ArchivedFile>> {
    let unreadable = |why: String| {
        Error::Untrusted {
        message: format!("the artifact's layer is not a readable tar.gz: {why}"),
        hint: "check that the URL names a Flux artifact (pushed by `flux push artifact` or `kubectl gitops artifact push`)"
            .into(),
    }
    };
    let mut archive = tar::Archive::new(stream);
    let mut files = Vec::new();
    for entry in archive.entries().map_err(|error| unreadable(error.to_string()))? {
        let mut entry = entry.map_err(|error| unreadable(error.to_string()))?;
        let raw = entry.path().map_err(|error| unreadable(error.to_string()))?.into_owned();
        let kind = entry.header().entry_type();
        let escapes = |why: &str| Error::Untrusted {
            message: format!("the artifact holds {}, {why}; nothing was written", raw.display()),
            hint: "the artifact was not made by flux or kubectl gitops, or was tampered with: do not use it".into(),
        };
        if kind.is_symlink() || kind.is_hard_link() {
            return Err(escapes("a link, which could point outside the output directory"));
        }
        let path = safe_relative(&raw).ok_or_else(|| escapes("a path that leaves the output directory"))?;
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        if kind.is_dir() {
            files.push(ArchivedFile { path, contents: None, mode });
        } else if kind.is_file() {
            let mut contents = Vec::with_capacity(entry.size() as usize);
            entry.read_to_end(&mut contents).map_err(|error| unreadable(error.to_string()))?;
            files.push(ArchivedFile { path, contents: Some(contents), mode });
        } else if !matches!(kind, tar::EntryType::XHeader | tar::EntryType::XGlobalHeader) {
            return Err(escapes("an entry that is neither a file nor a directory"));
        }
    }
    Ok(files)
}

/// The path with `.` components dropped, or `None` when it is absolute or climbs out.
fn safe_relative(path: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?.to_string()),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(if parts.is_empty() { ".".to_string() } else { parts.join("/") })
}

/// Writes `files` into `output` (created if missing; files already there are replaced): all of
/// them are written to a staging directory beside it first, then moved in.
pub fn write(files: &[ArchivedFile], output: &Path) -> Result<()> {
    let io = |what: &str, path: &Path| {
        let context = format!("cannot {what} {}", path.display());
        move |source| Error::io(context, source)
    };
    let parent = match output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(io("create", &parent))?;
    let staging = tempfile::Builder::new()
        .prefix(".kubectl-gitops-pull-")
        .tempdir_in(&parent)
        .map_err(io("create a staging directory in", &parent))?;
    for file in files {
        let path = staging.path().join(&file.path);
        match &file.contents {
            None => std::fs::create_dir_all(&path).map_err(io("create", &path))?,
            Some(contents) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(io("create", dir))?;
                }
                write_file(&path, contents, file.mode).map_err(io("write", &path))?;
            }
        }
    }
    move_into(staging.path(), output)
}

/// Moves the tree at `from` into `to`, merging with what is there.
fn move_into(from: &Path, to: &Path) -> Result<()> {
    if !to.exists() {
        return std::fs::rename(from, to).map_err(|source| Error::io(format!("cannot write {}", to.display()), source));
    }
    if !to.is_dir() {
        return Err(Error::usage(
            format!("{} is a file, not a directory", to.display()),
            "--output names the directory the artifact's files are written to",
        ));
    }
    for entry in
        std::fs::read_dir(from).map_err(|source| Error::io(format!("cannot read {}", from.display()), source))?
    {
        let entry = entry.map_err(|source| Error::io(format!("cannot read {}", from.display()), source))?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            move_into(&entry.path(), &target)?;
        } else {
            std::fs::rename(entry.path(), &target)
                .map_err(|source| Error::io(format!("cannot write {}", target.display()), source))?;
        }
    }
    Ok(())
}

/// Creates the file with the archived mode (less the umask, as flux's untar and tar do), owner
/// read and write always kept, in one open instead of a write and a chmod.
#[cfg(unix)]
fn write_file(path: &Path, contents: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode | 0o600).open(path)?;
    file.write_all(contents)
}

#[cfg(not(unix))]
fn write_file(path: &Path, contents: &[u8], _mode: u32) -> std::io::Result<()> {
    std::fs::write(path, contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar.gz with one entry of the given kind, built with the tar crate, which (unlike ours)
    /// can write hostile names.
    fn hostile(name: &str, kind: tar::EntryType, link: Option<&str>) -> Vec<u8> {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(if kind.is_file() { 1 } else { 0 });
        header.set_mode(0o644);
        // set_path refuses `..`; write the raw name the way an attacker would.
        let raw = &mut header.as_old_mut().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        header.set_cksum();
        let mut builder = tar::Builder::new(Vec::new());
        builder.append(&header, if kind.is_file() { &b"x"[..] } else { &b""[..] }).unwrap();
        crate::oci::tarball::gzip(&builder.into_inner().unwrap()).unwrap()
    }

    #[test]
    fn refuses_entries_that_escape() {
        for layer in [
            hostile("../x", tar::EntryType::Regular, None),
            hostile("/etc/x", tar::EntryType::Regular, None),
            hostile("a/../../x", tar::EntryType::Regular, None),
            hostile("out", tar::EntryType::Symlink, Some("/etc")),
            hostile("hard", tar::EntryType::Link, Some("../../etc/passwd")),
        ] {
            let error = read(&layer).unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{error}");
            assert!(error.to_string().contains("nothing was written"), "{error}");
        }
    }

    #[test]
    fn round_trips_our_own_tarball_into_a_new_or_existing_directory() {
        let source = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(source.path().join("config/default")).unwrap();
        std::fs::write(source.path().join("config/default/kustomization.yaml"), "resources: []\n").unwrap();
        std::fs::write(source.path().join("README"), "r").unwrap();
        let files = read(&crate::oci::tarball::tar_gz(source.path(), &[]).unwrap()).unwrap();
        let paths: Vec<_> = files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(paths, [".", "README", "config", "config/default", "config/default/kustomization.yaml"]);
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("new");
        write(&files, &target).unwrap();
        assert_eq!(
            std::fs::read_to_string(target.join("config/default/kustomization.yaml")).unwrap(),
            "resources: []\n"
        );
        std::fs::write(target.join("README"), "old").unwrap();
        std::fs::write(target.join("kept"), "k").unwrap();
        write(&files, &target).unwrap();
        assert_eq!(std::fs::read_to_string(target.join("README")).unwrap(), "r");
        assert!(target.join("kept").exists());
        let leftovers: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, ["new"], "no staging directory is left behind");
    }
}
