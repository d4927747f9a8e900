//! Unpacking an artifact's tarball into a directory, refusing anything that would land outside it
//! or that exceeds the pull's [`Limits`].
//!
//! The tarball streams from the layer file through gunzip: every entry is checked as it comes
//! (an absolute name, a `..` component, a symlink or a hard link is refused, and so is an entry
//! past `--max-entries` or declaring more bytes than `--max-unpacked-size` has left), and every
//! byte gunzip gives is counted, so nothing is held in memory and nothing is allocated from what
//! a header declares. The files go to a staging directory beside the output and are moved in only
//! when all were written and every directory they go to is a directory of the output, not a link
//! out of it; a refusal leaves nothing.

use std::cell::Cell;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::oci::limits::{Limits, size_text};

/// One entry of an artifact, as unpacked or listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The relative path, with `/` separators (`.` for the top directory).
    pub path: String,
    /// A file (else a directory).
    pub file: bool,
    /// The sha256 of a file's contents, when listed ([`list`]; unpacking does not hash).
    pub digest: Option<String>,
}

/// Every entry of a tar stream, checked and hashed, nothing written: `artifact diff`.
pub fn list(tar: impl Read, limits: &Limits) -> Result<Vec<Entry>> {
    walk(tar, limits, None)
}

/// Unpacks a tar stream into `output` (created if missing; files already there are replaced):
/// written to a staging directory beside it first, moved in once every entry checked out.
pub fn unpack(tar: impl Read, output: &Path, limits: &Limits) -> Result<Vec<Entry>> {
    let parent = parent_of(output);
    std::fs::create_dir_all(&parent)
        .map_err(|source| Error::io(format!("cannot create {}", parent.display()), source))?;
    let staging = tempfile::Builder::new()
        .prefix(".kubectl-gitops-pull-")
        .tempdir_in(&parent)
        .map_err(|source| Error::io(format!("cannot create a staging directory in {}", parent.display()), source))?;
    let entries = walk(tar, limits, Some(staging.path()))?;
    if output.exists() {
        if !output.is_dir() {
            return Err(Error::usage(
                format!("{} is a file, not a directory", output.display()),
                "--output names the directory the artifact's files are written to",
            ));
        }
        check_destination(staging.path(), output)?;
    }
    move_into(staging.path(), output)?;
    Ok(entries)
}

/// The directory `path` is in (`.` for a bare name): where a pull stages its files.
pub fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn unreadable(why: String) -> Error {
    Error::Untrusted {
        message: format!("the artifact's layer is not a readable tar.gz: {why}"),
        hint: "check that the URL names a Flux artifact (pushed by `flux push artifact` or `kubectl gitops artifact push`)"
            .into(),
    }
}

/// A refusal for a limit, naming the flag that raises it.
fn too_large(what: String, flag: &str) -> Error {
    Error::Untrusted {
        message: format!("{what}; nothing was written"),
        hint: format!(
            "the artifact was crafted or is not a set of manifests: do not use it; if you trust it, raise {flag}"
        ),
    }
}

