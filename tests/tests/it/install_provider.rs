//! `kubectl gitops install --provider github|gitlab` against the recording API stand-in, with
//! the real git server behind it and the real cluster.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::process::Command;
use std::time::Duration;

use gitops_e2e::snapshot::Run;
use gitops_e2e::standin::{StandIn, TOKEN};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};
use gitops_shared::provider::Kind;

/// A stand-in whose clone URLs point at the test environment's git server.
fn standin(env: &TestEnv, kind: Kind) -> StandIn {
    let standin = StandIn::start(kind);
    let ssh_base = format!("ssh://{}@127.0.0.1:{}{}/", env.git.ssh_user, env.git.ssh_port, env.git.repos.display());
    let https_base = format!("http://127.0.0.1:{}/", env.git.http_port);
    standin.set_clone_bases(&ssh_base, &https_base);
    standin
}

fn install(env: &TestEnv, standin: &StandIn, provider: &str, args: &[&str]) -> Run {
    let (token_var, api_var) = (standin.kind().token_env(), standin.kind().api_url_env());
    Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--provider", provider])
            .args(args)
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .arg("--known-hosts-file")
            .arg(&env.git.known_hosts)
            .env("KUBECONFIG", &env.kubeconfig)
            .env(token_var, TOKEN)
            .env(api_var, &standin.base_url),
    )
}

fn write_lines(standin: &StandIn) -> Vec<String> {
    standin.writes().iter().map(|request| request.line()).collect()
}

#[test]
fn github_new_repository_is_created_private_and_gets_a_read_only_deploy_key() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    let standin = standin(env, Kind::GitHub);
    // The git storage behind the provider; the API creates the repository itself.
    env.git.create_repo("acme/fleet").unwrap();
    let args = ["--owner", "acme", "--repository", "fleet", "--path", "clusters/dev", "--cluster-name", "dev"];
    let components = components.to_str().unwrap();

    let dry = install(env, &standin, "github", &[&args[..], &["--components-file", components, "--dry-run"]].concat());
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert!(dry.stdout.starts_with("Plan:\n  1. create the private repository acme/fleet through the provider's API\n  2. add deploy key SHA256:"), "{}", dry.stdout);
    assert_eq!(write_lines(&standin), Vec::<String>::new(), "--dry-run wrote nothing to the provider");

    let run = install(env, &standin, "github", &[&args[..], &["--components-file", components, "--no-wait"]].concat());
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let writes = standin.writes();
    assert_eq!(writes.len(), 2, "{:?}", write_lines(&standin));
    assert_eq!(writes[0].line(), "POST /orgs/acme/repos");
    let body = writes[0].body.clone().unwrap();
    assert_eq!((body["name"].as_str(), body["private"].as_bool()), (Some("fleet"), Some(true)));
    assert_eq!(writes[1].line(), "POST /repos/acme/fleet/keys");
    let key = writes[1].body.clone().unwrap();
    assert_eq!(key["title"], "flux-system-main-flux-system-./clusters/dev");
    assert_eq!(key["read_only"], true);
    assert_eq!(writes[1].header("authorization"), Some("Bearer ***"));

    // GitHub would now let Flux in with that key: the test's git server does the same.
    env.git.authorize_key(key["key"].as_str().unwrap()).unwrap();
    env.wait_for_jsonpath(
        &["-n", "flux-system", "kustomization", "flux-system"],
        "{.status.conditions[?(@.type==\"Ready\")].status}",
        "True",
        Duration::from_secs(180),
    )
    .unwrap();

    // A re-run finds the key and the repository: no write to the provider.
    standin.clear_requests();
    let again = install(env, &standin, "github", &args);
    assert_eq!(again.code, Some(0), "stdout: {}\nstderr: {}", again.stdout, again.stderr);
    assert!(again.stdout.starts_with("already installed: "), "{}", again.stdout);
    assert_eq!(write_lines(&standin), Vec::<String>::new());
}

