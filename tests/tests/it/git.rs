//! `gitops_shared::git` against real servers: OpenSSH's sshd and `git http-backend` behind
//! basic auth, from the test environment (no Kubernetes needed).

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use gitops_e2e::testenv::process::{Supervisor, free_ports, run};
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER, GitServer};
use gitops_shared::git::{Auth, Checkout, GitError, Remote, Signature, remote_head};

/// sshd and the HTTP server, started once per test binary and ended by the supervisor's
/// watchdog when the process exits.
struct Servers {
    git: GitServer,
    _supervisor: Mutex<Supervisor>,
}

fn servers() -> &'static GitServer {
    static SERVERS: OnceLock<Servers> = OnceLock::new();
    &SERVERS
        .get_or_init(|| {
            let dir = tempfile::Builder::new().prefix("gitops-git-test-").tempdir().unwrap().keep();
            let mut supervisor = Supervisor::new(&dir.join("logs")).unwrap();
            let ports = free_ports(2).unwrap();
            let git = GitServer::start(&dir.join("git"), &mut supervisor, ports[0], ports[1]).unwrap();
            git.wait_ready(&mut supervisor).unwrap();
            supervisor.watch(std::process::id(), Some(dir.as_path())).unwrap();
            Servers { git, _supervisor: Mutex::new(supervisor) }
        })
        .git
}

fn author() -> Signature {
    Signature { name: "kubectl-gitops e2e".into(), email: "e2e@example.com".into() }
}

fn client_key(git: &GitServer) -> String {
    std::fs::read_to_string(&git.client_key).unwrap()
}

fn ssh_remote(git: &GitServer, repo: &str) -> Remote {
    Remote {
        url: git.ssh_url(repo),
        auth: Auth::Ssh {
            user: None,
            private_key: client_key(git),
            known_hosts: format!("{}\n", git.known_hosts_line),
        },
    }
}

fn http_remote(git: &GitServer, repo: &str, password: &str) -> Remote {
    Remote { url: git.http_url(repo), auth: Auth::Basic { username: GIT_HTTP_USER.into(), password: password.into() } }
}

/// A fresh key pair (private key text, public key line) made by ssh-keygen; `args` choose
/// the type and format.
fn new_key(args: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    run(Command::new("ssh-keygen").args(["-q", "-N", "", "-C", "e2e"]).args(args).arg("-f").arg(&path)).unwrap();
    (std::fs::read_to_string(&path).unwrap(), std::fs::read_to_string(path.with_extension("pub")).unwrap())
}

/// Fails the test when a call that should be refused at once takes long (libgit2 loops on
/// refused credentials unless the callback stops it).
fn quickly<T>(what: &str, call: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let result = call();
    assert!(started.elapsed() < Duration::from_secs(15), "{what} took {:?}", started.elapsed());
    result
}

/// The branch's head commit as the git CLI sees it in the bare repository.
fn server_head(git: &GitServer, repo: &str, branch: &str) -> Option<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git.repos.join(format!("{repo}.git")))
        .args(["rev-parse", "--verify", "-q"])
        .arg(format!("refs/heads/{branch}"))
        .output()
        .unwrap();
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn ssh_clone_of_an_empty_repo_commit_push_and_read_back() {
    let git = servers();
    git.create_repo("ssh-roundtrip").unwrap();
    let remote = ssh_remote(git, "ssh-roundtrip");
    assert_eq!(remote_head(&remote, "main").unwrap(), None);

    let mut checkout = Checkout::clone(&remote, "main").unwrap();
    assert_eq!(checkout.head(), None);
    checkout.write("clusters/dev/gitops.yaml", b"kind: ConfigMap\n").unwrap();
    let commit = checkout.commit("Install kubectl-gitops", &author()).unwrap().unwrap();
    checkout.push().unwrap();
    assert_eq!(server_head(git, "ssh-roundtrip", "main"), Some(commit.clone()));
    assert_eq!(remote_head(&remote, "main").unwrap(), Some(commit.clone()));

    let again = Checkout::clone(&remote, "main").unwrap();
    assert_eq!(again.head(), Some(commit.clone()));
    assert_eq!(again.read("clusters/dev/gitops.yaml").unwrap().as_deref(), Some(&b"kind: ConfigMap\n"[..]));

    // The git CLI agrees with what we wrote.
    let shown = run(Command::new("git")
        .arg("--git-dir")
        .arg(git.repos.join("ssh-roundtrip.git"))
        .args(["show", "main:clusters/dev/gitops.yaml"]))
    .unwrap();
    assert_eq!(shown, "kind: ConfigMap\n");
}

