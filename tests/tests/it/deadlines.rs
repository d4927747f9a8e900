//! Deadlines and interrupts, end to end. A git server that accepts and never answers (a raw
//! listener: `gitops_e2e::http::Silent`), over HTTP and SSH, ends `install` and `app` at their
//! `--timeout` with exit 4 and a hint; Ctrl-C ends a command blocked on it within 2 s with exit
//! 130 and no clone left behind, and stops the UI with such a request in flight; it ends a watch as
//! asked, with exit 0. A forge that answers 503 is asked again until it answers, and no longer than
//! the request's timeout.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gitops_e2e::http::Silent;
use gitops_e2e::testenv::process::run;
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::ui::Ui;
use gitops_e2e::{binaries, flux_release};
use gitops_shared::provider::Kind;
use serde_json::json;

use crate::app_provider::Fixture;

/// What the deadline tests allow beyond a deadline: starting the binary, and a loaded machine.
const MARGIN: Duration = Duration::from_secs(3);
/// What Ctrl-C may take to end a command (docs/exit-codes.md).
const INTERRUPT_LIMIT: Duration = Duration::from_secs(2);

/// A command that ended, and how long it ran.
struct Ended {
    code: Option<i32>,
    stderr: String,
    took: Duration,
}

/// Runs `command`, killing it (and failing the test) if it is still running after `limit`.
fn run_within(command: &mut Command, limit: Duration) -> Ended {
    let started = Instant::now();
    let child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    wait_within(child, started, limit)
}

/// Waits for `child`, started at `started`, for `limit` at most.
fn wait_within(mut child: Child, started: Instant, limit: Duration) -> Ended {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let took = started.elapsed();
            let mut stderr = String::new();
            child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
            return Ended { code: status.code(), stderr, took };
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interrupt(child: &Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
}

/// `error: …` then `hint: …`, as every failure is reported.
fn assert_error_and_hint(stderr: &str, error: &str) {
    let lines: Vec<&str> =
        stderr.lines().filter(|line| line.starts_with("error: ") || line.starts_with("hint: ")).collect();
    assert!(lines.len() == 2 && lines[0].contains(error) && lines[1].starts_with("hint: "), "{stderr}");
}

/// What is left in a TMPDIR given to a command: its clones, if it left any.
fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// The config repo on the silent server, over `scheme` (`http` or `ssh`).
fn silent_url(silent: &Silent, scheme: &str) -> String {
    match scheme {
        "http" => format!("http://{}/fleet.git", silent.address),
        _ => format!("ssh://git@{}/fleet.git", silent.address),
    }
}

/// A TMPDIR of its own for a command, to see what it leaves there, and a HOME apart from it with
/// an SSH key, a known_hosts file and a kubeconfig whose cluster nobody serves.
struct Dirs {
    tmp: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        let dirs = Dirs { tmp: tempfile::tempdir().unwrap(), home: tempfile::tempdir().unwrap() };
        let key = dirs.key();
        run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&key)).unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: none\n  cluster:\n    server: https://{closed}\n\
             contexts:\n- name: none\n  context:\n    cluster: none\n    user: none\n\
             users:\n- name: none\n  user:\n    token: none\ncurrent-context: none\n"
        );
        std::fs::write(dirs.kubeconfig(), kubeconfig).unwrap();
        dirs
    }

    fn key(&self) -> PathBuf {
        self.home.path().join("id_ed25519")
    }

    /// known_hosts with a line for `silent`: it never gets as far as showing a host key, so any
    /// key will do.
    fn known_hosts(&self, silent: &Silent) -> PathBuf {
        let path = self.home.path().join("known_hosts");
        let port = silent.address.rsplit(':').next().unwrap();
        let key = std::fs::read_to_string(self.key().with_extension("pub")).unwrap();
        std::fs::write(&path, format!("[127.0.0.1]:{port} {key}")).unwrap();
        path
    }

    fn kubeconfig(&self) -> PathBuf {
        self.home.path().join("kubeconfig")
    }

    /// `command` with these as TMPDIR and HOME.
    fn given(&self, command: &mut Command) {
        command.env("TMPDIR", self.tmp.path()).env("HOME", self.home.path());
    }

    /// What the command left in its TMPDIR: its clones, if it left any.
    fn left(&self) -> Vec<String> {
        left_in(self.tmp.path())
    }
}

/// `kubectl-gitops-app add web … --config-repo URL --cluster-name dev --dry-run ARGS` with the config
/// repo on `silent` over `scheme`, without a cluster (the config repo is given), a private key and
/// known_hosts for ssh, a password for http, and `dirs`.
fn app_add(silent: &Silent, scheme: &str, dirs: &Dirs, args: &[&str]) -> Command {
    let mut command = Command::new(binaries::path("kubectl-gitops-app"));
    command
        .args(["add", "web", "--url", "https://git.example.com/web.git", "--path", "./deploy"])
        .args(["--config-repo", &silent_url(silent, scheme), "--cluster-name", "dev", "--dry-run"])
        .args(args)
        .arg("--private-key-file")
        .arg(dirs.key())
        .arg("--known-hosts-file")
        .arg(dirs.known_hosts(silent))
        .env("KUBECONFIG", dirs.kubeconfig())
        .env("GITOPS_GIT_PASSWORD", "unused");
    dirs.given(&mut command);
    command
}

