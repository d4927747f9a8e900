//! `kubectl gitops upgrade`, run for real: a cluster installed at the previous Flux line (v2.8.3,
//! built from Go modules by tests/testenv/build-flux-previous.sh) with a Helm app and an Alert and
//! Provider written at notification v1beta2 (which v2.9 removed), its CRDs' storedVersions as a
//! cluster installed long ago has them; then `--check`, refusals, `--dry-run`, the upgrade pushed
//! through git, and `--wait` until the real kustomize-controller has applied v2.9.4's manifests,
//! storage is migrated and everything is Ready.
//!
//! What stays at the current line: the controller processes (the environment runs the v2.9.3
//! controllers, see dependencies.toml). The v2.8.3 manifests, CRDs, Deployments and their image
//! tags are real, and the API server enforces the CRD versions and storedVersions for real.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::process::run;
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};
use gitops_shared::dependencies::FLUX_VERSION;
use gitops_shared::provider::Kind;

use crate::app_provider::Fixture;

const PREVIOUS: &str = "v2.8.3";

/// What an older tool (or a person) wrote: an Alert and a Provider at notification v1beta2.
const ALERTING: &str = "\
# Written by hand in 2023; notification v1beta2 was current then.
apiVersion: notification.toolkit.fluxcd.io/v1beta2
kind: Provider
metadata:
  name: slack
  namespace: flux-system
spec:
  type: generic
  address: http://127.0.0.1:9/hooks
---
apiVersion: notification.toolkit.fluxcd.io/v1beta2
kind: Alert
metadata:
  name: on-call
  namespace: flux-system
spec:
  providerRef:
    name: slack
  eventSeverity: error   # only failures page
  eventSources:
    - kind: Kustomization
      name: '*'
";

fn ours(env: &TestEnv, binary: &str, args: &[&str]) -> Run {
    Run::of(Command::new(binaries::path(binary)).args(args).env("KUBECONFIG", &env.kubeconfig).env("NO_COLOR", "1"))
}

/// A binary of ours that pushes to the config repo, with the test git server's key.
fn pushing(env: &TestEnv, binary: &str, args: &[&str]) -> Run {
    let (key, known_hosts) = (env.git.client_key.to_str().unwrap(), env.git.known_hosts.to_str().unwrap());
    ours(env, binary, &[args, &["--private-key-file", key, "--known-hosts-file", known_hosts]].concat())
}

/// `kubectl gitops upgrade ARGS`, generating the target's manifests with the real flux CLI.
fn upgrade(env: &TestEnv, args: &[&str]) -> Run {
    let cli = flux_release::cli();
    pushing(env, "kubectl-gitops-upgrade", &[args, &["--flux-bin", cli.to_str().unwrap()]].concat())
}

/// A git CLI in `dir` that reaches the test git server.
fn git(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    env.git.git(dir, args).unwrap()
}

/// The versions a CRD serves, space-separated.
fn crd_versions(env: &TestEnv, crd: &str) -> String {
    env.kubectl_ok(&["get", "crd", crd, "-o=jsonpath={.spec.versions[*].name}"]).unwrap()
}

/// The config repo's file at its main branch.
fn repo_file(env: &TestEnv, path: &str) -> String {
    let bare = env.git.repos.join("fleet.git");
    let output =
        Command::new("git").arg("--git-dir").arg(bare).args(["show", &format!("main:{path}")]).output().unwrap();
    assert!(output.status.success(), "git show main:{path}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stored_versions(env: &TestEnv, crd: &str) -> String {
    env.kubectl_ok(&["get", "crd", crd, "-o=jsonpath={.status.storedVersions}"]).unwrap()
}

/// Asks Flux to fetch and apply `name` (the GitRepository and Kustomization of that name) now.
fn reconcile(env: &TestEnv, name: &str) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let annotation = format!("reconcile.fluxcd.io/requestedAt={now}");
    for kind in ["gitrepository", "kustomization"] {
        env.kubectl_ok(&["-n", "flux-system", "annotate", "--overwrite", kind, name, &annotation]).unwrap();
    }
}