/// A refused push over SSH is told apart from other refusals, and the change made again on the
/// new head lands beside theirs (what `publish::commit_and_push` does; the 16-writer e2e test in
/// app/pushes.rs runs that loop itself over SSH).
#[test]
fn ssh_concurrent_pushes_both_land_after_a_retry() {
    let git = servers();
    git.create_repo("ssh-race").unwrap();
    let remote = ssh_remote(git, "ssh-race");
    let mut ours = Checkout::clone(&remote, "main").unwrap();
    let mut theirs = Checkout::clone(&remote, "main").unwrap();
    theirs.write("theirs.yaml", b"theirs").unwrap();
    theirs.commit("theirs", &author()).unwrap().unwrap();
    theirs.push().unwrap();

    ours.write("ours.yaml", b"ours").unwrap();
    ours.commit("ours", &author()).unwrap().unwrap();
    assert!(matches!(ours.push(), Err(GitError::NonFastForward { .. })));
    ours.reset_to_remote().unwrap();
    assert_eq!(ours.read("ours.yaml").unwrap(), None);
    ours.write("ours.yaml", b"ours").unwrap();
    ours.commit("ours", &author()).unwrap().unwrap();
    ours.push().unwrap();

    let check = Checkout::clone(&remote, "main").unwrap();
    assert!(check.read("theirs.yaml").unwrap().is_some());
    assert!(check.read("ours.yaml").unwrap().is_some());
    assert_eq!(check.head(), server_head(git, "ssh-race", "main"));
}

#[test]
fn ssh_wrong_host_key_is_a_mismatch_naming_both_fingerprints() {
    let git = servers();
    git.create_repo("ssh-mismatch").unwrap();
    let (_, other_public) = new_key(&["-t", "ed25519"]);
    let fields: Vec<&str> = other_public.split_whitespace().take(2).collect();
    let mut remote = ssh_remote(git, "ssh-mismatch");
    remote.auth = Auth::Ssh {
        user: None,
        private_key: client_key(git),
        known_hosts: format!("[127.0.0.1]:{} {}\n", git.ssh_port, fields.join(" ")),
    };
    let error = quickly("a host key mismatch", || Checkout::clone(&remote, "main").unwrap_err());
    let GitError::HostKeyMismatch { host, expected, found } = &error else {
        panic!("expected HostKeyMismatch, got {error:?}");
    };
    assert_eq!(host, &format!("[127.0.0.1]:{}", git.ssh_port));
    let fingerprint = |public: &str| {
        let out = run(Command::new("sh")
            .arg("-c")
            .arg(format!("echo '{}' | ssh-keygen -lf - | cut -d' ' -f2", public.trim())))
        .unwrap();
        out.trim().to_string()
    };
    assert_eq!(expected, &[format!("ssh-ed25519 {}", fingerprint(&other_public))]);
    let server_public = std::fs::read_to_string(git.known_hosts.parent().unwrap().join("host_ed25519.pub")).unwrap();
    assert_eq!(found, &format!("ssh-ed25519 {}", fingerprint(&server_public)));
    assert!(error.hint().unwrap().contains("intercepting"));
    // Same through ls-remote.
    assert!(matches!(remote_head(&remote, "main"), Err(GitError::HostKeyMismatch { .. })));
}

