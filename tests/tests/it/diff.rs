//! `kubectl gitops diff` through the real kubectl, against the real API server and
//! kustomize-controller: a checkout of the config repo, with uncommitted edits, compared with
//! what Flux applied from it; the same objects as the real `flux diff kustomization` finds.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};

/// The config repo: the cluster's directory holds the Kustomizations `web` and `extras`, which
/// apply `apps/web` and `apps/extras` with pruning (and, written by the test, `team-app`).
const FLEET: [(&str, &str); 8] = [
    (
        "clusters/dev/web.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./apps/web\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    ),
    (
        "apps/web/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deployment.yaml\n- config.yaml\n- secret.yaml\n",
    ),
    (
        "apps/web/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: registry.invalid/web:1.0\n",
    ),
    (
        "apps/web/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: hello\n",
    ),
    (
        "apps/web/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-token\nstringData:\n  token: first-token-value\n",
    ),
    ("README.md", "The fleet.\n"),
    (
        "clusters/dev/extras.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: extras\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./apps/extras\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    ),
    ("apps/extras/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extras\ndata:\n  more: \"yes\"\n"),
];

/// The team's repository: one ConfigMap.
const TEAM_CONFIG: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-config\ndata:\n  size: small\n";

/// A directory that is no git work tree, for the runs that name what they compare.
fn elsewhere_dir() -> &'static Path {
    Path::new("/")
}

/// `kubectl gitops diff ARGS` through the real kubectl, in `dir`.
fn diff(env: &TestEnv, plugins: &Path, dir: &Path, args: &[&str]) -> Run {
    let path = format!("{}:{}", plugins.display(), std::env::var("PATH").unwrap_or_default());
    Run::of(
        Command::new(binaries::kubectl())
            .args(["gitops", "diff"])
            .args(args)
            .current_dir(dir)
            .env("PATH", path)
            .env("KUBECONFIG", &env.kubeconfig)
            .env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli())
            .env("NO_COLOR", "1"),
    )
}

