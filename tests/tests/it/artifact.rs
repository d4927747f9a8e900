//! `kubectl gitops artifact` against Debian's docker-registry and the real flux CLI (built from
//! its Go module): the same tar stream as `flux build artifact`, reproducible pushes, each tool
//! pulling what the other pushed, list, tag and diff, and bad input failing cleanly.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use gitops_e2e::binaries;
use gitops_e2e::flux_release;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::servers::{OwnRegistry, REGISTRY_PASSWORD, REGISTRY_USER};
use sha2::{Digest, Sha256};

fn flux() -> PathBuf {
    flux_release::cli_dir().unwrap().join("bin/flux")
}

/// Our artifact command, with no docker config of the user's in the way.
fn ours(args: &[&str]) -> Run {
    let mut command = Command::new(binaries::path("kubectl-gitops-artifact"));
    command.args(args).env("DOCKER_CONFIG", "/nonexistent").env("NO_COLOR", "1");
    Run::of(&mut command)
}

fn flux_run(args: &[&str]) -> Run {
    let mut command = Command::new(flux());
    command.args(args).env("DOCKER_CONFIG", "/nonexistent");
    Run::of(&mut command)
}

/// A directory with what an artifact meets: nesting, a name too long for a USTAR name field
/// (split into prefix and name), one too long to split (PAX), non-ASCII, a private file, a
/// symlink (skipped) and what Flux ignores (.git/, images, archives).
fn package() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let files = [
        ("config/default/kustomization.yaml".to_string(), "resources:\n- ../crd\n"),
        ("config/crd/widgets.yaml".to_string(), "kind: CustomResourceDefinition\n"),
        (format!("deep/{}/{}.yaml", "d".repeat(120), "f".repeat(90)), "long: prefix\n"),
        (format!("{}.yaml", "g".repeat(120)), "long: pax\n"),
        ("ünïcode.yaml".to_string(), "name: ü\n"),
        ("private.yaml".to_string(), "secret: no\n"),
        (".git/config".to_string(), "[core]\n"),
        (".gitignore".to_string(), "*.tmp\n"),
        ("logo.png".to_string(), "png"),
        ("chart.tar.gz".to_string(), "tgz"),
    ];
    for (path, text) in &files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.join("private.yaml"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("private.yaml", root.join("link.yaml")).unwrap();
    dir
}

fn gunzip_sha256(path: &Path) -> String {
    let mut decoder = flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap());
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut decoder, &mut bytes).unwrap();
    format!("{:x}", Sha256::digest(&bytes))
}

/// Relative path → contents of every file under `dir`.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    binaries::files_in(dir)
}

