//! `kubectl gitops status` against the real Flux controllers: ready, failing, suspended,
//! progressing and unfetchable apps, as rows, JSON and an exit code.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};

const LABELS: &str = "  labels:\n    app.kubernetes.io/managed-by: kubectl-gitops\n";

fn status(env: &TestEnv, args: &[&str]) -> Run {
    Run::of(Command::new(binaries::path("kubectl-gitops-status")).args(args).env("KUBECONFIG", &env.kubeconfig))
}

/// A command run again until `settled` holds, for at most a minute: helm-controller retries a
/// failing install with a backoff, and the release shows as progressing for a moment each time.
fn settled(command: impl Fn() -> Run, settled: impl Fn(&Run) -> bool) -> Run {
    let started = Instant::now();
    loop {
        let run = command();
        if settled(&run) || started.elapsed() > Duration::from_secs(60) {
            return run;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn app_status(env: &TestEnv, args: &[&str]) -> Run {
    Run::of(
        Command::new(binaries::path("kubectl-gitops-app")).arg("status").args(args).env("KUBECONFIG", &env.kubeconfig),
    )
}

/// Commits `contents` at `path` in the work tree `work` (a new repository `repo` on the git server
/// when `work` has none yet) and pushes it over SSH; returns the commit hash.
fn commit_and_push(env: &TestEnv, work: &Path, repo: &str, path: &str, contents: &str) -> String {
    let git = |args: &[&str]| env.git.git(work, args).unwrap();
    if !work.join(".git").exists() {
        env.git.create_repo(repo).unwrap();
        git(&["init", "-q", "-b", "main"]);
    }
    let file = work.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, contents).unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "app"]);
    git(&["push", "-q", &env.git.ssh_url(repo), "main"]);
    git(&["rev-parse", "HEAD"]).trim().to_string()
}

fn push_app(env: &TestEnv) {
    let work = tempfile::tempdir().unwrap();
    commit_and_push(
        env,
        work.path(),
        "apps",
        "app/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: status-app\n  namespace: default\ndata:\n  ok: \"yes\"\n",
    );
}

// The fixtures reconcile every 10 minutes, longer than the test runs: a periodic reconcile marks
// an app Ready=Unknown ("Reconciliation in progress") for a moment, and a screen taken then
// counted a ready app as progressing.
fn kustomization(name: &str, source: &str, path: &str, suspend: bool) -> String {
    let suspend = if suspend { "  suspend: true\n" } else { "" };
    format!(
        "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\n{LABELS}spec:\n  interval: 10m0s\n  path: {path}\n  prune: true\n{suspend}  sourceRef:\n    kind: GitRepository\n    name: {source}\n"
    )
}

fn git_repository(name: &str, url: &str) -> String {
    format!(
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: {name}\n  namespace: flux-system\n{LABELS}spec:\n  interval: 10m0s\n  timeout: 5s\n  url: {url}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n"
    )
}

fn helm_release(name: &str, values: &str) -> String {
    format!(
        "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\n  namespace: flux-system\n{LABELS}spec:\n  interval: 10m0s\n  install:\n    remediation:\n      retries: 0\n  chart:\n    spec:\n      chart: hello\n      version: 0.1.0\n      sourceRef:\n        kind: HelmRepository\n        name: local\n  values:\n{values}"
    )
}