#[test]
fn install_against_a_git_server_that_never_answers_ends_at_its_timeout() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    for scheme in ["http", "ssh"] {
        let silent = Silent::start();
        let dirs = Dirs::new();
        let mut command = Command::new(binaries::path("kubectl-gitops-install"));
        command
            .args(["--url", &silent_url(&silent, scheme), "--path", "clusters/hang", "--cluster-name", "hang"])
            .arg("--components-file")
            .arg(&components)
            .args(["--dry-run", "--timeout", "5s"])
            .env("KUBECONFIG", &env.kubeconfig);
        dirs.given(&mut command);
        match scheme {
            "http" => command.env("GITOPS_GIT_PASSWORD", "unused"),
            _ => command
                .arg("--private-key-file")
                .arg(dirs.key())
                .arg("--known-hosts-file")
                .arg(dirs.known_hosts(&silent)),
        };
        let ended = run_within(&mut command, Duration::from_secs(90));
        eprintln!("install --dry-run --timeout 5s against a silent {scheme} server ended in {:?}", ended.took);
        assert!(silent.accepted() > 0, "{scheme}: it never connected: {}", ended.stderr);
        assert_eq!(ended.code, Some(4), "{scheme}: {}", ended.stderr);
        assert!(ended.took < Duration::from_secs(5) + MARGIN, "{scheme}: {:?}", ended.took);
        assert_error_and_hint(&ended.stderr, "did not answer within 5s");
        assert_eq!(dirs.left(), Vec::<String>::new(), "{scheme}: no clone left behind");
    }
}

#[test]
fn app_add_against_a_config_repo_that_never_answers_ends_at_its_timeout() {
    for scheme in ["http", "ssh"] {
        let silent = Silent::start();
        let dirs = Dirs::new();
        let url = silent_url(&silent, scheme);
        let ended = run_within(&mut app_add(&silent, scheme, &dirs, &["--timeout", "3s"]), Duration::from_secs(90));
        eprintln!("app add --dry-run --timeout 3s against a silent {scheme} server ended in {:?}", ended.took);
        assert!(silent.accepted() > 0, "{scheme}: it never connected: {}", ended.stderr);
        assert_eq!(ended.code, Some(4), "{scheme}: {}", ended.stderr);
        assert!(ended.took < Duration::from_secs(3) + MARGIN, "{scheme}: {:?}", ended.took);
        assert_error_and_hint(&ended.stderr, &format!("{url} did not answer within 3s"));
        assert_eq!(dirs.left(), Vec::<String>::new(), "{scheme}: no clone left behind");
    }
}

#[test]
fn ctrl_c_ends_a_command_blocked_on_a_silent_git_server_within_2s_and_leaves_no_clone() {
    // Over HTTP the signal cuts libgit2's read short; libssh2 reads on through it, and the process
    // is stopped without unwinding.
    for scheme in ["http", "ssh"] {
        let silent = Silent::start();
        let dirs = Dirs::new();
        // No --timeout: the default (5 minutes) would hold it.
        interrupted_while_cloning(
            &mut app_add(&silent, scheme, &dirs, &[]),
            &silent,
            &dirs,
            &format!("app add ({scheme})"),
        );
    }
}

/// Starts `command`, interrupts it once its clone from `silent` is under way in `dirs`' TMPDIR,
/// and checks it ended within 2 s with exit 130, `error:` and `hint:`, and no clone left.
fn interrupted_while_cloning(command: &mut Command, silent: &Silent, dirs: &Dirs, what: &str) {
    let child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    silent.wait_for_a_client(Duration::from_secs(30));
    assert_eq!(dirs.left().len(), 1, "{what}: the clone is under way in TMPDIR");
    let interrupted = Instant::now();
    interrupt(&child);
    let ended = wait_within(child, interrupted, Duration::from_secs(30));
    eprintln!("{what} cloning from a silent server ended {:?} after Ctrl-C", ended.took);
    assert_eq!(ended.code, Some(130), "{what}: {}", ended.stderr);
    assert!(ended.took < INTERRUPT_LIMIT, "{what}: {:?}", ended.took);
    assert_error_and_hint(&ended.stderr, "interrupted");
    assert_eq!(dirs.left(), Vec::<String>::new(), "{what}: no clone left behind");
}

