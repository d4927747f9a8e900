//! The platform layer: platform apps reconciled before the apps, platform services in a platform
//! repo of their own, and `install --layers` moving an old directory without deleting an app.

use std::process::Command;
use std::time::Duration;

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};
use gitops_shared::flux::bootstrap;

use super::{app, configmap_repo, git, install, install_with, push_dir};

/// The layers install writes: the platform list is applied first and is Ready only once every
/// platform service is; the apps wait for it (`dependsOn`). Proven with a platform service whose
/// branch does not exist yet: an app added after it is not even created until the branch is
/// pushed and the service turns Ready.
#[test]
fn platform_apps_are_reconciled_before_the_apps() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("fleet").unwrap();
    install(env, &flux_release::components());
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    for layer in ["platform", "apps", "tenants"] {
        env.wait_for_jsonpath(&["-n", "flux-system", "kustomization", layer], ready, "True", Duration::from_secs(120))
            .unwrap();
    }
    let depends = env
        .kubectl_ok(&[
            "-n",
            "flux-system",
            "get",
            "kustomization",
            "apps",
            "tenants",
            "-o=jsonpath={.items[*].spec.dependsOn[*].name}",
        ])
        .unwrap();
    assert_eq!(depends, "platform platform");

    configmap_repo(env, "ingress");
    configmap_repo(env, "web");
    let platform = Run::of(
        Command::new(binaries::path("kubectl-gitops-platform"))
            .args(["add", "ingress", "--url", &env.git.ssh_url("ingress"), "--branch", "stable", "--path", "./deploy"])
            .args(["--secret-ref", "flux-system", "--interval", "5s", "--auto-merge", "--private-key-file"])
            .arg(&env.git.client_key)
            .env("KUBECONFIG", &env.kubeconfig)
            .env("HOME", tempfile::tempdir().unwrap().path()),
    );
    assert_eq!(platform.code, Some(0), "{}\n{}", platform.stdout, platform.stderr);
    let web = ["add", "web", "--url", &env.git.ssh_url("web"), "--path", "./deploy", "--secret-ref", "flux-system"];
    let added = app(env, &env.kubeconfig, &web);
    assert_eq!(added.code, Some(0), "{}\n{}", added.stdout, added.stderr);
    // Both commits are fetched now, not at the GitRepository's next one-minute interval.
    env.request_reconcile("flux-system", &["gitrepository/flux-system"]).unwrap();
    let reason = "{.status.conditions[?(@.type==\"Ready\")].reason}";
    env.wait_for_jsonpath(
        &["-n", "flux-system", "kustomization", "apps"],
        reason,
        "DependencyNotReady",
        Duration::from_secs(120),
    )
    .unwrap();
    let web_exists = env.kubectl(&["-n", "flux-system", "get", "kustomization", "web"]).unwrap().status.success();
    assert!(!web_exists, "the app is not applied while the platform is not Ready");

    // The platform service's branch arrives: it turns Ready, then the apps layer applies the app.
    let work = tempfile::tempdir().unwrap();
    git(env, work.path(), &["clone", "-q", &env.git.ssh_url("ingress"), "."]);
    git(env, work.path(), &["push", "-q", "origin", "main:stable"]);
    let web_ready = ["-n", "flux-system", "kustomization", "web"];
    env.wait_for_jsonpath(&web_ready, ready, "True", Duration::from_secs(240)).unwrap();
    // What the platform service deployed existed before the app's Kustomization was created.
    // (Not the service's Ready time: with a 5 s interval its Ready condition goes Unknown and back
    // on every reconciliation, so its lastTransitionTime is the latest one, after the app.)
    let created = |what: &[&str]| env.jsonpath(what, "{.metadata.creationTimestamp}").unwrap();
    let ingress_deployed = created(&["-n", "default", "configmap", "ingress"]);
    let web_created = created(&["-n", "flux-system", "kustomization", "web"]);
    assert!(ingress_deployed <= web_created, "ingress deployed at {ingress_deployed}, web created at {web_created}");
    env.kubectl_ok(&["-n", "default", "get", "configmap", "ingress", "web"]).unwrap();
}

