//! Gitea as the config repo's provider, against a real Gitea (built from code.gitea.io/gitea, SQLite,
//! its own SSH server) and the real Flux controllers, through the real kubectl: `install --provider
//! gitea` creates the repository and its deploy key, and Flux syncs from Gitea with that key;
//! `app add --pr` opens a real pull request that `pr list` and `pr show` validate; its author may
//! not approve it, a collaborator may; `pr merge` merges it on Gitea; and `app add --pr --merge
//! --wait` follows its own request until the app is deployed.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use gitops_e2e::race::RacingPush;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::gitea::{ADMIN, Gitea};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};
use gitops_shared::change::plan::{FileChange, change_hash};
use gitops_shared::provider::{Kind, MergeMethod, Provider, ProviderConfig, ProviderError, RepoRef, Token};
use serde_json::{Value, json};

const REPO: &str = "acme/fleet";

/// A cluster with Flux's controllers started once installed, and a Gitea beside it.
struct Forge {
    env: Arc<TestEnv>,
    gitea: Gitea,
    home: tempfile::TempDir,
}

impl Forge {
    /// `with_flux`: Flux's controllers start once something installed its CRDs.
    fn start(with_flux: bool) -> Forge {
        let env = TestEnv::start(Options { flux: false }).unwrap();
        if with_flux {
            env.run_flux_once_installed();
        }
        let gitea = env.start_gitea().unwrap();
        gitea.api("POST", "/orgs", Some(&json!({ "username": "acme" }))).unwrap();
        Forge { env, gitea, home: tempfile::tempdir().unwrap() }
    }

    /// `install --provider gitea` into `acme/fleet`, without waiting for Flux.
    fn install(&self) -> Run {
        self.install_with(&["--no-wait"])
    }

    /// `install --provider gitea` into `acme/fleet`, with `extra` flags.
    fn install_with(&self, extra: &[&str]) -> Run {
        let host = self.gitea.url.trim_start_matches("http://").to_string();
        Run::of(
            self.command("kubectl-gitops-install")
                .args(["--provider", "gitea", "--hostname", &host, "--owner", "acme", "--repository", "fleet"])
                .args(["--path", "clusters/dev", "--cluster-name", "dev"])
                .args(["--components", "source-controller,kustomize-controller"])
                .args(extra)
                .arg("--components-file")
                .arg(flux_release::components())
                // Not the admin's key: Flux's deploy key would be it, and Gitea takes a key either
                // as a user's key or as a deploy key. Without one, install makes Flux a key and
                // pushes over HTTP with the token.
                .arg("--known-hosts-file")
                .arg(&self.gitea.known_hosts),
        )
    }

    /// A binary of ours wired to this cluster and Gitea (its API over plain HTTP), without a real HOME.
    fn command(&self, binary: &str) -> Command {
        self.wired(Command::new(binaries::path(binary)), &self.gitea.token)
    }

    /// `kubectl gitops ARGS` through the real kubectl, with `token` as GITEA_TOKEN.
    fn kubectl_gitops(&self, plugins: &Path, token: &str, args: &[&str]) -> Run {
        let path = format!("{}:{}", plugins.display(), std::env::var("PATH").unwrap_or_default());
        let mut command = Command::new(binaries::kubectl());
        command.arg("gitops").args(args).env("PATH", path);
        Run::of(&mut self.wired(command, token))
    }

    /// `kubectl gitops pr ARGS` with the key flags: show, approve and merge clone the branch.
    fn pr(&self, plugins: &Path, token: &str, args: &[&str]) -> Run {
        let keys = self.key_args();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        self.kubectl_gitops(plugins, token, &[&["pr"][..], args, &keys].concat())
    }

    fn wired(&self, mut command: Command, token: &str) -> Command {
        command
            .env("KUBECONFIG", &self.env.kubeconfig)
            .env("HOME", self.home.path())
            .env(Kind::Gitea.token_env(), token)
            .env(Kind::Gitea.api_url_env(), self.gitea.api_url())
            .env_remove(Kind::GitHub.token_env())
            .env_remove(Kind::GitLab.token_env())
            .env_remove("SSH_AUTH_SOCK")
            .env("NO_COLOR", "1");
        command
    }

    /// `--private-key-file … --known-hosts-file …`: the admin's key, and Gitea's host key.
    fn key_args(&self) -> Vec<String> {
        vec![
            "--private-key-file".into(),
            self.gitea.client_key.display().to_string(),
            "--known-hosts-file".into(),
            self.gitea.known_hosts.display().to_string(),
        ]
    }

    /// A public repository `acme/NAME` whose `deploy/` holds one ConfigMap named NAME; its HTTP URL.
    fn app_repo(&self, name: &str) -> String {
        self.gitea
            .api("POST", "/orgs/acme/repos", Some(&json!({ "name": name, "private": false, "auto_init": false })))
            .unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::create_dir(work.path().join("deploy")).unwrap();
        std::fs::write(
            work.path().join("deploy/configmap.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  from: gitea\n"),
        )
        .unwrap();
        let git = |args: &[&str]| self.gitea.git(work.path(), args).unwrap();
        git(&["init", "-q", "-b", "main"]);
        git(&["add", "."]);
        git(&["commit", "-qm", "deploy"]);
        git(&["push", "-q", &self.gitea.ssh_url(&format!("acme/{name}")), "main"]);
        format!("{}/acme/{name}.git", self.gitea.url)
    }

    /// `app add NAME --url <acme/NAME> --path ./deploy --pr`, from a new [`Forge::app_repo`].
    fn add_with_pull_request(&self, name: &str) -> Run {
        let url = self.app_repo(name);
        Run::of(
            self.command("kubectl-gitops-app")
                .args(["add", name, "--url", &url, "--path", "./deploy", "--pr"])
                .args(self.key_args()),
        )
    }

    /// `repo`'s one deploy key is read-only and the public half of the key in Flux's Secret `secret`.
    fn assert_only_deploy_key(&self, repo: &str, secret: &str) {
        let keys = self.gitea.api("GET", &format!("/repos/{repo}/keys"), None).unwrap();
        let jsonpath = "-o=jsonpath={.data.identity\\.pub}";
        let identity = self.env.kubectl_ok(&["-n", "flux-system", "get", "secret", secret, jsonpath]).unwrap();
        let identity = String::from_utf8(base64_decode(&identity)).unwrap();
        let material = |key: &str| key.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        assert_eq!(keys.as_array().unwrap().len(), 1, "{keys}");
        assert_eq!(material(keys[0]["key"].as_str().unwrap()), material(&identity), "{keys}");
        assert_eq!(keys[0]["read_only"], true, "{keys}");
    }

    fn pull(&self, number: u64) -> Value {
        self.gitea.api("GET", &format!("/repos/{REPO}/pulls/{number}"), None).unwrap()
    }