#[test]
fn status_shows_each_state_with_flux_messages_and_gates_on_failures() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: true }).unwrap();
    env.apply_yaml(&std::fs::read_to_string(components).unwrap()).unwrap();
    push_app(env);
    env.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut objects = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: flux-system\nstringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n"
    );
    objects.push_str(&git_repository("apps", &env.git.http_url("apps")));
    objects.push_str(&git_repository("unreachable", &format!("http://127.0.0.1:{closed}/nope.git")));
    objects.push_str(&kustomization("ready-app", "apps", "./app", false));
    objects.push_str(&kustomization("missing-path", "apps", "./does-not-exist", false));
    objects.push_str(&kustomization("paused", "apps", "./app", true));
    objects.push_str(&kustomization("bad-source", "unreachable", "./app", false));
    objects.push_str(&format!(
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: local\n  namespace: flux-system\n{LABELS}spec:\n  interval: 10m0s\n  url: {}\n",
        env.helm.url
    ));
    objects.push_str(&helm_release("hello", "    greeting: hi\n"));
    // `greeting` is required by the chart: null breaks the install.
    objects.push_str(&helm_release("broken-values", "    greeting: null\n"));
    env.apply_yaml(&objects).unwrap();

    let wanted = [
        ("bad-source", "failing"),
        ("broken-values", "failing"),
        ("hello", "ready"),
        ("missing-path", "failing"),
        ("paused", "suspended"),
        ("ready-app", "ready"),
    ];
    let started = Instant::now();
    let mut json: serde_json::Value;
    loop {
        let run = status(env, &["-o", "json"]);
        json = serde_json::from_str(&run.stdout).unwrap_or_default();
        let states: Vec<(String, String)> = json["apps"]
            .as_array()
            .map(|apps| {
                apps.iter()
                    .map(|a| {
                        (a["name"].as_str().unwrap_or_default().into(), a["state"].as_str().unwrap_or_default().into())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let expected: Vec<(String, String)> = wanted.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect();
        // helm-controller may report Ready a moment before the release history that carries
        // the deployed chart version: settled means both.
        let hello_deployed = json["apps"]
            .as_array()
            .and_then(|apps| apps.iter().find(|a| a["name"] == "hello"))
            .is_some_and(|hello| !hello["appliedRevision"].is_null());
        if states == expected && hello_deployed {
            assert_eq!(run.code, Some(1), "failing apps make status exit 1");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "states never settled: {states:?}\n{}", run.stderr);
        std::thread::sleep(Duration::from_secs(2));
    }

    let app = |name: &str| json["apps"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap().clone();
    assert!(
        app("missing-path")["message"].as_str().unwrap().contains("kustomization path not found"),
        "{}",
        app("missing-path")
    );
    assert!(
        app("bad-source")["message"].as_str().unwrap().starts_with("GitRepository unreachable: "),
        "{}",
        app("bad-source")
    );
    assert_eq!(app("hello")["appliedRevision"], "0.1.0", "{}", app("hello"));
    assert_eq!(app("hello")["type"], "helm");
    assert!(app("ready-app")["appliedRevision"].as_str().unwrap().starts_with("main@sha1:"));
    assert!(app("ready-app")["lastDeployed"].as_str().unwrap().ends_with('Z'));
    assert_eq!(json["flux"]["version"], "v2.9.4");

    let table = settled(
        || status(env, &[]),
        |run| run.stdout.ends_with("6 apps: 2 ready, 3 failing, 0 progressing, 1 suspended\n"),
    );
    assert_eq!(table.code, Some(1));
    assert!(table.stdout.starts_with("Flux v2.9.4 in flux-system: 6/6 controllers ready\n"), "{}", table.stdout);
    assert!(table.stdout.contains("\nready-app "), "{}", table.stdout);
    assert!(table.stdout.ends_with("6 apps: 2 ready, 3 failing, 0 progressing, 1 suspended\n"), "{}", table.stdout);

    let failed = status(env, &["--failed-only", "-o", "json"]);
    let failed = gitops_e2e::schema::document("Status", &failed.stdout);
    let names: Vec<&str> = failed["apps"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bad-source", "broken-values", "missing-path"]);

    app_list_names_what_kubectl_get_takes(env);
    app_status_shows_the_same_apps_as_trees(env);
    status_waits_for_the_sync_and_the_apps_and_watches_them(env);
}

/// `app list -o name` prints the apps as `kubectl get` takes them: the real kubectl gets every
/// one of them (Kustomizations and HelmReleases alike).
fn app_list_names_what_kubectl_get_takes(env: &TestEnv) {
    let listed = Run::of(
        Command::new(binaries::path("kubectl-gitops-app"))
            .args(["list", "-n", "flux-system", "-o", "name"])
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(listed.code, Some(0), "{}", listed.render());
    let names: Vec<&str> = listed.stdout.lines().collect();
    assert!(names.contains(&"helmrelease.helm.toolkit.fluxcd.io/broken-values"), "{}", listed.stdout);
    assert!(names.contains(&"kustomization.kustomize.toolkit.fluxcd.io/ready-app"), "{}", listed.stdout);
    let got = env.kubectl_ok(&[&["get", "-n", "flux-system", "-o", "name"][..], &names].concat()).unwrap();
    assert_eq!(got.lines().collect::<Vec<_>>(), names, "kubectl get finds each, by the same name");
}

/// `app status NAME` on the apps the listing test settled (one environment for both: each start
/// costs seconds).
fn app_status_shows_the_same_apps_as_trees(env: &TestEnv) {
    let ready = app_status(env, &["ready-app"]);
    assert_eq!(ready.code, Some(0), "{}\n{}", ready.stdout, ready.stderr);
    assert!(
        ready.stdout.starts_with(
            "App flux-system/ready-app (kustomize): ready\nGitRepository/flux-system/apps  Ready  main@sha1:"
        ),
        "{}",
        ready.stdout
    );
    assert!(ready.stdout.contains("\n└── Kustomization/flux-system/ready-app  Ready  main@sha1:"), "{}", ready.stdout);
    assert!(ready.stdout.contains("    └── ConfigMap/default/status-app\n"), "{}", ready.stdout);
    // The commit comes from the git server over HTTP with the GitRepository's Secret.
    assert!(ready.stdout.contains(" app (t <t@example.invalid>, "), "{}\n{}", ready.stdout, ready.stderr);
    assert_eq!(ready.stderr, "");

    let json = app_status(env, &["ready-app", "-o", "json"]);
    let json = gitops_e2e::schema::document("AppReport", &json.stdout);
    assert_eq!(json["app"]["state"], "ready");
    assert_eq!(json["commit"]["subject"], "app");
    assert_eq!(json["commit"]["sha"].as_str().unwrap().len(), 40);
    assert!(json["lastDeployed"]["revision"].as_str().unwrap().starts_with("main@sha1:"));
    assert_eq!(json["inventory"][0]["name"], "status-app");

    let helm = app_status(env, &["hello", "--no-git"]);
    assert_eq!(helm.code, Some(0), "{}\n{}", helm.stdout, helm.stderr);
    assert!(helm.stdout.contains("\n└── HelmChart/flux-system/flux-system-hello  Ready  0.1.0"), "{}", helm.stdout);
    assert!(helm.stdout.contains("    └── HelmRelease/flux-system/hello  Ready  0.1.0"), "{}", helm.stdout);
    assert!(helm.stdout.contains("        └── Deployment/flux-system/hello  "), "{}", helm.stdout);
    assert!(helm.stdout.contains("/1 ready\n"), "{}", helm.stdout);

    let missing = app_status(env, &["missing-path"]);
    assert_eq!(missing.code, Some(1));
    assert!(missing.stdout.contains("Last error:    Kustomization flux-system/missing-path: "), "{}", missing.stdout);
    assert!(missing.stdout.contains("kustomization path not found"), "{}", missing.stdout);

    let broken =
        settled(|| app_status(env, &["broken-values", "-o", "json"]), |run| run.stdout.contains("\"lastError\": {"));
    assert_eq!(broken.code, Some(1));
    let broken = gitops_e2e::schema::document("AppReport", &broken.stdout);
    assert_eq!(broken["lastError"]["kind"], "HelmRelease", "{broken}");
    assert!(broken["lastError"]["message"].as_str().unwrap().contains("greeting is required"), "{broken}");

    let paused = app_status(env, &["paused", "--no-git"]);
    assert_eq!(paused.code, Some(0), "suspended counts as status counts it");
    assert!(paused.stdout.starts_with("App flux-system/paused (kustomize): suspended\n"), "{}", paused.stdout);

    // source-controller retries the unreachable repository: while it does, the GitRepository is
    // Ready=Unknown ("building artifact") for a moment.
    let unfetchable = settled(
        || app_status(env, &["bad-source"]),
        |run| run.stdout.contains("Last error:    GitRepository flux-system/unreachable: "),
    );
    assert_eq!(unfetchable.code, Some(1));
    assert!(
        unfetchable.stdout.contains("Last error:    GitRepository flux-system/unreachable: "),
        "{}",
        unfetchable.stdout
    );
    assert!(
        unfetchable.stdout.contains("Waiting on:    GitRepository flux-system/unreachable: "),
        "{}",
        unfetchable.stdout
    );

    let absent = app_status(env, &["absent"]);
    assert_eq!(absent.code, Some(2));
    assert!(
        absent.stderr.starts_with("error: app \"absent\" not found: no Kustomization or HelmRelease \"absent\" in namespace flux-system\nhint: "),
        "{}",
        absent.stderr
    );

    // Three waits side by side, each on its own clock.
    let timed = |args: &'static [&'static str]| {
        move || {
            let started = Instant::now();
            (app_status(env, args), started.elapsed())
        }
    };
    let ((waited, waited_took), (broken, broken_took), (never, _)) = std::thread::scope(|scope| {
        let waited = scope.spawn(timed(&["ready-app", "--wait", "--timeout", "1m"]));
        let broken = scope.spawn(timed(&["missing-path", "--wait", "--grace-period", "2s", "--no-git"]));
        let never = scope.spawn(timed(&[
            "ready-app",
            "--wait",
            "--timeout",
            "3s",
            "--revision",
            "0123456789abcdef",
            "--no-git",
        ]));
        (waited.join().unwrap(), broken.join().unwrap(), never.join().unwrap())
    });
    assert_eq!(waited.code, Some(0), "{}", waited.stderr);
    assert!(waited_took < Duration::from_secs(20), "a ready app needs no waiting");

    assert_eq!(broken.code, Some(1));
    assert!(
        broken.stderr.starts_with(
            "error: app flux-system/missing-path failed (for 2s and more): Kustomization flux-system/missing-path: "
        ),
        "{}",
        broken.stderr
    );
    assert!(broken_took < Duration::from_secs(30), "a lasting failure ends the wait early");

    assert_eq!(never.code, Some(1));
    assert!(
        never.stderr.starts_with("error: app flux-system/ready-app is not Ready at 0123456789abcdef after 3s: Kustomization flux-system/ready-app is at main@sha1:"),
        "{}",
        never.stderr
    );
}

#[test]
fn status_without_flux_says_so_and_exits_1() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let run = status(env, &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "error: Flux is not installed: this cluster serves no Kustomization or HelmRelease API\nhint: install it with `kubectl gitops install`\n"
    );
}

/// `status --wait` and `--watch` on the same environment: a config repo sync (`flux-system`, out
/// of scope of `-n status-wait`) and a new app there are waited for, the branch head asked of the
/// git server; `--watch` prints the row that changed; the failing apps of flux-system end a wait
/// after the grace period, and a timeout names what blocks.
fn status_waits_for_the_sync_and_the_apps_and_watches_them(env: &TestEnv) {
    let fleet = tempfile::tempdir().unwrap();
    let marker = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet-marker\n  namespace: flux-system\ndata:\n  commit: \"{value}\"\n"
        )
    };
    let first = commit_and_push(env, fleet.path(), "fleet", "clusters/dev/marker.yaml", &marker("1"));
    let mut objects = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: flux-system\n  namespace: flux-system\nstringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n"
    );
    // As `install` writes the sync, with a long interval: the second commit is fetched on request.
    objects.push_str(&format!(
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  timeout: 5s\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: flux-system\n",
        env.git.http_url("fleet")
    ));
    objects.push_str("---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n");
    objects.push_str(&format!(
        "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: status-wait\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: status-wait\nstringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n"
    ));
    objects.push_str(
        &git_repository("apps", &env.git.http_url("apps")).replace("namespace: flux-system", "namespace: status-wait"),
    );
    let web = kustomization("web", "apps", "./app", false)
        .replace("namespace: flux-system", "namespace: status-wait")
        .replace("  prune: true\n", "  prune: true\n  targetNamespace: status-wait\n");
    objects.push_str(&web);
    env.apply_yaml(&objects).unwrap();

    // Nothing is ready yet: the wait follows the watches until the sync is at the branch head
    // and web is Ready.
    let started = Instant::now();
    let waited = status(env, &["-n", "status-wait", "--wait", "--timeout", "60s", "-v"]);
    let took = started.elapsed();
    assert_eq!(waited.code, Some(0), "{}\n{}", waited.stdout, waited.stderr);
    assert!(waited.stderr.contains(&format!("the config repo's branch is at {first}")), "{}", waited.stderr);
    assert!(waited.stdout.starts_with("Flux v2.9.4 in flux-system: "), "{}", waited.stdout);
    assert!(waited.stdout.contains("\nweb "), "{}", waited.stdout);
    assert!(waited.stdout.ends_with("1 app: 1 ready, 0 failing, 0 progressing, 0 suspended\n"), "{}", waited.stdout);
    eprintln!("status --wait until a new sync and app were ready: {took:?}");

    // --watch in a pipe: the screen, then one line per row that changed.
    let (mut watching, stdout) = watch_status(env, &[]);
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let next = || received.recv_timeout(Duration::from_secs(30)).unwrap();
    while !next().starts_with("1 app: 1 ready") {}
    // And as JSON: the Status document, then one AppStatus document per row that changed.
    let (mut json_watching, json_stdout) = watch_status(env, &["-o", "json"]);
    let (documents, json_received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for document in serde_json::Deserializer::from_reader(json_stdout).into_iter::<serde_json::Value>() {
            let Ok(document) = document else { break };
            if documents.send(document).is_err() {
                break;
            }
        }
    });
    let next_document = || json_received.recv_timeout(Duration::from_secs(30)).unwrap();
    let screen = next_document();
    gitops_e2e::schema::validate("Status", &screen);
    assert_eq!(screen["kind"], "Status", "{screen:#}");
    env.apply_yaml(&web.replace("  prune: true\n", "  prune: true\n  suspend: true\n")).unwrap();
    // Only rows, no screen: web, until it shows SUSPENDED True.
    let changed = loop {
        let line = next();
        assert!(line.starts_with("web "), "{line}");
        if line.split_whitespace().nth(5) == Some("True") {
            break line;
        }
    };
    watching.kill().unwrap();
    watching.wait().unwrap();
    assert!(changed.contains("Applied revision"), "{changed}");
    let row = loop {
        let row = next_document();
        assert_eq!((row["kind"].as_str(), row["name"].as_str()), (Some("AppStatus"), Some("web")), "{row:#}");
        if row["state"] == "suspended" {
            break row;
        }
    };
    json_watching.kill().unwrap();
    json_watching.wait().unwrap();
    gitops_e2e::schema::validate("AppStatus", &row);

    // A new commit: the branch head moved, Flux has not fetched it (10m interval), and the
    // timeout says so, naming the GitRepository.
    let second = commit_and_push(env, fleet.path(), "fleet", "clusters/dev/marker.yaml", &marker("2"));
    // 6 s: the first LISTs must be answered before the sync can be named, even on a loaded machine.
    let stale = status(env, &["-n", "status-wait", "--wait", "--timeout", "6s"]);
    assert_eq!(stale.code, Some(1), "{}\n{}", stale.stdout, stale.stderr);
    assert!(
        stale.stderr.starts_with(&format!(
            "error: not everything is ready (config repo at {}) after 6s; waiting on:\n  the config repo sync flux-system/flux-system: GitRepository flux-system/flux-system has main@sha1:{first}, not yet {second} ",
            &second[..12]
        )),
        "{}",
        stale.stderr
    );
    assert!(stale.stdout.contains("\nweb "), "the screen is printed at the end: {}", stale.stdout);

    // Fetched on request: the wait ends once the sync applied the second commit.
    let requested = format!("reconcile.fluxcd.io/requestedAt={}", second);
    env.kubectl_ok(&["-n", "flux-system", "annotate", "--overwrite", "gitrepository/flux-system", &requested]).unwrap();
    let started = Instant::now();
    let synced = status(env, &["-n", "status-wait", "--wait", "--timeout", "60s", "-o", "json"]);
    assert_eq!(synced.code, Some(0), "{}\n{}", synced.stdout, synced.stderr);
    let json = gitops_e2e::schema::document("Status", &synced.stdout);
    assert_eq!(json["apps"][0]["state"], "suspended", "suspended counts as done");
    eprintln!("status --wait until the sync applied a new commit: {:?}", started.elapsed());
    let pinned = status(env, &["-n", "status-wait", "--wait", "--timeout", "10s", "--revision", &second[..8]]);
    assert_eq!(pinned.code, Some(0), "{}", pinned.stderr);

    // Three waits on the failing apps of flux-system, side by side, each on its own clock: two
    // end after the grace period, not the timeout (one of them timed); the third has a timeout
    // shorter than its grace period and names every object that blocks, with its message.
    // 6 s: the first LISTs must be answered for the objects to be named, even on a loaded machine.
    let summary = "6 apps, 1 config repo layer: 3 ready, 3 failing, 0 progressing, 1 suspended\n";
    let (failing, (again, again_took), blocked) = std::thread::scope(|scope| {
        let failing = scope.spawn(|| {
            settled(|| status(env, &["--wait", "--grace-period", "2s"]), |run| run.stdout.ends_with(summary))
        });
        let again = scope.spawn(|| {
            let started = Instant::now();
            (status(env, &["--wait", "--grace-period", "2s"]), started.elapsed())
        });
        let blocked = scope.spawn(|| status(env, &["--wait", "--timeout", "6s", "--grace-period", "1m"]));
        (failing.join().unwrap(), again.join().unwrap(), blocked.join().unwrap())
    });
    assert_eq!(failing.code, Some(1));
    assert!(
        failing.stderr.starts_with(
            "error: app flux-system/bad-source failed (for 2s and more): GitRepository flux-system/unreachable: "
        ),
        "{}",
        failing.stderr
    );
    assert!(failing.stdout.ends_with(summary), "{}", failing.stdout);
    // The wait ended after the grace period, not at the default timeout of 5 minutes.
    assert_eq!(again.code, Some(1), "{}", again.stderr);
    assert!(again_took < Duration::from_secs(20), "{again_took:?}");

    assert_eq!(blocked.code, Some(1));
    // bad-source is named by its GitRepository once source-controller has failed a fetch, and by
    // its Kustomization's ArtifactFailed before that (seen on a loaded machine): either names it.
    let bad_source =
        ["GitRepository flux-system/unreachable: ", "Kustomization flux-system/bad-source: ArtifactFailed"];
    assert!(
        bad_source.iter().any(|why| blocked.stderr.contains(&format!("\n  app flux-system/bad-source: {why}"))),
        "{}",
        blocked.stderr
    );
    for line in [
        "error: not everything is ready (config repo at ",
        "\n  app flux-system/broken-values: HelmRelease flux-system/broken-values: ",
        "\n  app flux-system/missing-path: Kustomization flux-system/missing-path: ",
        "kustomization path not found",
    ] {
        assert!(blocked.stderr.contains(line), "{line}\n{}", blocked.stderr);
    }
}

