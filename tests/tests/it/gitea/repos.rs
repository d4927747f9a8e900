//! App repositories on Gitea: `repo create` from our layout, a template, a fork and a URL, and
//! `app add --create-repo` making the repository, its key and the app in one plan, then rolled
//! back through a pull request.

use std::path::Path;
use std::time::Duration;

use gitops_e2e::binaries;
use gitops_e2e::testenv::gitea::ADMIN;
use serde_json::json;

use super::{Forge, REPO, base64_decode};

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