    /// `kubectl gitops pr comment NUMBER` through the real kubectl.
    fn comment(&self, plugins: &Path, number: u64) -> Run {
        self.previewing(plugins, &["comment", &number.to_string()])
    }

    /// `kubectl gitops pr ARGS` of a command that previews (builds with flux), through the real
    /// kubectl, with the key flags and the test environment's flux CLI.
    fn previewing(&self, plugins: &Path, args: &[&str]) -> Run {
        let path = format!("{}:{}", plugins.display(), std::env::var("PATH").unwrap_or_default());
        let mut command = Command::new(binaries::kubectl());
        command
            .args(["gitops", "pr"])
            .args(args)
            .args(self.key_args())
            .env("PATH", path)
            .env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli());
        Run::of(&mut self.wired(command, &self.gitea.token))
    }

    /// The comments on pull request `number`: (id, author, body).
    fn comments(&self, number: u64) -> Vec<(u64, String, String)> {
        let listed = self.gitea.api("GET", &format!("/repos/{REPO}/issues/{number}/comments"), None).unwrap();
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        listed
            .as_array()
            .unwrap()
            .iter()
            .map(|comment| (comment["id"].as_u64().unwrap(), text(&comment["user"]["login"]), text(&comment["body"])))
            .collect()
    }
}

