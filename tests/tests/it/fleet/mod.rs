//! `kubectl gitops fleet status` against two live clusters of the real test environment (each
//! with its own API server and Flux controllers) that follow one config repo, and a third context
//! whose server accepts connections and never answers.
//!
//! The seed's scenario: the same Helm chart added to `dev` and `uat` with their own values (dev on
//! sqlite, uat on postgresql), both deployed and shown side by side; then the chart moved on in
//! dev's directory only (a patch in its overlay, by hand), which the matrix marks as differing;
//! then promoted from dev to uat by a pull request on Gitea (the config repo's forge), opened from
//! the UI's Fleet page (`ui --context dev,uat`, in a real headless Chromium), validated by `pr
//! show`, merged and followed to Ready by `promote --pr --merge --wait`, which the open Fleet page
//! shows without a reload.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

mod assistant;
mod promote;

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::browser::Browser;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::gitea::Gitea;
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::ui::Ui;
use gitops_e2e::{binaries, flux_release};
use gitops_shared::provider::Kind;
use serde_json::{Value, json};

use self::assistant::an_assistant_finds_why_web_fails_in_dev_and_fixes_it_through_a_pull_request;
use self::promote::promote_a_git_tag;

/// The config repo, on Gitea.
const REPO: &str = "acme/fleet";

/// Wires `command` to `gitea` (its token and API) and to `kubeconfig`, its HOME the directory
/// returned (kept while the command runs), not the real one.
fn wire(command: &mut Command, gitea: &Gitea, kubeconfig: &Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    // The fleet's kubeconfig has a config file of its own, which no install bound: the operator's
    // side names the config repo's and the API's hosts, as a CI job does (#56).
    let hosts = format!("127.0.0.1:{},{}", gitea.ssh_port, gitea.url.trim_start_matches("http://"));
    command
        .env("KUBECTL_GITOPS_ACCEPT_HOSTS", hosts)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home.path())
        .env(Kind::Gitea.token_env(), &gitea.token)
        .env(Kind::Gitea.api_url_env(), gitea.api_url())
        .env_remove(Kind::GitHub.token_env())
        .env_remove(Kind::GitLab.token_env())
        .env_remove("SSH_AUTH_SOCK")
        .env("NO_COLOR", "1");
    home
}

/// Runs `command` wired by [`wire`].
fn wired(mut command: Command, gitea: &Gitea, kubeconfig: &Path) -> Run {
    let _home = wire(&mut command, gitea, kubeconfig);
    Run::of(&mut command)
}

/// `kubectl gitops ui --context dev,uat --allow-writes` with the config repo's keys, and a
/// headless Chromium on its URL (the session cookie taken).
fn fleet_ui(kubeconfig: &Path, gitea: &Gitea) -> (Ui, Browser, tempfile::TempDir) {
    let mut command = Command::new(binaries::path("kubectl-gitops-ui"));
    command.args(["--context", "dev,uat", "--allow-writes"]).args(keys(gitea));
    // The plan's preview of the target cluster builds with the environment's flux CLI and
    // renders HelmReleases with its helm.
    command.env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli());
    command.env("KUBECTL_GITOPS_HELM_BIN", gitops_e2e::tools::path("helm"));
    let home = wire(&mut command, gitea, kubeconfig);
    let ui = Ui::launch(command);
    let browser = Browser::start();
    browser.goto(&format!("{}/?token={}", ui.origin(), ui.token));
    (ui, browser, home)
}

/// The Fleet page's row of app mccp.
const MCCP_ROW: &str = "#fleet tr[data-app=\"flux-system/mccp\"]";

/// `--private-key-file … --known-hosts-file …`: Gitea's admin's key, and Gitea's host key.
fn keys(gitea: &Gitea) -> [&str; 4] {
    [
        "--private-key-file",
        gitea.client_key.to_str().unwrap(),
        "--known-hosts-file",
        gitea.known_hosts.to_str().unwrap(),
    ]
}

/// `install --provider gitea` into `env`'s cluster as cluster `name`, in repo acme/fleet (made by
/// the first). Without a key of ours: install makes Flux a deploy key for each cluster.
fn install(env: &TestEnv, gitea: &Gitea, name: &str) {
    let host = gitea.url.trim_start_matches("http://").to_string();
    let mut command = Command::new(binaries::path("kubectl-gitops-install"));
    command
        .args(["--provider", "gitea", "--hostname", &host, "--owner", "acme", "--repository", "fleet"])
        .args(["--path", &format!("clusters/{name}"), "--cluster-name", name])
        .args(["--timeout", "3m", "--known-hosts-file", gitea.known_hosts.to_str().unwrap()])
        .arg("--components-file")
        .arg(flux_release::components());
    let run = wired(command, gitea, &env.kubeconfig);
    assert_eq!(run.code, Some(0), "install {name}: {}", run.render());
}

