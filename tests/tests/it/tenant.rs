//! `kubectl gitops tenant` end to end: a team connected to a namespace through the config repo,
//! its own repo applied by the real kustomize-controller as the team's ServiceAccount, and the
//! real API server's RBAC refusing what the team may not do; then `monitoring install` on the same
//! cluster, committed to the platform directory and turned into Kustomizations by Flux.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};
use serde_json::Value;

const TEAM: &str = "team-a";
const TEAM_REPO: &str = "team-a-deploy";

/// A kubectl-gitops binary with the test's kubeconfig and the git server's client key.
fn gitops(env: &TestEnv, binary: &str, args: &[&str]) -> Run {
    let home = tempfile::tempdir().unwrap();
    Run::of(
        Command::new(binaries::path(binary))
            .args(args)
            .env("KUBECONFIG", &env.kubeconfig)
            .env("HOME", home.path())
            .env("NO_COLOR", "1"),
    )
}

fn tenant(env: &TestEnv, args: &[&str]) -> Run {
    let key = env.git.client_key.display().to_string();
    let writes = matches!(args.first(), Some(&"add" | &"remove"));
    let extra: &[&str] = if writes { &["--private-key-file", &key] } else { &[] };
    gitops(env, "kubectl-gitops-tenant", &[args, extra].concat())
}

/// Commits `files` (path, contents) as the only content of the team repo's main branch.
fn push_team(env: &TestEnv, work: &Path, files: &[(&str, &str)], message: &str) -> String {
    let deploy = work.join("deploy");
    let _ = std::fs::remove_dir_all(&deploy);
    std::fs::create_dir_all(&deploy).unwrap();
    for (path, contents) in files {
        std::fs::write(deploy.join(path), contents).unwrap();
    }
    env.git.git(work, &["add", "-A", "."]).unwrap();
    env.git.git(work, &["commit", "-q", "-m", message]).unwrap();
    env.git.git(work, &["push", "-q", &env.git.ssh_url(TEAM_REPO), "main"]).unwrap();
    env.git.git(work, &["rev-parse", "HEAD"]).unwrap().trim().to_string()
}

fn get(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.kubectl_ok(&[args, &["-o", "json"]].concat()).unwrap()).unwrap()
}

/// Asks source-controller to fetch the team repo now, then waits until the Kustomization
/// `namespace/name` attempted `commit` and its Ready condition has `status`; returns its message.
fn reconciled(env: &TestEnv, namespace: &str, name: &str, commit: &str, status: &str) -> String {
    let _ = env.request_reconcile(TEAM, &[&format!("gitrepository/{TEAM}")]);
    let _ = env.request_reconcile(namespace, &[&format!("kustomization/{name}")]);
    let started = Instant::now();
    loop {
        let found = env.kubectl(&["-n", namespace, "get", &format!("kustomization/{name}"), "-o", "json"]).unwrap();
        if found.status.success() {
            let object: Value = serde_json::from_slice(&found.stdout).unwrap();
            let attempted = object["status"]["lastAttemptedRevision"].as_str().unwrap_or_default();
            let conditions = object["status"]["conditions"].as_array().cloned().unwrap_or_default();
            if let Some(ready) = conditions.iter().find(|condition| condition["type"] == "Ready")
                && attempted.ends_with(commit)
                && ready["status"] == status
            {
                return ready["message"].as_str().unwrap_or_default().to_string();
            }
            assert!(started.elapsed() < Duration::from_secs(180), "{commit} never gave Ready={status}: {object:#}");
        }
        assert!(started.elapsed() < Duration::from_secs(180), "kustomization {namespace}/{name} never appeared");
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  team: \"{TEAM}\"\n")
}

/// A cluster installed from the config repo `fleet`, and the team repo with one ConfigMap: its
/// clone, and the commit. The team's namespace exists already, with the team repo's HTTP
/// credentials in it (a tenant adopts such a namespace, and keeps it when the tenant goes).
fn team_cluster() -> (std::sync::Arc<TestEnv>, tempfile::TempDir, String) {
    let components = flux_release::components();
    let env = TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("fleet").unwrap();
    crate::app::install(&env, &components);
    env.git.create_repo(TEAM_REPO).unwrap();
    let work = tempfile::tempdir().unwrap();
    env.git.git(work.path(), &["init", "-q", "-b", "main"]).unwrap();
    let first = push_team(&env, work.path(), &[("hello.yaml", &config_map("hello"))], "hello");
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {TEAM}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: {TEAM}\n\
         stringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n"
    ))
    .unwrap();
    (env, work, first)
}