fn manifest(registry: &str, repository: &str, reference: &str) -> serde_json::Value {
    let output = Command::new("curl")
        .args(["-sf", "-H", "Accept: application/vnd.oci.image.manifest.v1+json"])
        .arg(format!("http://{registry}/v2/{repository}/manifests/{reference}"))
        .output()
        .unwrap();
    assert!(output.status.success(), "GET manifest {repository}:{reference}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn assert_ok(run: &Run, what: &str) {
    assert_eq!(run.code, Some(0), "{what}:\n{}", run.render());
}

#[test]
fn push_and_pull_match_the_flux_cli() {
    let own = OwnRegistry::start(false).unwrap();
    let registry = own.registry.address.clone();
    let package = package();
    let work = tempfile::tempdir().unwrap();
    let path = package.path().to_str().unwrap();

    // The tar stream inside the layer is the one flux writes, byte for byte.
    let (flux_tgz, our_tgz) = (work.path().join("flux.tgz"), work.path().join("ours.tgz"));
    assert_ok(&flux_run(&["build", "artifact", "--path", path, "--output", flux_tgz.to_str().unwrap()]), "flux build");
    assert_ok(&ours(&["build", "--path", path, "--file", our_tgz.to_str().unwrap()]), "our build");
    assert_eq!(gunzip_sha256(&our_tgz), gunzip_sha256(&flux_tgz), "the gunzipped tar streams differ");

    // Pushes: ours twice with --reproducible (the same digests), flux's once.
    let url = |tag: &str| format!("oci://{registry}/manifests/app:{tag}");
    let meta = ["--source", "https://git.example.com/app", "--revision", "main@sha1:4b2e1c0"];
    let push = |tag: &str| {
        let run = ours(&[&["push", &url(tag), "--path", path, "--reproducible", "-o", "json"][..], &meta].concat());
        assert_ok(&run, "our push");
        gitops_e2e::schema::document("Artifact", &run.stdout)
    };
    let (first, second) = (push("ours"), push("again"));
    assert_eq!(first["digest"], second["digest"], "the same directory and flags give the same manifest digest");
    assert_eq!(first["repository"], format!("oci://{registry}/manifests/app"));
    assert_eq!(first["tag"], "ours");
    assert_eq!(first["reference"], format!("oci://{registry}/manifests/app@{}", first["digest"].as_str().unwrap()));
    assert_ok(
        &flux_run(&[&["push", "artifact", &url("flux"), "--path", path, "--reproducible"][..], &meta].concat()),
        "flux push",
    );

    // The registry holds the same shape from both, the layer digest aside.
    let (theirs, mine) = (manifest(&registry, "manifests/app", "flux"), manifest(&registry, "manifests/app", "ours"));
    for field in ["schemaVersion", "mediaType", "config", "annotations"] {
        assert_eq!(mine[field], theirs[field], "manifest field {field}");
    }
    assert_eq!(mine["layers"][0]["mediaType"], theirs["layers"][0]["mediaType"]);
    assert_eq!(mine["layers"].as_array().unwrap().len(), 1);

    // flux pulls ours, we pull flux's: the same files, which are the package's minus the ignored.
    let (flux_pulled, we_pulled) = (work.path().join("flux-pulled"), work.path().join("we-pulled"));
    std::fs::create_dir(&flux_pulled).unwrap();
    assert_ok(&flux_run(&["pull", "artifact", &url("ours"), "--output", flux_pulled.to_str().unwrap()]), "flux pull");
    let pulled = ours(&["pull", &url("flux"), "--dir", we_pulled.to_str().unwrap()]);
    assert_ok(&pulled, "our pull");
    assert_eq!(pulled.stdout.trim(), theirs_digest(&registry));
    assert_eq!(files(&flux_pulled), files(&we_pulled));
    let mut expected = files(package.path());
    expected.retain(|path, _| {
        !(path.starts_with(".git") || path.ends_with(".png") || path.ends_with(".tar.gz") || path == "link.yaml")
    });
    assert_eq!(files(&we_pulled), expected);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(we_pulled.join("private.yaml")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "file modes come through");

    // list, tag and diff.
    let tagged = ours(&["tag", &url("ours"), "--tag", "stable"]);
    assert_ok(&tagged, "tag");
    assert_eq!(tagged.stdout.trim(), first["digest"].as_str().unwrap());
    let listed = ours(&["list", &format!("oci://{registry}/manifests/app"), "-o", "json"]);
    assert_ok(&listed, "list");
    let listed = gitops_e2e::schema::document("ArtifactList", &listed.stdout)["items"].as_array().unwrap().clone();
    let rows: Vec<(&str, &str)> =
        listed.iter().map(|row| (row["tag"].as_str().unwrap(), row["digest"].as_str().unwrap())).collect();
    let digest = first["digest"].as_str().unwrap();
    let flux_digest = theirs_digest(&registry);
    assert_eq!(
        rows,
        [("again", digest), ("flux", flux_digest.as_str()), ("ours", digest), ("stable", digest)],
        "tags in order with their digests"
    );
    assert!(
        listed.iter().all(|row| row["revision"] == "main@sha1:4b2e1c0" && row["created"] == "1970-01-01T00:00:00Z")
    );
    let table = ours(&["list", &format!("oci://{registry}/manifests/app")]);
    assert!(table.stdout.starts_with("TAG") && table.stdout.contains("main@sha1:4b2e1c0"), "{}", table.stdout);

    let same = ours(&["diff", &url("flux"), "--path", path]);
    assert_eq!((same.code, same.stdout.as_str()), (Some(0), ""), "{}", same.render());
    std::fs::write(package.path().join("config/crd/widgets.yaml"), "kind: Changed\n").unwrap();
    std::fs::write(package.path().join("new.yaml"), "new: true\n").unwrap();
    let differs = ours(&["diff", &url("flux"), "--path", path]);
    assert_eq!(differs.code, Some(1), "{}", differs.render());
    assert_eq!(differs.stdout, "changed\tconfig/crd/widgets.yaml\nonly-local\tnew.yaml\n");
    let differs = ours(&["diff", &url("flux"), "--path", path, "-o", "json"]);
    assert_eq!(differs.code, Some(1), "{}", differs.render());
    let differs = gitops_e2e::schema::document("ArtifactDifferenceList", &differs.stdout);
    assert_eq!(differs["items"][1], serde_json::json!({"path": "new.yaml", "change": "only-local"}), "{differs:#}");
}

fn theirs_digest(registry: &str) -> String {
    let output = Command::new("curl")
        .args(["-sfI", "-H", "Accept: application/vnd.oci.image.manifest.v1+json"])
        .arg(format!("http://{registry}/v2/manifests/app/manifests/flux"))
        .output()
        .unwrap();
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("Docker-Content-Digest: "))
        .unwrap()
        .trim()
        .to_string()
}