/// `app add mccp` (the fixture chart `hello` at 0.1.0 from `charts`' chart server) to cluster
/// `name`, with its own values. The version is pinned: a cluster moves to another only when its
/// directory says so (unpinned, uat would take 0.2.0 by itself as soon as its chart index has it).
fn add(env: &TestEnv, charts: &TestEnv, gitea: &Gitea, name: &str, values: &Path) {
    let mut command = Command::new(binaries::path("kubectl-gitops-app"));
    command
        .args(["add", "mccp", "--url", &charts.helm.url, "--chart", "hello", "--chart-version", "0.1.0"])
        .args(["--cluster-name", name])
        .args(keys(gitea))
        .arg("--values")
        .arg(values);
    let run = wired(command, gitea, &env.kubeconfig);
    assert_eq!(run.code, Some(0), "add mccp to {name}: {}", run.render());
}

/// One kubeconfig with a context per cluster (`dev`, `uat`), and `gone`, whose server is
/// `silent`: it accepts connections and never answers.
fn fleet_kubeconfig(dir: &Path, clusters: &[(&str, &TestEnv)], silent: u16) -> std::path::PathBuf {
    let mut merged =
        serde_json::json!({"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []});
    for (name, env) in clusters.iter().copied().chain([("gone", clusters[0].1)]) {
        let config: Value = gitops_shared::yaml::from_str(&std::fs::read_to_string(&env.kubeconfig).unwrap()).unwrap();
        let mut cluster = config["clusters"][0]["cluster"].clone();
        if name == "gone" {
            cluster["server"] = format!("https://127.0.0.1:{silent}").into();
        }
        merged["clusters"].as_array_mut().unwrap().push(serde_json::json!({"name": name, "cluster": cluster}));
        merged["users"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"name": name, "user": config["users"][0]["user"]}));
        let context = serde_json::json!({"name": name, "context": {"cluster": name, "user": name}});
        merged["contexts"].as_array_mut().unwrap().push(context);
    }
    merged["current-context"] = "dev".into();
    let path = dir.join("kubeconfig");
    std::fs::write(&path, gitops_shared::yaml::to_string(&merged).unwrap()).unwrap();
    path
}

/// `kubectl gitops fleet status ARGS` with the fleet's kubeconfig and the config repo's keys.
fn fleet(kubeconfig: &Path, gitea: &Gitea, args: &[&str]) -> Run {
    let mut command = Command::new(binaries::path("kubectl-gitops-fleet"));
    command.arg("status").args(args).args(keys(gitea));
    wired(command, gitea, kubeconfig)
}