/// A team's own repo: an Alert and a Provider at notification v1beta2 (`version`), which an app
/// Kustomization applies from outside the config repo.
fn team_alerts(version: &str) -> String {
    ALERTING
        .replace("# Written by hand in 2023; notification v1beta2 was current then.\n", "")
        .replace("notification.toolkit.fluxcd.io/v1beta2", &format!("notification.toolkit.fluxcd.io/{version}"))
        .replace("name: slack", "name: team-slack")
        .replace("name: on-call", "name: team-on-call")
}

/// Commits `files` in a clone of `repo` on the test git server (created when new) and pushes.
fn push_files(env: &TestEnv, repo: &str, files: &[(&str, &str)]) {
    let work = tempfile::tempdir().unwrap();
    let clone = work.path().join(repo);
    if env.git.head(repo).is_empty() {
        env.git.create_repo(repo).ok();
        std::fs::create_dir_all(&clone).unwrap();
        git(env, &clone, &["init", "-q", "-b", "main"]);
        git(env, &clone, &["remote", "add", "origin", &env.git.ssh_url(repo)]);
    } else {
        git(env, work.path(), &["clone", "-q", &env.git.ssh_url(repo), repo]);
    }
    for (path, contents) in files {
        let file = clone.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, contents).unwrap();
    }
    git(env, &clone, &["add", "."]);
    git(env, &clone, &["commit", "-q", "-m", "change"]);
    git(env, &clone, &["push", "-q", "origin", "main"]);
}

fn mutations(env: &TestEnv) -> usize {
    env.our_requests().unwrap().iter().filter(|request| request.mutates()).count()
}

