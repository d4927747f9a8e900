//! `kubectl gitops app add` through the GitHub and GitLab stand-in: pull (merge) requests, their
//! update on a re-run, the protected-branch default, `--dry-run`, and refusals that leave no
//! branch, commit or API write behind.
//!
//! Each test starts its own environment (a real kube-apiserver, no Flux controllers: pull
//! requests need none), installs into `acme/fleet` with the real `kubectl-gitops-install
//! --provider …` (so the cluster holds the real install record and the repo the real layout),
//! and pushes over SSH to the real git server behind the stand-in.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use gitops_e2e::snapshot::Run;
use gitops_e2e::standin::{Recorded, StandIn, TOKEN};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};
use gitops_shared::provider::Kind;
use serde_json::json;

/// The config repo, as the provider and the git server name it.
const REPO: &str = "acme/fleet";
/// What every `app add` of these tests adds.
const ADD: [&str; 6] = ["add", "podinfo", "--url", "https://github.com/stefanprodan/podinfo", "--path", "./deploy"];
/// The title (and commit message) `app add podinfo` gives its change.
const TITLE: &str = "Add app podinfo (kustomize) to clusters/dev";

/// One cluster installed from `acme/fleet`, the stand-in in front of the repo, and a HOME
/// without ~/.ssh.
pub(crate) struct Fixture {
    pub env: Arc<TestEnv>,
    pub standin: StandIn,
    home: tempfile::TempDir,
}

impl Fixture {
    /// Needs the Flux component fixtures.
    fn install(kind: Kind) -> Fixture {
        Fixture::install_from(kind, &flux_release::components(), &[])
    }

    /// Installs the component manifests in `components`, with `extra` install flags.
    pub(crate) fn install_from(kind: Kind, components: &std::path::Path, extra: &[&str]) -> Fixture {
        let env = TestEnv::start(Options { flux: false }).unwrap();
        Fixture::install_into(env, kind, components, extra)
    }

    /// The same with the Flux controllers running once installed, and the install's deploy key
    /// let in by the git server (as the provider would let Flux in with it): returns once the
    /// config repo synced, and what is merged there is deployed.
    pub(crate) fn install_with_flux(kind: Kind) -> Fixture {
        let env = TestEnv::start(Options { flux: false }).unwrap();
        env.run_flux_once_installed();
        let fixture = Fixture::install_into(Arc::clone(&env), kind, &flux_release::components(), &[]);
        for key in fixture.standin.deploy_keys(REPO) {
            env.git.authorize_key(&key.key).unwrap();
        }
        env.wait_for_jsonpath(
            &["-n", "flux-system", "kustomization", "flux-system"],
            "{.status.conditions[?(@.type==\"Ready\")].status}",
            "True",
            std::time::Duration::from_secs(180),
        )
        .unwrap();
        fixture
    }

    fn install_into(env: Arc<TestEnv>, kind: Kind, components: &std::path::Path, extra: &[&str]) -> Fixture {
        let standin = StandIn::start(kind);
        let ssh_base = format!("ssh://{}@127.0.0.1:{}{}/", env.git.ssh_user, env.git.ssh_port, env.git.repos.display());
        let https_base = format!("http://127.0.0.1:{}/", env.git.http_port);
        standin.set_clone_bases(&ssh_base, &https_base);
        standin.set_git_storage(&env.git.repos);
        env.git.create_repo(REPO).unwrap();
        let fixture = Fixture { env: Arc::clone(&env), standin, home: tempfile::tempdir().unwrap() };
        let run = Run::of(
            fixture
                .command("kubectl-gitops-install")
                .args(["--provider", kind.id(), "--owner", "acme", "--repository", "fleet"])
                .args(["--path", "clusters/dev", "--cluster-name", "dev"])
                .args(["--components", "source-controller,kustomize-controller", "--no-wait"])
                .args(extra)
                .arg("--components-file")
                .arg(components)
                .arg("--private-key-file")
                .arg(&env.git.client_key)
                .arg("--known-hosts-file")
                .arg(&env.git.known_hosts),
        );
        assert_eq!(run.code, Some(0), "install: stdout: {}\nstderr: {}", run.stdout, run.stderr);
        let record = fixture.record();
        assert_eq!(record["provider"], kind.id(), "{record}");
        assert_eq!(record["repository"], REPO, "{record}");
        assert_eq!((record["path"].as_str(), record["clusterName"].as_str()), (Some("clusters/dev"), Some("dev")));
        assert_eq!(
            fixture.show("main:clusters/dev/apps/kustomization.yaml"),
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"
        );
        fixture.standin.clear_requests();
        fixture
    }