/// Reads the tar stream entry by entry under `limits`, writing files under `into` when given.
fn walk(tar: impl Read, limits: &Limits, into: Option<&Path>) -> Result<Vec<Entry>> {
    let read = Rc::new(Cell::new(0u64));
    let over_budget = || {
        too_large(
            format!("the artifact unpacks to more than {} (--max-unpacked-size)", size_text(limits.unpacked)),
            "--max-unpacked-size",
        )
    };
    // An error while the budget is spent is the budget's, whatever the tar reader made of it.
    let failed = |error: std::io::Error| {
        if read.get() > limits.unpacked { over_budget() } else { unreadable(error.to_string()) }
    };
    let mut archive = tar::Archive::new(Budget { inner: tar, read: Rc::clone(&read), limit: limits.unpacked });
    let mut entries = Vec::new();
    for entry in archive.entries().map_err(failed)? {
        let mut entry = entry.map_err(failed)?;
        if entries.len() as u64 >= limits.entries {
            return Err(too_large(
                format!("the artifact holds more than {} entries (--max-entries)", limits.entries),
                "--max-entries",
            ));
        }
        let raw = entry.path().map_err(failed)?.into_owned();
        let kind = entry.header().entry_type();
        let escapes = |why: &str| Error::Untrusted {
            message: format!("the artifact holds {}, {why}; nothing was written", raw.display()),
            hint: "the artifact was not made by flux or kubectl gitops, or was tampered with: do not use it".into(),
        };
        if kind.is_symlink() || kind.is_hard_link() {
            return Err(escapes("a link, which could point outside the output directory"));
        }
        let path = safe_relative(&raw).ok_or_else(|| escapes("a path that leaves the output directory"))?;
        let declared = entry.size();
        let left = limits.unpacked.saturating_sub(read.get());
        if declared > left {
            return Err(too_large(
                format!(
                    "the artifact's entry {path} declares {declared} bytes, more than the {left} bytes --max-unpacked-size ({}) has left",
                    size_text(limits.unpacked)
                ),
                "--max-unpacked-size",
            ));
        }
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        let target = into.map(|dir| dir.join(&path));
        if kind.is_dir() {
            if let Some(target) = &target {
                std::fs::create_dir_all(target)
                    .map_err(|source| Error::io(format!("cannot create {}", target.display()), source))?;
            }
            entries.push(Entry { path, file: false, digest: None });
        } else if kind.is_file() {
            let digest = copy_file(&mut entry, target.as_deref(), mode).map_err(|error| match error {
                Copy::Read(error) => failed(error),
                Copy::Write(path, source) => Error::io(format!("cannot write {}", path.display()), source),
            })?;
            entries.push(Entry { path, file: true, digest });
        } else if !matches!(kind, tar::EntryType::XHeader | tar::EntryType::XGlobalHeader) {
            return Err(escapes("an entry that is neither a file nor a directory"));
        }
    }
    Ok(entries)
}

/// Why copying an entry stopped: reading the tarball, or writing the file.
enum Copy {
    Read(std::io::Error),
    Write(PathBuf, std::io::Error),
}

/// Streams an entry's contents into the file `target`, or, without one, through sha256 (whose
/// hex it returns).
fn copy_file(entry: &mut impl Read, target: Option<&Path>, mode: u32) -> std::result::Result<Option<String>, Copy> {
    let Some(target) = target else {
        let mut hasher = Sha256::new();
        std::io::copy(entry, &mut hasher).map_err(Copy::Read)?;
        return Ok(Some(format!("{:x}", hasher.finalize())));
    };
    let written = |error| Copy::Write(target.to_path_buf(), error);
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(|error| Copy::Write(dir.to_path_buf(), error))?;
    }
    let mut file = create_file(target, mode).map_err(written)?;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let count = entry.read(&mut buffer).map_err(Copy::Read)?;
        if count == 0 {
            return Ok(None);
        }
        file.write_all(&buffer[..count]).map_err(written)?;
    }
}

/// The gunzipped stream, counted: past `limit` bytes it fails (and the count tells why).
struct Budget<R> {
    inner: R,
    read: Rc<Cell<u64>>,
    limit: u64,
}

impl<R: Read> Read for Budget<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let count = self.inner.read(buffer)?;
        self.read.set(self.read.get().saturating_add(count as u64));
        if self.read.get() > self.limit {
            return Err(std::io::Error::other("the unpacked size limit was reached"));
        }
        Ok(count)
    }
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

