//! `kubectl gitops app` end to end: the real binary, the real API server and Flux controllers,
//! the local git server (SSH and HTTP) and Helm repository.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

mod clusters;
mod platform;
mod pushes;

use std::path::Path;
use std::process::Command;

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, fixtures, flux_release};
use gitops_shared::flux::bootstrap;
use gitops_shared::record::InstallRecord;

/// The app binary with the test's kubeconfig and the git server's client key.
fn app(env: &TestEnv, kubeconfig: &Path, args: &[&str]) -> Run {
    let home = tempfile::tempdir().unwrap();
    Run::of(
        Command::new(binaries::path("kubectl-gitops-app"))
            .args(args)
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .env("KUBECONFIG", kubeconfig)
            .env("HOME", home.path())
            // A preview builds with the pinned flux CLI and renders charts with the Helm the
            // test environment built (github.com and get.helm.sh cannot be reached here).
            .env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli())
            .env("KUBECTL_GITOPS_HELM_BIN", gitops_e2e::tools::path("helm")),
    )
}

/// A git CLI in `dir` that reaches the test git server.
fn git(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    env.git.git(dir, args).unwrap()
}

/// Pushes a directory as the only content of `repo`'s main branch.
pub(crate) fn push_dir(env: &TestEnv, repo: &str, source: &Path, target: &str) {
    env.git.create_repo(repo).unwrap();
    let work = tempfile::tempdir().unwrap();
    git(env, work.path(), &["init", "-q", "-b", "main"]);
    let to = work.path().join(target);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(source).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    git(env, work.path(), &["add", "."]);
    git(env, work.path(), &["commit", "-q", "-m", "app"]);
    git(env, work.path(), &["push", "-q", &env.git.ssh_url(repo), "main"]);
}

/// Installs the layout into `env`'s cluster from repo `fleet`, path clusters/dev.
pub(crate) fn install(env: &TestEnv, components: &Path) {
    let run = install_with(env, components, &[]);
    assert_eq!(run.code, Some(0), "install: {}\n{}", run.stdout, run.stderr);
}

/// `install` from repo `fleet`, path clusters/dev, with `extra` flags.
pub(crate) fn install_with(env: &TestEnv, components: &Path, extra: &[&str]) -> Run {
    let url = env.git.ssh_url("fleet");
    Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--url", &url, "--path", "clusters/dev", "--cluster-name", "dev", "--timeout", "3m"])
            .args(extra)
            .arg("--components-file")
            .arg(components)
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .arg("--known-hosts-file")
            .arg(&env.git.known_hosts)
            .env("KUBECONFIG", &env.kubeconfig),
    )
}

/// Mutating requests kubectl-gitops sent, from the audit log.
fn our_mutations(env: &TestEnv) -> usize {
    env.our_requests().unwrap().iter().filter(|request| request.mutates()).count()
}