    /// A binary of ours with the provider, cluster and git server wired in, and no real HOME.
    pub(crate) fn command(&self, binary: &str) -> Command {
        self.wired(Command::new(binaries::path(binary)))
    }

    /// `kubectl gitops ARGS` through the real kubectl, our binaries first on PATH (as krew lays
    /// them out), wired in like [`Fixture::command`].
    pub(crate) fn kubectl_gitops<S: AsRef<std::ffi::OsStr>>(&self, plugins: &Path, args: &[S]) -> Run {
        Run::of(&mut self.kubectl_gitops_command(plugins, args))
    }

    /// The command [`Fixture::kubectl_gitops`] runs, to change before running it.
    pub(crate) fn kubectl_gitops_command<S: AsRef<std::ffi::OsStr>>(&self, plugins: &Path, args: &[S]) -> Command {
        let path = format!("{}:{}", plugins.display(), std::env::var("PATH").unwrap_or_default());
        let mut command = Command::new(binaries::kubectl());
        command.arg("gitops").args(args).env("PATH", path);
        self.wired(command)
    }

    fn wired(&self, mut command: Command) -> Command {
        let kind = self.standin.kind();
        for other in [Kind::GitHub, Kind::GitLab, Kind::Gitea].into_iter().filter(|other| *other != kind) {
            command.env_remove(other.token_env());
        }
        command
            .env("KUBECONFIG", &self.env.kubeconfig)
            .env("HOME", self.home.path())
            .env(kind.token_env(), TOKEN)
            .env(kind.api_url_env(), &self.standin.base_url)
            .env_remove("SSH_AUTH_SOCK");
        // The environment's config file, where install bound the hosts, for a command spawned
        // without `Run::of` too.
        binaries::isolate_config(&mut command);
        command
    }

    /// `kubectl-gitops-app ARGS --private-key-file … --known-hosts-file …`.
    fn app(&self, args: &[&str]) -> Run {
        self.pushing("kubectl-gitops-app", args)
    }

    /// A binary of ours that pushes: `BINARY ARGS --private-key-file … --known-hosts-file …`.
    pub(crate) fn pushing(&self, binary: &str, args: &[&str]) -> Run {
        Run::of(
            self.command(binary)
                .args(args)
                .arg("--private-key-file")
                .arg(&self.env.git.client_key)
                .arg("--known-hosts-file")
                .arg(&self.env.git.known_hosts),
        )
    }

    /// The install record ConfigMap's data.
    fn record(&self) -> serde_json::Value {
        let text = self
            .env
            .kubectl_ok(&["-n", "flux-system", "get", "configmap", "kubectl-gitops", "-o=jsonpath={.data}"])
            .unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// The bare repository on the git server.
    fn bare(&self) -> PathBuf {
        self.env.git.repos.join(format!("{REPO}.git"))
    }

    /// `git ARGS` in the bare repository; panics unless it succeeds.
    pub(crate) fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git").arg("--git-dir").arg(self.bare()).args(args).output().unwrap();
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `git show REV:PATH`.
    pub(crate) fn show(&self, object: &str) -> String {
        self.git(&["show", object])
    }

    /// The branches on the git server and their commits.
    pub(crate) fn branches(&self) -> Vec<(String, String)> {
        self.git(&["for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads"])
            .lines()
            .filter_map(|line| line.split_once(' ').map(|(name, sha)| (name.to_string(), sha.to_string())))
            .collect()
    }

    pub(crate) fn main_head(&self) -> String {
        self.git(&["rev-parse", "refs/heads/main"]).trim().to_string()
    }

    pub(crate) fn write_lines(&self) -> Vec<String> {
        self.standin.writes().iter().map(Recorded::line).collect()
    }

    /// Asserts the change of `app add podinfo` is the one commit of `branch` on top of `base`.
    fn assert_one_commit_with_the_app(&self, branch: &str, base: &str) {
        let parent = self.git(&["rev-parse", &format!("refs/heads/{branch}^")]);
        assert_eq!(parent.trim(), base, "{branch} is one commit on top of {base}");
        let message = self.git(&["log", "-1", "--format=%s", &format!("refs/heads/{branch}")]);
        assert_eq!(message.trim(), TITLE);
        let changed = self.git(&["diff", "--name-only", base, &format!("refs/heads/{branch}")]);
        let changed: Vec<&str> = changed.lines().collect();
        assert_eq!(
            changed,
            [
                "apps/podinfo/kustomization.yaml",
                "apps/podinfo/release.yaml",
                "apps/podinfo/source.yaml",
                "clusters/dev/apps/kustomization.yaml",
                "clusters/dev/apps/podinfo/kustomization.yaml",
            ],
        );
        let list = self.show(&format!("refs/heads/{branch}:clusters/dev/apps/kustomization.yaml"));
        assert!(list.contains("resources:\n- podinfo\n"), "{list}");
        let source = self.show(&format!("refs/heads/{branch}:apps/podinfo/source.yaml"));
        assert!(source.contains("url: https://github.com/stefanprodan/podinfo"), "{source}");
    }
}

/// `gitops/add-podinfo-<64 hex: the change's SHA-256>`.
fn is_change_branch(name: &str) -> bool {
    name.strip_prefix("gitops/add-podinfo-")
        .is_some_and(|hash| hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()))
}

