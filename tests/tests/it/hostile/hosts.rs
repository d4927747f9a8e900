//! #56: a host named by a record is parsed once, strictly, and in CI only the user's side binds
//! one. The attacker writes the install record (the config repo or the cluster) and listens on a
//! port of this machine: a port that counts every connection, or a git server that logs every
//! request and asks for credentials.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;

use gitops_e2e::binaries;
use gitops_e2e::http::Silent;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_shared::provider::Kind;

use crate::credentials::{Logged, config_file, edit_record, install};

/// The operator's GitHub token; nothing of the attacker's may ever see it.
const SECRET: &str = "ghp_operator-s3cret-token";

/// What `app add` adds here, planned only.
const ADD: [&str; 8] =
    ["app", "add", "hello", "--url", "https://github.com/stefanprodan/podinfo", "--path", "./kustomize", "--dry-run"];

/// `kubectl gitops ARGS` as an operator types it, our binaries first on PATH, with `envs` and
/// nothing of the test's own environment that would decide where credentials go (no token, no
/// API URL, no `CI`, no accepted hosts).
fn gitops(env: &TestEnv, plugins: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let path = format!("{}:{}", plugins.display(), std::env::var("PATH").unwrap_or_default());
    let mut command = Command::new(binaries::kubectl());
    command.arg("gitops").args(args).env("PATH", path).env("KUBECONFIG", &env.kubeconfig);
    for kind in [Kind::GitHub, Kind::GitLab, Kind::Gitea] {
        command.env_remove(kind.token_env()).env_remove(kind.api_url_env());
    }
    command.env_remove("CI").env_remove("KUBECTL_GITOPS_ACCEPT_HOSTS").env_remove("SSH_AUTH_SOCK");
    command.envs(envs.iter().copied());
    Run::of(&mut command)
}

/// Item 2: with the cluster bound to github.com, the record's `hostname` spelled so that the
/// binding (which kept what follows the last `@`) read github.com while the API client's URL
/// (whose authority ends at the first `/`, `?`, `#`, or `\` in https) went to the attacker:
/// `GITHUB_TOKEN=… kubectl gitops pr list` sent it `Authorization: Bearer <token>`. Every such
/// spelling is refused now, naming it, before any connection; so are the user's own spellings
/// of a host (a flag, the environment).
#[test]
fn a_host_spelled_to_read_as_the_bound_one_is_refused_before_anything_is_sent() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    install(env);
    edit_record(env, "provider", "github");
    edit_record(env, "repository", "acme/fleet");
    // Bound to github.com, as an install from this machine with --provider github binds it.
    let config = config_file(env);
    let repo_host = format!("repoHost: 127.0.0.1:{}\n", env.git.ssh_port);
    let text = std::fs::read_to_string(&config).unwrap();
    let bound = text.replace(&repo_host, &format!("{repo_host}    provider: github\n    apiHost: github.com\n"));
    assert_ne!(bound, text, "install bound the repo host:\n{text}");
    std::fs::write(&config, bound).unwrap();

    let attacker = Silent::start();
    let at = &attacker.address;
    let plugins = binaries::plugin_dir();
    let token = [(Kind::GitHub.token_env(), SECRET)];
    let spellings = [
        format!("{at}/x@github.com"),
        format!("https://{at}/x@github.com"),
        format!("{at}\\@github.com"),
        format!("{at}?@github.com"),
        format!("{at}#@github.com"),
        format!("{at}%40github.com"),
        format!("github.com@{at}"),
        " github.com".to_string(),
        "github.com.".to_string(),
        "gíthub.com".to_string(),
    ];
    for hostname in &spellings {
        edit_record(env, "hostname", hostname);
        let run = gitops(env, plugins.path(), &["pr", "list"], &token);
        assert_eq!(run.code, Some(2), "{hostname:?}: {}", run.render());
        let refused = format!("error: the install record's hostname {hostname:?} is not a host[:port]: ");
        assert!(run.stderr.contains(&refused), "{hostname:?}: {}", run.stderr);
        assert!(run.stderr.contains("\nhint: "), "{}", run.stderr);
        assert!(!run.stderr.contains(SECRET) && !run.stdout.contains(SECRET));
        assert_eq!(attacker.accepted(), 0, "{hostname:?}: the attacker was connected to");
    }
    assert!(gitops(env, plugins.path(), &["pr", "list"], &token).stderr.contains("punycode"), "the IDN's hint");

    // The user's own spellings go through the same parser.
    edit_record(env, "hostname", "github.com");
    let accepted = [&token[..], &[("KUBECTL_GITOPS_ACCEPT_HOSTS", "github.com,evil.example/x@github.com")]].concat();
    let hostname = format!("{at}/x@github.com");
    let install = ["install", "--provider", "github", "--owner", "acme", "--repository", "fleet", "--dry-run"];
    for (args, envs, named) in [
        (vec!["pr", "list"], &accepted[..], "KUBECTL_GITOPS_ACCEPT_HOSTS \"evil.example/x@github.com\""),
        (
            [&ADD[..], &["--accept-host", "evil.example\\@github.com"]].concat(),
            &[][..],
            "--accept-host \"evil.example\\\\@",
        ),
        ([&install[..], &["--hostname", &hostname]].concat(), &token[..], "--hostname \""),
    ] {
        let run = gitops(env, plugins.path(), &args, envs);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.render());
        assert!(run.stderr.contains(&format!("error: {named}")), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("is not a host[:port]"), "{}", run.stderr);
    }
    assert_eq!(attacker.accepted(), 0);
}