fn list(env: &TestEnv) -> serde_json::Value {
    let run = app(env, &env.kubeconfig, &["list", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    gitops_e2e::schema::document("AppList", &run.stdout)["items"].clone()
}

fn row(list: &serde_json::Value, name: &str) -> serde_json::Value {
    list.as_array().unwrap().iter().find(|row| row["name"] == name).cloned().unwrap_or_default()
}

/// The greeting the Helm app `greeter`'s ConfigMap holds now.
fn greeting(env: &TestEnv) -> String {
    let all = env.kubectl_ok(&["get", "configmaps", "-A", "-o", "json"]).unwrap();
    let all: serde_json::Value = serde_json::from_str(&all).unwrap();
    let found = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["metadata"]["name"].as_str().is_some_and(|name| name.ends_with("greeter-greeting")));
    found.map(|item| item["data"]["greeting"].as_str().unwrap_or_default().to_string()).unwrap_or_default()
}

/// An app that follows a tag (the OCI artifact `web`) rolled back through the config repo: tag v2
/// pushed and the app moved to it, then `app rollback web` puts tag v1 back in its definition.
fn tag_rollback(env: &TestEnv, artifact: &Path, oci_url: &str) {
    let shipped = ["-n", "default", "get", "configmap", "from-oci", "-o", "jsonpath={.data.shipped}"];
    let v1_config = env.git.head("fleet");
    std::fs::write(
        artifact.join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-oci\ndata:\n  shipped: \"v2\"\n",
    )
    .unwrap();
    env.registry
        .push_artifact("manifests/web", "v2", artifact, "v2@sha1:0000000000000000000000000000000000000002")
        .unwrap();
    let add = ["add", "web", "--url", oci_url, "--tag", "v2", "--insecure", "--update", "--wait", "--timeout", "3m"];
    let moved = app(env, &env.kubeconfig, &add);
    assert_eq!(moved.code, Some(0), "{}", moved.render());
    assert_eq!(env.kubectl_ok(&shipped).unwrap(), "v2");
    let rolled = app(env, &env.kubeconfig, &["rollback", "web", "--wait", "--timeout", "3m", "-o", "json"]);
    assert_eq!(rolled.code, Some(0), "{}", rolled.render());
    let rolled = gitops_e2e::schema::document("Rollback", &rolled.stdout);
    assert_eq!(rolled["to"], v1_config.as_str(), "{rolled:#}");
    assert_eq!(rolled["files"], serde_json::json!(["update apps/web/source.yaml"]), "{rolled:#}");
    assert_eq!(env.kubectl_ok(&shipped).unwrap(), "yes", "tag v1's ConfigMap is back once --wait returns");
}

/// A HelmRelease app rolled back through the config repo: its values changed there (a second
/// Helm release), then `app rollback greeter` restores its files as the commit that asked for
/// the first release left them, in one commit Flux applies, waited for until it is Ready.
fn helm_rollback(env: &TestEnv, values: &Path) {
    assert_eq!(greeting(env), "hello from git");
    let first_config = env.git.head("fleet");
    std::fs::write(values, "greeting: hello again\n").unwrap();
    let add = ["add", "greeter", "--url", &env.helm.url, "--chart", "hello", "--values", values.to_str().unwrap()];
    let changed = app(env, &env.kubeconfig, &[&add[..], &["--update", "--wait", "--timeout", "5m"]].concat());
    assert_eq!(changed.code, Some(0), "{}", changed.render());
    assert_eq!(greeting(env), "hello again");
    let planned = app(env, &env.kubeconfig, &["rollback", "greeter", "--dry-run", "-o", "json"]);
    assert_eq!(planned.code, Some(0), "{}", planned.render());
    let planned = gitops_e2e::schema::document("Rollback", &planned.stdout);
    assert_eq!(planned["to"], first_config.as_str(), "the commit that asked for the first release: {planned:#}");
    assert_eq!(planned["path"], "apps/greeter, clusters/dev/apps/greeter", "{planned:#}");
    let values_file = format!("update apps/greeter/values/{}", values.file_name().unwrap().to_str().unwrap());
    assert_eq!(planned["files"], serde_json::json!([values_file]), "only the values moved: {planned:#}");
    // And what the cluster would get: the config repo with the values restored, compared as
    // `diff` compares it, the release rendered with them.
    let greeter = planned["configPreview"]["kustomizations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|kustomization| kustomization["helmReleases"].as_array().cloned().unwrap_or_default())
        .find(|release| release["name"] == "greeter")
        .unwrap_or_else(|| panic!("the preview renders greeter: {planned:#}"));
    let changed: Vec<&str> = greeter["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|object| object["action"] == "changed")
        .filter_map(|object| object["kind"].as_str())
        .collect();
    assert!(changed.contains(&"ConfigMap"), "the greeting's ConfigMap changes back: {greeter:#}");
    let rolled = app(env, &env.kubeconfig, &["rollback", "greeter", "--wait", "--timeout", "5m"]);
    assert_eq!(rolled.code, Some(0), "{}", rolled.render());
    assert!(
        rolled.stdout.starts_with(&format!("rolled back flux-system/greeter to {}", &first_config[..12])),
        "{}",
        rolled.stdout
    );
    assert_eq!(greeting(env), "hello from git", "--wait returned once the first release's values were back");
    let clone = tempfile::tempdir().unwrap();
    git(env, clone.path(), &["clone", "-q", &env.git.ssh_url("fleet"), "."]);
    let message = git(env, clone.path(), &["log", "-1", "--format=%B"]);
    assert!(message.contains("which asked for chart 0.1.0 (Helm release 1)"), "{message}");
    // `app history` marks Helm release 3, the first one's values again, as a rollback.
    let history = Run::of(
        Command::new(binaries::path("kubectl-gitops-app"))
            .args(["history", "greeter", "--no-git", "-o", "json"])
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(history.code, Some(0), "{}", history.render());
    let history = gitops_e2e::schema::document("AppHistory", &history.stdout);
    let newest = history["deployments"].as_array().unwrap().last().unwrap();
    assert_eq!((newest["release"].as_i64(), newest["rollback"].as_bool()), (Some(3), Some(true)), "{history:#}");
}

#[test]
#[cfg_attr(shared_fixtures_absent, ignore = "needs ../shared/fixtures beside the checkout")]
fn kustomize_helm_and_oci_apps_deploy_list_suspend_and_get_pruned() {
    let (components, podinfo) = (flux_release::components(), fixtures::shared("apps/podinfo/kustomize"));
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("fleet").unwrap();
    install(env, &components);
    push_dir(env, "podinfo", &podinfo, "kustomize");
    env.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    let podinfo_url = env.git.ssh_url("podinfo");
    // Flux pulls the app's repo with the deploy key install put in the flux-system Secret.
    let add_podinfo = ["add", "podinfo", "--url", &podinfo_url, "--path", "./kustomize", "--secret-ref", "flux-system"];

    // --dry-run: the plan and the diff; nothing pushed, nothing written to the cluster.
    let head = env.git.head("fleet");
    let writes = our_mutations(env);
    let dry = app(env, &env.kubeconfig, &[&add_podinfo[..], &["--dry-run"]].concat());
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert!(
        dry.stdout.starts_with(
            "Plan:\n  1. commit 5 file change(s) (\"Add app podinfo (kustomize) to clusters/dev\") and push to main of "
        ),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains("--- /dev/null\n+++ b/apps/podinfo/source.yaml\n"), "{}", dry.stdout);
    assert!(dry.stdout.contains("+  - podinfo\n") || dry.stdout.contains("+- podinfo\n"), "{}", dry.stdout);
    // The same plan as a Change document, for a script.
    let planned = app(env, &env.kubeconfig, &[&add_podinfo[..], &["--dry-run", "-o", "json"]].concat());
    assert_eq!(planned.code, Some(0), "{}", planned.stderr);
    let planned = gitops_e2e::schema::document("Change", &planned.stdout);
    assert_eq!((planned["verb"].as_str(), planned["dryRun"].as_bool()), (Some("add"), Some(true)), "{planned:#}");
    assert_eq!(planned["done"], serde_json::Value::Null, "{planned:#}");
    let files: Vec<&str> =
        planned["plan"]["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert!(files.contains(&"apps/podinfo/source.yaml"), "{planned:#}");
    assert_eq!(env.git.head("fleet"), head, "--dry-run pushed nothing");
    assert_eq!(our_mutations(env), writes, "--dry-run wrote nothing to the cluster");
    // With --preview, also what it would do to the cluster, as `kubectl gitops diff` shows it:
    // the apps layer would create the app's source and Kustomization. Still nothing written:
    // the API server's dry runs are the only mutating requests, and each says so.
    let before = env.our_requests().unwrap().len();
    let previewed = Run::of(
        Command::new(binaries::path("kubectl-gitops-app"))
            .args(add_podinfo)
            .args(["--dry-run", "--preview", "--private-key-file"])
            .arg(&env.git.client_key)
            .env("KUBECONFIG", &env.kubeconfig)
            .env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli()),
    );
    assert_eq!(previewed.code, Some(0), "{}", previewed.render());
    let (plan, preview) = previewed.stdout.split_once("\nComparing the plan on top of main of ").unwrap();
    assert!(plan.starts_with("Plan:\n"), "{}", previewed.stdout);
    for added in ["GitRepository/flux-system/podinfo", "Kustomization/flux-system/podinfo"] {
        assert!(preview.contains(&format!("+++ after/{added}\n")), "{added}: {preview}");
    }
    let written: Vec<String> = env.our_requests().unwrap()[before..]
        .iter()
        .filter(|request| request.mutates() && !request.uri.contains("dryRun=All"))
        .map(|request| format!("{} {}", request.verb, request.uri))
        .collect();
    assert_eq!(written, Vec::<String>::new());
    assert_eq!(env.git.head("fleet"), head, "--dry-run --preview pushed nothing");
    let without = app(env, &env.kubeconfig, &[&add_podinfo[..], &["--preview"]].concat());
    assert_eq!(without.code, Some(2), "{}", without.render());
    assert!(without.stderr.contains("--dry-run"), "--preview needs --dry-run: {}", without.stderr);

    // The kustomize app reaches Ready at the pushed commit.
    let added = app(env, &env.kubeconfig, &[&add_podinfo[..], &["--wait", "--timeout", "3m"]].concat());
    assert_eq!(added.code, Some(0), "stdout: {}\nstderr: {}", added.stdout, added.stderr);
    let head = env.git.head("fleet");
    assert_eq!(added.stdout, format!("app podinfo added at {}\n", &head[..12]));
    env.kubectl_ok(&["-n", "default", "get", "deployment", "podinfo"]).unwrap();
    // Its history: the deployment, the source commit behind it, and the config repo commit
    // that added it (both read with the cluster's own deploy key).
    let history = Run::of(
        Command::new(binaries::path("kubectl-gitops-app"))
            .args(["history", "podinfo", "-o", "json"])
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(history.code, Some(0), "{}", history.stderr);
    assert!(!history.stderr.contains("warning"), "{}", history.stderr);
    let history = gitops_e2e::schema::document("AppHistory", &history.stdout);
    let deployment = &history["deployments"][0];
    assert_eq!(deployment["commit"]["subject"], "app", "{history:#}");
    let config_changes = deployment["configChanges"].to_string();
    assert!(config_changes.contains(&head) && config_changes.contains("Add app podinfo"), "{history:#}");
    // metrics dora counts the apps, not the Kustomizations that apply the config repo (#58): the
    // sync and the layers have deployment histories too, and were counted as apps.
    let dora = Run::of(
        Command::new(binaries::path("kubectl-gitops-metrics"))
            .args(["dora", "-A", "-o", "json"])
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(dora.code, Some(0), "{}", dora.render());
    let dora = gitops_e2e::schema::document("DoraMetrics", &dora.stdout);
    let counted: Vec<(&str, &str)> = dora["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|app| (app["namespace"].as_str().unwrap(), app["name"].as_str().unwrap()))
        .collect();
    assert!(counted.contains(&("flux-system", "podinfo")), "{dora:#}");
    let layers = |(_, name): &&(&str, &str)| gitops_shared::flux::bootstrap::applies_the_config_repo(name);
    assert_eq!(counted.iter().filter(layers).count(), 0, "{dora:#}");
    // --wait watches (the engine of `status --wait`) instead of reading the objects every second.
    let watched: Vec<String> = env
        .our_requests()
        .unwrap()
        .into_iter()
        .filter(|request| request.verb == "watch" && request.resource == "kustomizations")
        .map(|request| request.uri)
        .collect();
    for name in ["flux-system", "podinfo"] {
        assert!(
            watched.iter().any(|uri| uri.contains(&format!("fieldSelector=metadata.name%3D{name}"))),
            "no watch of Kustomization {name}: {watched:?}"
        );
    }

    // The same add again is a no-op; a different one needs --update.
    let again = app(env, &env.kubeconfig, &add_podinfo);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(again.stdout.contains("already in the config repo"), "{}", again.stdout);
    assert_eq!(env.git.head("fleet"), head, "no new commit");
    let changed = app(env, &env.kubeconfig, &[&add_podinfo[..], &["--interval", "2m"]].concat());
    assert_eq!(changed.code, Some(2), "{}", changed.stderr);
    assert!(
        changed.stderr.contains("already exists in the config repo with a different definition"),
        "{}",
        changed.stderr
    );
    assert!(changed.stderr.contains("hint: pass --update"), "{}", changed.stderr);
    assert_eq!(env.git.head("fleet"), head, "a refused add commits nothing");
    let updated = app(
        env,
        &env.kubeconfig,
        &[&add_podinfo[..], &["--interval", "2m", "--update", "--wait", "--timeout", "3m"]].concat(),
    );
    assert_eq!(updated.code, Some(0), "{}", updated.stderr);
    assert_ne!(env.git.head("fleet"), head, "--update commits the new definition");
    let interval = ["-n", "flux-system", "get", "kustomization", "podinfo", "-o=jsonpath={.spec.interval}"];
    assert_eq!(env.kubectl_ok(&interval).unwrap(), "2m0s", "--wait returned once Flux applied the update");

    // A Helm app from the chart repository, with values copied into the repo.
    let values = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(values.path(), "greeting: hello from git\n").unwrap();
    let hello = app(
        env,
        &env.kubeconfig,
        &["add", "hello", "--url", &env.helm.url, "--chart", "hello", "--chart-version", "0.1.0"],
    );
    assert_eq!(hello.code, Some(0), "stdout: {}\nstderr: {}", hello.stdout, hello.stderr);
    let helm = app(
        env,
        &env.kubeconfig,
        &[
            "add",
            "greeter",
            "--url",
            &env.helm.url,
            "--chart",
            "hello",
            "--values",
            values.path().to_str().unwrap(),
            "--wait",
            // helm-controller's install waits for the release's workloads, with Flux's own 5m
            // limit: on a loaded machine that took over 3 minutes once.
            "--timeout",
            "5m",
        ],
    );
    assert_eq!(helm.code, Some(0), "stdout: {}\nstderr: {}", helm.stdout, helm.stderr);
    helm_rollback(env, values.path());

    // An OCI artifact of manifests, from the plain-HTTP registry.
    let artifact = tempfile::tempdir().unwrap();
    std::fs::write(
        artifact.path().join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-oci\ndata:\n  shipped: \"yes\"\n",
    )
    .unwrap();
    env.registry
        .push_artifact("manifests/web", "v1", artifact.path(), "v1@sha1:0000000000000000000000000000000000000001")
        .unwrap();
    let oci_url = format!("oci://{}/manifests/web", env.registry.address);
    let oci = app(
        env,
        &env.kubeconfig,
        &["add", "web", "--url", &oci_url, "--tag", "v1", "--insecure", "--wait", "--timeout", "3m"],
    );
    assert_eq!(oci.code, Some(0), "stdout: {}\nstderr: {}", oci.stdout, oci.stderr);
    env.kubectl_ok(&["-n", "default", "get", "configmap", "from-oci"]).unwrap();
    tag_rollback(env, artifact.path(), &oci_url);

    let listed = list(env);
    assert_eq!(row(&listed, "web")["type"], "oci");
    assert_eq!(row(&listed, "podinfo")["type"], "kustomize");
    assert_eq!(row(&listed, "podinfo")["state"], "ready");
    assert_eq!(row(&listed, "podinfo")["clusters"], serde_json::json!(["dev"]));
    assert_eq!(row(&listed, "greeter")["type"], "helm");
    assert_eq!(row(&listed, "greeter")["state"], "ready");
    let table = app(env, &env.kubeconfig, &["list"]);
    assert!(table.stdout.starts_with("NAME "), "{}", table.stdout);
    assert!(table.stdout.contains("\ngreeter   helm "), "{}", table.stdout);

    // Suspend is visible in the list, and to a watcher; resume undoes it.
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut watcher = Command::new(binaries::path("kubectl-gitops-app"))
        .args(["status", "podinfo", "--watch", "--no-git"])
        .env("KUBECONFIG", &env.kubeconfig)
        .stdout(out.reopen().unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let printed = |needle: &str| std::fs::read_to_string(out.path()).unwrap().contains(needle);
    let started = std::time::Instant::now();
    while !printed("App flux-system/podinfo (kustomize): ready") {
        assert!(started.elapsed().as_secs() < 30, "the watcher printed the tree");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let suspended = app(env, &env.kubeconfig, &["suspend", "podinfo"]);
    assert_eq!(suspended.code, Some(0), "{}", suspended.stderr);
    while !printed("App flux-system/podinfo (kustomize): suspended") {
        assert!(started.elapsed().as_secs() < 60, "the watcher printed the change without being asked");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    watcher.kill().unwrap();
    watcher.wait().unwrap();
    assert_eq!(row(&list(env), "podinfo")["suspended"], true);
    assert!(suspended.stderr.contains("pass --persist to record it"), "progress goes to stderr: {}", suspended.stderr);
    // Resuming asks for a reconcile in the same patch, as `flux resume` and the UI's Resume do.
    let requested_at = || {
        let jsonpath = "jsonpath={.metadata.annotations.reconcile\\.fluxcd\\.io/requestedAt}";
        env.kubectl_ok(&["-n", "flux-system", "get", "kustomization", "podinfo", "-o", jsonpath]).unwrap()
    };
    let before_resume = requested_at();
    // -q: data and errors only, no progress.
    let resumed = app(env, &env.kubeconfig, &["resume", "podinfo", "-q"]);
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    assert_eq!(resumed.stderr, "", "-q prints no progress");
    assert!(resumed.stdout.starts_with("app podinfo resumed"), "{}", resumed.stdout);
    assert_eq!(row(&list(env), "podinfo")["suspended"], false);
    let after_resume = requested_at();
    assert!(
        after_resume != before_resume && after_resume.trim().parse::<u64>().is_ok(),
        "app resume requested a reconcile: {before_resume:?} -> {after_resume:?}"
    );
    // --persist records it in the cluster's overlay, through git.
    let before = env.git.head("fleet");
    let persisted = app(env, &env.kubeconfig, &["suspend", "podinfo", "--persist"]);
    assert_eq!(persisted.code, Some(0), "{}", persisted.stderr);
    assert!(persisted.stdout.starts_with("app podinfo suspended at "), "{}", persisted.stdout);
    let after = env.git.head("fleet");
    assert_ne!(after, before, "--persist commits");
    let work = tempfile::tempdir().unwrap();
    git(env, work.path(), &["clone", "-q", &env.git.ssh_url("fleet"), "."]);
    let overlay = std::fs::read_to_string(work.path().join("clusters/dev/apps/podinfo/kustomization.yaml")).unwrap();
    assert!(overlay.contains("path: /spec/suspend"), "{overlay}");
    let resumed = app(env, &env.kubeconfig, &["resume", "podinfo", "--persist"]);
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    git(env, work.path(), &["pull", "-q"]);
    let overlay = std::fs::read_to_string(work.path().join("clusters/dev/apps/podinfo/kustomization.yaml")).unwrap();
    assert!(!overlay.contains("/spec/suspend"), "{overlay}");
    assert_eq!(row(&list(env), "podinfo")["suspended"], false);

    // Completion names them, from the cluster, through the hook kubectl runs for `kubectl gitops
    // app remove <TAB>`; and the namespaces for -n.
    let complete = |words: &[&str]| {
        let run = Run::of(
            Command::new(binaries::path("kubectl_complete-gitops")).args(words).env("KUBECONFIG", &env.kubeconfig),
        );
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert_eq!(run.stderr, "", "completion never writes to the terminal");
        run.stdout
    };
    assert_eq!(complete(&["app", "remove", ""]), "greeter\nhello\npodinfo\nweb\n:4\n");
    assert_eq!(complete(&["app", "suspend", "gr"]), "greeter\n:4\n");
    assert!(complete(&["status", "-n", "flux-"]).starts_with("flux-system\n"));
    let unreachable = binaries::unreachable_kubeconfig(work.path());
    let nothing = Run::of(
        Command::new(binaries::path("kubectl_complete-gitops"))
            .args(["app", "remove", ""])
            .env("KUBECONFIG", &unreachable),
    );
    assert_eq!((nothing.code, nothing.stdout.as_str(), nothing.stderr.as_str()), (Some(0), ":4\n", ""));

    // Remove: Flux prunes the app and what it deployed.
    for name in ["podinfo", "greeter", "hello"] {
        let removed = app(env, &env.kubeconfig, &["remove", name, "--wait", "--timeout", "3m"]);
        assert_eq!(removed.code, Some(0), "{name}: {}\n{}", removed.stdout, removed.stderr);
    }
    // The last one as a script does it: one Change document, what was done and waited for.
    let removed = app(env, &env.kubeconfig, &["remove", "web", "--wait", "--timeout", "3m", "-o", "json"]);
    assert_eq!(removed.code, Some(0), "{}\n{}", removed.stdout, removed.stderr);
    let removed = gitops_e2e::schema::document("Change", &removed.stdout);
    assert_eq!(removed["done"]["commit"], env.git.head("fleet"), "{removed:#}");
    assert_eq!(removed["waited"]["ready"], false, "it waited for the app to be gone: {removed:#}");
    let gone = env.kubectl(&["-n", "default", "get", "deployment", "podinfo"]).unwrap();
    assert!(!gone.status.success(), "Flux pruned the podinfo Deployment");
    assert_eq!(list(env), serde_json::json!([]));
}

/// Repo `fleet` with the layout `install` writes for each cluster (`clusters/<name>/gitops.yaml`
/// and an empty app list), without a cluster behind it; returns a clone of it.
fn seed_layout(env: &TestEnv, clusters: &[&str], url: &str) -> tempfile::TempDir {
    env.git.create_repo("fleet").unwrap();
    let work = tempfile::tempdir().unwrap();
    git(env, work.path(), &["init", "-q", "-b", "main"]);
    for cluster in clusters {
        let dir = work.path().join(format!("clusters/{cluster}"));
        std::fs::create_dir_all(dir.join("apps")).unwrap();
        std::fs::write(dir.join("apps/kustomization.yaml"), bootstrap::apps_kustomization()).unwrap();
        let record = InstallRecord {
            url: url.to_string(),
            branch: "main".into(),
            path: format!("clusters/{cluster}"),
            cluster_name: cluster.to_string(),
            flux_version: "v2.9.3".into(),
            components: vec!["source-controller".into()],
            provider: None,
            repository: None,
            hostname: None,
            platform: None,
        };
        std::fs::write(dir.join("gitops.yaml"), bootstrap::record_manifest(&record, "flux-system").unwrap()).unwrap();
    }
    git(env, work.path(), &["add", "."]);
    git(env, work.path(), &["commit", "-q", "-m", "layout"]);
    git(env, work.path(), &["push", "-q", &env.git.ssh_url("fleet"), "main"]);
    work
}

/// A repository `name` whose main branch's `deploy/` holds one ConfigMap named `name`.
pub(crate) fn configmap_repo(env: &TestEnv, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let configmap = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n");
    std::fs::write(dir.path().join("configmap.yaml"), configmap).unwrap();
    push_dir(env, name, dir.path(), "deploy");
}