fn pr_body_lists_the_files(body: &str) {
    for line in [
        "- add `apps/podinfo/kustomization.yaml`",
        "- add `apps/podinfo/release.yaml`",
        "- add `apps/podinfo/source.yaml`",
        "- update `clusters/dev/apps/kustomization.yaml`",
        "- add `clusters/dev/apps/podinfo/kustomization.yaml`",
    ] {
        assert!(body.contains(line), "the body lists {line}:\n{body}");
    }
}

#[test]
fn github_pull_request_is_opened_and_updated_on_a_rerun() {
    let fixture = Fixture::install(Kind::GitHub);
    let main_before = fixture.main_head();
    let args = [&ADD[..], &["--pr"]].concat();

    let run = fixture.app(&args);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let url = format!("http://127.0.0.1:{}/acme/fleet/pull/1", fixture.env.git.http_port);
    assert_eq!(run.stdout, format!("pull request opened: {url}\n"));
    // Read back before it is reported: listed open, and its branch holds the planned files.
    assert!(
        run.stderr.contains("#1 is open and gitops/add-podinfo-")
            && run.stderr.contains("holds the 5 planned file change(s): Kustomization podinfo, GitRepository podinfo"),
        "{}",
        run.stderr
    );

    let writes = fixture.standin.writes();
    assert_eq!(fixture.write_lines(), ["POST /repos/acme/fleet/pulls"], "one write: the pull request");
    let body = writes[0].body.clone().unwrap();
    let head = body["head"].as_str().unwrap();
    assert!(is_change_branch(head), "head {head}");
    assert_eq!(body["base"], "main");
    assert_eq!(body["title"], TITLE);
    pr_body_lists_the_files(body["body"].as_str().unwrap());
    assert_eq!(writes[0].header("authorization"), Some("Bearer ***"));
    let requests = fixture.standin.requests();
    assert!(requests.iter().all(|request| request.header("authorization") == Some("Bearer ***")));
    assert!(requests.iter().all(|request| request.user.as_deref() == Some("alice")));
    let lines: Vec<String> = requests.iter().map(Recorded::line).collect();
    assert_eq!(lines[0], "GET /repos/acme/fleet", "the repository and the token's rights are checked first");
    let lookup = requests.iter().find(|request| request.line() == "GET /repos/acme/fleet/pulls").unwrap();
    assert_eq!(lookup.query_param("head"), Some(format!("acme:{head}").as_str()));
    assert_eq!(lookup.query_param("state"), Some("open"));

    // The branch is on the git server: one commit with the app on top of main; main did not move.
    assert_eq!(fixture.main_head(), main_before, "main did not move");
    let branches = fixture.branches();
    assert_eq!(branches.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(), [head, "main"]);
    fixture.assert_one_commit_with_the_app(head, &main_before);
    let pulls = fixture.standin.pull_requests(REPO);
    assert_eq!(pulls.len(), 1);
    assert_eq!((pulls[0].head.as_str(), pulls[0].base.as_str(), pulls[0].open), (head, "main", true));

    // The identical command again: the same branch, the open pull request updated, no second one.
    let first_tree = fixture.git(&["rev-parse", &format!("refs/heads/{head}^{{tree}}")]);
    let first_commit = fixture.git(&["rev-parse", &format!("refs/heads/{head}")]);
    fixture.standin.clear_requests();
    let again = fixture.app(&args);
    assert_eq!(again.code, Some(0), "stdout: {}\nstderr: {}", again.stdout, again.stderr);
    assert_eq!(again.stdout, format!("pull request updated: {url}\n"));
    assert_eq!(fixture.write_lines(), ["PATCH /repos/acme/fleet/pulls/1"]);
    let update = fixture.standin.writes()[0].body.clone().unwrap();
    assert_eq!(update["title"], TITLE);
    pr_body_lists_the_files(update["body"].as_str().unwrap());
    let pulls = fixture.standin.pull_requests(REPO);
    assert_eq!(pulls.iter().filter(|pull| pull.open).count(), 1, "{pulls:?}");
    assert_eq!(fixture.main_head(), main_before, "main did not move");
    assert_eq!(fixture.branches().len(), 2, "no other branch: {:?}", fixture.branches());
    fixture.assert_one_commit_with_the_app(head, &main_before);
    let tree = fixture.git(&["rev-parse", &format!("refs/heads/{head}^{{tree}}")]);
    assert_eq!(tree, first_tree, "the branch holds the same change");
    let commit = fixture.git(&["rev-parse", &format!("refs/heads/{head}")]);
    assert_eq!(commit, first_commit, "the same change is not pushed again (CI would rerun, reviews could go stale)");
    assert!(again.stderr.contains(&format!("branch {head} already holds this change")), "{}", again.stderr);
}

