//! Where the operator's credentials go (#32): only to the hosts the user's config file binds the
//! cluster to, never because the install record (which anyone who writes the config repo
//! controls) says so, never along a redirect to another origin, and never through the config
//! repo's sync Secret to another server. An attacker is a local server that logs every request.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gitops_e2e::http::{self, Incoming, Reply, Server};
use gitops_e2e::snapshot::Run;
use gitops_e2e::standin::TOKEN;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};
use gitops_shared::provider::Kind;

use super::app_provider::Fixture;

/// The password every command here is given; no server of the attacker's may ever see it.
const PASSWORD: &str = "operator-s3cret-password";

/// What `app add` adds in these tests.
const ADD: [&str; 6] = ["add", "hello", "--url", "https://github.com/stefanprodan/podinfo", "--path", "./kustomize"];

/// A server that logs every request and answers each with `reply`.
pub(crate) struct Logged {
    pub(crate) server: Server,
    requests: Arc<Mutex<Vec<Incoming>>>,
}

impl Logged {
    fn start(reply: impl Fn(&Incoming) -> Reply + Send + Sync + 'static) -> Logged {
        Logged::start_on(std::net::Ipv4Addr::LOCALHOST.into(), reply)
    }

    /// Listening on `ip`, one of this machine's addresses.
    fn start_on(ip: std::net::IpAddr, reply: impl Fn(&Incoming) -> Reply + Send + Sync + 'static) -> Logged {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        let server = http::serve_on(ip, move |request| {
            let answer = reply(&request);
            log.lock().unwrap().push(request);
            answer
        });
        Logged { server, requests }
    }

    /// A git server (or API) that wants credentials: 401 with a Basic challenge.
    pub(crate) fn asking_for_credentials() -> Logged {
        Logged::start(|_| answer(401, vec![("www-authenticate".into(), "Basic realm=\"git\"".into())], b"who are you?"))
    }

    /// A server that redirects every request to the same path on `to`.
    fn redirecting_to(to: &str) -> Logged {
        let to = to.to_string();
        Logged::start(move |request| {
            let query = form_query(&request.query);
            answer(302, vec![("location".into(), format!("{to}{}{query}", request.path))], b"")
        })
    }

    pub(crate) fn port(&self) -> u16 {
        self.server.origin.rsplit(':').next().unwrap().parse().unwrap()
    }

    pub(crate) fn requests(&self) -> Vec<Incoming> {
        self.requests.lock().unwrap().clone()
    }

    /// The credentials it was sent, in any of the headers a provider or git puts them in.
    pub(crate) fn credentials_seen(&self) -> Vec<String> {
        self.requests()
            .iter()
            .flat_map(|request| {
                ["authorization", "private-token"]
                    .iter()
                    .filter_map(|name| request.headers.get(*name).map(|value| format!("{name}: {value}")))
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

fn answer(status: u16, headers: Vec<(String, String)>, body: &[u8]) -> Reply {
    Reply { status, headers, body: body.to_vec(), content_type: "text/plain", delay: Duration::ZERO }
}

fn form_query(pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let encoded: Vec<String> = pairs.iter().map(|(key, value)| format!("{key}={value}")).collect();
    format!("?{}", encoded.join("&"))
}

/// Changes one field of the cluster's install record, as Flux would after a commit to
/// `gitops.yaml` (no Flux runs here to change it back).
pub(crate) fn edit_record(env: &TestEnv, field: &str, value: &str) {
    let patch = serde_json::json!({ "data": { field: value } }).to_string();
    env.kubectl_ok(&["-n", "flux-system", "patch", "configmap", "kubectl-gitops", "--type", "merge", "-p", &patch])
        .unwrap();
}

/// `install` from repo `fleet` (created here), without waiting for Flux (none runs here).
pub(crate) fn install(env: &TestEnv) {
    env.git.create_repo("fleet").unwrap();
    let run = super::app::install_with(env, &flux_release::components(), &["--no-wait"]);
    assert_eq!(run.code, Some(0), "install: {}", run.render());
}

/// The config file the tests' commands share: beside the environment's kubeconfig, where
/// [`binaries::isolate_config`] puts it.
pub(crate) fn config_file(env: &TestEnv) -> PathBuf {
    env.kubeconfig.parent().unwrap().join("kubectl-gitops-config.yaml")
}

/// `kubectl-gitops-app ARGS` against `env`, pushing over HTTP(S) as `user` with `password`.
fn app_with_password(env: &TestEnv, user: &str, password: &str, args: &[&str]) -> Run {
    Run::of(
        Command::new(binaries::path("kubectl-gitops-app"))
            .args(args)
            .env("KUBECONFIG", &env.kubeconfig)
            .env("GITOPS_GIT_USERNAME", user)
            .env("GITOPS_GIT_PASSWORD", password)
            .env_remove("SSH_AUTH_SOCK"),
    )
}

/// The issue's reproduction: the record's `url` pointed at an attacker's server answering 401.
/// Before the fix `app add --dry-run` sent it `Authorization: Basic git:<password>`; now the
/// record is refused, naming the bound host and the new one, until the user accepts a host that
/// really is theirs.
#[test]
fn a_record_pointing_at_another_host_gets_no_password_until_the_host_is_accepted() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    install(env);
    let ssh_host = format!("127.0.0.1:{}", env.git.ssh_port);

    let attacker = Logged::asking_for_credentials();
    let evil_host = format!("127.0.0.1:{}", attacker.port());
    edit_record(env, "url", &format!("http://{evil_host}/fleet.git"));
    let dry = app_with_password(env, "git", PASSWORD, &[&ADD[..], &["--dry-run"]].concat());
    assert_eq!(attacker.credentials_seen(), Vec::<String>::new(), "the attacker got credentials");
    assert_eq!(dry.code, Some(2), "{}", dry.render());
    assert!(attacker.requests().is_empty(), "the attacker was not even asked: {:?}", attacker.requests());
    assert!(
        dry.stderr
            .contains(&format!("names config repo host {evil_host}, but it is bound to config repo host {ssh_host}")),
        "{}",
        dry.stderr
    );
    assert!(
        dry.stderr
            .contains(&format!("hint: if the repository really moved, run again with --accept-host {evil_host};"))
    );
    assert!(!dry.stderr.contains(PASSWORD) && !dry.stdout.contains(PASSWORD));
    let config = std::fs::read_to_string(config_file(env)).unwrap();
    assert!(config.contains(&format!("repoHost: {ssh_host}")), "install bound the cluster to its repo:\n{config}");

    // The repo really moves (to the same repository over the git server's HTTP): refused until
    // accepted, then bound to the new host.
    let http_host = format!("127.0.0.1:{}", env.git.http_port);
    edit_record(env, "url", &env.git.http_url("fleet"));
    let refused = app_with_password(env, GIT_HTTP_USER, GIT_HTTP_PASSWORD, &[&ADD[..], &["--dry-run"]].concat());
    assert_eq!(refused.code, Some(2), "{}", refused.render());
    assert!(refused.stderr.contains(&format!("--accept-host {http_host}")), "{}", refused.stderr);
    let accepted = app_with_password(
        env,
        GIT_HTTP_USER,
        GIT_HTTP_PASSWORD,
        &[&ADD[..], &["--dry-run", "--accept-host", &http_host]].concat(),
    );
    assert_eq!(accepted.code, Some(0), "{}", accepted.render());
    assert!(accepted.stdout.starts_with("Plan:\n"), "{}", accepted.stdout);
    assert!(
        accepted.stderr.contains(&format!("sends credentials only to config repo host {http_host} (was {ssh_host})")),
        "{}",
        accepted.stderr
    );
    let again = app_with_password(env, GIT_HTTP_USER, GIT_HTTP_PASSWORD, &[&ADD[..], &["--dry-run"]].concat());
    assert_eq!(again.code, Some(0), "{}", again.render());
    assert!(!again.stderr.contains("sends credentials only"), "bound once: {}", again.stderr);
    assert!(attacker.requests().is_empty());
}

/// The provider token goes nowhere the record alone names: not over git to a swapped `url`
/// (the token is the git password of a hosted repo), not to a swapped API `hostname`, for
/// `app add` and `pr list` alike.
#[test]
fn a_record_pointing_at_another_host_gets_no_provider_token() {
    let fixture = Fixture::install_from(Kind::GitHub, &flux_release::components(), &[]);
    let env = &fixture.env;
    let attacker = Logged::asking_for_credentials();
    let evil_host = format!("127.0.0.1:{}", attacker.port());
    let recorded_url = env.jsonpath(&["-n", "flux-system", "configmap", "kubectl-gitops"], "{.data.url}").unwrap();

    edit_record(env, "url", &format!("http://{evil_host}/acme/fleet.git"));
    // No SSH key: the token is the password over HTTP.
    let dry = Run::of(fixture.command("kubectl-gitops-app").args(ADD).arg("--dry-run"));
    assert_eq!(attacker.credentials_seen(), Vec::<String>::new(), "the attacker got the token");
    assert_eq!(dry.code, Some(2), "{}", dry.render());
    assert!(dry.stderr.contains(&format!("names config repo host {evil_host}, but it is bound to")), "{}", dry.stderr);
    assert!(!dry.stderr.contains(TOKEN));

    edit_record(env, "url", &recorded_url);
    edit_record(env, "hostname", &evil_host);
    for (binary, args) in [("kubectl-gitops-app", &ADD[..]), ("kubectl-gitops-pr", &["list"][..])] {
        let run = Run::of(fixture.command(binary).args(args).env_remove(Kind::GitHub.api_url_env()));
        assert_eq!(run.code, Some(2), "{binary}: {}", run.render());
        assert!(
            run.stderr
                .contains(&format!("names GitHub API host {evil_host}, but it is bound to GitHub API host 127.0.0.1")),
            "{binary}: {}",
            run.stderr
        );
    }
    assert!(attacker.requests().is_empty(), "{:?}", attacker.requests());
    assert_eq!(fixture.standin.writes().len(), 0);
}

/// The provider answers with a redirect to another server: the request is not followed there,
/// so GitLab's `PRIVATE-TOKEN` (which reqwest keeps on a cross-host redirect) and the Bearer and
/// `token` headers of GitHub and Gitea never reach it. Git over HTTP redirected to another port
/// gets no password either.
#[test]
fn credentials_never_follow_a_redirect_to_another_origin() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    install(env);
    let elsewhere = Logged::start(|_| answer(200, Vec::new(), b"[]"));
    let redirector = Logged::redirecting_to(&elsewhere.server.origin);
    edit_record(env, "repository", "acme/fleet");
    for kind in [Kind::GitLab, Kind::GitHub, Kind::Gitea] {
        edit_record(env, "provider", kind.id());
        // A config file of its own, where the user's side binds each provider's API host.
        let config = tempfile::tempdir().unwrap();
        let hosts = format!("127.0.0.1:{},{}", env.git.ssh_port, kind.default_host());
        let run = Run::of(
            Command::new(binaries::path("kubectl-gitops-pr"))
                .arg("list")
                .env("KUBECONFIG", &env.kubeconfig)
                .env("KUBECTL_GITOPS_CONFIG", config.path().join("config.yaml"))
                .env("KUBECTL_GITOPS_ACCEPT_HOSTS", hosts)
                .env(kind.token_env(), PASSWORD)
                .env(kind.api_url_env(), format!("{}/api", redirector.server.origin)),
        );
        assert_eq!(elsewhere.credentials_seen(), Vec::<String>::new(), "{kind}: a token followed the redirect");
        assert_eq!(run.code, Some(4), "{kind}: {}", run.render());
        assert!(
            run.stderr.contains(&format!(
                "{} redirected the API request to {}; it was not followed",
                redirector.server.origin, elsewhere.server.origin
            )),
            "{kind}: {}",
            run.stderr
        );
        assert!(run.stderr.contains("hint: credentials never follow a redirect to another origin"), "{}", run.stderr);
    }
    assert_eq!(redirector.requests().len(), 3, "each provider asked once");
    assert!(elsewhere.requests().is_empty(), "the other server was asked: {:?}", elsewhere.requests());

    // Git: the repo's server (accepted as the cluster's) sends the clone to another port, which
    // asks for credentials.
    let remove = r#"[{"op":"remove","path":"/data/provider"},{"op":"remove","path":"/data/repository"}]"#;
    env.kubectl_ok(&["-n", "flux-system", "patch", "configmap", "kubectl-gitops", "--type", "json", "-p", remove])
        .unwrap();
    let git_elsewhere = Logged::asking_for_credentials();
    let git_redirector = Logged::redirecting_to(&git_elsewhere.server.origin);
    edit_record(env, "url", &format!("{}/fleet.git", git_redirector.server.origin));
    let accept = format!("127.0.0.1:{}", git_redirector.port());
    let dry = app_with_password(env, "git", PASSWORD, &[&ADD[..], &["--dry-run", "--accept-host", &accept]].concat());
    assert_eq!(git_elsewhere.credentials_seen(), Vec::<String>::new(), "the password followed the redirect");
    assert_eq!(dry.code, Some(4), "{}", dry.render());
    assert!(!git_redirector.requests().is_empty(), "the repo's server was asked");
    assert!(!git_elsewhere.requests().is_empty(), "libgit2 followed the redirect to the other port");
    assert!(
        dry.stderr.contains(&format!(
            "{} asked for them, and they belong to {} only",
            git_elsewhere.server.origin, git_redirector.server.origin
        )),
        "{}",
        dry.stderr
    );
}

/// `--secret-ref flux-system` hands the config repo's credentials to the source's server: only
/// a source on the config repo's own server may use it. So does any Secret a source in the Flux
/// namespace reads another server with.
#[test]
fn the_sync_secret_is_refused_for_a_source_on_another_server() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    install(env);
    let app_with = |url: &str, secret: &str| {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-app"))
                .args(["add", "web", "--url", url, "--path", "./deploy", "--secret-ref", secret, "--dry-run"])
                .arg("--private-key-file")
                .arg(&env.git.client_key)
                .env("KUBECONFIG", &env.kubeconfig),
        )
    };
    let app = |url: &str| app_with(url, "flux-system");
    let attacker = Logged::asking_for_credentials();
    let foreign = format!("{}/acme/web.git", attacker.server.origin);
    let refused = app(&foreign);
    assert_eq!(refused.code, Some(2), "{}", refused.render());
    assert!(
        refused.stderr.contains(&format!(
            "error: --secret-ref flux-system is the Secret Flux reads the config repo with, and {foreign} is not on the config repo's server ({})",
            env.git.ssh_url("fleet")
        )),
        "{}",
        refused.stderr
    );
    assert_eq!(refused.stdout, "", "no plan");
    let own = app(&env.git.ssh_url("web"));
    assert_eq!(own.code, Some(0), "{}", own.render());
    assert!(own.stdout.starts_with("Plan:\n"), "{}", own.stdout);

    // A registry's Secret, which an OCIRepository reads ghcr.io with, is not for the attacker's
    // server; the git server's Secret, which a GitRepository reads it with, serves another repo
    // there.
    env.apply_yaml(&format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: manifests\n  namespace: \
         flux-system\nspec:\n  interval: 10m\n  url: oci://ghcr.io/acme/manifests\n  ref:\n    tag: v1\n  secretRef:\n    \
         name: ghcr\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: team\n  \
         namespace: flux-system\nspec:\n  interval: 10m\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: \
         team-git\n",
        env.git.ssh_url("team")
    ))
    .unwrap();
    let shared = app_with(&foreign, "ghcr");
    assert_eq!(shared.code, Some(2), "{}", shared.render());
    assert!(
        shared.stderr.contains(&format!(
            "error: --secret-ref ghcr is the Secret OCIRepository flux-system/manifests reads ghcr.io:443 with, and \
             {foreign} is on another server ({}): Flux would send that source's credentials there\nhint: create a \
             Secret of its own for {0} in namespace flux-system",
            foreign.trim_start_matches("http://").split('/').next().unwrap()
        )),
        "{}",
        shared.render()
    );
    let team = app_with(&env.git.ssh_url("web"), "team-git");
    assert_eq!(team.code, Some(0), "{}", team.render());

    // A team's repo is read in the team's namespaces, with a Secret there: one that another
    // source of that namespace reads another server with is refused too.
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: payments\n---\napiVersion: \
         source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: ledger\n  namespace: payments\nspec:\n  \
         interval: 10m\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: ledger-git\n",
        env.git.ssh_url("ledger")
    ))
    .unwrap();
    let tenant_with = |url: &str| {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-tenant"))
                .args([
                    "add",
                    "payments",
                    "--with-namespace",
                    "payments",
                    "--repo",
                    url,
                    "--secret-ref",
                    "ledger-git",
                    "--dry-run",
                ])
                .arg("--private-key-file")
                .arg(&env.git.client_key)
                .env("KUBECONFIG", &env.kubeconfig),
        )
    };
    let tenant = tenant_with(&foreign);
    assert_eq!(tenant.code, Some(2), "{}", tenant.render());
    assert!(
        tenant.stderr.contains(&format!(
            "error: --secret-ref ledger-git is the Secret GitRepository payments/ledger reads {} with, and {foreign} \
             is on another server",
            env.git.ssh_url("ledger").split('@').nth(1).unwrap().split('/').next().unwrap()
        )),
        "{}",
        tenant.render()
    );
    assert!(tenant.stderr.contains("hint: create a Secret of its own for"), "{}", tenant.stderr);
    let own = tenant_with(&env.git.ssh_url("payments"));
    assert_eq!(own.code, Some(0), "{}", own.render());
    assert!(attacker.requests().is_empty());
}