/// Item 3: a CI job starts with an empty home, so its first command bound whatever the record
/// named (trust on first use) and sent the credentials there: the git password to the record's
/// `url`, the token to its `hostname`. With `CI` set a record binds nothing: refused, naming the
/// host and the three ways to bind it from the user's side; bound from that side, the same run
/// works.
#[test]
fn a_ci_job_with_an_empty_home_binds_only_the_hosts_its_user_names() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    install(env);
    let plugins = binaries::plugin_dir();
    let home = tempfile::tempdir().unwrap();
    let job = |name: &str, args: &[&str], extra: &[(&str, &str)]| {
        let config = home.path().join(name).join("config.yaml");
        let mut envs = vec![
            ("CI", "true"),
            ("KUBECTL_GITOPS_CONFIG", config.to_str().unwrap()),
            ("GITOPS_GIT_USERNAME", GIT_HTTP_USER),
            ("GITOPS_GIT_PASSWORD", GIT_HTTP_PASSWORD),
        ];
        envs.extend_from_slice(extra);
        (gitops(env, plugins.path(), args, &envs), config)
    };

    // The record's url: the attacker's git server, which asks for credentials.
    let git = Logged::asking_for_credentials();
    let git_host = format!("127.0.0.1:{}", git.port());
    edit_record(env, "url", &format!("http://{git_host}/fleet.git"));
    let (refused, config) = job("first", &ADD, &[]);
    assert_eq!(refused.code, Some(2), "{}", refused.render());
    assert!(
        refused.stderr.contains(&format!("names config repo host {git_host}, and no binding in")),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains(&format!(
            "hint: bind it from your side if it is yours: run with --accept-host {git_host}, or set KUBECTL_GITOPS_ACCEPT_HOSTS={git_host}, or write it under clusters."
        )),
        "{}",
        refused.stderr
    );
    assert!(git.requests().is_empty(), "the attacker's git server was asked: {:?}", git.requests());
    assert_eq!(git.credentials_seen(), Vec::<String>::new());
    assert!(!config.exists(), "nothing was bound");

    // The record's provider API: the attacker's port.
    let api = Silent::start();
    let http_host = format!("127.0.0.1:{}", env.git.http_port);
    edit_record(env, "url", &env.git.http_url("fleet"));
    edit_record(env, "provider", "github");
    edit_record(env, "repository", "acme/fleet");
    edit_record(env, "hostname", &api.address);
    let (refused, _) = job("second", &["pr", "list"], &[(Kind::GitHub.token_env(), SECRET)]);
    assert_eq!(refused.code, Some(2), "{}", refused.render());
    assert!(
        refused.stderr.contains(&format!(
            "names config repo host {http_host} and GitHub API host {}, and no binding in",
            api.address
        )),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains(SECRET));
    assert_eq!(api.accepted(), 0, "the attacker's API was connected to");

    // The job's user names the real repository's host: bound, and the run works; then the
    // config file it wrote binds it.
    let remove = r#"[{"op":"remove","path":"/data/provider"},{"op":"remove","path":"/data/repository"},{"op":"remove","path":"/data/hostname"}]"#;
    env.kubectl_ok(&["-n", "flux-system", "patch", "configmap", "kubectl-gitops", "--type", "json", "-p", remove])
        .unwrap();
    let (named, config) = job("third", &ADD, &[("KUBECTL_GITOPS_ACCEPT_HOSTS", &http_host)]);
    assert_eq!(named.code, Some(0), "{}", named.render());
    assert!(named.stdout.starts_with("Plan:\n"), "{}", named.stdout);
    assert!(
        named.stderr.contains(&format!("sends credentials only to config repo host {http_host}")),
        "{}",
        named.stderr
    );
    assert!(std::fs::read_to_string(&config).unwrap().contains(&format!("repoHost: {http_host}")));
    let (again, _) = job("third", &ADD, &[]);
    assert_eq!(again.code, Some(0), "{}", again.render());
    assert!(!again.stderr.contains("sends credentials only"), "bound once: {}", again.stderr);
    assert!(git.requests().is_empty() && api.accepted() == 0);
}
