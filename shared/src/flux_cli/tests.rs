//! The parts of the download that need no server: the checksums file, the archive, the cache.
//! The download itself runs against a real release server in tests/tests/it/flux.rs.

use std::path::Path;

use super::release::{Cached, cached, verify_cached};
use super::*;

fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (name, bytes) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        builder.append_data(&mut header, name, *bytes).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

fn tag(text: &str) -> Tag {
    text.parse().unwrap()
}

fn release(cache: &Path) -> Release {
    Release::for_this_machine(&tag("v2.9.4"), "http://127.0.0.1:9/{version}/", cache).unwrap()
}

#[test]
fn the_release_names_this_machine_s_assets() {
    let cache = tempfile::tempdir().unwrap();
    let release = release(cache.path());
    assert_eq!(release.base_url, "http://127.0.0.1:9/v2.9.4");
    assert_eq!(release.checksums, "flux_2.9.4_checksums.txt");
    assert!(release.archive.starts_with("flux_2.9.4_") && release.archive.ends_with(".tar.gz"), "{}", release.archive);
    assert_eq!(release.dir(), cache.path().join("v2.9.4"));
    // A release dependencies.toml does not list is unpinned, and the locator refuses it unless
    // the command allows it.
    let other = Release::for_this_machine(&tag("v2.8.0"), "http://x/{version}", cache.path()).unwrap();
    assert_eq!(other.pin, Pin::Unpinned);
    let locator = Locator { cache_root: Some(cache.path().to_path_buf()), ..Locator::new(None) };
    let refused = locator.release(&tag("v2.8.0")).unwrap_err();
    assert!(refused.to_string().starts_with("flux v2.8.0 is not a release this kubectl-gitops pins"), "{refused}");
    assert_eq!(locator.allowing_unpinned(true).release(&tag("v2.8.0")).unwrap().version, tag("v2.8.0"));
}

#[test]
fn an_unpacked_cli_is_found_in_the_cache_until_it_changes() {
    let cache = tempfile::tempdir().unwrap();
    let release = release(cache.path());
    assert_eq!(cached(&release), Cached::Missing);
    let archive = tar_gz(&[("LICENSE", b"Apache-2.0"), ("flux", b"#!/bin/sh\necho flux\n")]);
    let bytes = release::unpack(&archive, &release).unwrap();
    assert_eq!(bytes, b"#!/bin/sh\necho flux\n");
    let binary = release.store(&bytes).unwrap();
    assert_eq!(binary, release.dir().join("flux"));
    assert_eq!(verify_cached(&release), Some(binary.clone()));
    let names: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["v2.9.4"], "no staging directory left");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&binary).unwrap().permissions().mode() & 0o777, 0o755);
    }
    // One byte changed at the same size is a changed CLI, never one to run; so is another size,
    // and storing again replaces the directory.
    std::fs::write(&binary, b"#!/bin/sh\necho FLUX\n").unwrap();
    assert_eq!(cached(&release), Cached::Changed(binary.clone()));
    assert_eq!(verify_cached(&release), None);
    std::fs::write(&binary, b"truncated").unwrap();
    assert_eq!(cached(&release), Cached::Changed(binary.clone()));
    release.store(&bytes).unwrap();
    assert_eq!(cached(&release), Cached::Verified(binary.clone()));
    // Where a run finds it changed, it says so and removes it, so that it is downloaded again.
    std::fs::write(&binary, b"#!/bin/sh\necho FLUX\n").unwrap();
    let printer = crate::output::Printer::new(crate::cli::ColorChoice::Never, 0, 0);
    assert_eq!(release::verify_cached_or_warn(&release, &printer).unwrap(), None);
    assert!(!release.dir().exists());
}

#[test]
fn an_archive_without_the_cli_or_not_gzip_is_refused() {
    let cache = tempfile::tempdir().unwrap();
    let release = release(cache.path());
    let error = release::unpack(&tar_gz(&[("README.md", b"hi")]), &release).unwrap_err();
    assert_eq!(error.to_string(), format!("{} cannot be unpacked: it holds no flux", release.archive));
    assert_eq!(error.exit_code(), crate::error::ExitCode::Usage);
    let error = release::unpack(b"not gzip", &release).unwrap_err();
    assert!(error.to_string().starts_with(&format!("{} cannot be unpacked: ", release.archive)), "{error}");
}

#[test]
fn the_checksums_file_names_the_archive_s_sha256() {
    let cache = tempfile::tempdir().unwrap();
    let mut release = release(cache.path());
    let sha = "a".repeat(64);
    let text = format!("{}  flux_2.9.4_darwin_arm64.tar.gz\n{sha}  {}\n", "b".repeat(64), release.archive);
    assert_eq!(release.archive_sha256(text.as_bytes()).unwrap(), sha);
    let missing = release.archive_sha256(b"").unwrap_err();
    assert_eq!(missing.to_string(), format!("flux_2.9.4_checksums.txt lists no sha256 for {}", release.archive));
    // With a pinned sha256, another checksums file is refused before it is read.
    release.pin = Pin::Checksums("0".repeat(64));
    let refused = release.archive_sha256(text.as_bytes()).unwrap_err();
    assert!(refused.to_string().starts_with("flux_2.9.4_checksums.txt does not match dependencies.toml"), "{refused}");
    assert_eq!(refused.exit_code(), crate::error::ExitCode::Usage);
}

#[test]
fn an_explicit_cli_must_exist() {
    let locator = Locator {
        flag: Some(PathBuf::from("/nonexistent/flux")),
        environment: None,
        cache_root: None,
        ..Locator::new(None)
    };
    let error = locator.find_local(&tag("v2.9.4")).unwrap_err();
    assert_eq!(error.to_string(), "--flux-bin names /nonexistent/flux, which is not a file");
}

#[test]
fn an_archive_whose_cli_declares_more_than_any_flux_release_holds_is_refused_before_reading_it() {
    let mut header = tar::Header::new_gnu();
    header.set_path("flux").unwrap();
    header.set_size(1 << 40);
    header.set_mode(0o755);
    header.set_cksum();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gzip, header.as_bytes()).unwrap();
    let archive = gzip.finish().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let release = release(cache.path());
    let error = release::unpack(&archive, &release).unwrap_err();
    assert_eq!(error.to_string(), format!("{} cannot be unpacked: its flux is larger than 512 MiB", release.archive));
    assert_eq!(error.exit_code(), crate::error::ExitCode::Usage);
}