/// `kubectl gitops artifact push` of a one-file directory to `url`, with the docker config in
/// `docker_config`.
fn push_artifact(url: &str, extra: &[&str], docker_config: &Path) -> Run {
    let package = tempfile::tempdir().unwrap();
    std::fs::write(package.path().join("config.yaml"), "kind: ConfigMap\n").unwrap();
    Run::of(
        Command::new(binaries::path("kubectl-gitops-artifact"))
            .args(["push", url, "--source", "s", "--revision", "r", "--reproducible", "--path"])
            .arg(package.path())
            .args(extra)
            .env("DOCKER_CONFIG", docker_config)
            .env("NO_COLOR", "1"),
    )
}

/// A registry's answers are input too: the password goes over HTTPS, or plain HTTP on this
/// machine, and only to a token service on the registry's own origin or site. (The same client
/// pulls the charts `diff` renders, from the registries the config repo names.)
#[test]
fn registry_credentials_stay_off_plain_http_and_away_from_another_token_service() {
    let creds = format!("ci:{PASSWORD}");
    let no_docker_config = tempfile::tempdir().unwrap();

    // A registry that names a token service on another port: another program, maybe an attacker's.
    let collector = Logged::start(|_| answer(200, vec![], br#"{"token":"t"}"#));
    let realm = format!("{}/token", collector.server.origin);
    let registry = Logged::start(move |_| {
        answer(401, vec![("www-authenticate".into(), format!("Bearer realm=\"{realm}\",service=\"registry\""))], b"")
    });
    let url = format!("oci://{}/app:v1", registry.server.origin.trim_start_matches("http://"));
    let refused = push_artifact(&url, &["--creds", &creds], no_docker_config.path());
    assert_eq!(refused.code, Some(2), "{}", refused.render());
    assert!(
        refused.stderr.contains(&format!("to be sent to {}", collector.server.origin))
            && refused.stderr.contains("hint:"),
        "{}",
        refused.render()
    );
    assert!(!refused.stderr.contains(PASSWORD) && !refused.stdout.contains(PASSWORD));
    assert_eq!(collector.requests().len(), 0, "the token service was asked: {:?}", collector.requests());
    assert_eq!(registry.credentials_seen(), Vec::<String>::new());
    assert!(!registry.requests().is_empty(), "the registry was asked where it sends credentials");

    // A registry across the network over plain HTTP (`--insecure`): `--creds` are refused before
    // anything is sent, and the docker config's credentials for it are not read.
    let across = Logged::start_on(http::non_loopback_ip(), |_| {
        answer(401, vec![("www-authenticate".into(), "Basic realm=\"registry\"".into())], b"")
    });
    let address = across.server.origin.trim_start_matches("http://").to_string();
    let url = format!("oci://{address}/app:v1");
    let refused = push_artifact(&url, &["--insecure", "--creds", &creds], no_docker_config.path());
    assert_eq!(refused.code, Some(2), "{}", refused.render());
    assert!(refused.stderr.contains("--creds are not sent over plain HTTP"), "{}", refused.render());
    assert_eq!(across.requests().len(), 0, "nothing is sent when --creds are refused");
    let docker = tempfile::tempdir().unwrap();
    let auth = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &creds);
    std::fs::write(docker.path().join("config.json"), format!(r#"{{"auths": {{"{address}": {{"auth": "{auth}"}}}}}}"#))
        .unwrap();
    let anonymous = push_artifact(&url, &["--insecure"], docker.path());
    assert_ne!(anonymous.code, Some(0), "{}", anonymous.render());
    assert!(anonymous.stderr.contains("refused our credentials"), "{}", anonymous.render());
    assert!(!across.requests().is_empty(), "the push went to the registry, anonymously");
    assert_eq!(across.credentials_seen(), Vec::<String>::new());
}