#[test]
fn gitea_hosts_the_config_repo_its_pull_requests_are_validated_merged_and_followed_to_the_cluster() {
    let forge = Forge::start(true);
    let gitea = &forge.gitea;
    let plugins = binaries::plugin_dir();

    // install creates the private repository and a read-only deploy key; Flux syncs from Gitea's
    // SSH server with that key.
    let install = forge.install();
    assert_eq!(install.code, Some(0), "{}\n{}", install.stdout, install.stderr);
    let repo = gitea.api("GET", &format!("/repos/{REPO}"), None).unwrap();
    assert_eq!(repo["private"], true, "{repo}");
    // (Its `empty` flag is updated after the push, in the background: the branch says it now.)
    assert_eq!(gitea.head(REPO, "main").unwrap().len(), 40, "install pushed main");
    forge.assert_only_deploy_key(REPO, "flux-system");
    forge
        .env
        .wait_for_jsonpath(
            &["-n", "flux-system", "kustomization", "flux-system"],
            "{.status.conditions[?(@.type==\"Ready\")].status}",
            "True",
            Duration::from_secs(180),
        )
        .unwrap();
    let synced = forge
        .env
        .kubectl_ok(&["-n", "flux-system", "get", "gitrepository", "flux-system", "-o=jsonpath={.spec.url}"])
        .unwrap();
    assert_eq!(synced, gitea.ssh_url(REPO));

    // app add --pr opens a pull request on Gitea; pr list and pr show find it valid.
    let add = forge.add_with_pull_request("hello");
    assert_eq!(add.code, Some(0), "{}\n{}", add.stdout, add.stderr);
    assert_eq!(add.stdout, format!("pull request opened: {}/{REPO}/pulls/1\n", gitea.url));
    let opened = forge.pull(1);
    let head = opened["head"]["sha"].as_str().unwrap().to_string();
    assert!(opened["head"]["ref"].as_str().unwrap().starts_with("gitops/add-hello-"), "{opened}");
    let show = forge.pr(plugins.path(), &gitea.token, &["show", "1"]);
    assert_eq!(show.code, Some(0), "{}\n{}", show.stdout, show.stderr);
    for check in ["open ", "base ", "change ", "request ", "mergeable "] {
        assert!(show.stdout.contains(&format!("ok    {check}")), "{check}: {}", show.stdout);
    }
    gitea
        .api("POST", &format!("/repos/{REPO}/statuses/{head}"), Some(&json!({ "state": "pending", "context": "ci" })))
        .unwrap();
    let list = forge.kubectl_gitops(plugins.path(), &gitea.token, &["pr", "list", "-o", "json"]);
    assert_eq!(list.code, Some(0), "{}\n{}", list.stdout, list.stderr);
    let listed = gitops_e2e::schema::document("PullRequestList", &list.stdout);
    assert_eq!(listed["items"][0]["number"], 1, "{listed}");
    assert_eq!(listed["items"][0]["name"], "hello", "{listed}");
    assert_eq!(listed["items"][0]["checks"], "pending", "the commit status posted on its head: {listed}");
    // `kubectl gitops pr merge <TAB>` completes its number, with its title, from Gitea.
    let completed = Run::of(forge.command("kubectl_complete-gitops").args(["pr", "merge", ""]));
    let title = listed["items"][0]["title"].as_str().unwrap();
    assert_eq!((completed.stdout.as_str(), completed.stderr.as_str()), (format!("1\t{title}\n:4\n").as_str(), ""));
    // What merging it would do to the cluster: the apps layer would create the app's objects.
    let preview = Run::of(
        forge
            .command("kubectl-gitops-diff")
            .args(["--pull-request", "1", "-o", "json"])
            .args(forge.key_args())
            .env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli()),
    );
    assert_eq!(preview.code, Some(1), "{}", preview.render());
    let preview = gitops_e2e::schema::document("Diff", &preview.stdout);
    assert!(preview["compared"].as_str().unwrap().ends_with(&format!("at {head})")), "{preview:#}");
    let apps = preview["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "apps").unwrap();
    let added: Vec<(&str, &str)> = apps["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|object| object["action"] == "added")
        .map(|object| (object["kind"].as_str().unwrap(), object["name"].as_str().unwrap()))
        .collect();
    assert!(added.contains(&("Kustomization", "hello")), "{apps:#}");
    assert_eq!(preview["summary"]["refused"], 0, "{preview:#}");
    // pr show --preview: the validation, and the same preview of the very head it validated.
    let shown = forge.previewing(plugins.path(), &["show", "1", "--preview", "-o", "json"]);
    assert_eq!(shown.code, Some(0), "valid, whatever the preview changes: {}", shown.render());
    let shown = gitops_e2e::schema::document("PullRequestValidation", &shown.stdout);
    assert_eq!((&shown["valid"], &shown["head"]), (&json!(true), &json!(head)), "{shown:#}");
    let objects = |diff: &Value| -> Vec<Value> {
        let kustomizations = diff["kustomizations"].as_array().unwrap();
        kustomizations.iter().map(|k| json!([k["name"], k["objects"], k["unchanged"]])).collect()
    };
    assert_eq!(objects(&shown["preview"]), objects(&preview), "{shown:#}");
    assert_eq!(shown["preview"]["compared"], preview["compared"]);
    let shown = forge.previewing(plugins.path(), &["show", "1", "--preview"]);
    assert_eq!(shown.code, Some(0), "{}", shown.render());
    let (validation, compared) = shown.stdout.split_once("\nComparing ").unwrap_or_else(|| panic!("{}", shown.stdout));
    assert!(validation.ends_with("#1 is valid\n"), "{}", shown.stdout);
    assert!(
        compared.starts_with(&format!(
            "pull request #1 (branch {} at {head}) with the cluster",
            opened["head"]["ref"].as_str().unwrap()
        )),
        "{}",
        shown.stdout
    );
    assert!(compared.contains("+++ after/Kustomization/flux-system/hello\n"), "{}", shown.stdout);
    let alone = forge.pr(plugins.path(), &gitea.token, &["show", "1", "--helm-bin", "/bin/true"]);
    assert_eq!(alone.code, Some(2), "{}", alone.render());
    assert!(
        alone.stderr.starts_with("error: --helm-bin shapes the preview, which only --preview shows\nhint: "),
        "{}",
        alone.stderr
    );

    // Gitea refuses its author's approval; a collaborator's is recorded at the validated head.
    let own = forge.pr(plugins.path(), &gitea.token, &["approve", "1"]);
    assert_eq!(own.code, Some(4), "{}\n{}", own.stdout, own.stderr);
    assert!(own.stderr.contains("approve your own pull is not allowed"), "{}", own.stderr);
    let reviewer = gitea.create_user("bob").unwrap();
    gitea.api("PUT", &format!("/repos/{REPO}/collaborators/bob"), Some(&json!({ "permission": "write" }))).unwrap();
    // (A reviewer vouches for the requests of the account that opens them.)
    let approve = forge.pr(plugins.path(), &reviewer, &["approve", "1", "--opened-by", ADMIN]);
    assert_eq!(approve.code, Some(0), "{}\n{}", approve.stdout, approve.stderr);
    assert_eq!(approve.stdout, format!("approved #1 at {}\n", &head[..12]));
    let reviews = gitea.api("GET", &format!("/repos/{REPO}/pulls/1/reviews"), None).unwrap();
    let approved: Vec<(&str, &str, &str)> = reviews
        .as_array()
        .unwrap()
        .iter()
        .map(|review| {
            (
                review["user"]["login"].as_str().unwrap(),
                review["state"].as_str().unwrap(),
                review["commit_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(approved, [("bob", "APPROVED", head.as_str())]);

    // A collaborator who may only read cannot merge it: Gitea refuses, nothing is merged.
    let reader = gitea.create_user("carol").unwrap();
    gitea.api("PUT", &format!("/repos/{REPO}/collaborators/carol"), Some(&json!({ "permission": "read" }))).unwrap();
    let refused = forge.pr(plugins.path(), &reader, &["merge", "1", "--opened-by", ADMIN]);
    assert_eq!(refused.code, Some(4), "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("User not allowed to merge PR (HTTP 405)\nhint: merging needs write access"),
        "{}",
        refused.stderr
    );
    assert_eq!(forge.pull(1)["merged"], false);

    // pr merge merges it on Gitea; the request is then no longer valid, and Flux deploys the app.
    let main_before = gitea.head(REPO, "main").unwrap();
    let merge = forge.pr(plugins.path(), &gitea.token, &["merge", "1"]);
    assert_eq!(merge.code, Some(0), "{}\n{}", merge.stdout, merge.stderr);
    assert_eq!(merge.stdout, format!("merged #1 (merge) into main at {}\n", &head[..12]));
    let merged = forge.pull(1);
    assert_eq!(merged["merged"], true, "{merged}");
    let main = gitea.head(REPO, "main").unwrap();
    assert_eq!(merged["merge_commit_sha"].as_str(), Some(main.as_str()), "{merged}");
    assert_ne!(main, main_before);
    let again = forge.pr(plugins.path(), &gitea.token, &["show", "1"]);
    assert_eq!(again.code, Some(1), "{}\n{}", again.stdout, again.stderr);
    assert!(again.stdout.contains("FAIL  open       merged already\n"), "{}", again.stdout);
    // (pr merge leaves the cluster alone; Flux fetches at once when asked, as `flux reconcile` asks.)
    forge.env.request_reconcile("flux-system", &["gitrepository/flux-system"]).unwrap();
    forge
        .env
        .wait_for_jsonpath(&["-n", "default", "configmap", "hello"], "{.data.from}", "gitea", Duration::from_secs(180))
        .unwrap();

    // --merge --wait: the command merges its own request, then waits until the app is Ready.
    let second = forge.app_repo("second");
    let run = Run::of(
        forge
            .command("kubectl-gitops-app")
            .args(["add", "second", "--url", &second, "--path", "./deploy", "--pr", "--merge", "--wait"])
            .args(["--timeout", "3m"])
            .args(forge.key_args()),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("merged #2 into main"), "{}", run.stderr);
    let main = gitea.head(REPO, "main").unwrap();
    assert!(run.stdout.ends_with(&format!("app second added at {}\n", &main[..12])), "{}", run.stdout);
    forge.env.kubectl_ok(&["-n", "default", "get", "configmap", "second"]).unwrap();

    // pr merge --auto: Gitea schedules the merge and makes it once its (here: no) checks pass.
    let add = forge.add_with_pull_request("third");
    assert_eq!(add.code, Some(0), "{}\n{}", add.stdout, add.stderr);
    let head = forge.pull(3)["head"]["sha"].as_str().unwrap().to_string();
    let auto = forge.pr(plugins.path(), &gitea.token, &["merge", "3", "--auto"]);
    assert_eq!(auto.code, Some(0), "{}\n{}", auto.stdout, auto.stderr);
    assert_eq!(
        auto.stdout,
        format!(
            "auto-merge enabled on #3 (merge) at {}: Gitea merges it into main once its checks pass\n",
            &head[..12]
        )
    );
    gitops_e2e::testenv::process::wait_until("Gitea's scheduled merge of #3", Duration::from_secs(60), || {
        Ok(forge.pull(3)["merged"] == true)
    })
    .unwrap();
    assert_eq!(gitea.api("GET", &format!("/repos/{REPO}/pulls?state=open"), None).unwrap(), json!([]));
    let admin = gitea.api("GET", "/user", None).unwrap();
    assert_eq!(admin["login"], ADMIN);
}

/// `install --platform-repo` on Gitea: Flux's deploy key is added to the platform repo too
/// (read-only), `platform add` opens its pull requests there, `--merge --wait` follows one to the
/// cluster, and `pr --platform` lists, validates and merges them, while `pr` alone keeps to the
/// config repo.
#[test]
fn a_platform_repo_on_gitea_takes_the_platform_pull_requests() {
    let forge = Forge::start(true);
    let gitea = &forge.gitea;
    let plugins = binaries::plugin_dir();
    const PLATFORM: &str = "acme/platform";
    gitea.api("POST", "/orgs/acme/repos", Some(&json!({ "name": "platform", "private": true }))).unwrap();
    let platform_url = gitea.ssh_url(PLATFORM);
    let install = forge.install_with(&["--platform-repo", &platform_url, "--timeout", "3m"]);
    assert_eq!(install.code, Some(0), "{}\n{}", install.stdout, install.stderr);
    forge.assert_only_deploy_key(PLATFORM, "flux-system");
    let seeded = gitea.head(PLATFORM, "main").unwrap();
    let platform_layer = ["-n", "flux-system", "kustomization", "platform"];
    let applied = forge.env.jsonpath(&platform_layer, "{.status.lastAppliedRevision}").unwrap();
    assert_eq!(applied, format!("main@sha1:{seeded}"), "install waited for the platform layer at the seeded commit");

    // --pr --merge --wait: the pull request is the platform repo's, followed to the cluster.
    let fleet = gitea.head(REPO, "main").unwrap();
    let ingress = forge.app_repo("ingress");
    let platform_add = |name: &str, url: &str, extra: &[&str]| {
        Run::of(
            forge
                .command("kubectl-gitops-platform")
                .args(["add", name, "--url", url, "--path", "./deploy", "--pr"])
                .args(extra)
                .args(forge.key_args()),
        )
    };
    let run = platform_add("ingress", &ingress, &["--merge", "--wait", "--timeout", "3m"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("merged #1 into main"), "{}", run.stderr);
    let merged = gitea.api("GET", &format!("/repos/{PLATFORM}/pulls/1"), None).unwrap();
    assert_eq!(merged["merged"], true, "{merged}");
    forge.env.kubectl_ok(&["-n", "default", "get", "configmap", "ingress"]).unwrap();
    assert_eq!(gitea.head(REPO, "main").unwrap(), fleet, "the config repo does not move");

    // An open one: `pr --platform` lists it, validates it (its request planned again on the
    // platform repo) and merges it; `pr` alone lists the config repo's, none.
    let dns = forge.app_repo("dns");
    let opened = platform_add("dns", &dns, &[]);
    assert_eq!(opened.code, Some(0), "{}\n{}", opened.stdout, opened.stderr);
    assert_eq!(opened.stdout, format!("pull request opened: {}/{PLATFORM}/pulls/2\n", gitea.url));
    let list = |args: &[&str]| {
        let run =
            forge.kubectl_gitops(plugins.path(), &gitea.token, &[&["pr"][..], args, &["list", "-o", "json"]].concat());
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        gitops_e2e::schema::document("PullRequestList", &run.stdout)
    };
    let listed = list(&["--platform"]);
    assert_eq!(listed["items"][0]["number"], 2, "{listed}");
    assert_eq!(listed["items"][0]["name"], "dns", "{listed}");
    assert_eq!(list(&[])["items"], json!([]));
    let show = forge.pr(plugins.path(), &gitea.token, &["--platform", "show", "2"]);
    assert_eq!(show.code, Some(0), "{}\n{}", show.stdout, show.stderr);
    for check in ["open ", "base ", "change ", "request ", "mergeable "] {
        assert!(show.stdout.contains(&format!("ok    {check}")), "{check}: {}", show.stdout);
    }
    let merge = forge.pr(plugins.path(), &gitea.token, &["--platform", "merge", "2"]);
    assert_eq!(merge.code, Some(0), "{}\n{}", merge.stdout, merge.stderr);
    assert_eq!(gitea.api("GET", &format!("/repos/{PLATFORM}/pulls/2"), None).unwrap()["merged"], true);
    assert_eq!(gitea.api("GET", &format!("/repos/{REPO}/pulls?state=all"), None).unwrap(), json!([]));
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text.trim()).unwrap()
}

/// `repo create` against the real Gitea: our app layout, a repository generated from a template,
/// a fork, a copy of any git repository recording the template's commit; refused for a name that
/// is taken and a template that is not one, and a copy that fails deletes the repository again.
#[test]
fn repo_create_makes_app_repositories_from_the_layout_a_template_a_fork_and_a_url() {
    let forge = Forge::start(false);
    let gitea = &forge.gitea;
    let plugins = binaries::plugin_dir();
    let install = forge.install();
    assert_eq!(install.code, Some(0), "{}\n{}", install.stdout, install.stderr);
    let repo =
        |args: &[&str]| forge.kubectl_gitops(plugins.path(), &gitea.token, &[&["repo", "create"][..], args].concat());
    let exists = |name: &str| gitea.api("GET", &format!("/repos/{name}"), None).is_ok();
    // Read over git: Gitea's contents API fails (500) while a just-pushed repository is still
    // marked empty in the background.
    let file = |name: &str, path: &str| {
        let work = tempfile::tempdir().unwrap();
        gitea.git(work.path(), &["clone", "-q", &gitea.ssh_url(name), "."]).unwrap();
        std::fs::read_to_string(work.path().join(path)).unwrap_or_else(|error| {
            let log = gitea.git(work.path(), &["log", "--stat", "--all"]).unwrap_or_default();
            panic!("{name}: {path}: {error}; its history:\n{log}")
        })
    };

    // --dry-run plans and makes nothing; then the app layout, as one first commit.
    let dry = repo(&["hello", "--dry-run"]);
    assert_eq!(dry.code, Some(0), "{}\n{}", dry.stdout, dry.stderr);
    assert_eq!(
        dry.stdout,
        "Plan:\n  1. create the empty private repository acme/hello on Gitea\n  2. commit the app layout (README.md, deploy/kustomization.yaml) as its first commit\n(dry run: nothing was created)\n"
    );
    assert!(!exists("acme/hello"));
    let hello = repo(&["hello", "--public"]);
    assert_eq!(hello.code, Some(0), "{}\n{}", hello.stdout, hello.stderr);
    assert_eq!(hello.stdout, format!("repository acme/hello created: {}/acme/hello\n", gitea.url));
    assert!(file("acme/hello", "deploy/kustomization.yaml").contains("kind: Kustomization\nresources: []\n"));
    let made = gitea.api("GET", "/repos/acme/hello", None).unwrap();
    assert_eq!(made["private"], false, "{made}");

    // Taken names and repositories that are not templates are refused, and nothing is made.
    let taken = repo(&["hello"]);
    assert_eq!(taken.code, Some(2), "{}\n{}", taken.stdout, taken.stderr);
    assert!(taken.stderr.contains("error: Gitea repository acme/hello exists already\n"), "{}", taken.stderr);
    let not_template = repo(&["shop", "--from-template", "acme/hello"]);
    assert_eq!(not_template.code, Some(2), "{}\n{}", not_template.stdout, not_template.stderr);
    assert!(not_template.stderr.contains("acme/hello is not a template repository"), "{}", not_template.stderr);
    assert!(not_template.stderr.contains("hint: mark it as a template"), "{}", not_template.stderr);
    assert!(!exists("acme/shop"));

    // Generated from a template (Gitea's own call), as JSON.
    gitea.api("PATCH", "/repos/acme/hello", Some(&json!({ "template": true }))).unwrap();
    // Gitea marks a pushed repository non-empty in the background, and generates nothing from a
    // template it still thinks empty. Its queue waits behind the machine's other tests: over
    // 30 s once, under make test's three at a time.
    gitops_e2e::testenv::process::wait_until("acme/hello to be non-empty", Duration::from_secs(120), || {
        Ok(gitea.api("GET", "/repos/acme/hello", None)?["empty"] == false)
    })
    .unwrap();
    let shop = repo(&["acme/shop", "--from-template", "acme/hello", "-o", "json"]);
    assert_eq!(shop.code, Some(0), "{}\n{}", shop.stdout, shop.stderr);
    let created = gitops_e2e::schema::document("Repository", &shop.stdout);
    assert_eq!(created["repository"], "acme/shop");
    assert_eq!(created["sshUrl"], gitea.ssh_url("acme/shop"));
    assert!(file("acme/shop", "README.md").starts_with("# An app deployed with kubectl-gitops\n"));

    // A fork, into the token's own account.
    let fork = repo(&[&format!("{ADMIN}/hello-fork"), "--from-template", "acme/hello", "--fork"]);
    assert_eq!(fork.code, Some(0), "{}\n{}", fork.stdout, fork.stderr);
    let forked = gitea.api("GET", &format!("/repos/{ADMIN}/hello-fork"), None).unwrap();
    assert_eq!((forked["fork"].as_bool(), forked["parent"]["full_name"].as_str()), (Some(true), Some("acme/hello")));

    // A copy of any git repository's branch, its first commit recording the template's commit.
    let source = format!("{}/acme/hello.git", gitea.url);
    let template_head = gitea.head("acme/hello", "main").unwrap();
    let copied = repo(&["copied", "--from-url", &source]);
    assert_eq!(copied.code, Some(0), "{}\n{}", copied.stdout, copied.stderr);
    let work = tempfile::tempdir().unwrap();
    gitea.git(work.path(), &["clone", "-q", &gitea.ssh_url("acme/copied"), "."]).unwrap();
    assert_eq!(gitea.git(work.path(), &["rev-list", "--count", "HEAD"]).unwrap().trim(), "1", "one commit");
    let message = gitea.git(work.path(), &["log", "-1", "--format=%B"]).unwrap();
    assert!(message.contains(&format!("Template: {source}@{template_head}")), "{message}");
    assert_eq!(file("acme/copied", "deploy/kustomization.yaml"), file("acme/hello", "deploy/kustomization.yaml"));

    // A copy that fails once the repository exists deletes it again.
    let broken = repo(&["broken", "--from-url", &source, "--from-branch", "nope"]);
    assert_ne!(broken.code, Some(0), "{}\n{}", broken.stdout, broken.stderr);
    assert!(broken.stderr.contains("has no branch \"nope\""), "{}", broken.stderr);
    assert!(!exists("acme/broken"), "deleted again");
}

/// `app add --create-repo` against the real Gitea and Flux: one plan makes the app's repository
/// (our layout), a read-only deploy key and its Secret, then commits the app, and Flux deploys from
/// the new repository with that key. A failure before the config repo changed takes the repository
/// and the Secret away again.
#[test]
fn app_add_create_repo_makes_the_repository_its_key_and_the_app_in_one_plan() {
    let forge = Forge::start(true);
    let gitea = &forge.gitea;
    let plugins = binaries::plugin_dir();
    let install = forge.install();
    assert_eq!(install.code, Some(0), "{}\n{}", install.stdout, install.stderr);
    let keys = forge.key_args();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let add = |args: &[&str]| {
        forge.kubectl_gitops(plugins.path(), &gitea.token, &[&["app", "add"][..], args, &keys].concat())
    };
    let exists = |name: &str| gitea.api("GET", &format!("/repos/{name}"), None).is_ok();
    let secret =
        |name: &str| forge.env.kubectl(&["-n", "flux-system", "get", "secret", name]).unwrap().status.success();
    let main_before = gitea.head(REPO, "main").unwrap();

    // --dry-run: the whole plan, nothing made anywhere.
    let dry = add(&["hello", "--create-repo", "--dry-run"]);
    assert_eq!(dry.code, Some(0), "{}\n{}", dry.stdout, dry.stderr);
    assert!(
        dry.stdout.starts_with(
            "Plan:\n  1. create the empty private repository acme/hello on Gitea\n  \
             2. commit the app layout (README.md, deploy/kustomization.yaml) as its first commit\n  \
             3. add a new read-only deploy key to acme/hello and keep it in Secret flux-system/hello for Flux\n  \
             4. commit "
        ),
        "{}",
        dry.stdout
    );
    let url = gitea.ssh_url("acme/hello");
    assert!(dry.stdout.contains(&format!("+  url: {url}\n")), "{}", dry.stdout);
    assert!(dry.stdout.contains("+    name: hello\n"), "the key's Secret: {}", dry.stdout);
    assert!(!exists("acme/hello") && !secret("hello"));
    assert_eq!(gitea.head(REPO, "main").unwrap(), main_before);

    // Made, committed, and deployed by Flux from the new repository with the new key.
    let run = add(&["hello", "--create-repo", "--wait", "--timeout", "3m"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let main = gitea.head(REPO, "main").unwrap();
    assert_eq!(run.stdout, format!("app hello added at {}\n", &main[..12]));
    let made = gitea.api("GET", "/repos/acme/hello", None).unwrap();
    assert_eq!(made["private"], true, "{made}");
    forge.assert_only_deploy_key("acme/hello", "hello");
    let source = forge
        .env
        .kubectl_ok(&[
            "-n",
            "flux-system",
            "get",
            "gitrepository",
            "hello",
            "-o=jsonpath={.spec.url} {.spec.secretRef.name}",
        ])
        .unwrap();
    assert_eq!(source, format!("{url} hello"));
    let ready = forge
        .env
        .kubectl_ok(&[
            "-n",
            "flux-system",
            "get",
            "kustomization",
            "hello",
            "-o=jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
        ])
        .unwrap();
    assert_eq!(ready, "True");
    rollback_through_a_pull_request(&forge, plugins.path(), &keys);

    // Taken: a repository of that name, or a Secret of the app's name. Nothing is made.
    let taken = add(&["other", "--create-repo", "hello"]);
    assert_eq!(taken.code, Some(2), "{}\n{}", taken.stdout, taken.stderr);
    assert!(taken.stderr.contains("error: Gitea repository acme/hello exists already\n"), "{}", taken.stderr);
    forge.env.kubectl_ok(&["-n", "flux-system", "create", "secret", "generic", "mine"]).unwrap();
    let clash = add(&["mine", "--create-repo"]);
    assert_eq!(clash.code, Some(2), "{}\n{}", clash.stdout, clash.stderr);
    assert!(clash.stderr.contains("error: Secret flux-system/mine exists already\n"), "{}", clash.stderr);
    assert!(!exists("acme/other") && !exists("acme/mine"));

    // A copy that fails deletes the repository again; the config repo is untouched.
    let source = format!("{}/acme/hello.git", gitea.url);
    let broken = add(&["broken", "--create-repo", "--from-url", &source, "--from-branch", "nope"]);
    assert_eq!(broken.code, Some(2), "{}\n{}", broken.stdout, broken.stderr);
    assert!(broken.stderr.contains("has no branch \"nope\""), "{}", broken.stderr);
    assert!(!exists("acme/broken") && !secret("broken"));
    // A push the config repo refuses (its branch is protected) takes the repository, its key and
    // the Secret away again.
    gitea
        .api(
            "POST",
            &format!("/repos/{REPO}/branch_protections"),
            Some(&json!({ "branch_name": "main", "enable_push": false })),
        )
        .unwrap();
    let refused = add(&["refused", "--create-repo", "--auto-merge", "--timeout", "20s"]);
    assert_ne!(refused.code, Some(0), "{}\n{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("deleted acme/refused again"), "{}", refused.stderr);
    assert!(!exists("acme/refused") && !secret("refused"));
    assert_eq!(gitea.head(REPO, "main").unwrap(), main);
}

/// `app rollback hello --pr` after a second deployment of the app's own repository (a change
/// made through Gitea's API): a pull request on the app's repository restores the first
/// deployment's files; merged on Gitea, Flux applies it.
fn rollback_through_a_pull_request(forge: &Forge, plugins: &Path, keys: &[&str]) {
    let gitea = &forge.gitea;
    let file = "/repos/acme/hello/contents/deploy/kustomization.yaml";
    let first = gitea.api("GET", file, None).unwrap();
    let original = String::from_utf8(base64_decode(first["content"].as_str().unwrap())).unwrap();
    let changed = format!("{original}configMapGenerator:\n- name: hello-settings\n  literals:\n  - tier=second\n");
    let body = json!({"content": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &changed),
        "sha": first["sha"], "message": "second deployment", "branch": "main"});
    gitea.api("PUT", file, Some(&body)).unwrap();
    let second = gitea.head("acme/hello", "main").unwrap();
    let applied = |commit: &str| {
        forge.env.request_reconcile("flux-system", &["gitrepository/hello", "kustomization/hello"]).unwrap();
        forge
            .env
            .wait_for_jsonpath(
                &["-n", "flux-system", "kustomization", "hello"],
                "{.status.lastAppliedRevision}",
                &format!("main@sha1:{commit}"),
                Duration::from_secs(120),
            )
            .unwrap();
    };
    applied(&second);
    let settings = |present: bool| {
        let listed = forge.env.kubectl_ok(&["-n", "default", "get", "configmaps", "-o", "name"]).unwrap();
        assert_eq!(listed.contains("configmap/hello-settings-"), present, "{listed}");
    };
    settings(true);

    let opened =
        forge.kubectl_gitops(plugins, &gitea.token, &[&["app", "rollback", "hello", "--pr"][..], keys].concat());
    assert_eq!(opened.code, Some(0), "{}", opened.render());
    let line = opened.stdout.trim_end();
    assert!(line.starts_with("opened pull request #1 to roll back flux-system/hello: "), "{line}");
    assert!(line.ends_with("/acme/hello/pulls/1"), "{line}");
    assert_eq!(gitea.head("acme/hello", "main").unwrap(), second, "nothing on main before the merge");
    let pull = gitea.api("GET", "/repos/acme/hello/pulls/1", None).unwrap();
    assert!(pull["title"].as_str().unwrap().starts_with("Roll back hello to "), "{pull}");
    assert!(pull["head"]["ref"].as_str().unwrap().starts_with("gitops/rollback-hello-"), "{pull}");
    let files = gitea.api("GET", "/repos/acme/hello/pulls/1/files", None).unwrap();
    let names: Vec<&str> = files.as_array().unwrap().iter().map(|f| f["filename"].as_str().unwrap()).collect();
    assert_eq!(names, ["deploy/kustomization.yaml"], "{files}");

    gitea.api("POST", "/repos/acme/hello/pulls/1/merge", Some(&json!({"Do": "merge"}))).unwrap();
    let merged = gitea.head("acme/hello", "main").unwrap();
    applied(&merged);
    let restored = gitea.api("GET", file, None).unwrap();
    assert_eq!(String::from_utf8(base64_decode(restored["content"].as_str().unwrap())).unwrap(), original);
    // Flux pruned what the second deployment added.
    settings(false);
}

/// `make demo-sockshop`'s script, run whole as a user runs it: the upstream sock shop is copied
/// into a new repository, its chart deployed through a pull request merged on Gitea, and every
/// one of its 14 Deployments (the chart's, without its disabled load test and tracing) turns
/// Available.
#[test]
#[cfg_attr(shared_fixtures_absent, ignore = "needs ../shared/fixtures/apps/sock-shop beside the checkout")]
fn the_sock_shop_demo_deploys_the_chart_through_a_merged_pull_request() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    // Its own gitops-testenv state file, apart from an environment a person started.
    let runtime = tempfile::tempdir().unwrap();
    let log = runtime.path().join("demo-sockshop.log");
    let run = Run::of(
        Command::new("bash")
            .arg(root.join("tests/demo-sockshop.sh"))
            .env("XDG_RUNTIME_DIR", runtime.path())
            .env("DEMO_LOG", &log)
            .env("GITOPS_FLUX_CLI_DIR", flux_release::cli_dir().unwrap())
            .env("NO_COLOR", "1")
            .env_remove(Kind::GitHub.token_env())
            .env_remove(Kind::GitLab.token_env()),
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(run.code, Some(0), "{text}");
    for said in [
        "repository acme/sock-shop created: ",
        "pull request opened: ",
        "merged #1 (merge) into main at ",
        "demo-sockshop: 14 sock shop Deployments Available\n",
    ] {
        assert!(text.contains(said), "{said:?} not in:\n{text}");
    }
}

/// Who may write the forge, against the real Gitea: a commit someone pushes to a pull request
/// branch right after ours is never merged, by `--merge` (its read-back wants the commit we
/// pushed as the head, and the branch's whole change to be the plan) nor by `pr merge` (the
/// recorded request, planned again, names the file nobody planned); and a merge guarded by a
/// head that is no longer the branch's is refused by Gitea itself, nothing merged.
#[test]
fn a_commit_pushed_to_a_pull_request_branch_after_ours_is_never_merged() {
    let forge = Forge::start(false);
    let gitea = &forge.gitea;
    let plugins = binaries::plugin_dir();
    let install = forge.install();
    assert_eq!(install.code, Some(0), "{}\n{}", install.stdout, install.stderr);
    let main = gitea.head(REPO, "main").unwrap();

    // Someone pushes to the branch right after us (a hook on Gitea's repository makes the race
    // certain): --merge merges nothing, and says why.
    let racing = RacingPush::install(&gitea.repo_dir(REPO), "gitops/add-raced-", "apps/raced/extra.yaml").unwrap();
    let url = forge.app_repo("raced");
    let raced = Run::of(
        forge
            .command("kubectl-gitops-app")
            .args(["add", "raced", "--url", &url, "--path", "./deploy", "--pr", "--merge"])
            .args(forge.key_args()),
    );
    assert_eq!(raced.code, Some(4), "{}\n{}", raced.stdout, raced.stderr);
    let [(ours, theirs)] = racing.raced().try_into().unwrap();
    assert!(
        raced.stderr.contains(&format!(
            "does not hold the planned change: its head is {theirs}, not the commit we pushed, {ours}\n"
        )),
        "{}",
        raced.stderr
    );
    assert!(raced.stderr.contains("hint: someone pushed to gitops/add-raced-"), "{}", raced.stderr);
    assert_eq!(forge.pull(1)["merged"], false, "{}", forge.pull(1));
    assert_eq!(gitea.head(REPO, "main").unwrap(), main, "nothing merged");
    drop(racing);

    // A commit that changes no planned file but adds one: pr merge validates, and refuses.
    let add = forge.add_with_pull_request("later");
    assert_eq!(add.code, Some(0), "{}\n{}", add.stdout, add.stderr);
    let ours = forge.pull(2)["head"]["sha"].as_str().unwrap().to_string();
    let branch = forge.pull(2)["head"]["ref"].as_str().unwrap().to_string();
    // What it would do to the cluster, posted on it as one comment by the token's user.
    let posted = forge.comment(plugins.path(), 2);
    assert_eq!(posted.code, Some(0), "{}", posted.render());
    assert!(
        posted.stdout.starts_with("pull request #2: comment ") && posted.stdout.contains(" posted ("),
        "{}",
        posted.stdout
    );
    let comments = forge.comments(2);
    let [(id, author, body)] = &comments[..] else { panic!("{comments:?}") };
    assert_eq!(author, ADMIN);
    assert!(body.starts_with("<!-- kubectl-gitops diff -->\n### kubectl gitops diff: "), "{body}");
    assert!(
        body.contains(&format!("Comparing pull request #2 (branch {branch} at {ours}) with the cluster")),
        "{body}"
    );
    assert!(body.contains("<details><summary>Kustomization flux-system/"), "{body}");
    let work = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| gitea.git(work.path(), args).unwrap();
    git(&["clone", "-q", "--branch", &branch, &gitea.ssh_url(REPO), "."]);
    std::fs::write(work.path().join("apps/later/extra.yaml"), "kind: ConfigMap\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "Pushed meanwhile"]);
    git(&["push", "-q", "origin", &branch]);
    let theirs = gitea.head(REPO, &branch).unwrap();
    // After the push, the same comment shows the preview at the new head: updated, not added.
    let updated = forge.comment(plugins.path(), 2);
    assert_eq!(updated.code, Some(0), "{}", updated.render());
    assert!(updated.stdout.starts_with(&format!("pull request #2: comment {id} updated (")), "{}", updated.stdout);
    let comments = forge.comments(2);
    let [(again, _, body)] = &comments[..] else { panic!("{comments:?}") };
    assert_eq!(again, id);
    assert!(body.contains(&format!("(branch {branch} at {theirs})")), "{body}");
    let merge = forge.pr(plugins.path(), &gitea.token, &["merge", "2"]);
    assert_eq!(merge.code, Some(1), "{}\n{}", merge.stdout, merge.stderr);
    assert!(
        merge.stdout.contains(
            "FAIL  request    the branch changes apps/later/extra.yaml, which the recorded request does not plan\n"
        ),
        "{}",
        merge.stdout
    );
    assert!(merge.stdout.ends_with("#2 was not merged\n"), "{}", merge.stdout);
    assert_eq!(forge.pull(2)["merged"], false);
    assert_eq!(gitea.head(REPO, "main").unwrap(), main, "nothing merged");

    // Gitea itself refuses a merge guarded by a head the branch no longer has (ours, before the
    // push above): what stops a push between our check and our merge. (Once Gitea has taken the
    // push in: while it checks the request again it refuses every merge, 405 "try again later".)
    gitops_e2e::testenv::process::wait_until("Gitea to check #2 at the new head", Duration::from_secs(60), || {
        let pull = forge.pull(2);
        Ok(pull["head"]["sha"] == theirs.as_str() && pull["mergeable"] == true)
    })
    .unwrap();
    let provider = Provider::new(ProviderConfig {
        kind: Kind::Gitea,
        host: Some(gitops_shared::http::Origin::parse(gitea.url.trim_start_matches("http://")).unwrap()),
        api_base: Some(gitea.api_url()),
        token: Token::new(gitea.token.clone()),
    })
    .unwrap();
    let repo = RepoRef::parse(REPO).unwrap();
    let stale = gitops_shared::runtime::block_on(async {
        Ok(provider.merge_pull_request(&repo, 2, &ours, MergeMethod::Merge).await)
    })
    .unwrap();
    let Err(ProviderError::Api { status: 409, message, .. }) = stale else { panic!("{stale:?}") };
    assert!(message.contains("moved since it was validated"), "{message}");
    assert_eq!(forge.pull(2)["merged"], false);
    assert_eq!(gitea.head(REPO, "main").unwrap(), main, "nothing merged");
    assert_eq!(gitea.head(REPO, &branch).unwrap(), theirs);
}

/// A pull request another Gitea user opened, with our branch name and body (here: opened by
/// kubectl gitops itself, with their token and key: the most faithful forgery) is unverified,
/// never valid: `pr show` says so (exit 1), `pr approve` and `pr merge` refuse it, unless the
/// user vouches for that author with `--opened-by`.
#[test]
fn a_pull_request_another_user_opened_is_unverified_and_never_merged() {
    let forge = Forge::start(false);
    let gitea = &forge.gitea;
    let plugins = binaries::plugin_dir();
    let install = forge.install();
    assert_eq!(install.code, Some(0), "{}\n{}", install.stdout, install.stderr);
    let main = gitea.head(REPO, "main").unwrap();

    // bob may write the config repo, with a key of his own.
    let bob = gitea.create_user("bob").unwrap();
    gitea.api("PUT", &format!("/repos/{REPO}/collaborators/bob"), Some(&json!({ "permission": "write" }))).unwrap();
    let keys = tempfile::tempdir().unwrap();
    let bob_key = keys.path().join("bob_ed25519");
    let made =
        Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", "bob", "-f"]).arg(&bob_key).status();
    assert!(made.unwrap().success());
    let public = std::fs::read_to_string(bob_key.with_extension("pub")).unwrap();
    gitea.api_as(&bob, "POST", "/user/keys", Some(&json!({ "title": "bob", "key": public.trim() }))).unwrap();
    let url = forge.app_repo("evil");
    let forged = Run::of(
        forge
            .wired(Command::new(binaries::path("kubectl-gitops-app")), &bob)
            .args(["add", "evil", "--url", &url, "--path", "./deploy", "--pr", "--private-key-file"])
            .arg(&bob_key)
            .arg("--known-hosts-file")
            .arg(&gitea.known_hosts),
    );
    assert_eq!(forged.code, Some(0), "{}\n{}", forged.stdout, forged.stderr);
    assert_eq!(forge.pull(1)["user"]["login"], "bob");

    let show = forge.pr(plugins.path(), &gitea.token, &["show", "1"]);
    assert_eq!(show.code, Some(1), "{}\n{}", show.stdout, show.stderr);
    assert!(
        show.stdout.contains(&format!(
            "FAIL  author     opened by bob, not by {ADMIN} (the token's own user): unverified, whatever it holds\n"
        )),
        "{}",
        show.stdout
    );
    assert!(show.stdout.contains("ok    request    `kubectl gitops app add evil "), "{}", show.stdout);
    assert!(show.stdout.ends_with(&format!("\n#1 is unverified: bob opened it, not {ADMIN}\n")), "{}", show.stdout);
    for action in ["merge", "approve"] {
        let refused = forge.pr(plugins.path(), &gitea.token, &[action, "1"]);
        assert_eq!(refused.code, Some(1), "{action}: {}\n{}", refused.stdout, refused.stderr);
        let verb = if action == "merge" { "merged" } else { "approved" };
        assert!(
            refused.stderr.starts_with(&format!(
                "error: #1 was opened by bob, not by {ADMIN}: it is unverified, and was not {verb}\nhint: "
            )),
            "{action}: {}",
            refused.stderr
        );
    }
    assert_eq!(forge.pull(1)["merged"], false);
    let reviews = gitea.api("GET", &format!("/repos/{REPO}/pulls/1/reviews"), None).unwrap();
    assert_eq!(reviews, json!([]), "nothing approved");
    assert_eq!(gitea.head(REPO, "main").unwrap(), main, "nothing merged");
    // Whoever trusts bob says so themselves.
    let trusted = forge.pr(plugins.path(), &gitea.token, &["show", "1", "--opened-by", "bob"]);
    assert_eq!(trusted.code, Some(0), "{}\n{}", trusted.stdout, trusted.stderr);
}

/// A tenant's pull request, tampered with (the team made cluster-admin) on a branch named after
/// its own content (SHA-256 in full: no grinding needed to name it, so the name proves nothing)
/// and opened by the trusted identity, is refused: with the body of a tenant request from before
/// requests were recorded, because it records none; with the request recorded, because planned
/// again it names the tampered file. The untampered one validates from its recorded request.
#[test]
fn a_tampered_tenant_pull_request_named_after_its_content_is_refused() {
    let forge = Forge::start(false);
    let gitea = &forge.gitea;
    let plugins = binaries::plugin_dir();
    let install = forge.install();
    assert_eq!(install.code, Some(0), "{}\n{}", install.stdout, install.stderr);
    let main = gitea.head(REPO, "main").unwrap();
    let tenant = Run::of(
        forge
            .command("kubectl-gitops-tenant")
            .args(["add", "team", "--with-namespace", "team", "--pr"])
            .args(forge.key_args()),
    );
    assert_eq!(tenant.code, Some(0), "{}\n{}", tenant.stdout, tenant.stderr);
    let opened = forge.pull(1);

    let work = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| gitea.git(work.path(), args).unwrap();
    git(&["clone", "-q", "--branch", opened["head"]["ref"].as_str().unwrap(), &gitea.ssh_url(REPO), "."]);
    let rbac = work.path().join("tenants/team/rbac.yaml");
    let text = std::fs::read_to_string(&rbac).unwrap();
    assert!(text.contains("kind: ClusterRole\n  name: admin\n"), "{text}");
    std::fs::write(
        &rbac,
        text.replace("kind: ClusterRole\n  name: admin\n", "kind: ClusterRole\n  name: cluster-admin\n"),
    )
    .unwrap();
    git(&["commit", "-qam", "Add tenant team"]);
    let files: Vec<FileChange> = git(&["diff", "--name-status", "origin/main...HEAD"])
        .lines()
        .map(|line| {
            let (status, path) = line.split_once('\t').unwrap();
            let after = (status != "D").then(|| std::fs::read_to_string(work.path().join(path)).unwrap());
            FileChange { path: path.to_string(), before: None, after }
        })
        .collect();
    let branch = format!("gitops/add-team-{}", change_hash(&files));
    git(&["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")]);
    let body = opened["body"].as_str().unwrap();
    let unrecorded = match body.split_once("\n### Request\n") {
        Some((before, request)) => {
            format!(
                "{before}{}",
                request.split_once("\n### ").map(|(_, rest)| format!("\n### {rest}")).unwrap_or_default()
            )
        }
        None => body.to_string(),
    };
    let tampered = gitea
        .api(
            "POST",
            &format!("/repos/{REPO}/pulls"),
            Some(&json!({ "head": branch, "base": "main", "title": "Add tenant team", "body": unrecorded })),
        )
        .unwrap();
    let number = tampered["number"].as_u64().unwrap();
    let show = forge.pr(plugins.path(), &gitea.token, &["show", &number.to_string()]);
    assert_eq!(show.code, Some(1), "{}\n{}", show.stdout, show.stderr);
    assert!(show.stdout.contains("ok    author     opened by gitops"), "{}", show.stdout);
    assert!(show.stdout.contains("ok    change     the branch holds exactly the planned change"), "{}", show.stdout);
    assert!(show.stdout.contains("FAIL  request    the body records no request"), "{}", show.stdout);
    let merge = forge.pr(plugins.path(), &gitea.token, &["merge", &number.to_string()]);
    assert_eq!(merge.code, Some(1), "{}\n{}", merge.stdout, merge.stderr);

    // With the request recorded as it was, the plan names the tampered file.
    gitea.api("PATCH", &format!("/repos/{REPO}/pulls/{number}"), Some(&json!({ "body": body }))).unwrap();
    let show = forge.pr(plugins.path(), &gitea.token, &["show", &number.to_string()]);
    assert_eq!(show.code, Some(1), "{}\n{}", show.stdout, show.stderr);
    assert!(show.stdout.contains("FAIL  request    tenants/team/rbac.yaml: blob "), "{}", show.stdout);
    let merge = forge.pr(plugins.path(), &gitea.token, &["merge", &number.to_string()]);
    assert_eq!(merge.code, Some(1), "{}\n{}", merge.stdout, merge.stderr);
    assert_eq!(forge.pull(number)["merged"], false);
    assert_eq!(gitea.head(REPO, "main").unwrap(), main, "nothing merged");

    // The request as opened validates from what it records.
    let show = forge.pr(plugins.path(), &gitea.token, &["show", "1"]);
    assert_eq!(show.code, Some(0), "{}\n{}", show.stdout, show.stderr);
    assert!(
        show.stdout
            .contains("ok    request    `kubectl gitops tenant add team --with-namespace team --cluster-role admin "),
        "{}",
        show.stdout
    );
}
