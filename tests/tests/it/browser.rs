//! `kubectl gitops ui` in a real headless Chromium, through WebDriver, against the real API
//! server and Flux controllers: the Apps page, a change made with the CLI reaching an open page
//! without a reload, a failing app's reason, and the Add form opening a pull request whose app
//! appears once it is merged. Every page looked at is checked by axe-core (0 serious or critical
//! violations). Screenshots go to target/ui-screenshots/ (docs/ui.md shows some).

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::binaries;
use gitops_e2e::browser::Browser;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::ui::Ui;
use gitops_shared::provider::Kind;

use crate::app_provider::Fixture;

const NAMESPACE: &str = "browser";
const LABELS: &str = "  labels:\n    app.kubernetes.io/managed-by: kubectl-gitops\n";

fn kustomization(name: &str, path: &str) -> String {
    format!(
        "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\n{LABELS}spec:\n  interval: 10m0s\n  path: {path}\n  prune: true\n  targetNamespace: {NAMESPACE}\n  sourceRef:\n    kind: GitRepository\n    name: apps\n"
    )
}

/// The cell of column `column` (1-based) of an app's row on the Apps page.
fn cell(app: &str, column: usize) -> String {
    format!("tr[data-app=\"{NAMESPACE}/{app}\"] td:nth-child({column})")
}

/// A state cell's word, without the shape the stylesheet puts before it (which `innerText` may
/// or may not carry).
fn word(text: &str) -> &str {
    text.trim_start_matches(['✓', '✗', '◔', '‖', '?', ' '])
}

/// `kubectl-gitops-app ARGS` against the environment.
fn app_command(env: &TestEnv, args: &[&str]) -> Run {
    Run::of(Command::new(binaries::path("kubectl-gitops-app")).args(args).env("KUBECONFIG", &env.kubeconfig))
}