/// Each failure: its exit code, an `error:` and a `hint:`, and nothing written.
#[test]
fn bad_input_fails_cleanly_and_writes_nothing() {
    let own = OwnRegistry::start(false).unwrap();
    let registry = &own.registry;
    let package = package();
    let path = package.path().to_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let out_arg = out.to_str().unwrap();
    let url = format!("oci://{}/bad/app", registry.address);
    let meta = ["--source", "s", "--revision", "r"];
    let expect = |run: Run, code: i32, says: &str| {
        assert_eq!(run.code, Some(code), "{says}:\n{}", run.render());
        assert!(run.stderr.contains(says), "expected {says:?}:\n{}", run.render());
        assert!(run.stderr.contains("\nhint: "), "a hint:\n{}", run.render());
        assert!(!run.stderr.contains("panicked") && !run.stderr.contains("Error {"), "{}", run.render());
    };
    expect(ours(&[&["push", &format!("{url}:v1")][..], &meta].concat()), 2, "--path is required");
    let file = package.path().join("private.yaml");
    expect(
        ours(&[&["push", &format!("{url}:v1"), "--path", file.to_str().unwrap()][..], &meta].concat()),
        2,
        "is a file, not a directory",
    );
    expect(ours(&[&["push", &url, "--path", path][..], &meta].concat()), 2, "names no tag");
    expect(
        ours(&[&["push", "oci://127.0.0.1:9/bad/app:v1", "--path", path][..], &meta].concat()),
        4,
        "cannot reach the registry 127.0.0.1:9",
    );
    expect(ours(&["pull", &format!("{url}:nope"), "--dir", out_arg]), 4, "does not exist");
    assert!(!out.exists(), "a failed pull writes nothing");

    // A layer whose bytes no longer match its digest (changed in the registry's storage).
    let pushed = ours(&[&["push", &format!("{url}:v1"), "--path", path, "-o", "json"][..], &meta].concat());
    assert_eq!(pushed.code, Some(0), "{}", pushed.render());
    gitops_e2e::schema::document("Artifact", &pushed.stdout);
    let layer = manifest(&registry.address, "bad/app", "v1")["layers"][0]["digest"].as_str().unwrap().to_string();
    let hex = layer.trim_start_matches("sha256:");
    let blob = registry.data.join(format!("docker/registry/v2/blobs/sha256/{}/{hex}/data", &hex[..2]));
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();
    expect(ours(&["pull", &format!("{url}:v1"), "--dir", out_arg]), 2, "does not match its digest");
    assert!(!out.exists(), "a failed pull writes nothing");

    // Entries that would land outside the output directory.
    for (name, entry, link) in
        [("dotdot", "../x", None), ("absolute", "/etc/x", None), ("symlink", "out", Some("/etc"))]
    {
        registry.push_layer("bad/hostile", name, &hostile_layer(entry, link), "r").unwrap();
        expect(
            ours(&["pull", &format!("oci://{}/bad/hostile:{name}", registry.address), "--dir", out_arg]),
            2,
            "nothing was written",
        );
        assert!(!out.exists(), "{name}: a refused pull writes nothing");
    }
    let leftovers: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
    assert!(leftovers.is_empty(), "no staging directory is left behind");
}

