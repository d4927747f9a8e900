//! A fresh machine: `make deps` (tests/deps.sh) finds what is missing in seconds, before any
//! build, names it and how to get it, and installs Debian packages through the package manager.
//! The machine's state is simulated by the two probes the script takes from its environment: the
//! directories it looks commands up in, and the installer it runs.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The commands the script checks, each linked from the machine when it has it, except `absent`:
/// the directory stands for the machine's PATH in the script's probe (`GITOPS_DEPS_PATH`).
fn machine_without(dir: &Path, absent: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let path = format!("{}:/usr/sbin:/sbin", std::env::var("PATH").unwrap());
    for command in [
        "cargo",
        "cc",
        "make",
        "pkg-config",
        "go",
        "kubectl",
        "git",
        "curl",
        "openssl",
        "python3",
        "sshd",
        "ssh-keygen",
        "docker-registry",
        "unshare",
        "flock",
        "sha256sum",
        "tar",
        "unzip",
        "strip",
        "man",
        "chromium",
        "chromedriver",
        "npm",
        "cargo-fmt",
        "cargo-clippy",
        "sed",
        "sort",
        "head",
        "tail",
        "grep",
        "id",
        "mktemp",
        "rm",
        "bash",
        "env",
        "cat",
    ] {
        if absent.contains(&command) {
            continue;
        }
        let found = std::env::split_paths(&path).map(|dir| dir.join(command)).find(|candidate| candidate.exists());
        let found = found.unwrap_or_else(|| panic!("this machine has no {command}; run `make deps`"));
        // The interpreter itself, not a launcher such as pyenv's shim, which needs the real PATH:
        // the script imports jsonschema with it.
        let found = if command == "python3" { python_interpreter(&found) } else { found };
        std::os::unix::fs::symlink(found, dir.join(command)).unwrap();
    }
}

/// The executable `python3` runs as (`sys.executable`).
fn python_interpreter(python3: &Path) -> PathBuf {
    let output = Command::new(python3).args(["-c", "import sys; print(sys.executable)"]).output().unwrap();
    assert!(output.status.success(), "{} runs", python3.display());
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

fn deps_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deps.sh")
}

fn run_deps(mode: &str, bin: &Path, extra: &[(&str, &Path)]) -> (Output, Duration) {
    let started = Instant::now();
    let mut command = Command::new("bash");
    // A failed install keeps its log in TMPDIR: keep it inside the test's directory.
    let tmp = bin.parent().unwrap();
    command.arg(deps_script()).arg(mode).env("GITOPS_DEPS_PATH", bin).env("TMPDIR", tmp);
    for (name, value) in extra {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    (output, started.elapsed())
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn debian_release(dir: &Path) -> PathBuf {
    let file = dir.join("os-release");
    std::fs::write(&file, "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n").unwrap();
    file
}

#[test]
fn a_machine_without_docker_registry_and_sshd_fails_at_once_naming_them_and_make_deps() {
    let temp = tempfile::tempdir().unwrap();
    let bin = temp.path().join("bin");
    machine_without(&bin, &["docker-registry", "sshd"]);
    let release = debian_release(temp.path());
    let (output, took) = run_deps("check", &bin, &[("GITOPS_DEPS_OS_RELEASE", &release)]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(took < Duration::from_secs(10), "the check took {took:?}");
    assert!(output.stdout.is_empty());
    assert!(text.contains("missing docker-registry") && text.contains("Debian package docker-registry"), "{text}");
    assert!(text.contains("missing sshd") && text.contains("Debian package openssh-server"), "{text}");
    assert!(text.contains("hint: run `make deps` (apt-get install docker-registry openssh-server)"), "{text}");
    assert!(!text.contains("missing git "), "{text}");
    assert!(text.lines().all(|line| line.starts_with("deps: ")), "every line is the script's own: {text}");
}

#[test]
fn make_deps_installs_the_missing_debian_packages_through_the_package_manager() {
    let temp = tempfile::tempdir().unwrap();
    let bin = temp.path().join("bin");
    machine_without(&bin, &["docker-registry", "sshd"]);
    let release = debian_release(temp.path());
    // The installer records its arguments and then "installs": links the two commands in.
    let calls = temp.path().join("calls");
    let installer = temp.path().join("installer");
    std::fs::write(
        &installer,
        format!(
            "#!/bin/bash\necho \"$*\" >> '{calls}'\nif [[ $1 == install ]]; then ln -s /bin/true '{bin}/docker-registry'; ln -s /bin/true '{bin}/sshd'; fi\n",
            calls = calls.display(),
            bin = bin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&installer, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (output, _) =
        run_deps("install", &bin, &[("GITOPS_DEPS_OS_RELEASE", &release), ("GITOPS_DEPS_INSTALLER", &installer)]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), "update -qq\ninstall -y -qq docker-registry openssh-server\n");
    assert!(text.contains("deps: installing docker-registry openssh-server"), "{text}");
    assert!(text.contains("deps: all present"), "{text}");
}

#[test]
fn elsewhere_make_deps_names_what_is_missing_and_installs_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let bin = temp.path().join("bin");
    machine_without(&bin, &["docker-registry", "go"]);
    let release = temp.path().join("os-release");
    std::fs::write(&release, "ID=fedora\n").unwrap();
    let installer = temp.path().join("must-not-run");
    let (output, _) =
        run_deps("install", &bin, &[("GITOPS_DEPS_OS_RELEASE", &release), ("GITOPS_DEPS_INSTALLER", &installer)]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("hint: install the equivalent of Debian's docker-registry with your package manager"),
        "{text}"
    );
    assert!(text.contains("missing go: Go, to build the test environment"), "{text}");
    assert!(text.contains("hint: get go from the upstream installers"), "{text}");
    assert!(!installer.exists());
}

#[test]
fn this_machine_has_everything() {
    let output = Command::new("bash").arg(deps_script()).arg("check").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// `make testenv` and `make demo` on a machine without docker-registry: one line within seconds,
/// naming what is missing, `make deps` and the log file; no backtrace, nothing built first.
#[test]
fn the_environment_on_a_machine_without_docker_registry_fails_at_once_in_one_line() {
    let temp = tempfile::tempdir().unwrap();
    let bin = temp.path().join("bin");
    machine_without(&bin, &["docker-registry"]);
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_gitops-testenv"))
        .arg("up")
        .env("GITOPS_DEPS_PATH", &bin)
        .env("XDG_RUNTIME_DIR", temp.path())
        .env("TMPDIR", temp.path())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let took = started.elapsed();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(took < Duration::from_secs(20), "it took {took:?}: {text}");
    let errors: Vec<&str> = text.lines().filter(|line| line.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{text}");
    let error = errors[0];
    assert!(error.starts_with("testenv: error: the environment did not start"), "{error}");
    assert!(error.contains("missing docker-registry") && error.contains("run `make deps`"), "{error}");
    let log = temp.path().join("kubectl-gitops-testenv.log");
    assert!(error.ends_with(&format!("full log: {}", log.display())), "{error}");
    assert!(!text.contains("backtrace") && !text.contains("Traceback"), "{text}");
}
