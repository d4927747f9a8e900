//! The config repo on Gitea: `install --provider gitea` and Flux syncing from it with its deploy
//! key, pull requests opened, validated, approved, merged and followed to the cluster, a platform
//! repo taking the platform's pull requests, and the sock shop demo through a merged request.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::gitea::ADMIN;
use gitops_e2e::{binaries, flux_release};
use gitops_shared::provider::Kind;
use serde_json::{Value, json};

use super::{Forge, REPO};

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