/// A Ready message carrying a terminal title (OSC), a screen clear (CSI) and a carriage return,
/// as anyone who can write a Flux object's status can set it: the table and the tree show the
/// text without them, and `-o json` keeps the message exactly.
#[test]
fn hostile_messages_are_shown_without_their_escape_sequences() {
    let env = TestEnv::shared();
    env.kubectl(&["create", "namespace", "status-escapes"]).unwrap();
    // Suspended, so no controller writes its own Ready condition over ours.
    let object = kustomization("hostile", "nowhere", "./app", true)
        .replace("namespace: flux-system", "namespace: status-escapes");
    env.apply_yaml(&object).unwrap();
    let message = "before\u{1b}]0;pwned\u{7} clear\u{1b}[2J return\rafter";
    let condition = serde_json::json!({"status": {"conditions": [{
        "type": "Ready", "status": "False", "reason": "Hostile", "message": message,
        "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1,
    }]}});
    let shown = |run: &Run| {
        serde_json::from_str::<serde_json::Value>(&run.stdout).ok().and_then(|json| {
            json["apps"].as_array()?.iter().find(|app| app["name"] == "hostile")?["message"].as_str().map(String::from)
        })
    };
    let started = Instant::now();
    let json = loop {
        env.kubectl_ok(&[
            "-n",
            "status-escapes",
            "patch",
            "kustomization",
            "hostile",
            "--subresource=status",
            "--type=merge",
            "-p",
            &condition.to_string(),
        ])
        .unwrap();
        let json = status(env, &["-n", "status-escapes", "-o", "json"]);
        if shown(&json).as_deref() == Some(message) {
            break json;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the message never showed:\n{}", json.render());
        std::thread::sleep(Duration::from_secs(1));
    };
    assert!(json.stdout.contains(r#"before\u001b]0;pwned\u0007 clear\u001b[2J return\rafter"#), "{}", json.stdout);

    let table = status(env, &["-n", "status-escapes"]);
    let tree = app_status(env, &["hostile", "-n", "status-escapes"]);
    let yaml = status(env, &["-n", "status-escapes", "-o", "yaml"]);
    for (what, run) in [("the table", &table), ("app status", &tree)] {
        assert!(run.stdout.contains("before clear return"), "{what}:\n{}", run.render());
        for control in ['\u{1b}', '\u{7}', '\r'] {
            assert!(!run.stdout.contains(control), "{what} printed {control:?}: {:?}", run.stdout);
            assert!(!run.stderr.contains(control), "{what} printed {control:?} on stderr: {:?}", run.stderr);
        }
        assert!(!run.stdout.contains("pwned"), "{what} printed the OSC's text: {:?}", run.stdout);
    }
    let yaml: serde_json::Value = serde_saphyr::from_str(&yaml.stdout).unwrap();
    let hostile = yaml["apps"].as_array().unwrap().iter().find(|app| app["name"] == "hostile").unwrap();
    assert_eq!(hostile["message"], message, "-o yaml keeps the message exactly");
}

/// kubectl's overrides, as the API server sees them: `--as` makes every request the impersonated
/// account's (each kind it may not list is shown as skipped, naming it), `--as-group` adds its
/// groups, and `--server` replaces the kubeconfig cluster's address.
#[test]
fn kubectl_overrides_reach_the_api_server_as_kubectl_sends_them() {
    let env = TestEnv::shared();
    let nobody = "system:serviceaccount:default:nobody";
    let refused = status(env, &["--as", nobody]);
    let said = format!("User \"{nobody}\" cannot list resource \"kustomizations\"");
    assert!(refused.stdout.contains(&said), "{}", refused.render());
    let admitted = status(env, &["--as", nobody, "--as-group", "system:masters"]);
    assert!(!admitted.stdout.contains("forbidden"), "{}", admitted.render());
    let moved = status(env, &["--server", "https://127.0.0.1:1"]);
    assert_eq!(moved.code, Some(3), "{}", moved.render());
    assert!(moved.stderr.contains("cluster unreachable at https://127.0.0.1:1/"), "{}", moved.render());
    let elsewhere = status(env, &["--user", "nobody-in-the-kubeconfig"]);
    assert_ne!(elsewhere.code, Some(0), "{}", elsewhere.render());
}

/// `status -n status-wait --watch` with `extra` flags, started in a pipe: the process and its
/// stdout.
fn watch_status(env: &TestEnv, extra: &[&str]) -> (std::process::Child, std::process::ChildStdout) {
    let mut watching = Command::new(binaries::path("kubectl-gitops-status"))
        .args(["-n", "status-wait", "--watch"])
        .args(extra)
        .env("KUBECONFIG", &env.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kubectl-gitops-status starts");
    let stdout = watching.stdout.take().expect("stdout is piped");
    (watching, stdout)
}
