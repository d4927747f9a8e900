//! The git module against local bare repositories over `file://` (no server needed); the
//! SSH and HTTP paths are tested against real servers in tests/tests/git.rs.

use std::time::Instant;

use git2::{CredentialType, ErrorClass};

use super::session::{Limits, credential_kinds};
use super::*;

pub(crate) fn author() -> Signature {
    Signature { name: "kubectl-gitops test".into(), email: "test@example.com".into() }
}

/// An empty bare repository; the TempDir keeps it alive.
pub(crate) fn bare() -> (tempfile::TempDir, Remote) {
    let dir = tempfile::tempdir().unwrap();
    Repository::init_bare(dir.path()).unwrap();
    let remote = Remote { url: format!("file://{}", dir.path().display()), auth: Auth::Anonymous };
    (dir, remote)
}

pub(crate) fn read_text(checkout: &Checkout, path: &str) -> Option<String> {
    checkout.read(path).unwrap().map(|bytes| String::from_utf8(bytes).unwrap())
}

#[test]
fn empty_repo_gives_an_unborn_branch_and_the_first_push_creates_it() {
    let (_dir, remote) = bare();
    assert_eq!(remote_head(&remote, "main").unwrap(), None);
    let mut checkout = Checkout::clone(&remote, "main").unwrap();
    assert_eq!(checkout.head(), None);
    assert_eq!(checkout.branch(), "main");
    assert!(checkout.root().join(".git").is_dir());
    // Nothing written: no commit, and pushing nothing is fine.
    assert_eq!(checkout.commit("empty", &author()).unwrap(), None);
    checkout.push().unwrap();
    assert_eq!(remote_head(&remote, "main").unwrap(), None);

    checkout.write("clusters/dev/gitops.yaml", b"kind: ConfigMap\n").unwrap();
    checkout.write(".sops.yaml", b"creation_rules: []\n").unwrap();
    let commit = checkout.commit("Add dev", &author()).unwrap().unwrap();
    assert_eq!(checkout.head().as_deref(), Some(commit.as_str()));
    checkout.push().unwrap();
    assert_eq!(remote_head(&remote, "main").unwrap(), Some(commit.clone()));

    let again = Checkout::clone(&remote, "main").unwrap();
    assert_eq!(again.head(), Some(commit));
    assert_eq!(read_text(&again, "clusters/dev/gitops.yaml").as_deref(), Some("kind: ConfigMap\n"));
    assert_eq!(read_text(&again, ".sops.yaml").as_deref(), Some("creation_rules: []\n"), "dot files are committed too");
    assert_eq!(again.read("missing.yaml").unwrap(), None);
    let commit = again.repo.find_commit(again.head_oid().unwrap()).unwrap();
    assert_eq!(commit.message().ok(), Some("Add dev"));
    assert_eq!(commit.author().email().ok(), Some("test@example.com"));
    assert_eq!(commit.parent_count(), 0);
}

#[test]
fn a_missing_branch_starts_unborn_even_when_other_branches_exist() {
    let (_dir, remote) = bare();
    let mut main = Checkout::clone(&remote, "main").unwrap();
    main.write("main.txt", b"main").unwrap();
    main.commit("main", &author()).unwrap().unwrap();
    main.push().unwrap();

    let mut other = Checkout::clone(&remote, "clusters/staging").unwrap();
    assert_eq!(other.head(), None);
    assert_eq!(other.read("main.txt").unwrap(), None);
    other.write("staging.txt", b"staging").unwrap();
    let commit = other.commit("staging", &author()).unwrap().unwrap();
    other.push().unwrap();
    assert_eq!(remote_head(&remote, "clusters/staging").unwrap(), Some(commit));
    assert_eq!(remote_head(&remote, "nope").unwrap(), None);
}