/// `fleet status ARGS -o json` once app `mccp` is ready in every cluster that answers, and no
/// `--rollout` is still progressing: a HelmRelease Ready after an upgrade can still have its
/// HelmChart catching up for a moment (`status` then says failing, as it should), and a layer
/// waits a few seconds for the one it depends on, so the test asks again until it settles.
fn settled(kubeconfig: &Path, gitea: &Gitea, args: &[&str]) -> Run {
    let args = [args, &["-o", "json"]].concat();
    let started = Instant::now();
    loop {
        let run = fleet(kubeconfig, gitea, &args);
        let document: Value = serde_json::from_str(&run.stdout).unwrap_or_default();
        let ready = document["apps"][0]["cells"]
            .as_array()
            .is_some_and(|cells| cells.iter().all(|cell| matches!(cell["state"].as_str(), Some("ready" | "unknown"))))
            && document["clusters"]
                .as_array()
                .is_some_and(|clusters| clusters.iter().all(|cluster| cluster["rollout"] != "progressing"));
        if ready || started.elapsed() > Duration::from_secs(60) {
            return run;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Has `env`'s HelmRepository `mccp` fetch its index now, and waits until it has.
fn index_refreshed(env: &TestEnv) {
    env.request_reconcile("flux-system", &["helmrepository/mccp"]).unwrap();
    let repository = ["-n", "flux-system", "helmrepository", "mccp"];
    let requested = env.jsonpath(&repository, "{.metadata.annotations.reconcile\\.fluxcd\\.io/requestedAt}").unwrap();
    env.wait_for_jsonpath(&repository, "{.status.lastHandledReconcileAt}", &requested, Duration::from_secs(60))
        .unwrap();
}

/// The cells of app `name` in a FleetStatus document: (state, version) per cluster.
fn cells(status: &Value, name: &str) -> Vec<(String, String)> {
    let app = status["apps"].as_array().unwrap().iter().find(|app| app["name"] == name).unwrap();
    app["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| (cell["state"].as_str().unwrap().to_string(), cell["version"].as_str().unwrap_or("").to_string()))
        .collect()
}

#[test]
fn two_live_clusters_of_one_config_repo_side_by_side_and_an_unreachable_third() {
    // The two clusters started side by side.
    let start = || {
        let env = TestEnv::start(Options { flux: false }).unwrap();
        env.run_flux_once_installed();
        env
    };
    let (dev, uat) = std::thread::scope(|scope| {
        let uat = scope.spawn(start);
        (start(), uat.join().unwrap())
    });
    // The config repo on a real Gitea (beside dev), where promotions open their pull requests.
    let gitea = dev.start_gitea().unwrap();
    gitea.api("POST", "/orgs", Some(&json!({ "username": "acme" }))).unwrap();
    dev.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    // The team made the (empty, private) repository; both clusters are installed into it at once,
    // each following acme/fleet from its own directory with its own deploy key. The two pushes
    // race: the later one is refused and made again on the new head (fleet.yaml keeps the
    // other's entry), and each install's wait accepts a later commit that holds its own (a sync
    // can fetch both at once).
    gitea.api("POST", "/orgs/acme/repos", Some(&json!({ "name": "fleet", "private": true }))).unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| install(&uat, &gitea, "uat"));
        install(&dev, &gitea, "dev");
    });
    let deploy_keys = gitea.api("GET", &format!("/repos/{REPO}/keys"), None).unwrap();
    assert_eq!(deploy_keys.as_array().unwrap().len(), 2, "a deploy key per cluster: {deploy_keys}");
    let work = tempfile::tempdir().unwrap();

    // Each install added its cluster to the fleet file, with the context that reached it (both
    // environments' kubeconfigs call theirs `testenv`), in the order they landed; people edit it:
    // the contexts of their own kubeconfig, the order, and a third cluster, prod, whose server
    // never answers.
    let clone = work.path().join("fleet");
    gitea.git(work.path(), &["clone", "-q", &gitea.ssh_url(REPO), "fleet"]).unwrap();
    let written: Value =
        gitops_shared::yaml::from_str(&std::fs::read_to_string(clone.join("fleet.yaml")).unwrap()).unwrap();
    let mut entries: Vec<String> = written["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| format!("{} {} {} {}", entry["name"], entry["path"], entry["context"], entry["environment"]))
        .collect();
    entries.sort();
    assert_eq!(
        entries,
        [r#""dev" "clusters/dev" "testenv" "dev""#, r#""uat" "clusters/uat" "testenv" "uat""#],
        "{written:#}"
    );
    let edited = "apiVersion: gitops.kubectl.io/v1alpha1\nclusters:\n\
         - context: dev\n  environment: dev\n  name: dev\n  order: 1\n  path: clusters/dev\n\
         - context: uat\n  environment: uat\n  name: uat\n  order: 2\n  path: clusters/uat\n\
         - context: gone\n  environment: production\n  name: prod\n  order: 3\n  path: clusters/prod\nkind: Fleet\n";
    std::fs::write(clone.join("fleet.yaml"), edited).unwrap();
    gitea.git(&clone, &["commit", "-q", "-am", "The fleet: our contexts, and prod"]).unwrap();
    gitea.git(&clone, &["push", "-q", "origin", "main"]).unwrap();
    let values = |name: &str, text: &str| {
        let path = work.path().join(format!("{name}.yaml"));
        std::fs::write(&path, text).unwrap();
        path
    };
    let dev_values = values("dev", "greeting: hello from dev\ndatabase:\n  type: sqlite\n");
    let uat_values = values("uat", "greeting: hello from uat\ndatabase:\n  type: postgresql\n  host: db.uat\n");
    // Both at once (two pushes to one repo: the change engine plans again on a refused push),
    // then both clusters asked to fetch and waited for.
    std::thread::scope(|scope| {
        scope.spawn(|| add(&uat, &dev, &gitea, "uat", &uat_values));
        add(&dev, &dev, &gitea, "dev", &dev_values);
    });
    let head = gitea.head(REPO, "main").unwrap();
    for env in [&dev, &uat] {
        env.request_reconcile("flux-system", &["gitrepository/flux-system", "kustomization/flux-system"]).unwrap();
        let applied = "{.status.lastAppliedRevision}";
        let sync = ["-n", "flux-system", "kustomization", "flux-system"];
        env.wait_for_jsonpath(&sync, applied, &format!("main@sha1:{head}"), Duration::from_secs(120)).unwrap();
        env.request_reconcile("flux-system", &["kustomization/apps"]).unwrap();
    }
    for env in [&dev, &uat] {
        env.wait_ready(&["kustomization/apps", "helmrelease/mccp"], Duration::from_secs(180)).unwrap();
    }
    // Each cluster runs the chart with its own values.
    for (env, greeting, database) in [(&dev, "hello from dev", "sqlite"), (&uat, "hello from uat", "postgresql")] {
        let shown = env.kubectl_ok(&["get", "configmaps", "-A", "-o", "json"]).unwrap();
        assert!(shown.contains(&format!("\"greeting\": \"{greeting}\"")), "{greeting}: {shown}");
        assert!(shown.contains(&format!("type: {database}")), "{database}: {shown}");
    }

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || listener.incoming().take(32).filter_map(Result::ok).collect::<Vec<_>>());
    let kubeconfig = fleet_kubeconfig(work.path(), &[("dev", &dev), ("uat", &uat)], silent);

    // dev and uat side by side: the same chart version, each Ready; at the config repo's head.
    let both = settled(&kubeconfig, &gitea, &["--context", "dev,uat"]);
    assert_eq!(both.code, Some(0), "{}", both.render());
    let status = gitops_e2e::schema::document("FleetStatus", &both.stdout);
    let ready = |version: &str| ("ready".to_string(), version.to_string());
    assert_eq!(cells(&status, "mccp"), [ready("0.1.0"), ready("0.1.0")], "{status:#}");
    assert_eq!(status["configHead"], head.as_str(), "{status:#}");
    let names: Vec<&str> = status["clusters"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["dev", "uat"]);
    assert!(status["clusters"].as_array().unwrap().iter().all(|cluster| cluster["behind"] == false), "{status:#}");
    // The same matrix for an assistant: the MCP tool fleet_status, called by the Python SDK, for
    // the contexts the server was started for, and no other.
    let started_for = [&["--context", "dev,uat"][..], &keys(&gitea)].concat();
    let (mut server, _plugins) = crate::mcp::kubectl_gitops_mcp(&kubeconfig, &started_for);
    let _home = wire(&mut server, &gitea, &kubeconfig);
    let asked = crate::mcp::session(
        &server,
        &json!([
            {"tool": "fleet_status", "arguments": {"contexts": ["dev", "uat"]}},
            {"tool": "fleet_status", "arguments": {"contexts": ["dev", "elsewhere"]}},
        ]),
    );
    let refused = &asked["calls"][1];
    assert_eq!(refused["isError"], true, "{refused:#}");
    assert!(refused["text"].as_str().unwrap().contains("not started for the context \"elsewhere\""), "{refused:#}");
    let call = &asked["calls"][0];
    assert_eq!((&call["isError"], &call["schemaErrors"]), (&json!(false), &json!([])), "{call:#}");
    assert_eq!(cells(&call["structured"], "mccp"), [ready("0.1.0"), ready("0.1.0")], "{call:#}");
    assert_eq!(call["structured"]["configHead"], head.as_str(), "{call:#}");
    let table = fleet(&kubeconfig, &gitea, &["--context", "dev,uat"]);
    assert_eq!(table.code, Some(0), "{}", table.render());
    let row = table.stdout.lines().find(|line| line.starts_with("flux-system/mccp ")).unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["flux-system/mccp", "ready", "0.1.0", "ready", "0.1.0", "same"]
    );

    // `status`, `app status` and `app list` take the same list, through the real kubectl: each
    // context answers as it would alone, in the list's order; one that does not answer says why
    // in its own block (or item) and gives the exit code, the others are shown.
    let plugins = binaries::plugin_dir();
    // `kubectl gitops ARGS` through the real kubectl, with the fleet's kubeconfig.
    let kubectl_gitops = |args: &[&str]| {
        let path = format!("{}:{}", plugins.path().display(), std::env::var("PATH").unwrap_or_default());
        let mut command = Command::new(binaries::kubectl());
        command.arg("gitops").args(args).env("PATH", path);
        wired(command, &gitea, &kubeconfig)
    };
    let three = ["--context", "dev,uat,gone", "--request-timeout", "3s"];
    let statuses = kubectl_gitops(&[&["status", "-o", "json"][..], &three].concat());
    assert_eq!(statuses.code, Some(3), "{}", statuses.render());
    let answers = gitops_e2e::schema::document("ContextAnswerList", &statuses.stdout);
    let items = answers["items"].as_array().unwrap();
    let contexts: Vec<(&str, i64)> =
        items.iter().map(|item| (item["context"].as_str().unwrap(), item["exitCode"].as_i64().unwrap())).collect();
    assert_eq!(contexts, [("dev", 0), ("uat", 0), ("gone", 3)], "{answers:#}");
    for item in &items[..2] {
        let status = &item["result"];
        gitops_e2e::schema::validate("Status", status);
        let mccp = status["apps"].as_array().unwrap().iter().find(|app| app["name"] == "mccp").unwrap();
        assert_eq!(mccp["state"], "ready", "{status:#}");
    }
    assert!(items[2]["error"].as_str().unwrap().contains("127.0.0.1"), "{answers:#}");
    let app = kubectl_gitops(&["app", "status", "mccp", "--context", "dev,uat", "--no-git"]);
    assert_eq!(app.code, Some(0), "{}", app.render());
    let blocks: Vec<&str> = app.stdout.lines().filter(|line| line.starts_with("==> ")).collect();
    assert_eq!(blocks, ["==> context dev <==", "==> context uat <=="], "{}", app.render());
    let listed = kubectl_gitops(&["app", "list", "--context", "uat,dev", "-o", "json"]);
    assert_eq!(listed.code, Some(0), "{}", listed.render());
    let answers = gitops_e2e::schema::document("ContextAnswerList", &listed.stdout);
    for (item, cluster) in answers["items"].as_array().unwrap().iter().zip(["uat", "dev"]) {
        let rows = &item["result"];
        gitops_e2e::schema::validate("AppList", rows);
        let mccp = rows["items"].as_array().unwrap().iter().find(|row| row["name"] == "mccp").unwrap();
        assert_eq!(mccp["clusters"], json!([cluster]), "each context's own install record: {rows:#}");
    }

    // The fleet file's clusters, in its order, prod among them: its column says it did not answer
    // within --timeout, the others are shown, exit 3.
    let started = Instant::now();
    let all = fleet(&kubeconfig, &gitea, &["--timeout", "10s", "-o", "json"]);
    let took = started.elapsed();
    assert_eq!(all.code, Some(3), "{}", all.render());
    assert!(took < Duration::from_secs(30), "{took:?}");
    let status = gitops_e2e::schema::document("FleetStatus", &all.stdout);
    let columns: Vec<(&str, &str)> = status["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cluster| (cluster["name"].as_str().unwrap(), cluster["environment"].as_str().unwrap()))
        .collect();
    assert_eq!(columns, [("dev", "dev"), ("uat", "uat"), ("prod", "production")], "{status:#}");
    let gone = &status["clusters"][2];
    assert_eq!((gone["context"].as_str(), gone["reachable"].as_bool()), (Some("gone"), Some(false)), "{status:#}");
    assert_eq!(gone["error"], "no answer within 10s", "{status:#}");
    assert_eq!(cells(&status, "mccp")[2], ("unknown".to_string(), String::new()));
    assert_eq!(cells(&status, "mccp")[..2], [ready("0.1.0"), ready("0.1.0")]);

    // A new chart version in dev's directory only, as someone edits it by hand: a patch of the
    // shared HelmRelease in dev's overlay. The matrix marks the app as differing, exit 1.
    let chart = work.path().join("hello");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello");
    for file in ["Chart.yaml", "values.yaml", "templates/configmap.yaml", "templates/deployment.yaml"] {
        let text = std::fs::read_to_string(fixture.join(file)).unwrap().replace("version: 0.1.0", "version: 0.2.0");
        std::fs::write(chart.join(file), text).unwrap();
    }
    dev.helm.publish(&chart).unwrap();
    // dev's chart index is fetched again now, not at its interval: it has 0.2.0 before the commit
    // asks for it (else the HelmRelease fails first, and so does the layer that waits on it).
    index_refreshed(&dev);
    gitea.git(&clone, &["pull", "-q", "origin", "main"]).unwrap();
    let overlay = clone.join("clusters/dev/apps/mccp/kustomization.yaml");
    let mut config: Value = gitops_shared::yaml::from_str(&std::fs::read_to_string(&overlay).unwrap()).unwrap();
    config["patches"].as_array_mut().unwrap().push(serde_json::json!({
        "patch": "- op: replace\n  path: /spec/chart/spec/version\n  value: 0.2.0\n",
        "target": {"kind": "HelmRelease", "name": "mccp"},
    }));
    std::fs::write(&overlay, gitops_shared::yaml::to_string(&config).unwrap()).unwrap();
    // uat's sync holds still (its source suspended), so the commit is not there yet.
    let suspend = r#"{"spec":{"suspend":true}}"#;
    uat.kubectl_ok(&["-n", "flux-system", "patch", "gitrepository", "flux-system", "--type", "merge", "-p", suspend])
        .unwrap();
    gitea.git(&clone, &["commit", "-q", "-am", "dev: mccp at chart 0.2.0"]).unwrap();
    gitea.git(&clone, &["push", "-q", "origin", "main"]).unwrap();
    let pushed = gitea.head(REPO, "main").unwrap();
    dev.request_reconcile("flux-system", &["gitrepository/flux-system", "kustomization/flux-system"]).unwrap();
    let sync = ["-n", "flux-system", "kustomization", "flux-system"];
    let at_head = format!("main@sha1:{pushed}");
    dev.wait_for_jsonpath(&sync, "{.status.lastAppliedRevision}", &at_head, Duration::from_secs(120)).unwrap();
    dev.request_reconcile("flux-system", &["kustomization/apps"]).unwrap();
    let release = ["-n", "flux-system", "helmrelease", "mccp"];
    dev.wait_for_jsonpath(&release, "{.status.lastAttemptedRevision}", "0.2.0", Duration::from_secs(180)).unwrap();
    dev.wait_ready(&["helmrelease/mccp"], Duration::from_secs(180)).unwrap();
    // And how far that commit has rolled out: applied in dev, not yet in uat.
    let moved = settled(&kubeconfig, &gitea, &["--context", "dev,uat", "--rollout", &pushed]);
    assert_eq!(moved.code, Some(1), "{}", moved.render());
    let status = gitops_e2e::schema::document("FleetStatus", &moved.stdout);
    assert_eq!(cells(&status, "mccp"), [ready("0.2.0"), ready("0.1.0")], "{status:#}");
    let mccp = status["apps"].as_array().unwrap().iter().find(|app| app["name"] == "mccp").unwrap();
    assert_eq!(mccp["differs"], true, "{status:#}");
    assert_eq!(status["commit"], pushed.as_str());
    let rollout: Vec<&str> =
        status["clusters"].as_array().unwrap().iter().map(|c| c["rollout"].as_str().unwrap()).collect();
    assert_eq!(rollout, ["applied", "notYet"], "{status:#}");
    let short = fleet(&kubeconfig, &gitea, &["--context", "dev,uat", "--rollout", &pushed[..12]]);
    assert_eq!(short.code, Some(2), "{}", short.render());
    assert!(short.stderr.contains("is not a full commit hash"), "{}", short.render());

    // Promoted from dev to uat by a pull request on Gitea: the chart version dev runs and is Ready
    // at, written into uat's overlay; the request records that version, so a reviewer's `pr show`
    // plans exactly it again; merged and followed until uat runs it, the versions are the same.
    let resume = r#"{"spec":{"suspend":false}}"#;
    uat.kubectl_ok(&["-n", "flux-system", "patch", "gitrepository", "flux-system", "--type", "merge", "-p", resume])
        .unwrap();
    index_refreshed(&uat);
    let promote = |extra: &[&str]| {
        kubectl_gitops(&[&["promote", "mccp", "--from", "dev", "--to", "uat"][..], extra, &keys(&gitea)].concat())
    };
    let planned = promote(&["--dry-run"]);
    assert_eq!(planned.code, Some(0), "{}", planned.render());
    for line in ["+++ b/clusters/uat/apps/mccp/kustomization.yaml\n", "value: \"0.2.0\"\n"] {
        assert!(planned.stdout.contains(line), "{line} in {}", planned.render());
    }
    // From production, whose cluster never answers: refused, nothing written.
    let before = gitea.head(REPO, "main").unwrap();
    let refused = kubectl_gitops(
        &[&["promote", "mccp", "--from", "production", "--to", "uat", "--request-timeout", "3s"][..], &keys(&gitea)]
            .concat(),
    );
    assert_eq!(refused.code, Some(3), "{}", refused.render());
    // A version dev does not run: refused, nothing written.
    let other = promote(&["--expect-version", "0.3.0", "--pr"]);
    assert_eq!(other.code, Some(1), "{}", other.render());
    // Its first line, or after the line saying which hosts were bound.
    let error = "error: dev runs chart 0.2.0 of mccp, not 0.3.0\nhint: ";
    assert!(other.stderr.starts_with(error) || other.stderr.contains(&format!("\n{error}")), "{}", other.render());
    assert_eq!(gitea.head(REPO, "main").unwrap(), before, "nothing pushed");
    assert_eq!(gitea.api("GET", &format!("/repos/{REPO}/pulls?state=all"), None).unwrap(), json!([]));
    // The UI over both clusters: the Fleet page's matrix made from each cluster's own watches,
    // the same as `fleet status`; the cluster switcher; and the promotion button (--allow-writes)
    // that shows the plan and what uat would get, then opens the pull request.
    let (ui, browser, home) = fleet_ui(&kubeconfig, &gitea);
    browser.goto(&format!("{}/fleet", ui.origin()));
    let (row, _) = browser.wait_for_text(MCCP_ROW, Duration::from_secs(60), |row| {
        row.starts_with("flux-system/mccp\tready 0.2.0\tready 0.1.0\tdiffer")
    });
    let chosen =
        |select: &str| browser.eval(&format!("document.querySelector('{MCCP_ROW} select[name={select}]').value"));
    assert_eq!((chosen("from"), chosen("to")), (json!("dev"), json!("uat")), "the Promote form: {row}");
    let cookie = browser.cookie(&ui.cookie_name());
    let api = ui.get(&cookie, "/api/v1/fleet");
    assert_eq!(api.status, 200, "{}", api.body);
    let status = gitops_e2e::schema::document("FleetStatus", &api.body);
    assert_eq!(cells(&status, "mccp"), [ready("0.2.0"), ready("0.1.0")], "{status:#}");
    let names: Vec<&str> = status["clusters"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["dev", "uat"], "each cluster's name from its install record: {status:#}");
    // The config repo as `fleet status` reads it: its head, and fleet.yaml's environments.
    assert_eq!(status["configHead"], before.as_str(), "{status:#}");
    let environments: Vec<&str> =
        status["clusters"].as_array().unwrap().iter().map(|c| c["environment"].as_str().unwrap_or("-")).collect();
    assert_eq!(environments, ["dev", "uat"], "{status:#}");
    browser.look("fleet");
    // The switcher: uat's Apps page, then remembered by the next page.
    browser.click("form.switcher option[value=\"uat\"]");
    browser.click("form.switcher button");
    browser.wait_for_text("h1", Duration::from_secs(20), |title| title == "Apps in uat");
    assert_eq!(browser.count("#apps tr[data-app=\"flux-system/mccp\"]"), 1);
    browser.goto(&format!("{}/cluster", ui.origin()));
    assert_eq!(browser.text("h1").as_deref(), Some("Cluster uat"));
    // Promote: the plan first; nothing is pushed.
    browser.goto(&format!("{}/fleet", ui.origin()));
    browser.click(&format!("{MCCP_ROW} form.promote button"));
    let (plan, _) = browser.wait_for_text("pre.plan", Duration::from_secs(120), |plan| plan.contains("+++ b/"));
    for line in ["+++ b/clusters/uat/apps/mccp/kustomization.yaml\n", "value: \"0.2.0\"\n"] {
        assert!(plan.contains(line), "{line} in {plan}");
    }
    // And what uat would get, asked of uat's own API server: its HelmRelease moved to 0.2.0.
    assert!(plan.contains("\nComparing the plan on top of main of "), "{plan}");
    assert!(!plan.contains("preview failed"), "{plan}");
    let (_, preview) = plan.split_once("\nComparing the plan").unwrap();
    assert!(preview.contains("+++ after/HelmRelease/flux-system/mccp\n"), "{preview}");
    assert!(preview.contains("\n-      version: \"0.1.0\"\n+      version: \"0.2.0\"\n"), "{preview}");
    let release = preview.lines().find(|line| line.contains("HelmRelease flux-system/mccp")).unwrap_or_default();
    assert!(release.contains("hello@0.2.0"), "the chart rendered at 0.2.0: {preview}");
    assert_eq!(gitea.head(REPO, "main").unwrap(), before, "the plan pushed nothing");
    assert_eq!(gitea.api("GET", &format!("/repos/{REPO}/pulls?state=all"), None).unwrap(), json!([]));
    browser.look("fleet-promote-plan");
    // Then the pull request, linked to its page.
    browser.click("main form button[type=\"submit\"]");
    let (opened, _) =
        browser.wait_for_text("pre.plan", Duration::from_secs(120), |text| text.contains("pull request opened"));
    assert_eq!(opened, format!("pull request opened: {}/{REPO}/pulls/1", gitea.url));
    assert_eq!(browser.count("a[href=\"/pulls/1\"]"), 1, "{:?}", browser.text("main"));
    let pull = gitea.api("GET", &format!("/repos/{REPO}/pulls/1"), None).unwrap();
    assert!(pull["head"]["ref"].as_str().unwrap().starts_with("gitops/promote-mccp-"), "{pull}");
    let recorded = "promote mccp --from dev --to uat --expect-version 0.2.0";
    assert!(pull["body"].as_str().unwrap().contains(recorded), "{pull}");
    let shown = kubectl_gitops(&[&["pr", "show", "1"][..], &keys(&gitea)].concat());
    assert_eq!(shown.code, Some(0), "{}", shown.render());
    for check in ["open ", "change ", "request ", "mergeable "] {
        assert!(shown.stdout.contains(&format!("ok    {check}")), "{check}: {}", shown.render());
    }
    assert_eq!(gitea.head(REPO, "main").unwrap(), before, "nothing merged yet");
    browser.goto(&format!("{}/fleet", ui.origin()));
    browser.eval("(window.notReloaded = true)");
    // The same promotion again, with --merge --wait: it finds its request, merges the head it
    // checked, and waits on uat's cluster until the HelmRelease is Ready.
    let promoted = promote(&["--pr", "--merge", "--wait", "--timeout", "3m"]);
    assert_eq!(promoted.code, Some(0), "{}", promoted.render());
    assert!(promoted.stderr.contains("merged #1 into main"), "{}", promoted.render());
    let main = gitea.head(REPO, "main").unwrap();
    let done = format!("app mccp promoted at {}\n", &main[..12]);
    assert!(promoted.stdout.ends_with(&done), "{}", promoted.render());
    assert_eq!(gitea.api("GET", &format!("/repos/{REPO}/pulls/1"), None).unwrap()["merged"], true);
    let release = uat.jsonpath(&["-n", "flux-system", "helmrelease", "mccp"], "{.status.history[0].chartVersion}");
    assert_eq!(release.unwrap(), "0.2.0");
    // The Fleet page open since before the merge shows it without a reload.
    let (row, latency) = browser.wait_for_text(MCCP_ROW, Duration::from_secs(60), |row| row.contains("same"));
    eprintln!("fleet page: uat at 0.2.0 reached the open page {latency:?} after the promotion returned");
    assert!(row.starts_with("flux-system/mccp\tready 0.2.0\tready 0.2.0\tsame"), "{row}");
    assert_eq!(browser.eval("window.notReloaded === true"), json!(true), "the page was reloaded");
    // uat applied the merge, so the page looked at the config repo again: its head is the merge.
    let started = Instant::now();
    loop {
        let status = serde_json::from_str::<serde_json::Value>(&ui.get(&cookie, "/api/v1/fleet").body).unwrap();
        if status["configHead"] == main.as_str() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the head stayed {}", status["configHead"]);
        std::thread::sleep(Duration::from_millis(500));
    }
    let (code, stderr) = ui.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
    drop((browser, home));
    let again = promote(&[]);
    assert_eq!(again.stdout, "uat runs chart 0.2.0 of mccp already; nothing to change\n", "{}", again.render());
    // With --with-values dev's own values file would replace uat's: shown, not done.
    let values = promote(&["--with-values", "--dry-run"]);
    assert_eq!(values.code, Some(0), "{}", values.render());
    for line in [
        "+++ b/clusters/uat/apps/mccp/values/dev.yaml\n",
        "+  type: sqlite\n",
        "--- a/clusters/uat/apps/mccp/values/uat.yaml\n+++ /dev/null\n",
        "valuesKey: dev.yaml\n",
    ] {
        assert!(values.stdout.contains(line), "{line} in {}", values.render());
    }
    let same = settled(&kubeconfig, &gitea, &["--context", "dev,uat"]);
    let status = gitops_e2e::schema::document("FleetStatus", &same.stdout);
    assert_eq!(cells(&status, "mccp"), [ready("0.2.0"), ready("0.2.0")], "{status:#}");
    assert_eq!(status["apps"][0]["differs"], false, "{status:#}");

    promote_a_git_tag(&dev, &uat, &gitea, &kubeconfig, &clone);
    an_assistant_finds_why_web_fails_in_dev_and_fixes_it_through_a_pull_request(&dev, &gitea, &kubeconfig, &clone);
    drop(held);
}