#[test]
fn one_ctrl_c_stops_the_ui_within_2s_with_an_app_add_blocked_on_a_silent_git_server() {
    let silent = Silent::start();
    let dirs = Dirs::new();
    let mut command = Command::new(binaries::path("kubectl-gitops-ui"));
    command
        .args(["--allow-writes", "--config-repo", &silent_url(&silent, "http")])
        .env("KUBECONFIG", dirs.kubeconfig())
        .env("GITOPS_GIT_PASSWORD", "unused");
    dirs.given(&mut command);
    let ui = Ui::launch(command);
    let cookie = ui.login();
    let (address, origin) = (ui.address.clone(), ui.origin());
    // The add never gets an answer: the request is cut when the server stops.
    std::thread::spawn(move || {
        let body = json!({"name": "web", "url": "https://git.example.com/web.git", "path": "./deploy",
                          "clusters": ["dev"], "dryRun": true})
        .to_string();
        let request = format!(
            "POST /api/v1/apps HTTP/1.1\r\nHost: {address}\r\nCookie: {cookie}\r\nOrigin: {origin}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        std::io::Write::write_all(&mut stream, request.as_bytes()).unwrap();
        let _ = stream.read_to_end(&mut Vec::new());
    });
    silent.wait_for_a_client(Duration::from_secs(60));
    let (code, stderr, took) = ui.interrupt_timed();
    eprintln!("the UI with an app add blocked on a silent git server stopped {took:?} after one Ctrl-C");
    assert!(took < INTERRUPT_LIMIT, "{took:?}: {stderr}");
    // The add it gave up on makes it an interrupted command, not a clean stop.
    assert_eq!(code, Some(130), "{stderr}");
    assert_error_and_hint(&stderr, "interrupted");
    assert_eq!(dirs.left(), Vec::<String>::new(), "no clone left behind");
}

#[test]
fn ctrl_c_ends_a_diff_cloning_from_a_silent_git_server_within_2s_and_leaves_no_clone() {
    // A cluster with the Flux APIs and a sync (no controller needs to run): diff finds the config
    // repo's source, then clones the branch it is asked for from the silent server.
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.install_flux_crds().unwrap();
    env.apply_yaml(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .unwrap();
    let silent = Silent::start();
    let dirs = Dirs::new();
    let mut command = Command::new(binaries::path("kubectl-gitops-diff"));
    command
        .args(["--ref", "preview", "--config-repo", &silent_url(&silent, "http")])
        .env("KUBECONFIG", &env.kubeconfig)
        .env("GITOPS_GIT_PASSWORD", "unused");
    dirs.given(&mut command);
    interrupted_while_cloning(&mut command, &silent, &dirs, "diff --ref");
}

#[test]
fn ctrl_c_ends_a_watch_as_asked_with_exit_0() {
    let env = TestEnv::shared();
    let mut watching = Command::new(binaries::path("kubectl-gitops-status"));
    watching.args(["-A", "--watch"]).env("KUBECONFIG", &env.kubeconfig);
    let mut child = watching.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // The first screen is there: the watch is running.
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut first).unwrap();
    let interrupted = Instant::now();
    interrupt(&child);
    let ended = wait_within(child, interrupted, Duration::from_secs(30));
    eprintln!("status --watch ended {:?} after Ctrl-C", ended.took);
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert!(ended.took < INTERRUPT_LIMIT, "{:?}", ended.took);
    assert!(!ended.stderr.contains("error:"), "{}", ended.stderr);
}

/// The branch-protection read `app add` makes on GitHub before it decides between a push and a
/// pull request.
const PROTECTION_READ: &str = "/repos/acme/fleet/branches/main";

#[test]
fn a_forge_answering_503_is_asked_again_until_it_answers_or_the_request_times_out() {
    let fixture = Fixture::install_from(Kind::GitHub, &flux_release::components(), &[]);
    let add = ["add", "podinfo", "--url", "https://github.com/stefanprodan/podinfo", "--path", "./deploy", "--dry-run"];
    let busy = json!({"message": "Service Unavailable"});
    for _ in 0..2 {
        fixture.standin.fail_next("GET", PROTECTION_READ, 503, busy.clone());
    }
    let run = fixture.pushing("kubectl-gitops-app", &add);
    assert_eq!(run.code, Some(0), "two 503s, then the answer: {}", run.stderr);
    let reads = fixture.standin.requests().iter().filter(|request| request.path == PROTECTION_READ).count();
    assert_eq!(reads, 3, "{:?}", fixture.standin.requests());

    // For ever: the read is given up at the provider's request timeout (30 s), with a hint.
    for _ in 0..1000 {
        fixture.standin.fail_next("GET", PROTECTION_READ, 503, busy.clone());
    }
    let started = Instant::now();
    let run = fixture.pushing("kubectl-gitops-app", &add);
    let took = started.elapsed();
    eprintln!("app add against a forge answering 503 for ever ended in {took:?}");
    assert_eq!(run.code, Some(4), "{}", run.stderr);
    assert!(took < Duration::from_secs(30) + MARGIN, "{took:?}");
    assert_error_and_hint(&run.stderr, "(HTTP 503)");
    assert!(run.stderr.contains("failing for now"), "{}", run.stderr);
}