/// Waits for `kubectl gitops app status` to report `state` for an app.
fn wait_for_state(env: &TestEnv, app: &str, state: &str) {
    let started = Instant::now();
    loop {
        let run = app_command(env, &["status", app, "-n", NAMESPACE, "-o", "json"]);
        let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_default();
        if json["app"]["state"] == state {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "{app} never became {state}: {}", run.render());
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn the_apps_page_lists_the_apps_follows_the_cli_live_and_shows_why_an_app_fails() {
    let env = TestEnv::shared();
    env.kubectl(&["create", "namespace", NAMESPACE]).unwrap();
    // An app repository served over smart HTTP; `web` deploys it, `broken` names a missing path.
    env.git.create_repo("browser-apps").unwrap();
    let work = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| env.git.git(work.path(), args).unwrap();
    git(&["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(work.path().join("web")).unwrap();
    std::fs::write(
        work.path().join("web/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  greeting: hello\n",
    )
    .unwrap();
    // `stuck` runs a Deployment whose pod no node can take (its nodeSelector matches none).
    std::fs::create_dir_all(work.path().join("stuck")).unwrap();
    std::fs::write(
        work.path().join("stuck/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: stuck\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: stuck}\n  template:\n    metadata:\n      labels: {app: stuck}\n    spec:\n      nodeSelector: {disktype: none-such}\n      containers:\n      - {name: web, image: registry.invalid/web:1}\n",
    )
    .unwrap();
    // Beside it, `talker`, whose pod runs (kwok), and whose log is the environment's pod log.
    std::fs::write(
        work.path().join("stuck/talker.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: talker\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: talker}\n  template:\n    metadata:\n      labels: {app: talker}\n    spec:\n      containers:\n      - {name: talker, image: registry.invalid/talker:1}\n",
    )
    .unwrap();
    std::fs::write(env.pod_log(), "2026-12-07T00:00:00.000000000Z stdout F talker: started\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "web: a greeting"]);
    git(&["push", "-q", &env.git.ssh_url("browser-apps"), "main"]);
    let mut objects = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: {NAMESPACE}\nstringData:\n  username: {GIT_HTTP_USER}\n  password: {GIT_HTTP_PASSWORD}\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: apps\n  namespace: {NAMESPACE}\n{LABELS}spec:\n  interval: 10m0s\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n",
        env.git.http_url("browser-apps")
    );
    objects.push_str(&kustomization("web", "./web"));
    objects.push_str(&kustomization("shop", "./web"));
    objects.push_str(&kustomization("broken", "./does-not-exist"));
    env.apply_yaml(&objects).unwrap();
    wait_for_state(env, "web", "ready");
    // Once web is ready: Flux looks at a dependency that is not again only 30 s later.
    let depends_on_web = "  prune: true\n  dependsOn:\n  - name: web\n";
    env.apply_yaml(&kustomization("stuck", "./stuck").replace("  prune: true\n", depends_on_web)).unwrap();
    wait_for_state(env, "shop", "ready");
    wait_for_state(env, "broken", "failing");
    wait_for_state(env, "stuck", "ready");

    let ui = Ui::start(&binaries::path("kubectl-gitops-ui"), &env.kubeconfig, &[]);
    let browser = Browser::start();
    // The URL the command printed: its token becomes the session cookie, and the browser lands
    // on the Apps page.
    browser.goto(&format!("{}/?token={}", ui.origin(), ui.token));
    assert!(browser.current_url().ends_with("/apps"), "{}", browser.current_url());
    the_session_cookie_reaches_no_other_local_service(&browser, &ui);
    browser.goto(&format!("{}/apps?namespace={NAMESPACE}", ui.origin()));
    assert_eq!(browser.count("tr[data-app]"), 4);
    assert_eq!(
        browser.text("caption").as_deref(),
        Some("4 Flux objects: 3 ready, 1 failing, 0 progressing, 0 suspended")
    );
    for app in ["broken", "shop", "stuck", "web"] {
        assert_eq!(browser.text(&cell(app, 2)).as_deref(), Some(app));
    }
    assert_eq!(browser.text(&cell("web", 4)).as_deref().map(word), Some("True"), "web is ready");
    // Said by shape as well as by word and colour.
    let shape = |app: &str| {
        browser.eval(&format!("getComputedStyle(document.querySelector('{}'), '::before').content", cell(app, 4)))
    };
    assert!(shape("web").as_str().unwrap_or_default().contains('✓'), "{:?}", shape("web"));
    assert!(shape("broken").as_str().unwrap_or_default().contains('✗'), "{:?}", shape("broken"));
    assert_eq!(browser.text(&cell("broken", 4)).as_deref().map(word), Some("False"), "broken is failing");
    assert!(browser.text(&cell("broken", 9)).unwrap().contains("kustomization path not found"));
    browser.look("apps");

    // Search as you type: the rows follow the name box, filtered on the server, the address
    // with them, without a reload.
    browser.eval("(window.notReloaded = true)");
    browser.type_into("#filters input[name=\"q\"]", "sho");
    browser.wait_for_text("caption", Duration::from_secs(10), |text| text.starts_with("1 Flux objects"));
    assert_eq!(browser.text(&cell("shop", 2)).as_deref(), Some("shop"));
    assert!(browser.current_url().contains("q=sho"), "{}", browser.current_url());
    assert_eq!(browser.eval("window.notReloaded === true"), serde_json::json!(true), "the page was reloaded");
    browser.goto(&format!("{}/apps?namespace={NAMESPACE}", ui.origin()));
    // The arrow keys go down the rows' links.
    browser.eval(&format!("document.querySelector('{} a').focus()", cell("broken", 2)));
    browser.press('\u{e015}');
    assert_eq!(browser.eval("document.activeElement.textContent"), serde_json::json!("shop"));

    // Dark mode: the toggle applies at once and is remembered; without the script, its form's
    // GET does the same.
    browser.click("nav form.theme option[value=\"dark\"]");
    browser.click("nav form.theme button");
    assert_eq!(browser.eval("document.documentElement.dataset.theme"), serde_json::json!("dark"));
    assert_eq!(browser.eval("getComputedStyle(document.body).backgroundColor"), serde_json::json!("rgb(20, 22, 25)"));
    let started = Instant::now();
    while !browser.eval("document.cookie").as_str().unwrap_or_default().contains("gitops_ui_theme=dark") {
        assert!(started.elapsed() < Duration::from_secs(10), "the theme was not remembered");
        std::thread::sleep(Duration::from_millis(50));
    }
    browser.goto(&browser.current_url());
    assert_eq!(browser.eval("document.documentElement.dataset.theme"), serde_json::json!("dark"), "after a reload");
    browser.goto(&format!("{}/theme?theme=light", ui.origin()));
    assert!(browser.current_url().ends_with("/apps"), "{}", browser.current_url());
    assert_eq!(
        browser.eval("getComputedStyle(document.body).backgroundColor"),
        serde_json::json!("rgb(250, 250, 250)")
    );
    browser.goto(&format!("{}/theme?theme=auto", ui.origin()));
    assert_eq!(browser.eval("document.documentElement.dataset.theme || 'auto'"), serde_json::json!("auto"));
    browser.goto(&format!("{}/apps?namespace={NAMESPACE}", ui.origin()));

    // Suspending with the CLI changes the open page's row, without a reload: a mark left on the
    // page is still there afterwards.
    browser.eval("(window.notReloaded = true)");
    let run = app_command(env, &["suspend", "web", "-n", NAMESPACE]);
    assert_eq!(run.code, Some(0), "{}", run.render());
    // Timed from the moment the CLI returned, when the change is in the cluster.
    // How late is the bench's to say (2 s to every open event stream, docs/performance.md).
    let (_, latency) = browser.wait_for_text(&cell("web", 5), Duration::from_secs(60), |text| text == "True");
    eprintln!("browser: the suspension reached the open page in {latency:?} after the CLI returned");
    assert_eq!(browser.eval("window.notReloaded === true"), serde_json::json!(true), "the page was reloaded");
    assert_eq!(browser.text(&cell("shop", 5)).as_deref(), Some("False"), "the other rows stay");
    assert!(browser.text("caption").unwrap().ends_with("1 suspended"), "the counts follow too");
    browser.look("apps-suspended");

    // The App page of the failing app says why.
    browser.click(&format!("{} a", cell("broken", 2)));
    let (error, _) = browser.wait_for_text("p.error", Duration::from_secs(10), |text| !text.is_empty());
    assert!(error.contains("kustomization path not found"), "{error}");
    assert!(browser.text("h1").unwrap().contains("failing"));
    // Flux's events about it, read when the page is (so the wait reloads it).
    let started = Instant::now();
    while !browser.text("#events").is_some_and(|events| events.contains("kustomization path not found")) {
        assert!(started.elapsed() < Duration::from_secs(60), "no event of broken: {:?}", browser.text("main"));
        std::thread::sleep(Duration::from_secs(1));
        browser.goto(&browser.current_url());
    }
    browser.look("app-failing");

    // Every event of its namespace, from the App page's link: Flux's warning about it among them,
    // said by word and shape; the type filter applies as it changes, without a reload; an event
    // recorded meanwhile comes onto the open page.
    browser.click(&format!("a[href=\"/events?namespace={NAMESPACE}\"]"));
    let (caption, _) =
        browser.wait_for_text("#cluster-events caption", Duration::from_secs(10), |text| text.contains(" warnings"));
    assert!(browser.text("#cluster-events").unwrap_or_default().contains("kustomization path not found"), "{caption}");
    browser.eval("(window.notReloaded = true)");
    browser.click("#filters select[name=\"type\"] option[value=\"Warning\"]");
    let started = Instant::now();
    while !browser.current_url().contains("type=Warning") {
        assert!(started.elapsed() < Duration::from_secs(10), "the filter did not apply: {}", browser.current_url());
        std::thread::sleep(Duration::from_millis(50));
    }
    browser.wait_for_text("#cluster-events caption", Duration::from_secs(10), |text| {
        text.split(" events, ").next() == text.split(", ").nth(1).and_then(|warnings| warnings.split(' ').next())
    });
    let warning = browser.eval(
        "getComputedStyle(document.querySelector('#cluster-events tr.warning-event td.type'), '::before').content",
    );
    assert!(warning.as_str().unwrap_or_default().contains('⚠'), "{warning}");
    let now = gitops_shared::duration::format_timestamp(i64::try_from(gitops_shared::duration::now()).unwrap());
    env.apply_yaml(&format!(
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: talker.backoff\n  namespace: {NAMESPACE}\ninvolvedObject:\n  kind: Pod\n  name: talker\n  namespace: {NAMESPACE}\ntype: Warning\nreason: BackOff\nmessage: Back-off restarting failed container talker\ncount: 3\nfirstTimestamp: {now}\nlastTimestamp: {now}\nsource:\n  component: kubelet\n"
    ))
    .unwrap();
    browser
        .wait_for_text("#cluster-events tbody", Duration::from_secs(30), |text| text.contains("Back-off restarting"));
    assert_eq!(browser.eval("window.notReloaded === true"), serde_json::json!(true), "the page was reloaded");
    let missed = browser.unreachable_by_keyboard();
    assert!(missed.is_empty(), "Tab never reaches: {missed:#?}");
    browser.look("events");

    // The graph of an app whose pod no node takes: source → Kustomization → Deployment → pod,
    // the pod named with the scheduler's reason (its message on hover), and the app it depends
    // on a link at the end of a dashed edge. The scheduler's verdict may come after the page.
    browser.goto(&format!("{}/apps/{NAMESPACE}/stuck", ui.origin()));
    let graph = || browser.eval("(document.querySelector('#graph svg') || {}).textContent || ''");
    let started = Instant::now();
    while !graph().as_str().unwrap_or_default().contains("Unschedulable") {
        assert!(started.elapsed() < Duration::from_secs(60), "no unschedulable pod in {:?}", graph());
        std::thread::sleep(Duration::from_secs(1));
        browser.goto(&browser.current_url());
    }
    let drawn = graph().as_str().unwrap_or_default().to_string();
    for node in ["GitRepository apps", "Kustomization stuck", "Deployment stuck", "pod stuck-", "Kustomization web"] {
        assert!(drawn.contains(node), "{node} in {drawn}");
    }
    let pod = browser.eval("document.querySelector('#graph [aria-label^=\"pod stuck-\"]').getAttribute('aria-label')");
    assert!(pod.as_str().unwrap_or_default().contains(": ✗ failing · Unschedulable"), "{pod}");
    let hover = browser.eval("document.querySelector('#graph [aria-label^=\"pod stuck-\"] title').textContent");
    assert!(hover.as_str().unwrap_or_default().contains("didn't match"), "the scheduler's message: {hover}");
    let edge = "#graph path.edge.depends[data-from=\"Kustomization web\"][data-to=\"Kustomization stuck\"]";
    assert_eq!(browser.count(edge), 1);
    assert_eq!(browser.count(&format!("#graph a[href=\"/apps/{NAMESPACE}/web\"]")), 1);
    browser.look("app-graph");
    // The log of the pod that runs, from the Pods table's link: its last lines, then a line the
    // pod writes (appended to the environment's pod log) without a reload.
    browser.click("#pods a[href*=\"?pod=talker-\"]");
    let (log, _) = browser.wait_for_text("#log", Duration::from_secs(10), |text| text.contains("talker: started"));
    assert!(
        browser.text("#logs h2").unwrap_or_default().starts_with(&format!("Log of pod {NAMESPACE}/talker-")),
        "{log}"
    );
    browser.eval("(window.notReloaded = true)");
    // The page's stream is open once it is (kwok follows the file from then on).
    std::thread::sleep(Duration::from_secs(1));
    let mut file = std::fs::OpenOptions::new().append(true).open(env.pod_log()).unwrap();
    std::io::Write::write_all(&mut file, b"2026-12-07T00:00:01.000000000Z stdout F talker: a new line\n").unwrap();
    browser.wait_for_text("#log", Duration::from_secs(20), |text| text.contains("talker: a new line"));
    assert_eq!(browser.eval("window.notReloaded === true"), serde_json::json!(true), "the page was reloaded");
    browser.look("app-log");
    browser.goto(&format!("{}/apps/{NAMESPACE}/stuck", ui.origin()));
    // Everything on it that can be used is reached with Tab.
    let missed = browser.unreachable_by_keyboard();
    assert!(missed.is_empty(), "Tab never reaches: {missed:#?}");

    // The cluster's graph, live: web (suspended above) turns ready on the open page when the CLI
    // resumes it.
    browser.goto(&format!("{}/graph?namespace={NAMESPACE}", ui.origin()));
    let edge = format!("#graph path.edge.depends[data-from=\"{NAMESPACE}/web\"][data-to=\"{NAMESPACE}/stuck\"]");
    assert_eq!(browser.count(&edge), 1);
    let web = |state: &str| format!("#graph a[href=\"/apps/{NAMESPACE}/web\"] g.node.{state}");
    assert_eq!(browser.count(&web("suspended")), 1);
    let state = browser.eval(&format!("document.querySelector('{} text.state').textContent", web("suspended")));
    assert_eq!(state, serde_json::json!("‖ suspended · kustomize"));
    browser.eval("(window.notReloaded = true)");
    let run = app_command(env, &["resume", "web", "-n", NAMESPACE]);
    assert_eq!(run.code, Some(0), "{}", run.render());
    let started = Instant::now();
    while browser.count(&web("ready")) == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "web on the graph: {:?}", browser.text("#graph"));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(browser.eval("window.notReloaded === true"), serde_json::json!(true), "the page was reloaded");
    browser.look("graph");

    // A deployed app's page has Flux's history of it.
    browser.goto(&format!("{}/apps/{NAMESPACE}/shop", ui.origin()));
    let history = browser.text("#history").unwrap_or_default();
    assert!(history.contains("ReconciliationSucceeded") && history.contains("main@sha1:"), "{history}");
    browser.look("app-ready");
    // Its history tab: every deployment kept, under its DORA figures.
    browser.click("#all-deployments");
    let (deployments, _) =
        browser.wait_for_text("#deployments", Duration::from_secs(10), |text| text.contains("ReconciliationSucceeded"));
    assert!(deployments.contains("main@sha1:"), "{deployments}");
    assert!(browser.text("#dora").unwrap_or_default().contains("Change failure rate"), "{:?}", browser.text("main"));
    // The same as pictures: the deployments on a time axis, the DORA figures as four charts.
    let timeline = browser.eval("document.querySelector('#timeline').getAttribute('aria-label')");
    assert!(timeline.as_str().unwrap_or_default().contains(" deployments from "), "{timeline}");
    assert_eq!(browser.count("#dora-charts figure svg[role=\"img\"]"), 4);
    browser.look("app-history");

    browser.goto(&format!("{}/cluster", ui.origin()));
    assert!(browser.text("main").unwrap().contains("Controllers"));
    browser.look("cluster");

    // The accessibility check sees what it is there to see: a page with an unlabelled checkbox
    // and grey on grey text breaks two rules.
    browser.goto("data:text/html,<html lang=en><title>t</title><main><input type=checkbox><p style='color:%23aaa;background:%23bbb'>faint</p></main></html>");
    let found = browser.accessibility_violations();
    for rule in ["critical label:", "serious color-contrast:"] {
        assert!(found.iter().any(|line| line.starts_with(rule)), "{rule} in {found:?}");
    }
}

#[test]
fn the_add_form_opens_a_pull_request_and_the_app_appears_once_it_is_merged() {
    let fixture = Fixture::install_with_flux(Kind::GitHub);
    let env = &fixture.env;
    let source = tempfile::tempdir().unwrap();
    std::fs::write(
        source.path().join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-a-pull-request\n  namespace: default\ndata:\n  added: through a pull request\n",
    )
    .unwrap();
    crate::app::push_dir(env, "pr-app", source.path(), "deploy");

    let mut command = fixture.command("kubectl-gitops-ui");
    command.arg("--allow-writes").arg("--private-key-file").arg(&env.git.client_key);
    command.arg("--known-hosts-file").arg(&env.git.known_hosts);
    // The plan's cluster preview builds with the environment's flux CLI.
    command.env("KUBECTL_GITOPS_FLUX_BIN", gitops_e2e::flux_release::cli());
    let ui = Ui::launch(command);
    let browser = Browser::start();
    browser.goto(&format!("{}/?token={}", ui.origin(), ui.token));
    browser.click("nav a[href=\"/apps/new\"]");
    browser.type_into("#name", "pr-app");
    browser.type_into("#url", &env.git.ssh_url("pr-app"));
    browser.type_into("#path", "./deploy");
    browser.type_into("#secretRef", "flux-system");
    browser.click("input[name=\"pr\"]");
    browser.look("add-form");
    let main_before = fixture.main_head();

    // First the plan and its diff; nothing is pushed.
    browser.click("form.add button[type=\"submit\"]");
    let (plan, _) = browser.wait_for_text("pre.plan", Duration::from_secs(60), |text| text.starts_with("Plan:"));
    assert!(plan.contains("apps/pr-app/source.yaml"), "{plan}");
    assert!(plan.contains("\nComparing the plan on top of main of "), "and what it would do to the cluster: {plan}");
    assert!(plan.contains("+++ after/Kustomization/flux-system/pr-app\n"), "{plan}");
    assert_eq!(fixture.write_lines(), Vec::<String>::new(), "the plan wrote nothing to the provider");
    assert_eq!(fixture.branches().len(), 1, "the plan pushed no branch");
    browser.look("add-plan");

    // Then the pull request, linked from the page.
    browser.click("main form button[type=\"submit\"]");
    let (opened, _) =
        browser.wait_for_text("pre.plan", Duration::from_secs(120), |text| text.contains("pull request opened"));
    let link = browser.eval("document.querySelector('pre.plan a').href");
    let pulls = fixture.standin.pull_requests("acme/fleet");
    assert_eq!(pulls.len(), 1, "{opened}");
    assert!(link.as_str().unwrap().ends_with("/acme/fleet/pull/1"), "{link}");
    assert_eq!(fixture.main_head(), main_before, "a pull request leaves main alone");
    browser.look("add-pull-request");

    // Its page, linked: the checks of `pr show`, then the same preview, at the head it validated.
    browser.click("main p a[href=\"/pulls/1\"]");
    let (shown, _) = browser.wait_for_text("pre.plan", Duration::from_secs(120), |text| text.contains("Comparing "));
    assert!(shown.contains("ok    open "), "{shown}");
    assert!(shown.contains(&format!("Comparing pull request #1 (branch {} at ", pulls[0].head)), "{shown}");
    assert!(shown.contains("+++ after/Kustomization/flux-system/pr-app\n"), "{shown}");
    browser.look("pull-request");

    // The API does the same: POST /apps with `pr`, in the browser's session.
    let cookie = browser.cookie(&ui.cookie_name());
    let body =
        format!(r#"{{"name": "pr-api", "url": "{}", "path": "./deploy", "pr": true}}"#, env.git.ssh_url("pr-app"));
    let origin = ui.origin();
    let answer = ui.request(
        "POST",
        "/api/v1/apps",
        &[("Cookie", &cookie), ("Origin", &origin), ("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let opened: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert!(opened["output"].as_str().unwrap().ends_with("/acme/fleet/pull/2\n"), "{opened}");
    assert_eq!(fixture.standin.pull_requests("acme/fleet").len(), 2);
    assert_eq!(fixture.main_head(), main_before);

    // A reviewer merges it (the branch is one commit on main), Flux syncs, and the app shows up
    // on the Apps page the browser keeps open.
    browser.goto(&format!("{}/apps?q=pr-app", ui.origin()));
    assert_eq!(browser.count("tr[data-app]"), 0);
    let head = fixture.git(&["rev-parse", &format!("refs/heads/{}", pulls[0].head)]);
    fixture.git(&["update-ref", "refs/heads/main", head.trim(), &main_before]);
    env.request_reconcile("flux-system", &["gitrepository/flux-system"]).unwrap();
    browser.wait_for_text("tr[data-app=\"flux-system/pr-app\"] td:nth-child(4)", Duration::from_secs(180), |text| {
        word(text) == "True"
    });
    env.kubectl_ok(&["-n", "default", "get", "configmap", "from-a-pull-request"]).unwrap();
    browser.look("apps-after-merge");

    // An app added with `--depends-on pr-app` joins it on the cluster's graph, left open, by a
    // dashed edge, without a reload.
    browser.goto(&format!("{}/graph?namespace=flux-system", ui.origin()));
    browser.eval("(window.notReloaded = true)");
    let edge = "#graph path.edge.depends[data-from=\"flux-system/pr-app\"][data-to=\"flux-system/after-pr\"]";
    assert_eq!(browser.count(edge), 0);
    let source = env.git.ssh_url("pr-app");
    let added = fixture.pushing(
        "kubectl-gitops-app",
        &[
            "add",
            "after-pr",
            "--url",
            &source,
            "--path",
            "./deploy",
            "--secret-ref",
            "flux-system",
            "--depends-on",
            "pr-app",
        ],
    );
    assert_eq!(added.code, Some(0), "{}", added.render());
    env.request_reconcile("flux-system", &["gitrepository/flux-system"]).unwrap();
    let started = Instant::now();
    while browser.count(edge) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "no edge pr-app → after-pr on {:?}",
            browser.text("#graph")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(browser.eval("window.notReloaded === true"), serde_json::json!(true), "the page was reloaded");
    browser.look("graph-depends-on");

    // With --allow-writes, an App page's actions (reconcile, suspend, resume, remove) and its
    // graph's links are all reached with Tab.
    browser.goto(&format!("{}/apps/flux-system/after-pr", ui.origin()));
    assert_eq!(browser.count("#graph a[href=\"/apps/flux-system/pr-app\"]"), 1);
    assert_eq!(browser.count(".actions button"), 4);
    let missed = browser.unreachable_by_keyboard();
    assert!(missed.is_empty(), "Tab never reaches: {missed:#?}");
}

/// A browser sends a host's cookies to every port of it: the session must not reach another
/// service on this machine the user opens, at 127.0.0.1 or localhost, which could replay it.
fn the_session_cookie_reaches_no_other_local_service(browser: &Browser, ui: &Ui) {
    let session = browser.cookie(&ui.cookie_name());
    assert!(session.len() > ui.cookie_name().len() + 1, "the browser holds the session: {session}");
    let cookies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&cookies);
    let other = gitops_e2e::http::serve(move |incoming| {
        seen.lock().unwrap().push(incoming.headers.get("cookie").cloned().unwrap_or_default());
        gitops_e2e::http::Reply {
            status: 200,
            headers: Vec::new(),
            body: b"another local service".to_vec(),
            content_type: "text/plain",
            delay: Duration::ZERO,
        }
    });
    let port = other.origin.rsplit(':').next().unwrap();
    for origin in [other.origin.clone(), format!("http://localhost:{port}")] {
        browser.goto(&format!("{origin}/"));
        assert_eq!(browser.text("body").as_deref(), Some("another local service"), "{origin}");
    }
    let cookies = cookies.lock().unwrap();
    assert!(!cookies.is_empty(), "the other service was visited");
    assert!(cookies.iter().all(|cookie| !cookie.contains("gitops_ui_session")), "{cookies:?}");
}