#[test]
fn a_tag_is_checked_out_as_it_was_released_lightweight_or_annotated() {
    let (dir, remote) = bare();
    let mut main = Checkout::clone(&remote, "main").unwrap();
    main.write("deploy/app.yaml", b"v: 1\n").unwrap();
    let first = main.commit("v1", &author()).unwrap().unwrap();
    main.push().unwrap();
    main.write("deploy/app.yaml", b"v: 2\n").unwrap();
    let second = main.commit("v2", &author()).unwrap().unwrap();
    main.push().unwrap();
    let bare = Repository::open_bare(dir.path()).unwrap();
    bare.reference("refs/tags/v1", Oid::from_str(&first).unwrap(), false, "test").unwrap();
    let target = bare.find_object(Oid::from_str(&second).unwrap(), None).unwrap();
    let tagger = git2::Signature::now("t", "t@example.com").unwrap();
    bare.tag("v2", &target, &tagger, "release 2", false).unwrap();

    let v1 = Checkout::clone_tag(&remote, "v1").unwrap();
    assert_eq!((v1.head(), read_text(&v1, "deploy/app.yaml")), (Some(first), Some("v: 1\n".into())));
    let v2 = Checkout::clone_tag(&remote, "v2").unwrap();
    assert_eq!((v2.head(), read_text(&v2, "deploy/app.yaml")), (Some(second), Some("v: 2\n".into())));
    let missing = Checkout::clone_tag(&remote, "v3").unwrap_err();
    assert!(
        matches!(&missing, GitError::NotFound { reason: Some(reason), .. } if reason == "it has no tag v3"),
        "{missing:?}"
    );
    for tag in ["", "-v1", "a..b", "v 1"] {
        assert!(matches!(Checkout::clone_tag(&remote, tag), Err(GitError::InvalidTag { .. })), "{tag:?}");
    }
}

#[test]
fn committing_unchanged_content_makes_no_commit() {
    let (_dir, remote) = bare();
    let mut checkout = Checkout::clone(&remote, "main").unwrap();
    checkout.write("a.yaml", b"a: 1\n").unwrap();
    let first = checkout.commit("first", &author()).unwrap().unwrap();
    assert_eq!(checkout.commit("again", &author()).unwrap(), None);
    checkout.write("a.yaml", b"a: 1\n").unwrap();
    assert_eq!(checkout.commit("same bytes", &author()).unwrap(), None);
    assert_eq!(checkout.head(), Some(first));
}

#[test]
fn removals_and_changes_are_committed() {
    let (_dir, remote) = bare();
    let mut checkout = Checkout::clone(&remote, "main").unwrap();
    checkout.write("apps/a/release.yaml", b"a").unwrap();
    checkout.write("apps/b/release.yaml", b"b").unwrap();
    checkout.write("keep.yaml", b"keep").unwrap();
    checkout.commit("apps", &author()).unwrap().unwrap();
    checkout.push().unwrap();

    checkout.remove("apps/a").unwrap();
    checkout.remove("not/there.yaml").unwrap();
    checkout.write("keep.yaml", b"kept").unwrap();
    checkout.write("new.yaml", b"new").unwrap();
    checkout.commit("remove a", &author()).unwrap().unwrap();
    checkout.push().unwrap();

    let again = Checkout::clone(&remote, "main").unwrap();
    assert_eq!(again.read("apps/a/release.yaml").unwrap(), None);
    assert!(!again.root().join("apps/a").exists());
    assert_eq!(read_text(&again, "apps/b/release.yaml").as_deref(), Some("b"));
    assert_eq!(read_text(&again, "keep.yaml").as_deref(), Some("kept"));
}

#[test]
fn paths_that_leave_the_work_tree_are_refused() {
    let (_dir, remote) = bare();
    let mut checkout = Checkout::clone(&remote, "main").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), checkout.root().join("link")).unwrap();
    for path in [
        "",
        ".",
        "/etc/passwd",
        "../escape.yaml",
        "a/../../escape.yaml",
        "a/..",
        ".git/config",
        "sub/.GIT/hooks/pre-commit",
        "link/file.yaml",
        "link",
        "a\\b",
    ] {
        let error = checkout.write(path, b"x").unwrap_err();
        assert!(matches!(error, GitError::InvalidPath { .. }), "{path:?}: {error:?}");
        assert!(matches!(checkout.remove(path), Err(GitError::InvalidPath { .. })));
        assert!(matches!(checkout.read(path), Err(GitError::InvalidPath { .. })));
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    // `./` and inner `.` are harmless.
    checkout.write("./a/./b.yaml", b"ok").unwrap();
    assert_eq!(read_text(&checkout, "a/b.yaml").as_deref(), Some("ok"));
    let error = checkout.write("../x", b"x").unwrap_err();
    assert!(error.to_string().contains("\"../x\""), "{error}");
    assert!(error.hint().is_some());
}

