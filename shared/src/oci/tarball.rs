//! The tarball inside a Flux OCI artifact, byte for byte the tar stream `flux build artifact` and
//! `flux push artifact` write (fluxcd/pkg/tar `Tar` through Go's archive/tar), so an artifact we
//! push and one flux pushes of the same directory hold the same files in the same bytes.
//!
//! What Flux does, and so what this does:
//! - the directory is walked depth first, each directory's entries in byte order of their names
//!   (Go's `filepath.WalkDir`), the directory itself first, as `.`;
//! - only regular files and directories are archived: symlinks and special files are skipped;
//! - names are relative and have no trailing slash, even for directories;
//! - uid, gid, user and group names and every time are zero, the mode is the permission bits;
//! - headers are USTAR (a long name split into prefix and name when it can be), else PAX with a
//!   `path` record, as Go's writer picks them; two zero blocks end the stream, no padding after;
//! - the default ignores are Flux's (`.git/` and its friends, images and archives), plus
//!   `--ignore-paths`, gitignore patterns relative to the directory.
//!
//! The gzip around it is ours (zlib's deflate, not Go's), so layer digests differ from flux's,
//! but our own are reproducible: the gzip header carries no name and no time.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::error::{Error, Result};

/// What Flux leaves out of every artifact (fluxcd/pkg/sourceignore `ExcludeVCS` and `ExcludeExt`,
/// the `--ignore-paths` default of `flux push artifact`).
pub const DEFAULT_IGNORES: [&str; 12] = [
    ".git/",
    ".gitignore",
    ".gitmodules",
    ".gitattributes",
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
];

const BLOCK: usize = 512;
const NAME_SIZE: usize = 100;
const PREFIX_SIZE: usize = 155;

/// The uncompressed tar stream of `dir`, leaving out what `ignore_paths` (gitignore patterns,
/// relative to `dir`) matches. `dir` must be a directory.
pub fn tar(dir: &Path, ignore_paths: &[String]) -> Result<Vec<u8>> {
    let metadata = std::fs::metadata(dir).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => Error::usage(
            format!("{} does not exist", dir.display()),
            "--path names the directory whose files become the artifact",
        ),
        _ => Error::io(format!("cannot read {}", dir.display()), source),
    })?;
    if !metadata.is_dir() {
        return Err(Error::usage(
            format!("{} is a file, not a directory", dir.display()),
            "--path names the directory whose files become the artifact; put the file in a directory of its own",
        ));
    }
    let matcher = matcher(dir, ignore_paths)?;
    let mut out = Vec::new();
    let mut pending = vec![(PathBuf::new(), dir.to_path_buf())];
    // Depth first, in name order: a directory's children are pushed in reverse so the smallest
    // name comes off the stack first.
    while let Some((relative, path)) = pending.pop() {
        let metadata = std::fs::symlink_metadata(&path)
            .map_err(|source| Error::io(format!("cannot read {}", path.display()), source))?;
        let kind = metadata.file_type();
        if !(kind.is_file() || kind.is_dir()) {
            continue;
        }
        let root = relative.as_os_str().is_empty();
        if !root && matcher.matched_path_or_any_parents(&relative, kind.is_dir()).is_ignore() {
            // Flux skips the entry but still walks a skipped directory; what is inside is
            // matched through its parent, so skipping the walk too leaves out the same files.
            continue;
        }
        let name = if root { ".".to_string() } else { relative.to_string_lossy().replace('\\', "/") };
        let entry = Entry {
            name,
            mode: mode_of(&metadata),
            size: if kind.is_file() { metadata.len() } else { 0 },
            directory: kind.is_dir(),
        };
        write_header(&mut out, &entry);
        if kind.is_file() {
            let start = out.len();
            let mut file = std::fs::File::open(&path)
                .map_err(|source| Error::io(format!("cannot read {}", path.display()), source))?;
            std::io::copy(&mut file, &mut out)
                .map_err(|source| Error::io(format!("cannot read {}", path.display()), source))?;
            if (out.len() - start) as u64 != entry.size {
                return Err(Error::usage(
                    format!("{} changed while it was being archived", path.display()),
                    "run again when nothing writes to the directory",
                ));
            }
            pad(&mut out);
        } else {
            let mut children: Vec<_> = std::fs::read_dir(&path)
                .map_err(|source| Error::io(format!("cannot read {}", path.display()), source))?
                .map(|child| child.map(|child| child.file_name()))
                .collect::<std::io::Result<_>>()
                .map_err(|source| Error::io(format!("cannot read {}", path.display()), source))?;
            children.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
            for child in children.into_iter().rev() {
                pending.push((relative.join(&child), path.join(&child)));
            }
        }
    }
    out.extend_from_slice(&[0; 2 * BLOCK]);
    Ok(out)
}

