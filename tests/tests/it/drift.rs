//! `kubectl gitops drift` through the real kubectl, against the real API server and
//! kustomize-controller: a Deployment edited with the real `kubectl edit`, a ConfigMap deleted by
//! hand and another patched by another field manager, each reported with who did it; Flux's
//! ignore annotation and ignore rules (a Kustomization's and a HelmRelease's) silence what they
//! name; after Flux reconciles, the drift is gone. `drift --watch` sees each change as it
//! happens, and `metrics drift --listen` serves the series to a real Prometheus whose
//! GitOpsDriftDetected alert (the monitoring stack's rule) fires, then ends.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::background::Background;
use gitops_e2e::prometheus::{Prometheus, rules_file, wait_for};
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::process::free_ports;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::ui::{Events, Ui};
use gitops_e2e::{binaries, flux_release};
use gitops_shared::monitoring::Thresholds;
use serde_json::Value;

/// The config repo: the sync applies `clusters/dev`, where the Kustomization `web` applies
/// `apps/web` and `team-app` applies the team's repository.
const FLEET: [(&str, &str); 4] = [
    (
        "clusters/dev/web.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./apps/web\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    ),
    ("apps/web/kustomization.yaml", "resources:\n- deployment.yaml\n- config.yaml\n"),
    (
        "apps/web/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    tier: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: registry.invalid/web:1.0\n        env:\n        - name: FOO\n          value: bar\n",
    ),
    (
        "apps/web/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: hello\n",
    ),
];

/// The Kustomization `hello`, which applies `apps/hello` and is told not to correct its chart
/// repositories' intervals.
const HELLO_KUSTOMIZATION: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: hello\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./apps/hello\n  prune: true\n  ignore:\n  - paths:\n    - /spec/interval\n    target:\n      kind: HelmRepo.*\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n";

/// The chart repository and the HelmRelease of the chart `hello` (`{url}`: the chart server).
const HELLO_RELEASE: &str = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: hello\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  url: {url}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: hello\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  targetNamespace: default\n  install:\n    disableWait: true\n  upgrade:\n    disableWait: true\n  driftDetection:\n    mode: enabled\n    ignore:\n    - paths:\n      - /spec/replicas\n      target:\n        kind: Deployment\n        group: apps\n  chart:\n    spec:\n      chart: hello\n      version: 0.1.0\n      sourceRef:\n        kind: HelmRepository\n        name: hello\n  values:\n    greeting: hello from git\n    replicas: 1\n    image: registry.invalid/hello:1.0.0\n";

/// An OCIRepository of the environment's registry (`{registry}`) at tag v1, and the
/// Kustomization `oci-app` that applies it.
const OCI_APP: &str = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: oci-app\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  url: oci://{registry}/drift/oci\n  insecure: true\n  ref:\n    tag: v1\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: oci-app\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: OCIRepository\n    name: oci-app\n";

/// `kubectl gitops drift ARGS` through the real kubectl, with the config repo named (the cluster
/// was not installed by us: there is no install record to name it).
fn drift(env: &TestEnv, plugins: &Path, args: &[&str]) -> Run {
    gitops(env, plugins, &[&["drift"][..], args].concat())
}

/// `kubectl gitops metrics drift -A -o prometheus`: the Prometheus series.
fn series(env: &TestEnv, plugins: &Path) -> String {
    let run = gitops(env, plugins, &["metrics", "drift", "-A", "-o", "prometheus"]);
    assert_eq!(run.code, Some(0), "{}", run.render());
    run.stdout
}

/// `kubectl gitops COMMAND… --config-repo URL ARGS`.
fn gitops(env: &TestEnv, plugins: &Path, args: &[&str]) -> Run {
    Run::of(&mut env.kubectl_gitops(plugins, "drift-fleet", args))
}

/// The JSON documents printed one after another (`--watch -o json`).
fn documents(out: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(out).into_iter::<Value>().map_while(Result::ok).collect()
}

/// The `DriftChange` documents printed after the first report.
fn changes(out: &str) -> Vec<Value> {
    documents(out).into_iter().filter(|document| document["kind"] == "DriftChange").collect()
}

/// The drifted objects of the Kustomization `flux-system/name`, by `Kind/name`.
fn drifted(document: &Value, name: &str) -> Vec<(String, Value)> {
    let kustomization = document["kustomizations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["namespace"] == "flux-system" && k["name"] == name)
        .unwrap_or_else(|| panic!("no Kustomization {name} in {document:#}"));
    assert!(kustomization.get("error").is_none(), "{kustomization:#}");
    let objects = kustomization["objects"].as_array().unwrap();
    objects
        .iter()
        .map(|o| (format!("{}/{}", o["kind"].as_str().unwrap(), o["name"].as_str().unwrap()), o.clone()))
        .collect()
}

#[test]
fn drift_names_what_changed_by_hand_and_who_changed_it_until_flux_puts_it_back() {
    let env = &TestEnv::start(Options { flux: true }).unwrap();
    env.apply_yaml(&std::fs::read_to_string(flux_release::components()).unwrap()).unwrap();
    // A team's repository, on the config repo's server: one ConfigMap.
    env.git.create_repo("drift-team").unwrap();
    let team = tempfile::tempdir().unwrap();
    let team_git = |args: &[&str]| env.git.git(team.path(), args).unwrap();
    team_git(&["init", "-q", "-b", "main"]);
    std::fs::write(
        team.path().join("config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-config\ndata:\n  size: small\n",
    )
    .unwrap();
    team_git(&["add", "."]);
    team_git(&["commit", "-q", "-m", "team"]);
    team_git(&["push", "-q", &env.git.ssh_url("drift-team"), "main"]);

    env.git.create_repo("drift-fleet").unwrap();
    let checkout = tempfile::tempdir().unwrap();
    let work = checkout.path();
    let git = |args: &[&str]| env.git.git(work, args).unwrap();
    git(&["init", "-q", "-b", "main"]);
    for (path, contents) in FLEET {
        std::fs::create_dir_all(work.join(path).parent().unwrap()).unwrap();
        std::fs::write(work.join(path), contents).unwrap();
    }
    std::fs::write(work.join("clusters/dev/team.yaml"), env.team_source_yaml("drift-team")).unwrap();
    // A Helm app: the fixture chart from the environment's chart server, with helm-controller's
    // drift detection on, so that it puts back what is changed by hand too.
    env.helm.publish(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello")).unwrap();
    std::fs::create_dir_all(work.join("apps/hello")).unwrap();
    std::fs::write(work.join("clusters/dev/hello.yaml"), HELLO_KUSTOMIZATION).unwrap();
    std::fs::write(work.join("apps/hello/release.yaml"), HELLO_RELEASE.replace("{url}", &env.helm.url)).unwrap();
    // An app of an OCI artifact (the environment's registry, plain HTTP on this machine): drift
    // pulls it by the digest Flux applied.
    let artifact = tempfile::tempdir().unwrap();
    std::fs::write(
        artifact.path().join("config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: oci-config\ndata:\n  shipped: oci\n",
    )
    .unwrap();
    env.registry
        .push_artifact("drift/oci", "v1", artifact.path(), "v1@sha1:0000000000000000000000000000000000000001")
        .unwrap();
    std::fs::write(work.join("clusters/dev/oci.yaml"), OCI_APP.replace("{registry}", &env.registry.address)).unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "fleet"]);
    git(&["push", "-q", &env.git.ssh_url("drift-fleet"), "main"]);
    env.apply_http_sync("drift-fleet").unwrap();
    let kustomizations = ["kustomization/flux-system", "kustomization/web", "kustomization/team-app"];
    let more = ["kustomization/hello", "kustomization/oci-app"];
    env.wait_ready(&[&kustomizations[..], &more[..]].concat(), Duration::from_secs(120)).unwrap();
    env.wait_ready(&["helmrelease/hello"], Duration::from_secs(180)).unwrap();
    let plugins = binaries::plugin_dir();
    let before = env.our_requests().unwrap().len();

    // As Flux applied it: no drift.
    let clean = drift(env, plugins.path(), &["-A"]);
    assert_eq!(clean.code, Some(0), "{}", clean.render());
    assert!(clean.stdout.ends_with("0 drifted (0 deleted) of 14 objects in 5 Kustomizations\n"), "{}", clean.render());

    // Followed as it happens: `drift -A --watch -o json`, and the series served for a real
    // Prometheus that evaluates the stack's alert rules (the drift alert after 2 seconds).
    let gitops_command = |args: &[&str]| env.kubectl_gitops(plugins.path(), "drift-fleet", args);
    let mut watching = Background::spawn(&mut gitops_command(&["drift", "-A", "--watch", "-o", "json"]));
    watching.wait_until("the first report", Duration::from_secs(120), |out| {
        documents(out).first().is_some_and(|first| first["kind"] == "Drift" && first["summary"]["drifted"] == 0)
    });
    let mut exporter = Background::spawn(&mut gitops_command(&["metrics", "drift", "-A", "--listen", "127.0.0.1:0"]));
    exporter.wait_until("the series' address", Duration::from_secs(30), |out| out.ends_with("/metrics\n"));
    let series_url = exporter.stdout().trim().to_string();
    let scraped = series_url.trim_start_matches("http://").trim_end_matches("/metrics").to_string();
    let prometheus_dir = tempfile::tempdir().unwrap();
    let thresholds = Thresholds { drifted_for: Duration::from_secs(2), ..Thresholds::default() };
    // The scrape job `monitoring install --drift-exporter` configures: its ScrapeConfig's static
    // targets and path, under the job name prometheus-operator gives a ScrapeConfig.
    let scrape = gitops_shared::monitoring::manifests::drift_scrape_config(&scraped);
    let job = format!(
        "scrapeConfig/{}/{}",
        gitops_shared::monitoring::NAMESPACE,
        scrape["metadata"]["name"].as_str().unwrap()
    );
    let config = serde_json::json!({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [rules_file(prometheus_dir.path(), &thresholds)],
        "scrape_configs": [{
            "job_name": job,
            "metrics_path": scrape["spec"]["metricsPath"],
            "static_configs": scrape["spec"]["staticConfigs"],
        }],
    });
    let prometheus = Prometheus::start(prometheus_dir.path(), &config, free_ports(1).unwrap()[0]);
    wait_for("the series scraped, no drift", Duration::from_secs(60), || {
        let checked = prometheus.query("gitops_drift_checked");
        checked.len() == 5 && prometheus.query("sum(gitops_drifted_objects) == 0").len() == 1
    });
    assert_eq!(prometheus.alert_state("GitOpsDriftDetected"), "inactive");
    // And the UI with --drift: a badge per app, a panel on the App page, both live.
    let mut ui_command = Command::new(binaries::path("kubectl-gitops-ui"));
    ui_command
        .args(["--drift", "--config-repo", &env.git.http_url("drift-fleet")])
        .env("KUBECONFIG", &env.kubeconfig)
        .env("GITOPS_GIT_USERNAME", GIT_HTTP_USER)
        .env("GITOPS_GIT_PASSWORD", GIT_HTTP_PASSWORD)
        .env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli());
    let ui = Ui::launch(ui_command);
    let cookie = ui.login();
    let web_badge = || {
        let rows = ui.get(&cookie, "/apps?part=rows").body;
        let row = rows.split("data-app=\"flux-system/web\"").nth(1).unwrap_or_default();
        row.split("</tr>").next().unwrap_or_default().to_string()
    };
    wait_for("the UI's first drift report", Duration::from_secs(120), || web_badge().contains("✓ in sync"));
    let mut ui_events = Events::open(&ui, &cookie);

    // By hand: the real `kubectl edit` (an editor that changes the replicas, an env var and a
    // label), a ConfigMap deleted, another patched by another field manager.
    let editor_dir = tempfile::tempdir().unwrap();
    let editor = editor_dir.path().join("editor");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i -e 's/^  replicas: 2$/  replicas: 3/' -e 's/value: bar$/value: baz/' -e 's/^    tier: web$/    tier: api/' \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let edited = Run::of(
        Command::new(binaries::kubectl())
            .args(["edit", "deployment", "web", "-n", "default"])
            .env("KUBECONFIG", &env.kubeconfig)
            .env("KUBE_EDITOR", &editor),
    );
    assert_eq!(edited.code, Some(0), "{}", edited.render());
    env.kubectl_ok(&["-n", "default", "delete", "configmap", "web-config"]).unwrap();
    env.kubectl_ok(&[
        "-n",
        "default",
        "patch",
        "configmap",
        "team-config",
        "--type=merge",
        "-p",
        r#"{"data":{"size":"large"}}"#,
        "--field-manager=on-call",
    ])
    .unwrap();
    // And an object of the Helm release.
    env.kubectl_ok(&[
        "-n",
        "default",
        "patch",
        "configmap",
        "default-hello-greeting",
        "--type=merge",
        "-p",
        r#"{"data":{"greeting":"edited"}}"#,
        "--field-manager=on-call",
    ])
    .unwrap();
    // And the OCI app's ConfigMap.
    env.kubectl_ok(&[
        "-n",
        "default",
        "patch",
        "configmap",
        "oci-config",
        "--type=merge",
        "-p",
        r#"{"data":{"shipped":"by hand"}}"#,
        "--field-manager=on-call",
    ])
    .unwrap();
    // Fields Flux is told not to correct, changed like the web Deployment's replicas (which is
    // reported): the Helm release's replicas (its driftDetection.ignore) and the chart
    // repository's interval (the Kustomization's spec.ignore).
    env.kubectl_ok(&["-n", "default", "scale", "deployment", "default-hello", "--replicas=3"]).unwrap();
    env.kubectl_ok(&[
        "-n",
        "flux-system",
        "patch",
        "helmrepository",
        "hello",
        "--type=merge",
        "-p",
        r#"{"spec":{"interval":"5m0s"}}"#,
        "--field-manager=on-call",
    ])
    .unwrap();

    // The watch sees each change as it happens, with the same fields and managers as below.
    watching.wait_until("the drift, as it happens", Duration::from_secs(60), |out| {
        let changes = changes(out);
        let seen = |object: &str, state: &str| {
            changes.iter().any(|change| change["object"] == object && change["drift"]["state"] == state)
        };
        seen("Deployment/default/web", "changed")
            && seen("ConfigMap/default/web-config", "missing")
            && seen("ConfigMap/default/team-config", "changed")
            && seen("ConfigMap/default/default-hello-greeting", "changed")
    });
    let watched = changes(&watching.stdout());
    for change in &watched {
        gitops_e2e::schema::validate("DriftChange", change);
    }
    let edit = watched.iter().rfind(|change| change["object"] == "Deployment/default/web").unwrap();
    assert_eq!(edit["kustomization"], "flux-system/web", "{edit:#}");
    assert_eq!(edit["drift"]["managers"], serde_json::json!(["kubectl-edit"]), "{edit:#}");
    assert!(
        !watched.iter().any(|change| change["object"] == "Deployment/default/default-hello"
            || change["object"] == "HelmRepository/flux-system/hello"),
        "what Flux is told to ignore is not reported: {watched:#?}"
    );
    // The UI: a drift event, then web's badge counts its two objects and its page names the fields.
    ui_events.next("drift");
    wait_for("web's drift badge", Duration::from_secs(60), || web_badge().contains("≠ drifted (2)"));
    let page = ui.get(&cookie, "/apps/flux-system/web").body;
    let panel = page.split("<section id=\"drift\"").nth(1).unwrap();
    for shown in ["spec.replicas", "kubectl-edit", "✗ deleted", "Deployment/default/web"] {
        assert!(panel.contains(shown), "no {shown} in the drift panel: {panel}");
    }
    // And Prometheus' alert fires on the served series.
    wait_for("GitOpsDriftDetected firing", Duration::from_secs(60), || {
        prometheus.alert_state("GitOpsDriftDetected") == "firing"
    });
    let web = prometheus.query("gitops_drifted_objects{namespace=\"flux-system\", name=\"web\"}");
    assert_eq!(web.len(), 2, "{web:#?}");
    assert!(web.iter().all(|series| series["value"][1] == "1"), "{web:#?}");

    let found = drift(env, plugins.path(), &["-A", "-o", "json"]);
    assert_eq!(found.code, Some(1), "{}", found.render());
    let document = gitops_e2e::schema::document("Drift", &found.stdout);
    assert_eq!(document["summary"]["drifted"], 5, "{document:#}");
    assert_eq!(document["summary"]["missing"], 1, "{document:#}");
    let web = drifted(&document, "web");
    let names: Vec<&str> = web.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["Deployment/web", "ConfigMap/web-config"], "{document:#}");
    // The same for an assistant: the MCP tool drift, called by the Python SDK.
    let mcp = gitops_command(&["mcp"]);
    let asked = crate::mcp::session(&mcp, &serde_json::json!([{"tool": "drift", "arguments": {"name": "web"}}]));
    let call = &asked["calls"][0];
    assert_eq!((&call["isError"], &call["schemaErrors"]), (&Value::Bool(false), &serde_json::json!([])), "{call:#}");
    let told: Vec<String> = drifted(&call["structured"], "web").into_iter().map(|(name, _)| name).collect();
    assert_eq!(told, names, "{call:#}");
    let deployment = &web[0].1;
    assert_eq!(deployment["state"], "changed");
    let paths: Vec<&str> =
        deployment["fields"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        ["metadata.labels.tier", "spec.replicas", "spec.template.spec.containers[name=web].env[name=FOO].value"],
        "{deployment:#}"
    );
    for field in deployment["fields"].as_array().unwrap() {
        assert_eq!(field["managers"], serde_json::json!(["kubectl-edit"]), "{deployment:#}");
    }
    assert_eq!(deployment["managers"], serde_json::json!(["kubectl-edit"]));
    assert!(deployment["since"].as_str().is_some_and(|since| since.ends_with('Z')), "{deployment:#}");
    assert_eq!(web[1].1["state"], "missing");
    let team_app = drifted(&document, "team-app");
    assert_eq!(team_app.len(), 1, "{document:#}");
    assert_eq!(team_app[0].1["fields"], serde_json::json!([{"path": "data.size", "managers": ["on-call"]}]));
    assert!(drifted(&document, "flux-system").is_empty(), "{document:#}");
    let oci = drifted(&document, "oci-app");
    assert_eq!(oci.len(), 1, "{document:#}");
    assert_eq!(oci[0].1["fields"], serde_json::json!([{"path": "data.shipped", "managers": ["on-call"]}]));
    let hello = drifted(&document, "hello");
    assert_eq!(hello.len(), 1, "{document:#}");
    assert_eq!(hello[0].0, "ConfigMap/default-hello-greeting");
    assert_eq!(hello[0].1["helmRelease"], "flux-system/hello", "{document:#}");
    assert_eq!(hello[0].1["namespace"], "default");
    assert_eq!(hello[0].1["fields"], serde_json::json!([{"path": "data.greeting", "managers": ["on-call"]}]));
    let drifting = series(env, plugins.path());
    for line in [
        "gitops_drifted_objects{namespace=\"flux-system\",name=\"web\",state=\"changed\"} 1",
        "gitops_drifted_objects{namespace=\"flux-system\",name=\"web\",state=\"missing\"} 1",
        "gitops_drifted_objects{namespace=\"flux-system\",name=\"team-app\",state=\"changed\"} 1",
        "gitops_drifted_objects{namespace=\"flux-system\",name=\"flux-system\",state=\"changed\"} 0",
        "gitops_drift_checked{namespace=\"flux-system\",name=\"web\"} 1",
    ] {
        assert!(drifting.lines().any(|found| found == line), "no {line} in\n{drifting}");
    }

    // The screen: a row per object, who and since when.
    let screen = drift(env, plugins.path(), &["web", "-n", "flux-system"]);
    assert_eq!(screen.code, Some(1), "{}", screen.render());
    let row = screen.stdout.lines().find(|line| line.contains("Deployment/default/web")).unwrap();
    assert!(row.contains("kubectl-edit") && row.contains("spec.replicas"), "{}", screen.stdout);
    assert!(screen.stdout.contains("ConfigMap/default/web-config   (deleted)"), "{}", screen.stdout);
    assert!(screen.stdout.ends_with("2 drifted (1 deleted) of 2 objects in 1 Kustomization\n"), "{}", screen.stdout);

    // Flux told to leave the Deployment alone: drift does too.
    env.kubectl_ok(&["-n", "default", "annotate", "deployment", "web", "kustomize.toolkit.fluxcd.io/ssa=Ignore"])
        .unwrap();
    let ignored = drift(env, plugins.path(), &["web", "-o", "json"]);
    assert_eq!(ignored.code, Some(1), "{}", ignored.render());
    let document = gitops_e2e::schema::document("Drift", &ignored.stdout);
    let names: Vec<String> = drifted(&document, "web").into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["ConfigMap/web-config"], "{document:#}");
    env.kubectl_ok(&["-n", "default", "annotate", "deployment", "web", "kustomize.toolkit.fluxcd.io/ssa-"]).unwrap();

    // A read-only identity (view) may not patch, so not dry-run: the objects are compared on this
    // machine instead, and the report says so of each.
    let viewed = Run::of(
        env.kubectl_gitops(plugins.path(), "drift-fleet", &["drift", "web", "-n", "flux-system", "-o", "json"])
            .env("KUBECONFIG", &env.readonly_kubeconfig),
    );
    assert_eq!(viewed.code, Some(1), "{}", viewed.render());
    let document = gitops_e2e::schema::document("Drift", &viewed.stdout);
    let web = drifted(&document, "web");
    let deployment = &web.iter().find(|(name, _)| name == "Deployment/web").unwrap().1;
    assert_eq!(deployment["comparedHere"], true, "{document:#}");
    let paths: Vec<&str> = deployment["fields"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str()).collect();
    assert!(paths.contains(&"spec.replicas"), "{document:#}");

    // drift (and --watch, --listen) reads and dry-runs; it writes nothing. (The UI keeps the
    // apps' history ledgers as it watches them, docs/history.md: its own writes.)
    let writes: Vec<String> = env.our_requests().unwrap()[before..]
        .iter()
        .filter(|request| request.mutates() && !request.uri.contains("dryRun=All"))
        .filter(|request| !request.agent.ends_with("(kubectl-gitops-ui)"))
        .map(|request| format!("{} {}", request.verb, request.uri))
        .collect();
    assert!(writes.is_empty(), "drift wrote: {writes:?}");

    // Flux puts it back: the drift is gone.
    let fixed = ["kustomization/web", "kustomization/team-app", "kustomization/oci-app", "helmrelease/hello"];
    env.request_reconcile("flux-system", &fixed).unwrap();
    let started = Instant::now();
    loop {
        let after = drift(env, plugins.path(), &["-A"]);
        if after.code == Some(0) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the drift stayed after Flux reconciled: {}",
            after.render()
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    // The watch says each is as applied again, the served series drop and the alert ends.
    watching.wait_until("the drift put back, as it happens", Duration::from_secs(60), |out| {
        let changes = changes(out);
        ["Deployment/default/web", "ConfigMap/default/web-config", "ConfigMap/default/team-config"].iter().all(
            |object| {
                changes
                    .iter()
                    .rfind(|change| change["object"] == *object)
                    .is_some_and(|last| last.get("drift").is_none())
            },
        )
    });
    wait_for("GitOpsDriftDetected inactive", Duration::from_secs(60), || {
        prometheus.alert_state("GitOpsDriftDetected") == "inactive"
            && prometheus.query("sum(gitops_drifted_objects) == 0").len() == 1
    });
    wait_for("web's badge back in sync", Duration::from_secs(60), || web_badge().contains("✓ in sync"));
    drop(ui_events);
    // Ctrl-C ends both at once.
    for (name, running) in [("drift --watch", watching), ("metrics drift --listen", exporter)] {
        let (code, _, stderr, took) = running.interrupt();
        assert_eq!(code, Some(0), "{name}: {stderr}");
        assert!(took < Duration::from_secs(2), "{name} took {took:?} to stop on Ctrl-C");
    }
    // And the metric drops.
    let settled = series(env, plugins.path());
    let drifting: Vec<&str> =
        settled.lines().filter(|line| line.starts_with("gitops_drifted_objects{") && !line.ends_with(" 0")).collect();
    assert!(drifting.is_empty(), "{settled}");
    assert_eq!(settled.lines().filter(|line| line.starts_with("gitops_drifted_objects{")).count(), 10, "{settled}");
}
