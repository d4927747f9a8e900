//! Gitea as the config repo's provider, against a real Gitea (built from code.gitea.io/gitea, SQLite,
//! its own SSH server) and the real Flux controllers, through the real kubectl: `install --provider
//! gitea` creates the repository and its deploy key, and Flux syncs from Gitea with that key;
//! `app add --pr` opens a real pull request that `pr list` and `pr show` validate; its author may
//! not approve it, a collaborator may; `pr merge` merges it on Gitea; and `app add --pr --merge
//! --wait` follows its own request until the app is deployed.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

mod deploy;
mod repos;

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

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text.trim()).unwrap()
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