/// The file `path` on `repo`'s main branch, `None` when it is not there.
fn file_on_main(env: &TestEnv, repo: &str, path: &str) -> Option<String> {
    let work = tempfile::tempdir().unwrap();
    git(env, work.path(), &["clone", "-q", &env.git.ssh_url(repo), "."]);
    std::fs::read_to_string(work.path().join(path)).ok()
}

/// `install --platform-repo`: the platform services and the tenants live in a repository of their
/// own. Install seeds it with the cluster's platform and tenant lists, the platform and tenants
/// layers apply them through its own GitRepository (read with the sync's Secret), `platform
/// add|list|remove` and `tenant add` write to it and `--wait` follows its commits, while the apps
/// stay in the config repo and still wait for the platform layer. A re-run keeps it; another
/// platform repo is refused.
#[test]
fn platform_services_in_a_platform_repo_of_their_own() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("fleet").unwrap();
    env.git.create_repo("platform").unwrap();
    let components = flux_release::components();
    let platform_url = env.git.ssh_url("platform");
    let with_platform = ["--platform-repo", platform_url.as_str()];
    let dry = install_with(env, &components, &[&with_platform[..], &["--dry-run"]].concat());
    assert_eq!(dry.code, Some(0), "{}\n{}", dry.stdout, dry.stderr);
    assert!(
        dry.stdout.starts_with(&format!("Plan:\n  1. commit 3 file(s) to main of {platform_url}")),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains("  add       clusters/dev/platform/kustomization.yaml\n"), "{}", dry.stdout);
    assert_eq!(env.git.head("platform"), "", "--dry-run pushes nothing");

    let installed = install_with(env, &components, &with_platform);
    assert_eq!(installed.code, Some(0), "{}\n{}", installed.stdout, installed.stderr);
    let seeded = env.git.head("platform");
    assert!(!seeded.is_empty(), "install seeds the platform repo");
    assert_eq!(
        file_on_main(env, "platform", "clusters/dev/platform/kustomization.yaml").as_deref(),
        Some(bootstrap::apps_kustomization().as_str())
    );
    assert!(
        file_on_main(env, "fleet", "clusters/dev/platform/kustomization.yaml").is_none(),
        "no platform list in the config repo"
    );
    let record = file_on_main(env, "platform", "clusters/dev/gitops.yaml").unwrap();
    assert!(record.contains(&format!("platformUrl: {platform_url}")), "{record}");
    let platform_layer = ["-n", "flux-system", "kustomization", "platform"];
    let layer_source = env.jsonpath(&platform_layer, "{.spec.sourceRef.name} {.status.lastAppliedRevision}").unwrap();
    assert_eq!(
        layer_source,
        format!("platform main@sha1:{seeded}"),
        "install waited for the platform layer at the seeded commit"
    );
    let url = env
        .jsonpath(&["-n", "flux-system", "gitrepository", "platform"], "{.spec.url} {.spec.secretRef.name}")
        .unwrap();
    assert_eq!(url, format!("{platform_url} flux-system"));

    // A platform service goes to the platform repo; the config repo does not move.
    configmap_repo(env, "ingress");
    let fleet = env.git.head("fleet");
    let platform = |args: &[&str]| {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-platform"))
                .args(args)
                .arg("--private-key-file")
                .arg(&env.git.client_key)
                .env("KUBECONFIG", &env.kubeconfig)
                .env("HOME", tempfile::tempdir().unwrap().path()),
        )
    };
    let ingress =
        ["add", "ingress", "--url", &env.git.ssh_url("ingress"), "--path", "./deploy", "--secret-ref", "flux-system"];
    // The default interval: a short one would have the service's Ready flip to Unknown while it
    // reconciles, and `list` below could catch it in between.
    let added = platform(&[&ingress[..], &["--wait", "--timeout", "3m"]].concat());
    assert_eq!(added.code, Some(0), "{}\n{}", added.stdout, added.stderr);
    let pushed = env.git.head("platform");
    assert_eq!(added.stdout, format!("platform app ingress added at {}\n", &pushed[..12]));
    assert!(added.stderr.contains(&format!("and push to main of {platform_url}")), "{}", added.stderr);
    assert_eq!(env.git.head("fleet"), fleet, "the config repo does not move");
    assert!(file_on_main(env, "platform", "platform/ingress/release.yaml").is_some());
    // --wait followed the platform repo's commit to the service: it is there once the command ends.
    env.kubectl_ok(&["-n", "default", "get", "configmap", "ingress"]).unwrap();
    let listed = platform(&["list", "-o", "json"]);
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let rows = gitops_e2e::schema::document("AppList", &listed.stdout)["items"].clone();
    assert_eq!((rows[0]["name"].as_str(), rows[0]["state"].as_str()), (Some("ingress"), Some("ready")), "{rows:#}");

    // A team connected to a namespace: the tenant goes to the platform repo too, and the tenants
    // layer applies it from there.
    let team = tempfile::tempdir().unwrap();
    let team_configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-p\ndata:\n  from: team\n";
    std::fs::write(team.path().join("configmap.yaml"), team_configmap).unwrap();
    push_dir(env, "team-p-deploy", team.path(), "deploy");
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-p\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: team-p\n\
         stringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n"
    ))
    .unwrap();
    let team_url = env.git.http_url("team-p-deploy");
    let tenant = |extra: &[&str]| {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-tenant"))
                .args(["add", "team-p", "--with-namespace", "team-p", "--repo", &team_url, "--path", "./deploy"])
                .args(["--secret-ref", "http-credentials"])
                .args(extra)
                .arg("--private-key-file")
                .arg(&env.git.client_key)
                .env("KUBECONFIG", &env.kubeconfig)
                .env("HOME", tempfile::tempdir().unwrap().path()),
        )
    };
    // --lockdown would write the config repo too: refused, nothing pushed.
    let locked = tenant(&["--lockdown"]);
    assert_eq!(locked.code, Some(2), "{}\n{}", locked.stdout, locked.stderr);
    assert!(locked.stderr.contains("this cluster keeps its tenants in its platform repo"), "{}", locked.stderr);
    assert_eq!((env.git.head("fleet"), env.git.head("platform")), (fleet.clone(), pushed.clone()));
    let tenant = tenant(&["--wait", "--timeout", "3m"]);
    assert_eq!(tenant.code, Some(0), "{}\n{}", tenant.stdout, tenant.stderr);
    assert_eq!(env.git.head("fleet"), fleet, "the config repo does not move");
    assert!(file_on_main(env, "platform", "tenants/team-p/sync.yaml").is_some());
    let team_data = "-o=jsonpath={.data.from}";
    assert_eq!(env.kubectl_ok(&["-n", "team-p", "get", "configmap", "team-p", team_data]).unwrap(), "team");
    let pushed = env.git.head("platform");

    // The apps stay in the config repo, and still wait for the platform layer.
    configmap_repo(env, "web");
    let web = ["add", "web", "--url", &env.git.ssh_url("web"), "--path", "./deploy", "--secret-ref", "flux-system"];
    let app_added = app(env, &env.kubeconfig, &[&web[..], &["--wait", "--timeout", "3m"]].concat());
    assert_eq!(app_added.code, Some(0), "{}\n{}", app_added.stdout, app_added.stderr);
    assert_ne!(env.git.head("fleet"), fleet);
    assert_eq!(env.git.head("platform"), pushed);
    env.kubectl_ok(&["-n", "default", "get", "configmap", "web"]).unwrap();

    // A re-run keeps the platform repo without being told; another one is refused.
    let again = install_with(env, &components, &[]);
    assert_eq!(again.code, Some(0), "{}\n{}", again.stdout, again.stderr);
    assert!(again.stdout.starts_with("already installed: "), "{}", again.stdout);
    let other = env.git.ssh_url("other-platform");
    let refused = install_with(env, &components, &["--platform-repo", &other]);
    assert_eq!(refused.code, Some(2), "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stderr
            .starts_with(&format!("error: this cluster's platform repo is {platform_url} (branch main), not {other}")),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("\nhint: "), "{}", refused.stderr);

    let removed = platform(&["remove", "ingress", "--wait", "--timeout", "3m"]);
    assert_eq!(removed.code, Some(0), "{}\n{}", removed.stdout, removed.stderr);
    assert_ne!(env.git.head("platform"), pushed);
    assert!(file_on_main(env, "platform", "platform/ingress/release.yaml").is_none());
    assert!(env.kubectl(&["-n", "default", "get", "configmap", "ingress"]).unwrap().status.code() != Some(0));
}