#[test]
fn invalid_branch_names_and_urls_are_refused() {
    let (_dir, remote) = bare();
    for branch in ["", "a..b", "-x", "a b", "refs/heads/x~1", "x.lock"] {
        assert!(matches!(Checkout::clone(&remote, branch), Err(GitError::InvalidBranch { .. })), "{branch:?}");
    }
    let bad = Remote { url: "ftp://user:hunter2@example.com/repo.git".into(), auth: Auth::Anonymous };
    let error = Checkout::clone(&bad, "main").unwrap_err();
    assert!(matches!(error, GitError::InvalidUrl { .. }), "{error:?}");
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[test]
fn a_missing_local_repository_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let remote = Remote { url: format!("file://{}/nothing.git", dir.path().display()), auth: Auth::Anonymous };
    let error = Checkout::clone(&remote, "main").unwrap_err();
    assert!(matches!(error, GitError::NotFound { .. }), "{error:?}");
    assert!(matches!(remote_head(&remote, "main"), Err(GitError::NotFound { .. })));
}

#[test]
fn a_concurrent_push_is_non_fast_forward_and_reset_to_remote_moves_to_their_head() {
    let (_dir, remote) = bare();
    let mut seed = Checkout::clone(&remote, "main").unwrap();
    seed.write("README.md", b"config\n").unwrap();
    seed.commit("seed", &author()).unwrap().unwrap();
    seed.push().unwrap();

    let mut ours = Checkout::clone(&remote, "main").unwrap();
    let mut theirs = Checkout::clone(&remote, "main").unwrap();
    theirs.write("theirs.yaml", b"theirs").unwrap();
    let their_commit = theirs.commit("theirs", &author()).unwrap().unwrap();
    theirs.push().unwrap();

    ours.write("ours.yaml", b"ours").unwrap();
    ours.commit("ours", &author()).unwrap().unwrap();
    ours.write("uncommitted.yaml", b"later").unwrap();
    let error = ours.push().unwrap_err();
    assert!(matches!(&error, GitError::NonFastForward { branch } if branch == "main"), "{error:?}");
    assert!(error.hint().is_some());

    // Our commit and our uncommitted write are dropped: the change is made again on their head.
    ours.reset_to_remote().unwrap();
    assert_eq!(ours.head(), Some(their_commit.clone()));
    assert_eq!(read_text(&ours, "theirs.yaml").as_deref(), Some("theirs"));
    assert_eq!(ours.read("ours.yaml").unwrap(), None);
    assert_eq!(ours.read("uncommitted.yaml").unwrap(), None);
    assert!(matches!(ours.push(), Ok(Pushed::Nothing)));
    assert_eq!(remote_head(&remote, "main").unwrap(), Some(their_commit));
}

#[test]
fn secrets_stay_out_of_debug_and_messages() {
    let ssh = Remote {
        url: "ssh://git@example.com/repo.git".into(),
        auth: Auth::Ssh {
            user: None,
            private_key: "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETKEY\n".into(),
            known_hosts: "example.com ssh-ed25519 AAAA\n".into(),
        },
    };
    let debug = format!("{ssh:?}");
    assert!(!debug.contains("SECRETKEY"), "{debug}");
    assert!(debug.contains("<redacted>"), "{debug}");
    let basic = Remote {
        url: "https://user:urlsecret@example.com/repo.git".into(),
        auth: Auth::Basic { username: "user".into(), password: "tokensecret".into() },
    };
    let debug = format!("{basic:?}");
    assert!(!debug.contains("tokensecret"), "{debug}");
    assert!(!debug.contains("urlsecret"), "{debug}");

    let endpoint = Endpoint::parse(&basic.url).unwrap();
    let session = Session::new(&basic, &endpoint);
    let error = session.classify(git2::Error::from_str(
        "unexpected http status code: 403 for https://user:urlsecret@example.com tokensecret",
    ));
    assert!(matches!(error, GitError::AuthFailed { .. }), "{error:?}");
    let message = error.to_string();
    assert!(!message.contains("tokensecret"), "{message}");
    assert!(!message.contains("urlsecret"), "{message}");
}

#[test]
fn urls_are_sorted_by_transport() {
    assert_eq!(
        Endpoint::parse("git@github.com:org/repo.git").unwrap(),
        Endpoint::Ssh { host: "github.com".into(), port: 22 }
    );
    assert_eq!(
        Endpoint::parse("ssh://root@127.0.0.1:2222/srv/repo.git").unwrap(),
        Endpoint::Ssh { host: "127.0.0.1".into(), port: 2222 }
    );
    assert_eq!(
        Endpoint::parse("ssh://git@[::1]:2222/repo.git").unwrap(),
        Endpoint::Ssh { host: "::1".into(), port: 2222 }
    );
    assert_eq!(Endpoint::parse("https://github.com/org/repo").unwrap(), Endpoint::Http);
    assert_eq!(Endpoint::parse("file:///srv/repo.git").unwrap(), Endpoint::Local);
    assert_eq!(Endpoint::parse("/srv/repo.git").unwrap(), Endpoint::Local);
    assert!(Endpoint::parse("ssh://").is_err());
}