#[test]
fn without_rights_to_create_the_repository_nothing_is_done_and_the_hint_says_what_to_ask_for() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let standin = standin(env, Kind::GitHub);
    standin.set_token_can_create_repos(false);
    let run = install(
        env,
        &standin,
        "github",
        &["--owner", "acme", "--repository", "fleet", "--components-file", components.to_str().unwrap(), "--no-wait"],
    );
    assert_eq!(run.code, Some(4), "{}", run.stderr);
    assert!(run.stderr.contains("step 1/"), "names the step: {}", run.stderr);
    assert!(run.stderr.to_lowercase().contains("hint:") && run.stderr.contains("IT"), "{}", run.stderr);
    assert_eq!(write_lines(&standin), ["POST /orgs/acme/repos"]);
    let namespaces = env.kubectl_ok(&["get", "ns", "flux-system", "--ignore-not-found", "-o=name"]).unwrap();
    assert_eq!(namespaces, "", "the cluster is untouched");
}

#[test]
fn a_protected_branch_is_refused_before_any_write() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let standin = standin(env, Kind::GitLab);
    standin.add_repo("acme/fleet");
    standin.protect_branch("acme/fleet", "main");
    let run = install(
        env,
        &standin,
        "gitlab",
        &["--owner", "acme", "--repository", "fleet", "--components-file", components.to_str().unwrap(), "--no-wait"],
    );
    assert_eq!(run.code, Some(4), "{}", run.stderr);
    assert!(run.stderr.starts_with("error: branch main of acme/fleet is protected"), "{}", run.stderr);
    assert_eq!(write_lines(&standin), Vec::<String>::new());
}

#[test]
fn gitlab_existing_project_gets_a_deploy_key_without_push_rights() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    let standin = standin(env, Kind::GitLab);
    standin.add_empty_repo("acme/platform/fleet");
    env.git.create_repo("acme/platform/fleet").unwrap();
    let run = install(
        env,
        &standin,
        "gitlab",
        &[
            "--owner",
            "acme/platform",
            "--repository",
            "fleet",
            "--path",
            "clusters/uat",
            "--components-file",
            components.to_str().unwrap(),
            "--no-wait",
        ],
    );
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let writes = standin.writes();
    assert_eq!(write_lines(&standin), ["POST /api/v4/projects/acme%2Fplatform%2Ffleet/deploy_keys"]);
    let body = writes[0].body.clone().unwrap();
    assert_eq!(body["can_push"], false);
    assert_eq!(body["title"], "flux-system-main-flux-system-./clusters/uat");
    assert_eq!(writes[0].header("private-token"), Some("***"));
}

#[test]
fn missing_owner_or_token_are_usage_errors() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let standin = standin(env, Kind::GitHub);
    let run = install(env, &standin, "github", &["--repository", "fleet"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.starts_with("error: --owner is required with --provider github"), "{}", run.stderr);
    let no_token = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--provider", "gitlab", "--owner", "acme", "--repository", "fleet"])
            .env("KUBECONFIG", &env.kubeconfig)
            .env_remove("GITLAB_TOKEN")
            .env("KUBECTL_GITOPS_CONFIG", "/nonexistent/config.yaml"),
    );
    assert_eq!(no_token.code, Some(2));
    assert!(
        no_token.stderr.starts_with("error: --provider gitlab needs an API token for gitlab.com\n"),
        "{}",
        no_token.stderr
    );
    assert!(
        no_token.stderr.contains(
            "hint: export GITLAB_TOKEN=<token>, or put it under tokens.gitlab.com in /nonexistent/config.yaml"
        ),
        "{}",
        no_token.stderr
    );
    // A token kept in a config file other users may read is no secret: refused, never sent.
    let shared = tempfile::tempdir().unwrap();
    let config = shared.path().join("config.yaml");
    std::fs::write(&config, "tokens:\n  gitlab.com: glpat-everyone-reads-this\n").unwrap();
    let readable_by_all = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644);
    std::fs::set_permissions(&config, readable_by_all).unwrap();
    let readable = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--provider", "gitlab", "--owner", "acme", "--repository", "fleet"])
            .env("KUBECONFIG", &env.kubeconfig)
            .env_remove("GITLAB_TOKEN")
            .env("KUBECTL_GITOPS_CONFIG", &config),
    );
    assert_eq!(readable.code, Some(2), "{}", readable.render());
    let refused =
        format!("error: {} holds the token for gitlab.com, and other users may read it (mode 644)\n", config.display());
    assert!(readable.stderr.starts_with(&refused), "{}", readable.stderr);
    assert!(
        readable.stderr.contains(&format!("hint: make it yours alone: chmod 600 {}", config.display())),
        "{}",
        readable.stderr
    );
    assert!(!readable.render().contains("glpat-everyone"), "{}", readable.render());
    assert_eq!(write_lines(&standin), Vec::<String>::new());
}