/// `tar` gzipped, reproducibly: the same files always give the same bytes.
pub fn tar_gz(dir: &Path, ignore_paths: &[String]) -> Result<Vec<u8>> {
    gzip(&tar(dir, ignore_paths)?)
}

/// Gzip with no file name and a zero time in the header.
pub fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(data.len() / 4), Compression::default());
    encoder
        .write_all(data)
        .and_then(|()| encoder.finish())
        .map_err(|source| Error::io("cannot compress the artifact", source))
}

/// Flux's ignores and the user's, as one gitignore rooted at `dir`.
fn matcher(dir: &Path, ignore_paths: &[String]) -> Result<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    for pattern in DEFAULT_IGNORES.iter().copied().chain(ignore_paths.iter().map(String::as_str)) {
        builder.add_line(None, pattern).map_err(|error| {
            Error::usage(
                format!("--ignore-paths {pattern:?} is not a gitignore pattern: {error}"),
                "patterns are gitignore lines relative to --path, like `*.md` or `/tests/`",
            )
        })?;
    }
    builder.build().map_err(|error| {
        Error::usage(format!("--ignore-paths: {error}"), "patterns are gitignore lines relative to --path")
    })
}

#[cfg(unix)]
fn mode_of(metadata: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    // Go's FileInfoHeader keeps the permission bits and setuid, setgid and sticky.
    metadata.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn mode_of(metadata: &std::fs::Metadata) -> u32 {
    match (metadata.is_dir(), metadata.permissions().readonly()) {
        (true, _) => 0o755,
        (false, true) => 0o444,
        (false, false) => 0o666,
    }
}

struct Entry {
    name: String,
    mode: u32,
    size: u64,
    directory: bool,
}

/// One entry's header: USTAR when its name fits (split into prefix and name if need be), else a
/// PAX extended header carrying the name, then the USTAR-shaped main header, as Go writes them.
fn write_header(out: &mut Vec<u8>, entry: &Entry) {
    let flag = if entry.directory { b'5' } else { b'0' };
    let mut block = [0u8; BLOCK];
    if let Some((prefix, name)) = ustar_name(&entry.name) {
        fill_main(&mut block, name, entry, flag);
        put_string(&mut block[345..500], prefix);
        finish_block(&mut block);
        out.extend_from_slice(&block);
        return;
    }
    // PAX: a record `path=<name>` in a file `PaxHeaders.0/<base>` of type 'x'.
    let record = pax_record("path", &entry.name);
    let (dir, base) = match entry.name.rfind('/') {
        Some(at) => (&entry.name[..=at], &entry.name[at + 1..]),
        None => ("", entry.name.as_str()),
    };
    let mut pax_name: String = format!("{dir}PaxHeaders.0/{base}").chars().filter(char::is_ascii).collect();
    pax_name.truncate(NAME_SIZE);
    let pax_name = pax_name.trim_end_matches('/');
    let mut pax = [0u8; BLOCK];
    pax[156] = b'x';
    put_string(&mut pax[0..100], pax_name);
    put_octal(&mut pax[100..108], 0);
    put_octal(&mut pax[108..116], 0);
    put_octal(&mut pax[116..124], 0);
    put_octal(&mut pax[124..136], record.len() as u64);
    put_octal(&mut pax[136..148], 0);
    finish_block(&mut pax);
    out.extend_from_slice(&pax);
    out.extend_from_slice(record.as_bytes());
    pad(out);
    let ascii: String = entry.name.chars().filter(char::is_ascii).collect();
    fill_main(&mut block, &ascii, entry, flag);
    finish_block(&mut block);
    out.extend_from_slice(&block);
}

/// The fields Go's `templateV7Plus` writes.
fn fill_main(block: &mut [u8; BLOCK], name: &str, entry: &Entry, flag: u8) {
    block[156] = flag;
    put_string(&mut block[0..100], name);
    put_octal(&mut block[100..108], u64::from(entry.mode));
    put_octal(&mut block[108..116], 0);
    put_octal(&mut block[116..124], 0);
    put_octal(&mut block[124..136], entry.size);
    put_octal(&mut block[136..148], 0);
    put_octal(&mut block[329..337], 0);
    put_octal(&mut block[337..345], 0);
}

/// The magic, the version and the checksum (six octal digits, NUL, space).
fn finish_block(block: &mut [u8; BLOCK]) {
    block[257..263].copy_from_slice(b"ustar\0");
    block[263..265].copy_from_slice(b"00");
    block[148..156].fill(b' ');
    let sum: u64 = block.iter().map(|&byte| u64::from(byte)).sum();
    put_octal(&mut block[148..155], sum);
    block[155] = b' ';
}

/// Go's `splitUSTARPath`: the name as is when it fits, else split at a slash into a prefix of at
/// most 155 bytes and a name of at most 100; `None` when neither works or the name is not ASCII.
fn ustar_name(name: &str) -> Option<(&str, &str)> {
    if !name.is_ascii() {
        return None;
    }
    if name.len() <= NAME_SIZE {
        return Some(("", name));
    }
    let mut length = name.len();
    if length > PREFIX_SIZE + 1 {
        length = PREFIX_SIZE + 1;
    } else if name.as_bytes()[length - 1] == b'/' {
        length -= 1;
    }
    let at = name[..length].rfind('/')?;
    let suffix = name.len() - at - 1;
    (at > 0 && suffix <= NAME_SIZE && suffix > 0 && at <= PREFIX_SIZE).then(|| (&name[..at], &name[at + 1..]))
}

/// Go's `formatPAXRecord`: `<length> <key>=<value>\n`, the length counting itself.
fn pax_record(key: &str, value: &str) -> String {
    let mut size = key.len() + value.len() + 3;
    size += size.to_string().len();
    let record = format!("{size} {key}={value}\n");
    if record.len() == size { record } else { format!("{} {key}={value}\n", record.len()) }
}

/// Go's `formatString`: the bytes, NUL-terminated when shorter than the field.
fn put_string(field: &mut [u8], value: &str) {
    let bytes = value.as_bytes();
    let n = bytes.len().min(field.len());
    field[..n].copy_from_slice(&bytes[..n]);
    if n < field.len() {
        field[n] = 0;
    }
}

/// Go's `formatOctal`: zero-padded octal leaving room for a NUL.
fn put_octal(field: &mut [u8], value: u64) {
    let digits = format!("{value:o}");
    let padded = format!("{}{digits}", "0".repeat(field.len().saturating_sub(digits.len() + 1)));
    put_string(field, &padded);
}

/// Zeros up to the next 512-byte block.
fn pad(out: &mut Vec<u8>) {
    let rest = out.len() % BLOCK;
    if rest != 0 {
        out.resize(out.len() + BLOCK - rest, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    /// Names, types and sizes of the entries, read back with the `tar` crate.
    fn listing(stream: &[u8]) -> Vec<(String, bool, u64)> {
        let mut archive = ::tar::Archive::new(stream);
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let header = entry.header();
                (
                    entry.path().unwrap().to_string_lossy().into_owned(),
                    header.entry_type().is_dir(),
                    header.size().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn walks_depth_first_in_byte_order_with_the_directory_first() {
        let dir = tree(&[("b.yaml", "b"), ("a/x.yaml", "xx"), ("a.yaml", "a"), ("B.yaml", "B")]);
        let names: Vec<_> = listing(&tar(dir.path(), &[]).unwrap()).into_iter().map(|(name, ..)| name).collect();
        assert_eq!(names, [".", "B.yaml", "a", "a/x.yaml", "a.yaml", "b.yaml"]);
    }

    #[test]
    fn leaves_out_flux_default_ignores_and_the_users() {
        let dir = tree(&[
            ("deploy.yaml", "d"),
            (".git/config", "c"),
            (".gitignore", "i"),
            ("sub/.gitattributes", "a"),
            ("logo.png", "p"),
            ("docs/readme.md", "r"),
            ("chart.tar.gz", "t"),
        ]);
        let names: Vec<_> =
            listing(&tar(dir.path(), &["*.md".to_string()]).unwrap()).into_iter().map(|(name, ..)| name).collect();
        assert_eq!(names, [".", "deploy.yaml", "docs", "sub"]);
    }

    #[cfg(unix)]
    #[test]
    fn skips_symlinks() {
        let dir = tree(&[("real.yaml", "r")]);
        std::os::unix::fs::symlink("real.yaml", dir.path().join("link.yaml")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        let names: Vec<_> = listing(&tar(dir.path(), &[]).unwrap()).into_iter().map(|(name, ..)| name).collect();
        assert_eq!(names, [".", "real.yaml"]);
    }

    #[test]
    fn headers_are_what_go_writes() {
        let dir = tree(&[("a.yaml", "hello")]);
        let stream = tar(dir.path(), &[]).unwrap();
        // ".", then "a.yaml" and its one data block, then the two zero blocks.
        assert_eq!(stream.len(), 5 * BLOCK);
        let file = &stream[BLOCK..2 * BLOCK];
        assert_eq!(&file[0..7], b"a.yaml\0");
        assert_eq!(&file[108..116], b"0000000\0", "uid");
        assert_eq!(&file[124..136], b"00000000005\0", "size");
        assert_eq!(&file[136..148], b"00000000000\0", "mtime");
        assert_eq!(file[156], b'0');
        assert_eq!(&file[257..265], b"ustar\x0000");
        assert_eq!(&file[265..297], &[0; 32], "no user name");
        assert_eq!(&file[329..337], b"0000000\0", "devmajor");
        assert_eq!(file[154..156], [0, b' '], "checksum: six digits, NUL, space");
        let sum: u64 =
            file.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { u64::from(b) }).sum();
        assert_eq!(&file[148..154], format!("{sum:06o}").as_bytes());
        assert_eq!(&stream[2 * BLOCK..2 * BLOCK + 5], b"hello");
        let root = &stream[..BLOCK];
        assert_eq!(&root[0..2], b".\0");
        assert_eq!(root[156], b'5');
    }

    #[test]
    fn long_names_split_into_prefix_or_go_to_pax() {
        assert_eq!(ustar_name("short"), Some(("", "short")));
        let deep = format!("{}/{}", "d".repeat(120), "f".repeat(90));
        assert_eq!(ustar_name(&deep), Some((&deep[..120], &deep[121..])));
        assert_eq!(ustar_name(&"f".repeat(101)), None);
        assert_eq!(ustar_name("ünïcode"), None);
        assert_eq!(pax_record("path", "abc"), "12 path=abc\n");
        // 4 + 92 + 3 = 99, plus two digits is 101, but "101" has three: the record is 102 long.
        assert_eq!(pax_record("path", &"x".repeat(92)), format!("102 path={}\n", "x".repeat(92)));
        let dir = tree(&[(&"f".repeat(120), "x")]);
        let entries = listing(&tar(dir.path(), &[]).unwrap());
        assert_eq!(entries[1].0, "f".repeat(120), "the tar crate reads the PAX path back");
    }

    #[test]
    fn the_same_directory_gives_the_same_bytes() {
        let dir = tree(&[("a.yaml", "a"), ("b/c.yaml", "c")]);
        assert_eq!(tar_gz(dir.path(), &[]).unwrap(), tar_gz(dir.path(), &[]).unwrap());
    }

    #[test]
    fn a_missing_path_or_a_file_is_bad_input() {
        let dir = tree(&[("a.yaml", "a")]);
        for path in [dir.path().join("nope"), dir.path().join("a.yaml")] {
            let error = tar(&path, &[]).unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{error}");
        }
    }
}