#[test]
fn error_kinds_are_sorted_from_libgit2_messages() {
    let remote = Remote { url: "https://example.com/repo.git".into(), auth: Auth::Anonymous };
    let endpoint = Endpoint::parse(&remote.url).unwrap();
    let session = Session::new(&remote, &endpoint);
    let http = |message: &str| session.classify(git2::Error::new(ErrorCode::GenericError, ErrorClass::Http, message));
    assert!(matches!(http("unexpected http status code: 404"), GitError::NotFound { reason: None, .. }));
    assert!(matches!(http("unexpected http status code: 401"), GitError::AuthFailed { .. }));
    assert!(matches!(
        session.classify(git2::Error::new(
            ErrorCode::GenericError,
            ErrorClass::Net,
            "failed to connect to example.com: Connection refused"
        )),
        GitError::Unreachable { .. }
    ));
    assert!(matches!(http("unexpected http status code: 500"), GitError::Other(_)));
}

#[test]
fn hints_tell_a_changed_key_from_a_missing_key_type() {
    let changed = GitError::HostKeyMismatch {
        host: "github.com".into(),
        expected: vec!["ssh-ed25519 SHA256:old".into()],
        found: "ssh-ed25519 SHA256:new".into(),
    };
    assert!(changed.hint().unwrap().contains("intercepting"));
    let other_type = GitError::HostKeyMismatch {
        host: "github.com".into(),
        expected: vec!["ssh-ed25519 SHA256:old".into()],
        found: "ecdsa-sha2-nistp256 SHA256:new".into(),
    };
    let hint = other_type.hint().unwrap();
    assert!(hint.contains("no ecdsa-sha2-nistp256 key") && hint.contains("ssh-keyscan -t ecdsa`"), "{hint}");
}

#[test]
fn credential_kinds_read_as_words() {
    assert_eq!(credential_kinds(CredentialType::SSH_KEY | CredentialType::USERNAME), "ssh key, username");
    assert_eq!(credential_kinds(CredentialType::empty()), "none named");
}

/// Two writers making the same change on the same head within one second make one and the same
/// commit; the second push moves nothing and says so.
#[test]
fn pushing_the_very_commit_the_remote_already_has_is_already_there() {
    let (_dir, remote) = bare();
    let mut seed = Checkout::clone(&remote, "main").unwrap();
    seed.write("seed.txt", b"seed").unwrap();
    seed.commit("seed", &author()).unwrap();
    assert_eq!(seed.push().unwrap(), Pushed::Updated);
    // Commit times have one-second resolution: try again in the rare case a second ticked over.
    for attempt in 0.. {
        let (mut first, mut second) =
            (Checkout::clone(&remote, "main").unwrap(), Checkout::clone(&remote, "main").unwrap());
        let change = format!("change {attempt}");
        for checkout in [&mut first, &mut second] {
            checkout.write("same.txt", change.as_bytes()).unwrap();
        }
        let (one, two) = (first.commit("same", &author()).unwrap(), second.commit("same", &author()).unwrap());
        if one != two {
            assert!(attempt < 5, "never the same commit");
            continue;
        }
        assert_eq!(first.push().unwrap(), Pushed::Updated);
        assert_eq!(second.push().unwrap(), Pushed::AlreadyThere);
        assert_eq!(second.push().unwrap(), Pushed::Nothing);
        break;
    }
}

#[test]
fn a_password_is_given_only_to_the_remotes_origin_over_https_or_loopback() {
    let basic = |url: &str| Remote {
        url: url.to_string(),
        auth: Auth::Basic { username: "git".into(), password: "s3cret-token".into() },
    };
    let withheld = |remote: &Remote, asked: &str| {
        Session::new(remote, &Endpoint::parse(&remote.url).unwrap()).withhold_password(asked)
    };
    let remote = basic("https://git.example.com/acme/fleet.git");
    assert_eq!(withheld(&remote, "https://git.example.com/acme/fleet.git"), None);
    assert_eq!(withheld(&remote, "https://git.example.com:443/other/path"), None);
    let moved = withheld(&remote, "https://evil.example/acme/fleet.git").unwrap();
    assert_eq!(moved, "https://evil.example asked for them, and they belong to https://git.example.com only");
    let local = basic("http://127.0.0.1:8080/fleet.git");
    assert_eq!(withheld(&local, "http://127.0.0.1:8080/fleet.git"), None);
    assert!(withheld(&local, "http://127.0.0.1:8081/fleet.git").unwrap().contains("127.0.0.1:8081 asked"));
    let plain = basic("http://git.example.com/fleet.git");
    let refused = withheld(&plain, "http://git.example.com/fleet.git").unwrap();
    assert_eq!(refused, "http://git.example.com is plain http to another machine");
    assert!(!refused.contains("s3cret"));
}