/// Artifacts crafted by whoever can push to the registry: a gzip bomb (a few hundred kilobytes
/// that gunzip to 160 MiB), manifests declaring a layer far larger or smaller than it is, a tar
/// header declaring a terabyte, a manifest over the limit given. Before the limits, the first
/// was read whole into memory and the terabyte allocated (the process aborted). Each is refused
/// at once with exit 2, an error and a hint, and nothing is written.
#[test]
fn crafted_artifacts_are_refused_quickly_and_write_nothing() {
    let own = OwnRegistry::start(false).unwrap();
    let registry = &own.registry;
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let url = |tag: &str| format!("oci://{}/crafted/app:{tag}", registry.address);

    // The bomb, by GNU tar and gzip: twenty files of 8 MiB of zeros, each within the limit.
    let zeros = tempfile::tempdir().unwrap();
    for index in 0..20 {
        std::fs::File::create(zeros.path().join(format!("zeros-{index:02}.yaml"))).unwrap().set_len(8 << 20).unwrap();
    }
    let bomb = Command::new("sh")
        .arg("-c")
        .arg(format!("tar -C '{}' -cf - . | gzip -9", zeros.path().display()))
        .output()
        .unwrap()
        .stdout;
    assert!(bomb.len() < 1 << 20, "the bomb is small: {} bytes", bomb.len());
    registry.push_layer("crafted/app", "bomb", &bomb, "r").unwrap();

    let small = hostile_layer("config.yaml", None);
    let declaring = |size: u64| move |manifest: &mut serde_json::Value| manifest["layers"][0]["size"] = size.into();
    registry.push_crafted("crafted/app", "declares-a-terabyte", &small, "r", declaring(1 << 40)).unwrap();
    registry.push_crafted("crafted/app", "declares-less", &small, "r", declaring(16)).unwrap();
    let padded = |manifest: &mut serde_json::Value| manifest["annotations"]["padding"] = "x".repeat(8 << 10).into();
    registry.push_crafted("crafted/app", "large-manifest", &small, "r", padded).unwrap();

    // A header declaring a terabyte with nothing behind it.
    let mut header = tar::Header::new_gnu();
    header.set_path("huge.yaml").unwrap();
    header.set_size(1 << 40);
    header.set_mode(0o644);
    header.set_cksum();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, header.as_bytes()).unwrap();
    registry.push_layer("crafted/app", "terabyte-entry", &gz.finish().unwrap(), "r").unwrap();

    let out_arg = out.to_str().unwrap();
    for (tag, extra, says) in [
        ("bomb", &[][..], "bytes --max-unpacked-size (100 MiB) has left; nothing was written"),
        ("declares-a-terabyte", &[], "declares a layer of 1099511627776 bytes, more than 100 MiB (--max-layer-size)"),
        ("declares-less", &[], "the registry sent more than the 16 bytes the manifest declares"),
        ("terabyte-entry", &[], "entry huge.yaml declares 1099511627776 bytes"),
        ("large-manifest", &["--max-manifest-size", "4KiB"], "the manifest is larger than 4 KiB (--max-manifest-size)"),
    ] {
        let started = Instant::now();
        let pulled = ours(&[&["pull", &url(tag), "--dir", out_arg][..], extra].concat());
        let took = started.elapsed();
        assert_eq!(pulled.code, Some(2), "{tag}:\n{}", pulled.render());
        assert!(pulled.stderr.contains(says), "{tag}: expected {says:?}:\n{}", pulled.render());
        assert!(pulled.stderr.contains("\nhint: "), "{tag}: a hint:\n{}", pulled.render());
        assert!(took < Duration::from_secs(30), "{tag}: refused after {took:?}");
        eprintln!("{tag}: refused in {took:?}");
        assert!(!out.exists(), "{tag}: a refused pull writes nothing");
        let leftovers: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
        assert!(leftovers.is_empty(), "{tag}: nothing is left beside the output: {leftovers:?}");
    }
    let diffed = ours(&["diff", &url("bomb"), "--path", zeros.path().to_str().unwrap()]);
    assert_eq!(diffed.code, Some(2), "{}", diffed.render());
    assert!(diffed.stderr.contains("--max-unpacked-size"), "{}", diffed.render());

    // The limits are the user's to raise: the same manifest under the default limit pulls.
    let pulled = ours(&["pull", &url("large-manifest"), "--dir", out_arg]);
    assert_eq!(pulled.code, Some(0), "{}", pulled.render());
    assert_eq!(std::fs::read_to_string(out.join("config.yaml")).unwrap(), "x");

    // A link the output already holds (`out/sub -> elsewhere`) is not a way out of it: an
    // artifact with files under sub/ is refused, and nothing is written there or anywhere.
    let elsewhere = work.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("sub")).unwrap();
    registry.push_layer("crafted/app", "through-a-link", &hostile_layer("sub/config.yaml", None), "r").unwrap();
    let through = ours(&["pull", &url("through-a-link"), "--dir", out_arg]);
    assert_eq!(through.code, Some(2), "{}", through.render());
    assert!(
        through.stderr.contains(&format!(
            "error: {} is a symbolic link, and the artifact writes files into it; nothing was written\nhint: ",
            out.join("sub").display()
        )),
        "{}",
        through.render()
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing written through the link");
    let mut left: Vec<_> = std::fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["elsewhere", "out"], "no staging directory left");
}