#[test]
fn a_cluster_at_the_previous_flux_line_is_upgraded_through_git_with_its_manifests_and_storage() {
    let previous = flux_release::previous_components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("fleet").unwrap();
    let url = env.git.ssh_url("fleet");
    let install = pushing(
        env,
        "kubectl-gitops-install",
        &["--url", &url, "--path", "clusters/dev", "--cluster-name", "dev", "--timeout", "3m"]
            .into_iter()
            .chain(["--flux-version", PREVIOUS, "--components-file", previous.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert_eq!(install.code, Some(0), "{}", install.render());
    let version_label = "-o=jsonpath={.metadata.labels.app\\.kubernetes\\.io/version}";
    assert_eq!(env.kubectl_ok(&["get", "namespace", "flux-system", version_label]).unwrap(), PREVIOUS);
    assert_eq!(
        crd_versions(env, "alerts.notification.toolkit.fluxcd.io"),
        "v1beta2 v1beta3",
        "v2.8.3's CRDs serve notification v1beta2"
    );

    // A Helm app, and the Alert and Provider at v1beta2, applied by Flux from the repo.
    env.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    let add = pushing(
        env,
        "kubectl-gitops-app",
        &[
            "add",
            "hello",
            "--url",
            &env.helm.url,
            "--chart",
            "hello",
            "--chart-version",
            "0.1.0",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert_eq!(add.code, Some(0), "{}", add.render());
    // A file of the user's in the cluster directory, listed in its kustomization.yaml (the sync
    // applies what that lists: docs/layout.md).
    let root = gitops_shared::flux::bootstrap::root_kustomization(Some("resources:\n- alerting.yaml\n"), &[]).unwrap();
    push_files(env, "fleet", &[("clusters/dev/alerting.yaml", ALERTING), ("clusters/dev/kustomization.yaml", &root)]);
    reconcile(env, "flux-system");
    let alert = ["-n", "flux-system", "alerts.v1beta3.notification.toolkit.fluxcd.io/on-call"];
    env.wait_for_jsonpath(&alert, "{.metadata.name}", "on-call", Duration::from_secs(180)).unwrap();
    // A team's repo with its own Alert at v1beta2, deployed as an app.
    push_files(env, "team-alerts", &[("alerting.yaml", &team_alerts("v1beta2"))]);
    let team_url = env.git.ssh_url("team-alerts");
    let team = pushing(
        env,
        "kubectl-gitops-app",
        &[
            "add",
            "team-alerts",
            "--url",
            &team_url,
            "--path",
            "./",
            "--secret-ref",
            "flux-system",
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    assert_eq!(team.code, Some(0), "{}", team.render());
    // A cluster installed when v1beta2 was the storage version still lists it.
    for crd in ["alerts.notification.toolkit.fluxcd.io", "providers.notification.toolkit.fluxcd.io"] {
        env.kubectl_ok(&[
            "patch",
            "crd",
            crd,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"storedVersions":["v1beta2","v1beta3"]}}"#,
        ])
        .unwrap();
        assert_eq!(stored_versions(env, crd), r#"["v1beta2","v1beta3"]"#);
    }

    // --check: exit 1, with the versions and what must change, where.
    let check = upgrade(env, &["--check"]);
    assert_eq!(check.code, Some(1), "{}", check.render());
    for expected in [
        format!("running:      {PREVIOUS}"),
        format!("recorded:     {PREVIOUS} (clusters/dev)"),
        format!("target:       {FLUX_VERSION}"),
        "clusters/dev/alerting.yaml:2: Provider/slack notification.toolkit.fluxcd.io/v1beta2 -> v1beta3 (not generated"
            .to_string(),
        "set CRD alerts.notification.toolkit.fluxcd.io status.storedVersions to [v1beta3] (now [v1beta2, v1beta3]) \
         (before the upgrade: the target drops a version it records)"
            .to_string(),
    ] {
        assert!(check.stdout.contains(&expected), "--check shows {expected:?}:\n{}", check.stdout);
    }
    assert!(
        check.stdout.contains("Other repos to change first, in order (then this change):\n  1. "),
        "{}",
        check.stdout
    );
    assert!(
        check.stdout.contains(&format!("{team_url} (path ./, applied by Kustomization flux-system/team-alerts)")),
        "{}",
        check.stdout
    );
    assert!(check.stdout.contains("Alert "), "{}", check.stdout);
    let json = upgrade(env, &["--check", "-o", "json"]);
    assert_eq!(json.code, Some(1), "{}", json.render());
    let report = gitops_e2e::schema::document("UpgradeCheck", &json.stdout);
    assert_eq!((report["upToDate"].as_bool(), report["target"].as_str()), (Some(false), Some(FLUX_VERSION)));
    assert_eq!(report["otherRepos"][0]["url"], team_url.as_str(), "{report}");

    // The team migrates its repo first, as --check asks; then it is no longer listed.
    push_files(env, "team-alerts", &[("alerting.yaml", &team_alerts("v1beta3"))]);
    reconcile(env, "team-alerts");
    let started = std::time::Instant::now();
    while upgrade(env, &["--check"]).stdout.contains("Other repos to change first") {
        assert!(started.elapsed() < Duration::from_secs(120), "the team's repo is still listed");
        std::thread::sleep(Duration::from_secs(1));
    }

    // Refusals: exit 2, and nothing written anywhere.
    let head = env.git.head("fleet");
    let before = mutations(env);
    for (args, says) in [
        (&["--flux-version", "v2.7.0"][..], "downgrades are refused"),
        (&["--flux-version", "v2.99.0"], "unknown Flux version v2.99.0"),
        (&["--flux-version", "latest"], "\"latest\" is not a Flux version"),
        (&["--auto-merge"], "pass --all-manifests"),
    ] {
        let refused = upgrade(env, args);
        assert_eq!(refused.code, Some(2), "{args:?}: {}", refused.render());
        assert!(refused.stderr.starts_with("error: ") && refused.stderr.contains("\nhint: "), "{}", refused.stderr);
        assert!(refused.stderr.contains(says), "{args:?} says {says:?}: {}", refused.stderr);
    }
    let not_ours = upgrade(env, &["--auto-merge"]);
    assert!(not_ours.stderr.contains("clusters/dev/alerting.yaml:11: Alert/on-call"), "{}", not_ours.stderr);

    // --dry-run: the plan, the migration diff, and still nothing written.
    let dry = upgrade(env, &["--all-manifests", "--dry-run"]);
    assert_eq!(dry.code, Some(0), "{}", dry.render());
    for expected in [
        "Plan:\n  1. rewrite 2 stored Alert object(s) at notification.toolkit.fluxcd.io/v1beta3 and set CRD alerts.notification.toolkit.fluxcd.io status.storedVersions to [v1beta3] (now [v1beta2, v1beta3])\n",
        &format!(
            "commit 3 file change(s) (\"Upgrade Flux {PREVIOUS} to {FLUX_VERSION} in clusters/dev\") and push to main"
        ),
        &format!(
            "# clusters/dev/flux-system/gotk-components.yaml: {PREVIOUS} -> {FLUX_VERSION} (generated by flux, not shown)"
        ),
        "-apiVersion: notification.toolkit.fluxcd.io/v1beta2\n+apiVersion: notification.toolkit.fluxcd.io/v1beta3\n kind: Alert\n",
        &format!("-  fluxVersion: {PREVIOUS}\n+  fluxVersion: {FLUX_VERSION}\n"),
    ] {
        assert!(dry.stdout.contains(expected), "--dry-run shows {expected:?}:\n{}", dry.stdout);
    }
    assert_eq!(env.git.head("fleet"), head, "nothing pushed");
    assert_eq!(mutations(env), before, "no cluster write");
    assert_eq!(stored_versions(env, "alerts.notification.toolkit.fluxcd.io"), r#"["v1beta2","v1beta3"]"#);

    // The upgrade: storage first (the new CRDs drop v1beta2), then one commit.
    let upgraded = upgrade(env, &["--all-manifests", "--auto-merge"]);
    assert_eq!(upgraded.code, Some(0), "{}", upgraded.render());
    let pushed = env.git.head("fleet");
    assert_ne!(pushed, head);
    assert_eq!(upgraded.stdout, format!("Flux {FLUX_VERSION} pushed at {}\n", &pushed[..12]));
    for crd in ["alerts.notification.toolkit.fluxcd.io", "providers.notification.toolkit.fluxcd.io"] {
        assert_eq!(stored_versions(env, crd), r#"["v1beta3"]"#, "{crd} migrated before the commit");
    }
    let alerting = repo_file(env, "clusters/dev/alerting.yaml");
    assert_eq!(alerting, ALERTING.replace("/v1beta2", "/v1beta3"), "only the apiVersion lines changed");
    assert!(repo_file(env, "clusters/dev/gitops.yaml").contains(&format!("fluxVersion: {FLUX_VERSION}")));
    let components = repo_file(env, "clusters/dev/flux-system/gotk-components.yaml");
    assert!(components.contains(&format!("# Flux Version: {FLUX_VERSION}\n")));

    // As after a merge: --wait has nothing to commit, and follows the rollout to the end.
    let waited = upgrade(env, &["--all-manifests", "--wait", "--timeout", "5m"]);
    assert_eq!(waited.code, Some(0), "{}", waited.render());
    assert!(waited.stdout.contains(&format!("Flux {FLUX_VERSION} runs in dev")), "{}", waited.stdout);
    assert_eq!(env.git.head("fleet"), pushed, "nothing more to commit");
    assert_eq!(env.kubectl_ok(&["get", "namespace", "flux-system", version_label]).unwrap(), FLUX_VERSION);
    assert_eq!(crd_versions(env, "alerts.notification.toolkit.fluxcd.io"), "v1beta3", "the CRDs are v2.9.4's");
    let crds = env
        .kubectl_ok(&[
            "get",
            "crd",
            "-o=jsonpath={range .items[*]}{.metadata.name}={.status.storedVersions}{\"\\n\"}{end}",
        ])
        .unwrap();
    for line in crds.lines().filter(|line| line.contains("fluxcd.io=")) {
        assert!(!line.contains(','), "one stored version each: {line}");
    }
    let images = env.kubectl_ok(&["-n", "flux-system", "get", "deployments", "-o=jsonpath={..image}"]).unwrap();
    for document in components.split("\n---\n").filter(|document| document.contains("kind: Deployment")) {
        let image = document.lines().find_map(|line| line.trim().strip_prefix("image: ")).unwrap();
        assert!(images.contains(image), "{image} runs: {images}");
    }
    let detect = ours(env, "kubectl-gitops-detect", &["-o", "json"]);
    let detection = gitops_e2e::schema::document("Detection", &detect.stdout);
    assert_eq!(detection["flux"]["version"], FLUX_VERSION, "{}", detect.stdout);
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    env.wait_for_jsonpath(&["-n", "flux-system", "helmrelease/hello"], ready, "True", Duration::from_secs(5)).unwrap();

    let current = upgrade(env, &["--check"]);
    assert_eq!(current.code, Some(0), "{}", current.render());
    assert!(current.stdout.ends_with("\nUp to date.\n"), "{}", current.stdout);
}

/// The pull request path, through the GitHub stand-in in front of the real git server (no Flux
/// controllers: a pull request needs none): one pull request whose title says from and to and
/// whose body lists every file and why; a branch someone added commits to is not overwritten;
/// a token that may not push is refused before any branch or write.
#[test]
fn an_upgrade_pull_request_lists_every_file_and_never_overwrites_other_commits() {
    let previous = flux_release::previous_components();
    let fixture = Fixture::install_from(Kind::GitHub, &previous, &["--flux-version", PREVIOUS]);
    let cli = flux_release::cli();
    let upgrade = |args: &[&str]| {
        fixture.pushing("kubectl-gitops-upgrade", &[args, &["--flux-bin", cli.to_str().unwrap()]].concat())
    };
    let main_before = fixture.main_head();

    // No delivery flag: on GitHub an upgrade is a pull request.
    let opened = upgrade(&[]);
    assert_eq!(opened.code, Some(0), "{}", opened.render());
    let url = format!("http://127.0.0.1:{}/acme/fleet/pull/1", fixture.env.git.http_port);
    assert_eq!(opened.stdout, format!("pull request opened: {url}\n"));
    assert_eq!(fixture.write_lines(), ["POST /repos/acme/fleet/pulls"], "one write: the pull request");
    let request = fixture.standin.writes()[0].body.clone().unwrap();
    assert_eq!(request["title"], format!("Upgrade Flux {PREVIOUS} to {FLUX_VERSION} in clusters/dev"));
    let body = request["body"].as_str().unwrap();
    for line in [
        "- update `clusters/dev/flux-system/gotk-components.yaml`",
        "- update `clusters/dev/gitops.yaml`",
        "- clusters/dev/flux-system/gotk-components.yaml: regenerated for the target release",
        &format!("- clusters/dev: Flux {PREVIOUS} -> {FLUX_VERSION} (the next release line)"),
    ] {
        assert!(body.contains(line), "the body says {line:?}:\n{body}");
    }
    let branch = request["head"].as_str().unwrap().to_string();
    assert!(branch.starts_with(&format!("gitops/upgrade-{FLUX_VERSION}-")), "{branch}");
    assert_eq!(fixture.main_head(), main_before, "main did not move");
    let record = fixture.show(&format!("refs/heads/{branch}:clusters/dev/gitops.yaml"));
    assert!(record.contains(&format!("fluxVersion: {FLUX_VERSION}")), "{record}");
    // It records its request, and that request planned again (the component manifests generated
    // again by the flux CLI of the target) gives exactly the branch.
    assert!(
        body.contains(&format!("\n### Request\n`kubectl gitops upgrade --flux-version {FLUX_VERSION}`\n")),
        "{body}"
    );
    let plugins = binaries::plugin_dir();
    let keys = [
        "--private-key-file",
        fixture.env.git.client_key.to_str().unwrap(),
        "--known-hosts-file",
        fixture.env.git.known_hosts.to_str().unwrap(),
    ];
    let show = || {
        Run::of(
            fixture
                .kubectl_gitops_command(plugins.path(), &[&["pr", "show", "1"][..], &keys].concat())
                .env(gitops_shared::env::KUBECTL_GITOPS_FLUX_BIN, &cli),
        )
    };
    let shown = show();
    assert_eq!(shown.code, Some(0), "{}", shown.render());
    assert!(
        shown.stdout.contains(&format!(
            "ok    request    `kubectl gitops upgrade --flux-version {FLUX_VERSION}` planned again at "
        )),
        "{}",
        shown.stdout
    );

    // A reviewer pushes a commit onto the branch: the upgrade does not overwrite it.
    let work = tempfile::tempdir().unwrap();
    let clone = work.path().join("fleet");
    let bare = fixture.env.git.repos.join("acme/fleet.git");
    run(Command::new("git").arg("clone").arg("-q").arg("-b").arg(&branch).arg(&bare).arg(&clone)).unwrap();
    std::fs::write(clone.join("REVIEW.md"), "checked the release notes\n").unwrap();
    git(&fixture.env, &clone, &["add", "."]);
    git(&fixture.env, &clone, &["commit", "-q", "-m", "Reviewed"]);
    git(&fixture.env, &clone, &["push", "-q", "origin", &branch]);
    let reviewed = fixture.branches();
    let shown = show();
    assert_eq!(shown.code, Some(1), "{}", shown.render());
    assert!(
        shown
            .stdout
            .contains("FAIL  request    the branch changes REVIEW.md, which the recorded request does not plan\n"),
        "{}",
        shown.stdout
    );
    fixture.standin.clear_requests();
    let refused = upgrade(&["--pr"]);
    assert_eq!(refused.code, Some(4), "{}", refused.render());
    assert!(refused.stderr.contains(&format!("branch {branch} exists with other changes")), "{}", refused.stderr);
    assert!(refused.stderr.contains("\nhint: "), "{}", refused.stderr);
    assert_eq!(fixture.branches(), reviewed, "nothing pushed");
    assert_eq!(fixture.write_lines(), Vec::<String>::new(), "no API write");

    // An unreachable cluster: nothing is planned without it, so nothing is written.
    let scratch = tempfile::tempdir().unwrap();
    let unreachable = binaries::unreachable_kubeconfig(scratch.path());
    let offline =
        Run::of(Command::new(binaries::path("kubectl-gitops-upgrade")).arg("--pr").env("KUBECONFIG", &unreachable));
    assert_eq!(offline.code, Some(3), "{}", offline.render());
    assert!(offline.stderr.starts_with("error: ") && offline.stderr.contains("\nhint: "), "{}", offline.stderr);
    assert_eq!(fixture.branches(), reviewed);

    // A token that may not push: refused before any branch or write.
    fixture.standin.set_token_can_push(false);
    let no_rights = upgrade(&["--pr"]);
    assert_eq!(no_rights.code, Some(4), "{}", no_rights.render());
    assert!(no_rights.stderr.contains("may not push to acme/fleet"), "{}", no_rights.stderr);
    assert_eq!(fixture.branches(), reviewed);

    // A broken install record in the repo: refused, naming the file, before anything is written.
    let fleet = work.path().join("main");
    run(Command::new("git").arg("clone").arg("-q").arg(&bare).arg(&fleet)).unwrap();
    std::fs::write(fleet.join("clusters/dev/gitops.yaml"), "kind: ConfigMap\ndata: {}\n").unwrap();
    git(&fixture.env, &fleet, &["commit", "-q", "-am", "Break the record"]);
    git(&fixture.env, &fleet, &["push", "-q", "origin", "main"]);
    let with_broken_record = fixture.branches();
    let broken = upgrade(&["--pr"]);
    assert_eq!(broken.code, Some(2), "{}", broken.render());
    assert!(
        broken.stderr.contains("the install record clusters/dev/gitops.yaml in the config repo is broken"),
        "{}",
        broken.stderr
    );
    assert_eq!(fixture.branches(), with_broken_record, "nothing pushed");
}