#[test]
fn network_limits_are_the_defaults_or_the_commands_timeout_when_shorter() {
    use crate::timeouts::{GIT_CONNECT, GIT_OPERATION, GIT_STALL};
    let defaults = Limits { connect: GIT_CONNECT, stall: GIT_STALL, operation: GIT_OPERATION };
    assert_eq!(Limits::within(None), defaults);
    assert_eq!(Limits::within(Some(Duration::ZERO)), defaults, "0 is no --timeout");
    let five = Duration::from_secs(5);
    assert_eq!(Limits::within(Some(five)), Limits { connect: five, stall: five, operation: five });
    let long = Duration::from_secs(3600);
    assert_eq!(Limits::within(Some(long)), Limits { connect: GIT_CONNECT, stall: GIT_STALL, operation: long });
}

#[test]
fn an_operation_past_its_limit_or_a_socket_timeout_is_timed_out_naming_the_server() {
    let remote = Remote { url: "https://git.example.com/fleet.git".into(), auth: Auth::Anonymous };
    let endpoint = Endpoint::Http;
    let mut session = Session::new(&remote, &endpoint);
    assert!(session.stop_check().is_ok());
    session.deadline = Instant::now();
    assert!(session.stop_check().is_err(), "past the deadline every callback ends the operation");
    let error = session.finish(git2::Error::from_str("callback returned an error"));
    assert!(matches!(error, GitError::TimedOut { .. }), "{error:?}");
    assert!(error.to_string().starts_with("https://git.example.com/fleet.git did not answer within"), "{error}");
    assert!(error.hint().is_some_and(|hint| hint.contains("--timeout")));

    let socket = |message: &str| session.classify(git2::Error::new(ErrorCode::Timeout, ErrorClass::Net, message));
    let stalled = socket("could not read from socket: timed out");
    let after = crate::duration::format(crate::timeouts::GIT_STALL);
    assert_eq!(stalled.to_string(), format!("https://git.example.com/fleet.git did not answer within {after}"));
    let connecting = socket("failed to connect to git.example.com: Operation timed out");
    let after = crate::duration::format(crate::timeouts::GIT_CONNECT);
    assert_eq!(connecting.to_string(), format!("https://git.example.com/fleet.git did not answer within {after}"));
}

#[test]
fn a_read_cut_short_by_a_signal_is_interrupted() {
    let remote = Remote { url: "https://git.example.com/fleet.git".into(), auth: Auth::Anonymous };
    let session = Session::new(&remote, &Endpoint::Http);
    let eintr = "error receiving data from socket: Interrupted system call";
    let error = session.classify(git2::Error::new(ErrorCode::GenericError, ErrorClass::Net, eintr));
    assert!(matches!(error, GitError::Interrupted { .. }), "{error:?}");
    assert_eq!(crate::Error::from(error).exit_code(), crate::ExitCode::Interrupted);
}

#[test]
fn one_repository_under_its_several_urls() {
    use super::same_repository;
    assert!(same_repository("git@github.com:acme/fleet.git", "ssh://git@github.com/acme/fleet"));
    assert!(same_repository("https://GitHub.com/acme/fleet/", "ssh://git@github.com:22/acme/fleet.git"));
    assert!(same_repository("http://127.0.0.1:8080/fleet.git", "ssh://root@127.0.0.1:2222/fleet"));
    assert!(!same_repository("https://github.com/acme/fleet", "https://github.com/acme/fleet-two"));
    assert!(!same_repository("https://github.com/acme/fleet", "https://gitlab.com/acme/fleet"));
}

#[test]
fn a_work_tree_is_found_from_below_with_its_remotes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    repo.remote("origin", "https://example.invalid/fleet.git").unwrap();
    std::fs::create_dir_all(dir.path().join("apps/web")).unwrap();
    let (root, remotes) = super::work_tree_of(&dir.path().join("apps/web")).unwrap();
    assert_eq!(root.canonicalize().unwrap(), dir.path().canonicalize().unwrap());
    assert_eq!(remotes, ["https://example.invalid/fleet.git"]);
    assert!(super::work_tree_of(tempfile::tempdir().unwrap().path()).is_err());
}