#[test]
fn ssh_unknown_host_is_refused() {
    let git = servers();
    git.create_repo("ssh-unknown").unwrap();
    let mut remote = ssh_remote(git, "ssh-unknown");
    let key_fields: Vec<&str> = git.known_hosts_line.split_whitespace().skip(1).collect();
    for known_hosts in [
        String::new(),
        // The right key, but for port 22: OpenSSH would not use it for another port.
        format!("127.0.0.1 {}\n", key_fields.join(" ")),
        format!("[example.com]:{} {}\n", git.ssh_port, key_fields.join(" ")),
    ] {
        remote.auth = Auth::Ssh { user: None, private_key: client_key(git), known_hosts };
        let error = quickly("an unknown host", || Checkout::clone(&remote, "main").unwrap_err());
        assert!(
            matches!(&error, GitError::UnknownHost { host, .. } if *host == format!("[127.0.0.1]:{}", git.ssh_port)),
            "{error:?}"
        );
        assert!(error.to_string().contains("SHA256:"), "{error}");
    }

    // A hashed file (`ssh-keygen -H`, the Debian and Ubuntu default) names the host: accepted,
    // unless the same key is also listed as @revoked.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("known_hosts");
    std::fs::write(&file, format!("{}\n", git.known_hosts_line)).unwrap();
    run(Command::new("ssh-keygen").arg("-H").arg("-f").arg(&file)).unwrap();
    let hashed = std::fs::read_to_string(&file).unwrap();
    assert!(hashed.starts_with("|1|"), "{hashed}");
    remote.auth = Auth::Ssh { user: None, private_key: client_key(git), known_hosts: hashed.clone() };
    Checkout::clone(&remote, "main").unwrap();
    let revoked = format!("{hashed}@revoked {hashed}");
    remote.auth = Auth::Ssh { user: None, private_key: client_key(git), known_hosts: revoked };
    let error = quickly("a revoked key", || Checkout::clone(&remote, "main").unwrap_err());
    assert!(matches!(&error, GitError::HostKeyRevoked { .. }), "{error:?}");
}