#[test]
fn a_tenant_is_connected_through_git_and_kept_inside_its_namespace_by_rbac() {
    let (env, work, first) = team_cluster();
    let env = &env;
    let team_url = env.git.http_url(TEAM_REPO);
    let add = [
        "add",
        TEAM,
        "--with-namespace",
        TEAM,
        "--repo",
        &team_url,
        "--path",
        "./deploy",
        "--secret-ref",
        "http-credentials",
    ];

    // --dry-run: the plan and the diff, nothing pushed, nothing written to the cluster.
    let head = env.git.head("fleet");
    let writes = env.our_requests().unwrap().iter().filter(|request| request.mutates()).count();
    let dry = tenant(env, &[&add[..], &["--dry-run"]].concat());
    assert_eq!(dry.code, Some(0), "{}\n{}", dry.stdout, dry.stderr);
    assert!(dry.stdout.starts_with("Plan:\n  1. commit "), "{}", dry.stdout);
    for line in [
        "+++ b/tenants/team-a/rbac.yaml",
        "+++ b/tenants/team-a/sync.yaml",
        "+++ b/clusters/dev/tenants/team-a/kustomization.yaml",
        "+  serviceAccountName: team-a",
        "+    kustomize.toolkit.fluxcd.io/prune: disabled",
    ] {
        assert!(dry.stdout.contains(line), "{line} in\n{}", dry.stdout);
    }
    assert_eq!(env.git.head("fleet"), head, "--dry-run pushed nothing");
    let writes_after = env.our_requests().unwrap().iter().filter(|request| request.mutates()).count();
    assert_eq!(writes_after, writes, "--dry-run wrote nothing to the cluster");
    // --lockdown, planned: the flux2-multi-tenancy patches in the cluster's flux-system.
    let lockdown = tenant(env, &[&add[..], &["--lockdown", "--dry-run"]].concat());
    assert_eq!(lockdown.code, Some(0), "{}", lockdown.stderr);
    assert!(lockdown.stdout.contains("+++ b/clusters/dev/flux-system/kustomization.yaml"), "{}", lockdown.stdout);
    assert!(lockdown.stdout.contains("--no-cross-namespace-refs=true"), "{}", lockdown.stdout);

    // The tenant lands in git, Flux creates it, and the team's repo is applied as the team.
    let added = tenant(env, &[&add[..], &["--wait", "--timeout", "3m"]].concat());
    assert_eq!(added.code, Some(0), "{}\n{}", added.stdout, added.stderr);
    let head = env.git.head("fleet");
    assert_eq!(added.stdout, format!("tenant team-a added at {}\n", &head[..12]));
    env.kubectl_ok(&["-n", TEAM, "get", "configmap", "hello"]).unwrap();
    let binding = get(env, &["-n", TEAM, "get", "rolebinding", "team-a-reconciler"]);
    assert_eq!(binding["roleRef"]["name"], "admin", "the namespaced admin role, not cluster-admin");
    let namespace = get(env, &["get", "namespace", TEAM]);
    assert_eq!(namespace["metadata"]["labels"]["toolkit.fluxcd.io/tenant"], TEAM);
    let kustomization = get(env, &["-n", TEAM, "get", "kustomization", TEAM]);
    assert_eq!(kustomization["spec"]["serviceAccountName"], TEAM);
    assert!(kustomization["status"]["lastAppliedRevision"].as_str().unwrap().ends_with(&first));

    let listed = tenant(env, &["list", "-o", "json"]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let rows = gitops_e2e::schema::document("TenantList", &listed.stdout)["items"].clone();
    assert_eq!(rows[0]["name"], TEAM, "{rows:#}");
    assert_eq!(rows[0]["namespaces"], serde_json::json!([TEAM]));
    assert_eq!(rows[0]["repo"], team_url.as_str());
    assert_eq!(rows[0]["state"], "ready");

    // Bad input: a clear error, nothing pushed.
    let refusals = [
        (vec!["add", "team-b", "--with-namespace", TEAM], "namespace team-a already belongs to tenant team-a"),
        (vec!["add", "team-b", "--with-namespace", "b", "--cluster-role", "cluster-admin"], "--allow-cluster-admin"),
        (vec!["add", "Team_B", "--with-namespace", "b"], "is not a valid name"),
    ];
    for (args, expected) in refusals {
        let refused = tenant(env, &args);
        assert_eq!(refused.code, Some(2), "{args:?}: {}\n{}", refused.stdout, refused.stderr);
        assert!(refused.stderr.contains(expected) && refused.stderr.contains("hint:"), "{}", refused.stderr);
        assert!(!refused.stderr.contains("panicked") && !refused.stderr.contains("Error {"), "{}", refused.stderr);
    }
    assert_eq!(env.git.head("fleet"), head, "no refused add pushed anything");

    // A cluster-wide object in the team's repo: the API server refuses the team's account.
    let escape =
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: team-a-escape\nrules: []\n";
    let commit =
        push_team(env, work.path(), &[("hello.yaml", &config_map("hello")), ("escape.yaml", escape)], "escape");
    let message = reconciled(env, TEAM, TEAM, &commit, "False");
    assert!(message.contains("forbidden") && message.contains("system:serviceaccount:team-a:team-a"), "{message}");
    let status = gitops(env, "kubectl-gitops-status", &["-A", "-o", "json"]);
    assert_eq!(status.code, Some(1), "a failing row: exit 1\n{}", status.stderr);
    let report = gitops_e2e::schema::document("Status", &status.stdout);
    let row = report["tenants"].as_array().unwrap().iter().find(|row| row["name"] == TEAM).unwrap().clone();
    assert_eq!(row["state"], "failing", "{row:#}");
    assert!(row["message"].as_str().unwrap().contains("forbidden"), "{row:#}");
    let table = gitops(env, "kubectl-gitops-status", &["-A"]);
    assert!(table.stdout.contains("Tenants\n"), "{}", table.stdout);
    let listed = tenant(env, &["list"]);
    assert!(listed.stdout.contains("forbidden"), "{}", listed.stdout);
    // -l: the API server keeps the team's objects (status) and namespaces (tenant list) alone.
    let selected =
        gitops(env, "kubectl-gitops-status", &["-A", "-l", &format!("toolkit.fluxcd.io/tenant={TEAM}"), "-o", "json"]);
    let selected = gitops_e2e::schema::document("Status", &selected.stdout);
    let names = |rows: &serde_json::Value| -> Vec<String> {
        rows.as_array().unwrap().iter().map(|row| row["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&selected["tenants"]), [TEAM], "{selected:#}");
    assert!(names(&selected["otherFluxObjects"]).is_empty() && names(&selected["apps"]).is_empty(), "{selected:#}");
    let none = tenant(env, &["list", "-l", "toolkit.fluxcd.io/tenant=nobody", "-o", "json"]);
    assert_eq!(gitops_e2e::schema::document("TenantList", &none.stdout)["items"], serde_json::json!([]));
    let mine = tenant(env, &["list", "-l", "!team,toolkit.fluxcd.io/tenant in (team-a, team-b)", "-o", "json"]);
    assert_eq!(gitops_e2e::schema::document("TenantList", &mine.stdout)["items"][0]["name"], TEAM);

    // Another namespace, through a Kustomization the team writes itself: refused the same way.
    env.kubectl_ok(&["create", "namespace", "team-b-owned"]).unwrap();
    let reach = format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: reach\n\
         spec:\n  interval: 10m\n  path: ./deploy/elsewhere\n  prune: true\n  serviceAccountName: {TEAM}\n\
         targetNamespace: team-b-owned\n  sourceRef:\n    kind: GitRepository\n    name: {TEAM}\n"
    )
    .replace("\ntargetNamespace", "\n  targetNamespace");
    std::fs::create_dir_all(work.path().join("deploy/elsewhere")).unwrap();
    let commit = push_team(env, work.path(), &[("hello.yaml", &config_map("hello")), ("reach.yaml", &reach)], "reach");
    reconciled(env, TEAM, TEAM, &commit, "True");
    std::fs::create_dir_all(work.path().join("deploy/elsewhere")).unwrap();
    std::fs::write(work.path().join("deploy/elsewhere/other.yaml"), config_map("planted")).unwrap();
    env.git.git(work.path(), &["add", "-A", "."]).unwrap();
    env.git.git(work.path(), &["commit", "-q", "-m", "plant"]).unwrap();
    env.git.git(work.path(), &["push", "-q", &env.git.ssh_url(TEAM_REPO), "main"]).unwrap();
    let commit = env.git.git(work.path(), &["rev-parse", "HEAD"]).unwrap().trim().to_string();
    let message = reconciled(env, TEAM, "reach", &commit, "False");
    assert!(message.contains("forbidden") && message.contains("team-b-owned"), "{message}");
    assert!(env.kubectl(&["-n", "team-b-owned", "get", "configmap", "planted"]).unwrap().status.code() != Some(0));

    // Removal: Flux prunes what the tenant made; the namespace that existed before stays.
    let removed = tenant(env, &["remove", TEAM, "--wait", "--timeout", "3m", "-o", "json"]);
    assert_eq!(removed.code, Some(0), "{}\n{}", removed.stdout, removed.stderr);
    let removed = gitops_e2e::schema::document("Change", &removed.stdout);
    assert_eq!((removed["noun"].as_str(), removed["verb"].as_str()), (Some("tenant"), Some("remove")), "{removed:#}");
    assert_eq!(removed["done"]["commit"], env.git.head("fleet"), "{removed:#}");
    assert!(removed["waited"].is_object(), "{removed:#}");
    assert!(env.kubectl(&["-n", TEAM, "get", "kustomization", TEAM]).unwrap().status.code() != Some(0));
    assert!(env.kubectl(&["-n", TEAM, "get", "rolebinding", "team-a-reconciler"]).unwrap().status.code() != Some(0));
    env.kubectl_ok(&["get", "namespace", TEAM]).unwrap();

    let key = env.git.client_key.display().to_string();
    // A platform app: a chart that is not in its repository is refused before anything is
    // committed; one that is lands in platform/, and helm-controller installs it.
    env.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    let platform = |args: &[&str]| {
        let writes = matches!(args.first(), Some(&"add" | &"remove"));
        let extra: &[&str] = if writes { &["--private-key-file", &key] } else { &[] };
        gitops(env, "kubectl-gitops-platform", &[args, extra].concat())
    };
    let head = env.git.head("fleet");
    for (args, expected) in [
        (
            vec!["add", "ingress", "--url", &env.helm.url, "--chart", "absent"],
            "chart absent is not in the Helm repository",
        ),
        (
            vec!["add", "ingress", "--url", &env.helm.url, "--chart", "hello", "--chart-version", "9.9.9"],
            "chart hello has no version 9.9.9",
        ),
    ] {
        let refused = platform(&args);
        assert_eq!(refused.code, Some(2), "{args:?}: {}\n{}", refused.stdout, refused.stderr);
        assert!(refused.stderr.contains(expected) && refused.stderr.contains("hint:"), "{}", refused.stderr);
    }
    assert_eq!(env.git.head("fleet"), head, "a missing chart commits nothing");
    let add = ["add", "ingress", "--url", &env.helm.url, "--chart", "hello", "--chart-version", "0.1.0"];
    let dry = platform(&[&add[..], &["--dry-run"]].concat());
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert!(dry.stdout.contains("+++ b/platform/ingress/release.yaml"), "{}", dry.stdout);
    assert!(dry.stdout.contains("+++ b/clusters/dev/platform/ingress/kustomization.yaml"), "{}", dry.stdout);
    assert!(dry.stdout.contains("kubectl-gitops.io/tier: platform"), "{}", dry.stdout);
    let added = platform(&[&add[..], &["--wait", "--timeout", "5m"]].concat());
    assert_eq!(added.code, Some(0), "{}\n{}", added.stdout, added.stderr);
    assert!(added.stdout.starts_with("platform app ingress added at "), "{}", added.stdout);
    let release = get(env, &["-n", "flux-system", "get", "helmrelease", "ingress"]);
    assert_eq!(release["metadata"]["labels"]["kubectl-gitops.io/tier"], "platform");
    let listed = platform(&["list", "-o", "json"]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let rows = gitops_e2e::schema::document("AppList", &listed.stdout)["items"].clone();
    assert_eq!(rows[0]["name"], "ingress", "{rows:#}");
    assert_eq!(rows[0]["state"], "ready", "{rows:#}");
    let apps = gitops(env, "kubectl-gitops-app", &["list", "-o", "json"]);
    assert!(!apps.stdout.contains("\"ingress\""), "a platform app is not an app: {}", apps.stdout);
    let table = gitops(env, "kubectl-gitops-status", &[]);
    assert!(table.stdout.contains("\nPlatform\n"), "{}", table.stdout);
    let removed = platform(&["remove", "ingress", "--wait", "--timeout", "3m"]);
    assert_eq!(removed.code, Some(0), "{}\n{}", removed.stdout, removed.stderr);
    assert!(env.kubectl(&["-n", "flux-system", "get", "helmrelease", "ingress"]).unwrap().status.code() != Some(0));

    // Platform services last: once `monitoring install` has put its stack in the platform layer, the
    // layer's health checks wait on a chart this environment does not serve, and every later change
    // of the layer waits with them.
    // Platform services on the same cluster: `monitoring install` plans the platform directory,
    // commits it, and Flux creates the stack's two Kustomizations from it.
    // With the address this cluster's Prometheus scrapes its drift exporter at (`metrics drift
    // --listen`): a third Kustomization of the cluster's own applies its ScrapeConfig.
    let install = ["install", "--private-key-file", &key, "--drift-exporter", "gitops-drift.monitoring.svc:9464"];
    let dry = gitops(env, "kubectl-gitops-monitoring", &[&install[..], &["--dry-run"]].concat());
    assert_eq!(dry.code, Some(0), "{}\n{}", dry.stdout, dry.stderr);
    for line in [
        "+++ b/platform/monitoring/controllers/release.yaml",
        "+++ b/platform/monitoring/configs/rules.yaml",
        "+++ b/clusters/dev/platform/monitoring/sync.yaml",
        "+++ b/clusters/dev/platform/monitoring/drift/scrape.yaml",
        "+++ b/clusters/dev/platform/kustomization.yaml",
        "+    - gitops-drift.monitoring.svc:9464\n",
    ] {
        assert!(dry.stdout.contains(line), "{line} in\n{}", dry.stdout);
    }
    assert!(dry.stdout.contains("+  - monitoring\n") || dry.stdout.contains("+- monitoring\n"), "{}", dry.stdout);
    let head = env.git.head("fleet");
    let installed = gitops(env, "kubectl-gitops-monitoring", &install);
    assert_eq!(installed.code, Some(0), "{}\n{}", installed.stdout, installed.stderr);
    assert_ne!(env.git.head("fleet"), head);
    let commit = env.git.head("fleet");
    assert_eq!(installed.stdout, format!("platform service monitoring installed at {}\n", &commit[..12]));
    let again = gitops(env, "kubectl-gitops-monitoring", &install);
    assert_eq!(again.stdout, "monitoring is already in the config repo for clusters/dev; nothing to change\n");
    let configs = reconciled_sync(env, &commit);
    assert_eq!(configs["spec"]["dependsOn"][0]["name"], "monitoring-controllers", "{configs:#}");
    let drift = get(env, &["-n", "flux-system", "get", "kustomization", "monitoring-drift"]);
    assert_eq!(drift["spec"]["path"], "./clusters/dev/platform/monitoring/drift", "{drift:#}");
    assert_eq!(drift["spec"]["dependsOn"][0]["name"], "monitoring-controllers", "{drift:#}");
}

/// Asks Flux to fetch the config repo now, waits until the sync applied `commit`, and returns the
/// Kustomization `monitoring-configs` it created.
fn reconciled_sync(env: &TestEnv, commit: &str) -> Value {
    let _ = env.request_reconcile("flux-system", &["gitrepository/flux-system", "kustomization/flux-system"]);
    let started = Instant::now();
    loop {
        let sync = get(env, &["-n", "flux-system", "get", "kustomization", "flux-system"]);
        let applied = sync["status"]["lastAppliedRevision"].as_str().unwrap_or_default().to_string();
        if applied.ends_with(commit) {
            return get(env, &["-n", "flux-system", "get", "kustomization", "monitoring-configs"]);
        }
        assert!(started.elapsed() < Duration::from_secs(180), "the sync never applied {commit}: {sync:#}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `tenant add --lockdown` with the controllers running as their Deployments say: Flux applies
/// the lockdown's patches to the controllers' Deployments, the controllers are rolled out with
/// those flags (`--default-service-account=default`, `--no-cross-namespace-refs=true`,
/// `--no-remote-bases=true`), and the sync, the layers, a new platform service and a new app
/// still turn Ready, each Kustomization running as kustomize-controller's ServiceAccount, while a
/// team's reference to a source in another namespace is blocked.
#[test]
fn a_locked_down_cluster_runs_its_layers_platform_and_apps_as_the_controllers_accounts() {
    let (env, _work, _first) = team_cluster();
    let env = &env;
    let team_url = env.git.http_url(TEAM_REPO);
    let add = ["add", TEAM, "--with-namespace", TEAM, "--repo", &team_url, "--path", "./deploy"];
    let locked = tenant(
        env,
        &[&add[..], &["--secret-ref", "http-credentials", "--lockdown", "--wait", "--timeout", "3m"]].concat(),
    );
    assert_eq!(locked.code, Some(0), "{}\n{}", locked.stdout, locked.stderr);

    // Flux applied the patches to the Deployments; the controllers are rolled out with them.
    let controller = ["-n", "flux-system", "deployment", "kustomize-controller"];
    let args = env.jsonpath(&controller, "{.spec.template.spec.containers[0].args}").unwrap();
    for flag in ["--no-cross-namespace-refs=true", "--no-remote-bases=true", "--default-service-account=default"] {
        assert!(args.contains(flag), "{flag} in {args}");
    }
    env.roll_out_flux_controllers(&["kustomize-controller", "helm-controller"]).unwrap();
    let (_, pid) = env.restarts("kustomize-controller").unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(cmdline.contains("--default-service-account=default"), "{cmdline}");

    // A platform service and an app added now turn Ready: the sync, the layers and what they
    // apply run as kustomize-controller, not as flux-system's `default` (which may do nothing).
    let with_key = |binary: &str, args: &[&str]| {
        let key = env.git.client_key.display().to_string();
        gitops(env, binary, &[args, &["--private-key-file", &key, "--wait", "--timeout", "3m"]].concat())
    };
    crate::app::configmap_repo(env, "dns");
    let dns = ["add", "dns", "--url", &env.git.ssh_url("dns"), "--path", "./deploy", "--secret-ref", "flux-system"];
    let platform = with_key("kubectl-gitops-platform", &dns);
    assert_eq!(platform.code, Some(0), "{}\n{}", platform.stdout, platform.stderr);
    crate::app::configmap_repo(env, "web");
    let web = ["add", "web", "--url", &env.git.ssh_url("web"), "--path", "./deploy", "--secret-ref", "flux-system"];
    let app = with_key("kubectl-gitops-app", &web);
    assert_eq!(app.code, Some(0), "{}\n{}", app.stdout, app.stderr);
    env.kubectl_ok(&["-n", "default", "get", "configmap", "dns", "web"]).unwrap();
    for name in ["flux-system", "platform", "apps", "tenants", "dns", "web"] {
        let account =
            env.jsonpath(&["-n", "flux-system", "kustomization", name], "{.spec.serviceAccountName}").unwrap();
        assert_eq!(account, "kustomize-controller", "Kustomization {name}");
    }
    let status = gitops(env, "kubectl-gitops-status", &["--wait", "--timeout", "2m"]);
    assert_eq!(status.code, Some(0), "{}\n{}", status.stdout, status.stderr);

    // The lockdown at work: a team's Kustomization reading the Flux namespace's source is blocked.
    env.apply_yaml(&format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: borrowed\n  namespace: {TEAM}\n\
         spec:\n  interval: 1m\n  path: ./\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n"
    ))
    .unwrap();
    env.wait_for_jsonpath(
        &["-n", TEAM, "kustomization", "borrowed"],
        "{.status.conditions[?(@.type==\"Ready\")].message}",
        "can't access 'GitRepository/flux-system/flux-system', cross-namespace references have been blocked",
        Duration::from_secs(120),
    )
    .unwrap();
}