#[test]
fn gitlab_merge_request_is_opened_and_updated_on_a_rerun() {
    let fixture = Fixture::install(Kind::GitLab);
    let main_before = fixture.main_head();
    let args = [&ADD[..], &["--pr"]].concat();

    let run = fixture.app(&args);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let url = format!("http://127.0.0.1:{}/acme/fleet/-/merge_requests/1", fixture.env.git.http_port);
    assert_eq!(run.stdout, format!("merge request opened: {url}\n"));
    let writes = fixture.standin.writes();
    assert_eq!(fixture.write_lines(), ["POST /api/v4/projects/acme%2Ffleet/merge_requests"]);
    let body = writes[0].body.clone().unwrap();
    let source = body["source_branch"].as_str().unwrap();
    assert!(is_change_branch(source), "source branch {source}");
    assert_eq!(body["target_branch"], "main");
    assert_eq!(body["title"], TITLE);
    pr_body_lists_the_files(body["description"].as_str().unwrap());
    assert_eq!(writes[0].header("private-token"), Some("***"));
    assert!(fixture.standin.requests().iter().all(|request| request.header("private-token") == Some("***")));
    assert_eq!(fixture.main_head(), main_before, "main did not move");
    fixture.assert_one_commit_with_the_app(source, &main_before);

    fixture.standin.clear_requests();
    let again = fixture.app(&args);
    assert_eq!(again.code, Some(0), "stdout: {}\nstderr: {}", again.stdout, again.stderr);
    assert_eq!(again.stdout, format!("merge request updated: {url}\n"));
    assert_eq!(fixture.write_lines(), ["PUT /api/v4/projects/acme%2Ffleet/merge_requests/1"]);
    let requests = fixture.standin.pull_requests(REPO);
    assert_eq!(requests.iter().filter(|request| request.open).count(), 1, "{requests:?}");
}

#[test]
fn a_protected_branch_gets_a_pull_request_by_default() {
    let fixture = Fixture::install(Kind::GitHub);
    fixture.standin.protect_branch(REPO, "main");
    let main_before = fixture.main_head();

    let run = fixture.app(&ADD);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with("pull request opened: "), "{}", run.stdout);
    let lines: Vec<String> = fixture.standin.requests().iter().map(Recorded::line).collect();
    assert!(lines.contains(&"GET /repos/acme/fleet/branches/main".to_string()), "protection is asked: {lines:?}");
    assert_eq!(fixture.write_lines(), ["POST /repos/acme/fleet/pulls"]);
    let head = fixture.standin.writes()[0].body.clone().unwrap()["head"].as_str().unwrap().to_string();
    assert_eq!(fixture.main_head(), main_before, "nothing was pushed to the protected branch");
    fixture.assert_one_commit_with_the_app(&head, &main_before);
}