#[test]
fn ssh_wrong_key_fails_authentication_quickly() {
    let git = servers();
    git.create_repo("ssh-wrong-key").unwrap();
    let (other_private, _) = new_key(&["-t", "ed25519"]);
    let mut remote = ssh_remote(git, "ssh-wrong-key");
    remote.auth = Auth::Ssh { user: None, private_key: other_private, known_hosts: git.known_hosts_line.clone() };
    let error = quickly("a refused key", || Checkout::clone(&remote, "main").unwrap_err());
    assert!(matches!(error, GitError::AuthFailed { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("refused the SSH key SHA256:"), "{message}");
    assert!(!message.contains("PRIVATE KEY"), "{message}");

    // A user sshd does not allow is refused the same way.
    remote.auth = Auth::Ssh {
        user: Some("nobody".into()),
        private_key: client_key(git),
        known_hosts: git.known_hosts_line.clone(),
    };
    let url = remote.url.replace(&format!("ssh://{}@", git.ssh_user), "ssh://");
    remote.url = url;
    let error = quickly("a refused user", || remote_head(&remote, "main").unwrap_err());
    assert!(matches!(error, GitError::AuthFailed { .. }), "{error:?}");

    // No key at all.
    remote.auth = Auth::Anonymous;
    let error = quickly("no key", || Checkout::clone(&remote, "main").unwrap_err());
    assert!(matches!(error, GitError::AuthFailed { .. }), "{error:?}");
}

#[test]
fn ssh_deploy_keys_of_every_common_type_work() {
    let git = servers();
    // ECDSA P-384 is what Flux generates; RSA in PEM is what older tools wrote.
    let kinds: [(&str, &[&str]); 4] = [
        ("ed25519", &["-t", "ed25519"]),
        ("ecdsa-p384", &["-t", "ecdsa", "-b", "384"]),
        ("ecdsa-p256", &["-t", "ecdsa", "-b", "256"]),
        ("rsa-pem", &["-t", "rsa", "-b", "3072", "-m", "PEM"]),
    ];
    for (kind, args) in kinds {
        let repo = format!("ssh-deploy-key-{kind}");
        git.create_repo(&repo).unwrap();
        let (private, public) = new_key(args);
        git.authorize_key(&public).unwrap();
        let remote = Remote {
            url: git.ssh_url(&repo),
            auth: Auth::Ssh {
                user: Some(git.ssh_user.clone()),
                private_key: private,
                known_hosts: git.known_hosts_line.clone(),
            },
        };
        let mut checkout = Checkout::clone(&remote, "main").unwrap_or_else(|error| panic!("{kind}: {error}"));
        checkout.write("a.txt", kind.as_bytes()).unwrap();
        checkout.commit(kind, &author()).unwrap().unwrap();
        checkout.push().unwrap_or_else(|error| panic!("{kind}: {error}"));
        assert_eq!(checkout.head(), server_head(git, &repo, "main"), "{kind}");
    }
}

#[test]
fn ssh_missing_repo_is_not_found() {
    let git = servers();
    let remote = ssh_remote(git, "does-not-exist");
    let error = quickly("a missing repo", || Checkout::clone(&remote, "main").unwrap_err());
    assert!(matches!(error, GitError::NotFound { .. }), "{error:?}");
}

#[test]
fn http_with_the_right_password_pushes_and_the_wrong_one_fails() {
    let git = servers();
    git.create_repo("http-roundtrip").unwrap();
    let remote = http_remote(git, "http-roundtrip", GIT_HTTP_PASSWORD);
    let mut checkout = Checkout::clone(&remote, "main").unwrap();
    assert_eq!(checkout.head(), None);
    checkout.write("apps/podinfo/release.yaml", b"v1\n").unwrap();
    let commit = checkout.commit("podinfo", &author()).unwrap().unwrap();
    checkout.push().unwrap();
    assert_eq!(server_head(git, "http-roundtrip", "main"), Some(commit.clone()));
    assert_eq!(remote_head(&remote, "main").unwrap(), Some(commit.clone()));
    let again = Checkout::clone(&remote, "main").unwrap();
    assert_eq!(again.read("apps/podinfo/release.yaml").unwrap().as_deref(), Some(&b"v1\n"[..]));

    let wrong = http_remote(git, "http-roundtrip", "not-the-password");
    let error = quickly("a wrong password", || Checkout::clone(&wrong, "main").unwrap_err());
    assert!(matches!(error, GitError::AuthFailed { .. }), "{error:?}");
    assert!(!error.to_string().contains("not-the-password"), "{error}");
    assert!(matches!(quickly("a wrong password", || remote_head(&wrong, "main")), Err(GitError::AuthFailed { .. })));

    let anonymous = Remote { url: git.http_url("http-roundtrip"), auth: Auth::Anonymous };
    assert!(matches!(quickly("no password", || Checkout::clone(&anonymous, "main")), Err(GitError::AuthFailed { .. })));
}

#[test]
fn http_missing_repo_is_not_found() {
    let git = servers();
    let remote = http_remote(git, "does-not-exist", GIT_HTTP_PASSWORD);
    let error = quickly("a missing repo", || Checkout::clone(&remote, "main").unwrap_err());
    assert!(matches!(error, GitError::NotFound { .. }), "{error:?}");
}

#[test]
fn nothing_listening_is_unreachable() {
    let port = free_ports(1).unwrap()[0];
    let remote = Remote { url: format!("http://127.0.0.1:{port}/repo.git"), auth: Auth::Anonymous };
    let error = quickly("a closed port", || Checkout::clone(&remote, "main").unwrap_err());
    assert!(matches!(error, GitError::Unreachable { .. }), "{error:?}");
    let remote = Remote { url: format!("ssh://git@127.0.0.1:{port}/repo.git"), auth: Auth::Anonymous };
    let error = quickly("a closed port", || Checkout::clone(&remote, "main").unwrap_err());
    assert!(matches!(error, GitError::Unreachable { .. }), "{error:?}");
}