/// A tar.gz with one entry named `name` (a symlink to `link` when given), written by GNU tar's
/// rules through the tar crate, raw, as an attacker would.
fn hostile_layer(name: &str, link: Option<&str>) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(if link.is_some() { tar::EntryType::Symlink } else { tar::EntryType::Regular });
    header.set_size(if link.is_some() { 0 } else { 1 });
    header.set_mode(0o644);
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    if let Some(link) = link {
        header.set_link_name(link).unwrap();
    }
    header.set_cksum();
    let mut builder = tar::Builder::new(Vec::new());
    builder.append(&header, if link.is_some() { &b""[..] } else { &b"x"[..] }).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &builder.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

#[test]
fn credentials_come_from_the_flag_or_the_docker_config_and_are_never_printed() {
    let own = OwnRegistry::start(true).unwrap();
    let package = package();
    let path = package.path().to_str().unwrap();
    let url = format!("oci://{}/private/app:v1", own.registry.address);
    let push = |extra: &[&str], docker_config: &Path| {
        let mut command = Command::new(binaries::path("kubectl-gitops-artifact"));
        command
            .args(["push", &url, "--path", path, "--source", "s", "--revision", "r", "--reproducible"])
            .args(extra)
            .env("DOCKER_CONFIG", docker_config)
            .env("NO_COLOR", "1");
        Run::of(&mut command)
    };
    let empty = tempfile::tempdir().unwrap();
    let anonymous = push(&[], empty.path());
    assert_eq!(anonymous.code, Some(4), "{}", anonymous.render());
    assert!(anonymous.stderr.contains("refused our credentials"), "{}", anonymous.render());
    let wrong = push(&["--creds", "ci:hunter2-wrong"], empty.path());
    assert_eq!(wrong.code, Some(4), "{}", wrong.render());
    assert!(!wrong.stderr.contains("hunter2-wrong") && !wrong.stdout.contains("hunter2-wrong"));
    let creds = format!("{REGISTRY_USER}:{REGISTRY_PASSWORD}");
    let right = push(&["--creds", &creds], empty.path());
    assert_eq!(right.code, Some(0), "{}", right.render());
    assert!(!right.stderr.contains(REGISTRY_PASSWORD) && !right.stdout.contains(REGISTRY_PASSWORD));

    // `docker login` writes base64(user:password) under the registry's host:port.
    let docker = tempfile::tempdir().unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(&creds);
    std::fs::write(
        docker.path().join("config.json"),
        format!(r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#, own.registry.address),
    )
    .unwrap();
    let from_config = push(&[], docker.path());
    assert_eq!(from_config.code, Some(0), "{}", from_config.render());
    assert_eq!(from_config.stdout.trim(), right.stdout.trim(), "the same artifact, the same digest");

    // A credential helper named for the registry (`credHelpers`) answers instead: it is asked
    // with the registry on stdin, as docker asks `docker-credential-<helper> get`.
    let helpers = tempfile::tempdir().unwrap();
    let asked = helpers.path().join("asked");
    let helper = helpers.path().join("docker-credential-ci");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 3\ncat > '{}'\nprintf '{{\"ServerURL\":\"x\",\"Username\":\"{REGISTRY_USER}\",\"Secret\":\"{REGISTRY_PASSWORD}\"}}'\n",
            asked.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let helped = tempfile::tempdir().unwrap();
    std::fs::write(
        helped.path().join("config.json"),
        format!(r#"{{"auths": {{}}, "credHelpers": {{"{}": "ci"}}}}"#, own.registry.address),
    )
    .unwrap();
    let path = format!("{}:{}", helpers.path().display(), std::env::var("PATH").unwrap());
    let mut command = Command::new(binaries::path("kubectl-gitops-artifact"));
    command
        .args(["push", &url, "--path", path_arg(&package), "--source", "s", "--revision", "r", "--reproducible"])
        .env("DOCKER_CONFIG", helped.path())
        .env("PATH", path)
        .env("NO_COLOR", "1");
    let from_helper = Run::of(&mut command);
    assert_eq!(from_helper.code, Some(0), "{}", from_helper.render());
    assert_eq!(
        std::fs::read_to_string(&asked).unwrap(),
        own.registry.address,
        "the helper was asked for this registry"
    );
}

fn path_arg(dir: &tempfile::TempDir) -> &str {
    dir.path().to_str().unwrap()
}