/// Checks, before anything moves, where the staged tree at `from` lands in the existing
/// directory `to`: a directory there that is a link (`out/sub -> /elsewhere`) would take the
/// artifact's files outside the output, and a file where a directory goes (or the reverse) would
/// stop the move half done. The output itself may be a link: the operator named it.
fn check_destination(from: &Path, to: &Path) -> Result<()> {
    let unreadable = |path: &Path, source| Error::io(format!("cannot read {}", path.display()), source);
    for entry in std::fs::read_dir(from).map_err(|source| unreadable(from, source))? {
        let entry = entry.map_err(|source| unreadable(from, source))?;
        let target = to.join(entry.file_name());
        let existing = match std::fs::symlink_metadata(&target) {
            Ok(existing) => existing.file_type(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(unreadable(&target, source)),
        };
        let directory = entry.file_type().map_err(|source| unreadable(&entry.path(), source))?.is_dir();
        let clash = if existing.is_symlink() && directory {
            "a symbolic link, and the artifact writes files into it"
        } else if directory && !existing.is_dir() {
            "not a directory, and the artifact has a directory there"
        } else if !directory && existing.is_dir() {
            "a directory, and the artifact has a file there"
        } else {
            ""
        };
        if !clash.is_empty() {
            return Err(Error::usage(
                format!("{} is {clash}; nothing was written", target.display()),
                "pull into a new directory (another --dir), or move what is there out of the way",
            ));
        }
        if directory {
            check_destination(&entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Moves the tree at `from` into `to`, merging with what is there ([`check_destination`] first).
fn move_into(from: &Path, to: &Path) -> Result<()> {
    if !to.exists() {
        return std::fs::rename(from, to).map_err(|source| Error::io(format!("cannot write {}", to.display()), source));
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
fn create_file(path: &Path, mode: u32) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode | 0o600).open(path)
}

#[cfg(not(unix))]
fn create_file(path: &Path, _mode: u32) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
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

    fn gunzipped(layer: &[u8]) -> flate2::read::GzDecoder<&[u8]> {
        flate2::read::GzDecoder::new(layer)
    }

    #[test]
    fn refuses_entries_that_escape_and_writes_nothing() {
        let out = tempfile::tempdir().unwrap();
        for layer in [
            hostile("../x", tar::EntryType::Regular, None),
            hostile("/etc/x", tar::EntryType::Regular, None),
            hostile("a/../../x", tar::EntryType::Regular, None),
            hostile("out", tar::EntryType::Symlink, Some("/etc")),
            hostile("hard", tar::EntryType::Link, Some("../../etc/passwd")),
        ] {
            let error = list(gunzipped(&layer), &Limits::default()).unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{error}");
            assert!(error.to_string().contains("nothing was written"), "{error}");
            assert!(unpack(gunzipped(&layer), &out.path().join("out"), &Limits::default()).is_err());
        }
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "nothing written, no staging left");
    }

    /// A tar stream of files of zeros, `(name, size)`.
    fn zeros(files: &[(&str, usize)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, size) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(*size as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, std::io::repeat(0).take(*size as u64)).unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn limits_refuse_before_reading_or_allocating_what_is_declared() {
        let limits = Limits { unpacked: 64 << 10, entries: 3, ..Limits::default() };
        let refused = |tar: Vec<u8>, says: &str| {
            let out = tempfile::tempdir().unwrap();
            let error = unpack(tar.as_slice(), &out.path().join("out"), &limits).unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{error}");
            assert!(error.to_string().contains(says), "{error}");
            assert!(error.hint().unwrap().contains("raise --max-"), "{error:?}");
            assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "nothing written, no staging left");
        };
        refused(
            zeros(&[("big", 1 << 20)]),
            "entry big declares 1048576 bytes, more than the 65024 bytes --max-unpacked-size (64 KiB) has left",
        );
        refused(zeros(&[("a", 1), ("b", 1), ("c", 1), ("d", 1)]), "more than 3 entries (--max-entries)");
        refused(zeros(&[("a", 40 << 10), ("b", 40 << 10)]), "entry b declares 40960 bytes");

        // A header declaring an entry of a terabyte, and nothing behind it: refused at once, not
        // allocated.
        let mut header = tar::Header::new_gnu();
        header.set_path("huge").unwrap();
        header.set_size(1 << 40);
        header.set_cksum();
        refused(header.as_bytes().to_vec(), "entry huge declares 1099511627776 bytes");

        // What the tar reader reads for itself (a PAX header's records) counts too.
        let mut builder = tar::Builder::new(Vec::new());
        let padding = "x".repeat(100 << 10);
        builder.append_pax_extensions([("comment", padding.as_bytes())]).unwrap();
        builder.append_data(&mut tar::Header::new_gnu(), "a", &b""[..]).unwrap();
        refused(builder.into_inner().unwrap(), "unpacks to more than 64 KiB (--max-unpacked-size)");

        // Within the limits, the same kind of stream unpacks.
        let out = tempfile::tempdir().unwrap();
        let entries = unpack(zeros(&[("a", 20 << 10), ("b", 20 << 10)]).as_slice(), &out.path().join("o"), &limits);
        assert_eq!(entries.unwrap().len(), 2);
    }

    /// Our own tarball of `config/default/kustomization.yaml` and a `README`.
    fn config_layer() -> Vec<u8> {
        let source = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(source.path().join("config/default")).unwrap();
        std::fs::write(source.path().join("config/default/kustomization.yaml"), "resources: []\n").unwrap();
        std::fs::write(source.path().join("README"), "r").unwrap();
        crate::oci::tarball::tar_gz(source.path(), &[]).unwrap()
    }

    #[test]
    fn round_trips_our_own_tarball_into_a_new_or_existing_directory() {
        let layer = config_layer();
        let listed = list(gunzipped(&layer), &Limits::default()).unwrap();
        let paths: Vec<_> = listed.iter().map(|entry| entry.path.as_str()).collect();
        assert_eq!(paths, [".", "README", "config", "config/default", "config/default/kustomization.yaml"]);
        assert_eq!(listed[1].digest.as_deref(), Some(crate::flux_cli::sha256_hex(b"r").as_str()));
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("new");
        let unpacked = unpack(gunzipped(&layer), &target, &Limits::default()).unwrap();
        let shape = |entries: &[Entry]| entries.iter().map(|e| (e.path.clone(), e.file)).collect::<Vec<_>>();
        assert_eq!(shape(&unpacked), shape(&listed));
        assert_eq!(
            std::fs::read_to_string(target.join("config/default/kustomization.yaml")).unwrap(),
            "resources: []\n"
        );
        std::fs::write(target.join("README"), "old").unwrap();
        std::fs::write(target.join("kept"), "k").unwrap();
        unpack(gunzipped(&layer), &target, &Limits::default()).unwrap();
        assert_eq!(std::fs::read_to_string(target.join("README")).unwrap(), "r");
        assert!(target.join("kept").exists());
        let leftovers: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, ["new"], "no staging directory is left behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_or_a_file_where_the_artifact_has_a_directory_is_refused_and_nothing_moves() {
        let layer = config_layer();
        let work = tempfile::tempdir().unwrap();
        let (out, elsewhere) = (work.path().join("out"), work.path().join("elsewhere"));
        std::fs::create_dir_all(elsewhere.join("default")).unwrap();
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&elsewhere, out.join("config")).unwrap();
        let error = unpack(gunzipped(&layer), &out, &Limits::default()).unwrap_err();
        assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{error}");
        assert!(error.to_string().contains("config is a symbolic link"), "{error}");
        assert!(!elsewhere.join("default/kustomization.yaml").exists(), "nothing written through the link");
        assert!(!out.join("README").exists(), "nothing written at all");
        std::fs::remove_file(out.join("config")).unwrap();
        std::fs::write(out.join("config"), "a file").unwrap();
        let error = unpack(gunzipped(&layer), &out, &Limits::default()).unwrap_err();
        assert!(error.to_string().contains("config is not a directory"), "{error}");
        assert!(!out.join("README").exists());
        let leftovers: Vec<_> = std::fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers.len(), 2, "no staging directory is left behind: {leftovers:?}");
    }
}