#[test]
fn gitlab_protected_branch_gets_a_merge_request_by_default() {
    let fixture = Fixture::install(Kind::GitLab);
    fixture.standin.protect_branch(REPO, "main");
    let main_before = fixture.main_head();

    let run = fixture.app(&ADD);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with("merge request opened: "), "{}", run.stdout);
    let lines: Vec<String> = fixture.standin.requests().iter().map(Recorded::line).collect();
    assert!(
        lines.contains(&"GET /api/v4/projects/acme%2Ffleet/repository/branches/main".to_string()),
        "protection is asked: {lines:?}"
    );
    assert_eq!(fixture.write_lines(), ["POST /api/v4/projects/acme%2Ffleet/merge_requests"]);
    assert_eq!(fixture.main_head(), main_before, "nothing was pushed to the protected branch");
}

#[test]
fn auto_merge_on_an_unprotected_branch_pushes_to_main_without_api_writes() {
    let fixture = Fixture::install(Kind::GitHub);
    let main_before = fixture.main_head();

    let run = fixture.app(&[&ADD[..], &["--auto-merge"]].concat());
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let main_after = fixture.main_head();
    assert_eq!(run.stdout, format!("app podinfo added at {}\n", &main_after[..12]));
    assert_eq!(fixture.write_lines(), Vec::<String>::new(), "no API write");
    assert_eq!(fixture.branches().len(), 1, "no pull request branch: {:?}", fixture.branches());
    fixture.assert_one_commit_with_the_app("main", &main_before);
    assert!(fixture.standin.pull_requests(REPO).is_empty());
}

#[test]
fn dry_run_prints_the_plan_and_a_diff_and_changes_nothing() {
    let fixture = Fixture::install(Kind::GitHub);
    let main_before = fixture.main_head();

    let run = fixture.app(&[&ADD[..], &["--pr", "--dry-run"]].concat());
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    let mut lines = run.stdout.lines();
    assert_eq!(lines.next(), Some("Plan:"), "{}", run.stdout);
    let first = lines.next().unwrap();
    let branch = first.rsplit(' ').next().unwrap();
    assert!(is_change_branch(branch), "{}", run.stdout);
    assert_eq!(first, format!("  1. commit 5 file change(s) (\"{TITLE}\") and push branch {branch}"));
    assert_eq!(
        lines.next(),
        Some(format!("  2. open a pull request from {branch} into main (or update the open one)").as_str())
    );
    for expected in [
        "diff --git a/apps/podinfo/source.yaml b/apps/podinfo/source.yaml\n--- /dev/null\n+++ b/apps/podinfo/source.yaml\n",
        "diff --git a/clusters/dev/apps/kustomization.yaml b/clusters/dev/apps/kustomization.yaml\n--- a/clusters/dev/apps/kustomization.yaml\n+++ b/clusters/dev/apps/kustomization.yaml\n",
        "\n-resources: []\n+resources:\n+- podinfo\n",
    ] {
        assert!(run.stdout.contains(expected), "the diff has {expected:?}:\n{}", run.stdout);
    }
    assert_eq!(fixture.write_lines(), Vec::<String>::new(), "--dry-run wrote nothing to the provider");
    assert_eq!(fixture.branches(), [("main".to_string(), main_before.clone())], "no branch, no commit");

    // The real run pushes the branch the plan named.
    let real = fixture.app(&[&ADD[..], &["--pr"]].concat());
    assert_eq!(real.code, Some(0), "stdout: {}\nstderr: {}", real.stdout, real.stderr);
    let body = fixture.standin.writes()[0].body.clone().unwrap();
    assert_eq!(body["head"], branch);
}

#[test]
fn a_token_without_push_rights_is_refused_before_any_branch_or_write() {
    let fixture = Fixture::install(Kind::GitHub);
    fixture.standin.set_token_can_push(false);
    let main_before = fixture.main_head();

    for extra in [&["--pr"][..], &[]] {
        let run = fixture.app(&[&ADD[..], extra].concat());
        assert_eq!(run.code, Some(4), "{extra:?}: stdout: {}\nstderr: {}", run.stdout, run.stderr);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
        assert!(run.stderr.contains("may not push"), "{}", run.stderr);
        assert!(run.stderr.contains("acme/fleet"), "{}", run.stderr);
        assert!(run.stderr.contains("\nhint: "), "{}", run.stderr);
        assert_eq!(run.stdout, "");
    }
    assert_eq!(fixture.write_lines(), Vec::<String>::new());
    assert_eq!(fixture.branches(), [("main".to_string(), main_before)], "no branch, no commit");
}