/// The objects `flux diff kustomization web` reports, as `(Kind/namespace/name, action)` with our
/// action words (`created` is added, `drifted` changed, `deleted` pruned).
fn flux_diff(env: &TestEnv, work: &Path) -> BTreeSet<(String, String)> {
    let run = Run::of(
        Command::new(flux_release::cli())
            .args(["diff", "kustomization", "web", "--namespace", "flux-system", "--progress-bar=false", "--path"])
            .arg(work.join("apps/web"))
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(run.code, Some(1), "flux diff finds differences: {}", run.render());
    run.stdout
        .lines()
        .filter_map(|line| line.strip_prefix("► "))
        .filter_map(|line| line.rsplit_once(' '))
        .map(|(object, action)| {
            let action = match action {
                "created" => "added",
                "drifted" => "changed",
                "deleted" => "pruned",
                other => other,
            };
            (object.to_string(), action.to_string())
        })
        .collect()
}

#[test]
fn diff_shows_what_a_checkout_would_add_change_and_prune_as_flux_diff_does() {
    let env = &TestEnv::start(Options { flux: true }).unwrap();
    env.apply_yaml(&std::fs::read_to_string(flux_release::components()).unwrap()).unwrap();
    env.git.create_repo("fleet").unwrap();
    let checkout = tempfile::tempdir().unwrap();
    let work = checkout.path();
    let git = |args: &[&str]| env.git.git(work, args).unwrap();
    git(&["init", "-q", "-b", "main"]);
    for (path, contents) in FLEET {
        std::fs::create_dir_all(work.join(path).parent().unwrap()).unwrap();
        std::fs::write(work.join(path), contents).unwrap();
    }
    // A team's repository, which the config repo's Kustomization `team-app` applies.
    let team_checkout = tempfile::tempdir().unwrap();
    let team = team_checkout.path();
    env.git.create_repo("team").unwrap();
    env.git.git(team, &["init", "-q", "-b", "main"]).unwrap();
    std::fs::write(team.join("config.yaml"), TEAM_CONFIG).unwrap();
    env.git.git(team, &["add", "."]).unwrap();
    env.git.git(team, &["commit", "-q", "-m", "team"]).unwrap();
    env.git.git(team, &["push", "-q", &env.git.ssh_url("team"), "main"]).unwrap();
    std::fs::write(
        work.join("clusters/dev/team.yaml"),
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: team\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: team-app\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: GitRepository\n    name: team\n",
            env.git.http_url("team")
        ),
    )
    .unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "fleet"]);
    git(&["push", "-q", &env.git.ssh_url("fleet"), "main"]);
    // The checkout's origin is the URL Flux fetches from: diff knows it for the config repo's.
    git(&["remote", "add", "origin", &env.git.http_url("fleet")]);
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: flux-system\nstringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  timeout: 5s\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        env.git.http_url("fleet")
    ))
    .unwrap();
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    for applied in ["web", "team-app", "extras"] {
        env.wait_for_jsonpath(
            &["-n", "flux-system", "kustomization", applied],
            ready,
            "True",
            Duration::from_secs(120),
        )
        .unwrap();
    }
    let plugins = binaries::plugin_dir();
    let before = env.our_requests().unwrap().len();

    // The checkout as Flux applied it: nothing would change.
    let same = diff(env, plugins.path(), work, &[]);
    assert_eq!(same.code, Some(0), "{}", same.render());
    assert!(same.stdout.ends_with("\n0 added, 0 changed, 0 pruned, 0 refused, 8 unchanged\n"), "{}", same.stdout);

    // Uncommitted edits: a new image tag, a new Service, the ConfigMap dropped, the token changed.
    std::fs::write(work.join("apps/web/deployment.yaml"), FLEET[2].1.replace("web:1.0", "web:1.1")).unwrap();
    std::fs::write(
        work.join("apps/web/service.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n",
    )
    .unwrap();
    std::fs::write(
        work.join("apps/web/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deployment.yaml\n- secret.yaml\n- service.yaml\n",
    )
    .unwrap();
    std::fs::write(work.join("apps/web/secret.yaml"), FLEET[4].1.replace("first-token-value", "second-token-value"))
        .unwrap();
    // And extras removed, its Kustomization and its directory: Flux deletes both, and its ConfigMap.
    std::fs::remove_file(work.join("clusters/dev/extras.yaml")).unwrap();
    std::fs::remove_dir_all(work.join("apps/extras")).unwrap();
    let changed = diff(env, plugins.path(), work, &["--dir", work.to_str().unwrap()]);
    assert_eq!(changed.code, Some(1), "{}", changed.render());
    let row = changed.stdout.lines().find(|line| line.starts_with("flux-system/web ")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[..7], ["flux-system/web", "./apps/web", "1", "2", "1", "0", "0"], "{}", changed.stdout);
    assert!(row.ends_with("registry.invalid/web:1.0 → registry.invalid/web:1.1"), "{row}");
    let deleted = changed.stdout.lines().find(|line| line.starts_with("flux-system/extras (deleted) ")).unwrap();
    assert_eq!(deleted.split_whitespace().collect::<Vec<_>>()[2..8], ["./apps/extras", "0", "0", "1", "0", "0"]);
    assert!(changed.stdout.contains("--- live/ConfigMap/default/extras\n"), "{}", changed.stdout);
    assert!(changed.stdout.contains("--- live/Kustomization/flux-system/extras\n"), "{}", changed.stdout);
    assert!(changed.stdout.contains("\n+  name: web\n"), "the new Service: {}", changed.stdout);
    assert!(changed.stdout.contains("--- live/ConfigMap/default/web-config\n"), "{}", changed.stdout);
    assert!(changed.stdout.contains("\n+  token: (hidden, changed)\n"), "{}", changed.stdout);
    for secret in ["first-token-value", "second-token-value", "Zmlyc3QtdG9rZW4tdmFsdWU", "c2Vjb25kLXRva2VuLXZhbHVl"] {
        assert!(!changed.stdout.contains(secret) && !changed.stderr.contains(secret), "{secret} shown");
    }
    assert!(changed.stdout.ends_with("\n1 added, 2 changed, 3 pruned, 0 refused, 3 unchanged\n"), "{}", changed.stdout);

    // A read-only identity (view, and get on the Secrets) may not patch, so not dry-run: the
    // objects are compared on this machine instead, with a warning, and come out the same.
    env.kubectl_ok(&["-n", "default", "create", "role", "secret-reader", "--verb=get", "--resource=secrets"]).unwrap();
    env.kubectl_ok(&[
        "-n",
        "default",
        "create",
        "rolebinding",
        "viewer-secrets",
        "--role=secret-reader",
        "--user=viewer",
    ])
    .unwrap();
    let viewed = Run::of(
        Command::new(binaries::path("kubectl-gitops-diff"))
            .args(["--dir", work.to_str().unwrap(), "-o", "json"])
            .env("KUBECONFIG", &env.readonly_kubeconfig)
            .env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli()),
    );
    assert_eq!(viewed.code, Some(1), "{}", viewed.render());
    assert!(
        viewed.stderr.contains("objects were compared on this machine: this identity may not patch them"),
        "{}",
        viewed.stderr
    );
    let viewed = gitops_e2e::schema::document("Diff", &viewed.stdout);
    assert_eq!(
        (
            viewed["summary"]["added"].as_u64(),
            viewed["summary"]["changed"].as_u64(),
            viewed["summary"]["pruned"].as_u64()
        ),
        (Some(1), Some(2), Some(3)),
        "{viewed:#}"
    );
    assert_eq!(viewed["summary"]["comparedHere"], 6, "{viewed:#}");

    // The team's repository edited too: compared only when its checkout is named.
    std::fs::write(team.join("config.yaml"), TEAM_CONFIG.replace("small", "large")).unwrap();
    let with_team = diff(
        env,
        plugins.path(),
        work,
        &["--local-source", &format!("GitRepository/flux-system/team={}", team.display())],
    );
    assert_eq!(with_team.code, Some(1), "{}", with_team.render());
    let row = with_team.stdout.lines().find(|line| line.starts_with("flux-system/team-app ")).unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>()[1..7],
        ["./", "0", "1", "0", "0", "0"],
        "{}",
        with_team.stdout
    );
    assert!(with_team.stdout.contains("\n-  size: small\n+  size: large\n"), "{}", with_team.stdout);
    assert!(
        with_team.stdout.ends_with("\n1 added, 3 changed, 3 pruned, 0 refused, 3 unchanged\n"),
        "{}",
        with_team.stdout
    );

    // The same as a script reads it, and the same objects as the real flux diff finds.
    let json = diff(env, plugins.path(), work, &["-o", "json"]);
    assert_eq!(json.code, Some(1), "{}", json.render());
    let document = gitops_e2e::schema::document("Diff", &json.stdout);
    let web = document["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "web").unwrap().clone();
    let ours: BTreeSet<(String, String)> = web["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|object| {
            let name = format!(
                "{}/{}/{}",
                object["kind"].as_str().unwrap(),
                object["namespace"].as_str().unwrap(),
                object["name"].as_str().unwrap()
            );
            (name, object["action"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(ours, flux_diff(env, work), "{web:#}");
    assert!(!json.stdout.contains("second-token-value"));

    // Nothing was written: the dry runs are the only PATCHes, and each says so.
    let requests = env.our_requests().unwrap();
    let written: Vec<String> = requests[before..]
        .iter()
        .filter(|request| request.mutates() && !request.uri.contains("dryRun=All"))
        .map(|request| format!("{} {}", request.verb, request.uri))
        .collect();
    assert_eq!(written, Vec::<String>::new());

    // The same edits pushed to a branch, compared by its name: cloned, not read from disk; and
    // the branch Flux follows at its head, by the commit's full hash: nothing would change.
    let main_head = git(&["rev-parse", "HEAD"]).trim().to_string();
    git(&["checkout", "-q", "-b", "preview"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "preview"]);
    git(&["push", "-q", &env.git.ssh_url("fleet"), "preview"]);
    let key_flags = [
        "--config-repo",
        &env.git.ssh_url("fleet"),
        "--private-key-file",
        env.git.client_key.to_str().unwrap(),
        "--known-hosts-file",
        env.git.known_hosts.to_str().unwrap(),
    ];
    let branch = diff(env, plugins.path(), elsewhere_dir(), &[&["--ref", "preview"][..], &key_flags].concat());
    assert_eq!(branch.code, Some(1), "{}", branch.render());
    assert!(branch.stdout.starts_with("Comparing branch preview with the cluster"), "{}", branch.stdout);
    assert!(branch.stdout.ends_with("\n1 added, 2 changed, 3 pruned, 0 refused, 3 unchanged\n"), "{}", branch.stdout);
    let pinned = diff(env, plugins.path(), elsewhere_dir(), &[&["--ref", &main_head][..], &key_flags].concat());
    assert_eq!(pinned.code, Some(0), "{}", pinned.render());
    let short = diff(env, plugins.path(), elsewhere_dir(), &["--ref", &main_head[..8]]);
    assert_eq!(short.code, Some(2), "{}", short.render());
    assert!(short.stderr.contains("looks like a short commit hash"), "{}", short.stderr);

    // An object the API server refuses: shown with its refusal, exit 2.
    std::fs::write(work.join("apps/web/deployment.yaml"), FLEET[2].1.replace("replicas: 1", "replicas: two")).unwrap();
    let refused = diff(env, plugins.path(), work, &[]);
    assert_eq!(refused.code, Some(2), "{}", refused.render());
    assert!(
        refused.stdout.contains("error: Deployment/default/web (Kustomization flux-system/web) would be refused: "),
        "{}",
        refused.stdout
    );

    // Outside a checkout of the config repo, without --dir: said so, with the way out.
    let elsewhere = tempfile::tempdir().unwrap();
    let lost = diff(env, plugins.path(), elsewhere.path(), &[]);
    assert_eq!(lost.code, Some(2), "{}", lost.render());
    assert!(
        lost.stderr.starts_with(&format!(
            "error: {} is not in a git work tree\nhint: run it in a checkout of ",
            elsewhere.path().display()
        )),
        "{}",
        lost.stderr
    );
}