/// `install --layers` moves a directory laid out before the layers to them in three commits
/// (the sync stops pruning, the lists move, the sync prunes again), and Flux deletes nothing on
/// the way: the app's Kustomization and what it deployed keep their uids, now owned by `apps`.
#[test]
fn install_layers_moves_an_old_directory_without_deleting_an_app() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("fleet").unwrap();
    // A directory laid out before the layers: its app list is there before install.
    let work = tempfile::tempdir().unwrap();
    git(env, work.path(), &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(work.path().join("clusters/dev/apps")).unwrap();
    std::fs::write(work.path().join("clusters/dev/apps/kustomization.yaml"), bootstrap::apps_kustomization()).unwrap();
    git(env, work.path(), &["add", "."]);
    git(env, work.path(), &["commit", "-q", "-m", "an older layout"]);
    git(env, work.path(), &["push", "-q", &env.git.ssh_url("fleet"), "main"]);
    let components = flux_release::components();
    let old = install_with(env, &components, &[]);
    assert_eq!(old.code, Some(0), "{}\n{}", old.stdout, old.stderr);
    assert!(old.stderr.contains("run install again with --layers to move it"), "{}", old.stderr);
    configmap_repo(env, "web");
    let web = ["add", "web", "--url", &env.git.ssh_url("web"), "--path", "./deploy", "--secret-ref", "flux-system"];
    let added = app(env, &env.kubeconfig, &[&web[..], &["--wait", "--timeout", "3m"]].concat());
    assert_eq!(added.code, Some(0), "{}\n{}", added.stdout, added.stderr);
    let get = |what: &[&str], path: &str| {
        let jsonpath = format!("-o=jsonpath={path}");
        env.kubectl_ok(&[&["get"][..], what, &[jsonpath.as_str()]].concat()).unwrap()
    };
    let owner = "{.metadata.labels.kustomize\\.toolkit\\.fluxcd\\.io/name}";
    let release = ["-n", "flux-system", "kustomization", "web"];
    let configmap = ["-n", "default", "configmap", "web"];
    let (release_uid, configmap_uid) = (get(&release, "{.metadata.uid}"), get(&configmap, "{.metadata.uid}"));
    assert_eq!(get(&release, owner), "flux-system");

    let head = env.git.head("fleet");
    let moved = install_with(env, &components, &["--layers"]);
    assert_eq!(moved.code, Some(0), "{}\n{}", moved.stdout, moved.stderr);
    let log = git(env, work.path(), &["pull", "-q", &env.git.ssh_url("fleet"), "main"]);
    let subjects = git(env, work.path(), &["log", "--format=%s", &format!("{head}..HEAD")]);
    assert_eq!(
        subjects,
        "Prune again in clusters/dev, moved to its layers\nMove clusters/dev to the platform, apps and tenants layers\n\
         Stop the sync's pruning while clusters/dev moves to its layers\n",
        "{log}"
    );
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    env.wait_for_jsonpath(&["-n", "flux-system", "kustomization", "apps"], ready, "True", Duration::from_secs(180))
        .unwrap();
    assert_eq!(get(&["-n", "flux-system", "kustomization", "flux-system"], "{.spec.prune}"), "true");
    assert_eq!(get(&release, "{.metadata.uid}"), release_uid, "the app's Kustomization was never deleted");
    assert_eq!(get(&configmap, "{.metadata.uid}"), configmap_uid, "nor what it deployed");
    assert_eq!(get(&release, owner), "apps", "the apps layer owns it now");
    let sync = std::fs::read_to_string(work.path().join("clusters/dev/flux-system/gotk-sync.yaml")).unwrap();
    assert!(sync.contains("\n  prune: true\n"), "{sync}");
}