#[test]
fn gitlab_reporter_access_is_refused_before_any_branch_or_write() {
    let fixture = Fixture::install(Kind::GitLab);
    fixture.standin.set_token_can_push(false);
    let main_before = fixture.main_head();
    let run = fixture.app(&[&ADD[..], &["--pr"]].concat());
    assert_eq!(run.code, Some(4), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stderr.starts_with("error: ") && run.stderr.contains("may not push"), "{}", run.stderr);
    assert!(run.stderr.contains("\nhint: "), "{}", run.stderr);
    assert_eq!(fixture.write_lines(), Vec::<String>::new());
    assert_eq!(fixture.branches(), [("main".to_string(), main_before)]);
}

#[test]
fn a_repository_that_does_not_exist_is_a_clear_error_and_nothing_is_written() {
    let fixture = Fixture::install(Kind::GitHub);
    fixture
        .env
        .kubectl_ok(&[
            "-n",
            "flux-system",
            "patch",
            "configmap",
            "kubectl-gitops",
            "--type=merge",
            "-p",
            r#"{"data":{"repository":"acme/missing"}}"#,
        ])
        .unwrap();
    let main_before = fixture.main_head();

    let run = fixture.app(&[&ADD[..], &["--pr"]].concat());
    assert_eq!(run.code, Some(4), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(run.stderr.contains("acme/missing") && run.stderr.contains("does not exist"), "{}", run.stderr);
    assert!(run.stderr.contains("\nhint: "), "{}", run.stderr);
    let lines: Vec<String> = fixture.standin.requests().iter().map(Recorded::line).collect();
    assert_eq!(lines, ["GET /repos/acme/missing"], "asked once, then stopped");
    assert_eq!(fixture.branches(), [("main".to_string(), main_before)], "no branch, no commit");
}

#[test]
fn a_pull_request_that_fails_to_open_takes_its_branch_away_again() {
    let fixture = Fixture::install(Kind::GitHub);
    let main_before = fixture.main_head();
    let refusal = json!({
        "message": "Validation Failed",
        "errors": [{ "resource": "PullRequest", "code": "custom", "message": "pull requests are disabled for this repository" }],
        "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
        "status": "422",
    });
    fixture.standin.fail_next("POST", "/repos/acme/fleet/pulls", 422, refusal);

    let run = fixture.app(&[&ADD[..], &["--pr"]].concat());
    assert_eq!(run.code, Some(4), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stderr.contains("error: step 2/3"), "names the step: {}", run.stderr);
    assert!(run.stderr.contains("pull requests are disabled for this repository"), "{}", run.stderr);
    assert_eq!(fixture.write_lines(), ["POST /repos/acme/fleet/pulls"]);
    assert!(fixture.standin.pull_requests(REPO).is_empty());
    assert_eq!(fixture.branches(), [("main".to_string(), main_before)], "the branch pushed for it is gone");
}

/// `platform add` on a provider: the chart is looked up first, a pull request is the default,
/// and it is read back (open, its branch holding the HelmRelease and its source) before it is
/// reported.
#[test]
fn a_platform_app_pull_request_is_validated_before_it_is_reported() {
    let fixture = Fixture::install(Kind::GitHub);
    fixture.env.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    let url = fixture.env.helm.url.clone();
    let missing =
        fixture.pushing("kubectl-gitops-platform", &["add", "ingress", "--url", &url, "--chart", "nginx", "--pr"]);
    assert_eq!(missing.code, Some(2), "{}", missing.stderr);
    assert!(missing.stderr.contains("chart nginx is not in the Helm repository"), "{}", missing.stderr);
    assert_eq!(fixture.write_lines(), Vec::<String>::new(), "nothing asked of the provider but reads");

    // No --pr: a platform app is reviewed, so a pull request is the default on a provider.
    let run = fixture.pushing("kubectl-gitops-platform", &["add", "ingress", "--url", &url, "--chart", "hello"]);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with("pull request opened: "), "{}", run.stdout);
    assert!(
        run.stderr.contains("holds the 5 planned file change(s): HelmRelease ingress, HelmRepository ingress"),
        "{}",
        run.stderr
    );
    let pulls = fixture.standin.pull_requests(REPO);
    assert_eq!(pulls.len(), 1);
    let release = fixture.show(&format!("{}:platform/ingress/release.yaml", pulls[0].head));
    assert!(release.contains("kind: HelmRelease") && release.contains("kubectl-gitops.io/tier: platform"), "{release}");
    assert!(fixture.show(&format!("{}:clusters/dev/platform/kustomization.yaml", pulls[0].head)).contains("- ingress"));
}
