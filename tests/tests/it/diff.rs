//! `kubectl gitops diff` through the real kubectl, against the real API server,
//! kustomize-controller and helm-controller: a checkout of the config repo, with uncommitted
//! edits, compared with what Flux applied from it; the same objects as the real `flux diff
//! kustomization` finds, and a HelmRelease rendered as the real `helm template` renders it.

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

/// The Helm app: the Kustomization `hello` applies `apps/hello`, a HelmRelease of the chart
/// `hello` from the environment's chart repository, its values from a ConfigMap and, at the
/// path `replicas`, from a Secret (`{url}` is the repository's URL).
const HELLO: [(&str, &str); 5] = [
    (
        "clusters/dev/hello.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: hello\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./apps/hello\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    ),
    ("apps/hello/kustomization.yaml", "resources:\n- release.yaml\n- values.yaml\n- secret.yaml\n"),
    (
        "apps/hello/release.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: hello\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  url: {url}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: hello\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  targetNamespace: default\n  install:\n    disableWait: true\n  upgrade:\n    disableWait: true\n  chart:\n    spec:\n      chart: hello\n      version: 0.1.0\n      sourceRef:\n        kind: HelmRepository\n        name: hello\n  valuesFrom:\n  - kind: ConfigMap\n    name: hello-values\n  - kind: Secret\n    name: hello-secret-values\n    valuesKey: replicas\n    targetPath: replicas\n  values:\n    image: registry.invalid/hello:1.0.0\n",
    ),
    (
        "apps/hello/values.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello-values\n  namespace: flux-system\ndata:\n  values.yaml: |\n    greeting: hello from git\n",
    ),
    (
        "apps/hello/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hello-secret-values\n  namespace: flux-system\nstringData:\n  replicas: \"1\"\n",
    ),
];

/// A namespace and a CRD the change adds, and an object in each that cannot be dry-run before.
const FIRST_NAMESPACE_AND_CRD: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web-next\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: next-config\n  namespace: web-next\ndata:\n  ready: \"soon\"\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names:\n    kind: Widget\n    listKind: WidgetList\n    plural: widgets\n    singular: widget\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: first\n  namespace: web-next\nspec:\n  size: 3\n";

/// A second release of the same chart the change adds: every object it renders is new. It also
/// asks for values from a Secret only the cluster holds, which a preview never reads for a change.
const CANARY: &str = "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: hello-canary\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  targetNamespace: default\n  chart:\n    spec:\n      chart: hello\n      version: 0.2.0\n      sourceRef:\n        kind: HelmRepository\n        name: hello\n  valuesFrom:\n  - kind: Secret\n    name: hello-admin\n  values:\n    greeting: canary\n";

/// What the Secret `hello-admin` holds: a value the chart would print in a ConfigMap.
const ADMIN_TIER: &str = "tier-s3cr3t-4e1d";

/// Publishes the fixture chart `hello` at 0.1.0, and at 0.2.0 with a Service more and its
/// version in the ConfigMap.
fn publish_hello_charts(env: &TestEnv) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/charts/hello");
    env.helm.publish(&fixture).unwrap();
    let next = tempfile::tempdir().unwrap();
    let chart = next.path().join("hello");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    for file in ["Chart.yaml", "values.yaml", "templates/configmap.yaml", "templates/deployment.yaml"] {
        let text = std::fs::read_to_string(fixture.join(file)).unwrap();
        let text = match file {
            "Chart.yaml" => text.replace("version: 0.1.0", "version: 0.2.0"),
            "templates/configmap.yaml" => {
                text + "  version: {{ .Chart.Version | quote }}\n  tier: {{ .Values.tier | quote }}\n"
            }
            "values.yaml" => text + "tier: default\n",
            _ => text,
        };
        std::fs::write(chart.join(file), text).unwrap();
    }
    // For a release that names its valuesFiles.
    std::fs::write(chart.join("values-prod.yaml"), "tier: prod\n").unwrap();
    std::fs::write(
        chart.join("templates/service.yaml"),
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector:\n    app: {{ .Release.Name }}\n  ports:\n  - port: 80\n",
    )
    .unwrap();
    env.helm.publish(&chart).unwrap();
}

/// Whether every field of `wanted` is in `found` with the same value (lists item by item):
/// what the API server adds (defaults, status) does not count.
fn contains(found: &serde_json::Value, wanted: &serde_json::Value) -> bool {
    match (found, wanted) {
        (serde_json::Value::Object(found), serde_json::Value::Object(wanted)) => {
            wanted.iter().all(|(key, value)| found.get(key).is_some_and(|found| contains(found, value)))
        }
        (serde_json::Value::Array(found), serde_json::Value::Array(wanted)) => {
            found.len() == wanted.len() && found.iter().zip(wanted).all(|(found, wanted)| contains(found, wanted))
        }
        _ => found == wanted,
    }
}

/// The object an added object's unified diff shows (its `+` lines).
fn added_object(object: &serde_json::Value) -> serde_json::Value {
    let text: String = object["diff"]
        .as_str()
        .unwrap()
        .lines()
        .filter(|line| line.starts_with('+') && !line.starts_with("+++"))
        .map(|line| format!("{}\n", &line[1..]))
        .collect();
    serde_saphyr::from_str(&text).unwrap()
}

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
            // The Helm the test environment built from helm.sh/helm/v4 at dependencies.toml's
            // version (get.helm.sh cannot be reached here).
            .env("KUBECTL_GITOPS_HELM_BIN", gitops_e2e::tools::path("helm"))
            // What reads the config repo over http (with --config-repo), as a CI job sets it.
            .env("GITOPS_GIT_USERNAME", GIT_HTTP_USER)
            .env("GITOPS_GIT_PASSWORD", GIT_HTTP_PASSWORD)
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
    publish_hello_charts(env);
    for (path, contents) in FLEET.into_iter().chain(HELLO) {
        std::fs::create_dir_all(work.join(path).parent().unwrap()).unwrap();
        std::fs::write(work.join(path), contents.replace("{url}", &env.helm.url)).unwrap();
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
    std::fs::write(work.join("clusters/dev/team.yaml"), env.team_source_yaml("team")).unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "fleet"]);
    git(&["push", "-q", &env.git.ssh_url("fleet"), "main"]);
    // The checkout's origin is the URL Flux fetches from: diff knows it for the config repo's.
    git(&["remote", "add", "origin", &env.git.http_url("fleet")]);
    env.apply_http_sync("fleet").unwrap();
    let applied = ["kustomization/web", "kustomization/team-app", "kustomization/extras", "kustomization/hello"];
    env.wait_ready(&applied, Duration::from_secs(120)).unwrap();
    env.wait_ready(&["helmrelease/hello"], Duration::from_secs(180)).unwrap();
    let plugins = binaries::plugin_dir();
    let before = env.our_requests().unwrap().len();

    // The checkout as Flux applied it: nothing would change.
    let same = diff(env, plugins.path(), work, &[]);
    assert_eq!(same.code, Some(0), "{}", same.render());
    // 8 of the kustomize apps and the sync, 5 of the Helm app's Kustomization and its build,
    // and the release's ConfigMap and Deployment, rendered by helm.
    assert!(same.stdout.ends_with("\n0 added, 0 changed, 0 pruned, 0 refused, 15 unchanged\n"), "{}", same.stdout);
    let row = same.stdout.lines().find(|line| line.starts_with("└ HelmRelease flux-system/hello ")).unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>()[3..],
        ["hello@0.1.0", "0", "0", "0", "0", "2", "-"],
        "{}",
        same.stdout
    );

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
    assert!(
        changed.stdout.ends_with("\n1 added, 2 changed, 3 pruned, 0 refused, 10 unchanged\n"),
        "{}",
        changed.stdout
    );

    // A read-only identity (view, and get on the Secrets) may not patch, so not dry-run: the
    // objects are compared on this machine instead, with a warning, and come out the same.
    env.kubectl_ok(&["-n", "default", "create", "role", "secret-reader", "--verb=get", "--resource=secrets"]).unwrap();
    env.kubectl_ok(&["-n", "flux-system", "create", "role", "secret-reader", "--verb=get", "--resource=secrets"])
        .unwrap();
    for namespace in ["default", "flux-system"] {
        env.kubectl_ok(&[
            "-n",
            namespace,
            "create",
            "rolebinding",
            "viewer-secrets",
            "--role=secret-reader",
            "--user=viewer",
        ])
        .unwrap();
    }
    let viewed = Run::of(
        Command::new(binaries::path("kubectl-gitops-diff"))
            .args(["--dir", work.to_str().unwrap(), "-o", "json"])
            .env("KUBECONFIG", &env.readonly_kubeconfig)
            .env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli())
            .env("KUBECTL_GITOPS_HELM_BIN", gitops_e2e::tools::path("helm")),
    );
    assert_eq!(viewed.code, Some(1), "{}", viewed.render());
    assert!(
        viewed.stderr.contains("objects were compared on this machine, not by the API server's dry run"),
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
    assert_eq!(viewed["summary"]["comparedHere"], 13, "{viewed:#}");

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
        with_team.stdout.ends_with("\n1 added, 3 changed, 3 pruned, 0 refused, 10 unchanged\n"),
        "{}",
        with_team.stdout
    );

    // The team's repository released at a new tag, and the config repo moving its source there:
    // the source is fetched at the tag (from the URL the cluster pulls, with the config repo's
    // credentials, on the same server) and what team-app would apply from it is compared.
    let team_git = |args: &[&str]| env.git.git(team, args).unwrap();
    team_git(&["commit", "-qam", "large"]);
    team_git(&["tag", "v2"]);
    team_git(&["push", "-q", &env.git.ssh_url("team"), "v2"]);
    let v2 = team_git(&["rev-parse", "v2"]).trim().to_string();
    let team_yaml = std::fs::read_to_string(work.join("clusters/dev/team.yaml")).unwrap();
    let tagged = team_yaml.replace("  ref:\n    branch: main\n", "  ref:\n    tag: v2\n");
    assert_ne!(tagged, team_yaml);
    std::fs::write(work.join("clusters/dev/team.yaml"), &tagged).unwrap();
    let config_repo = ["--config-repo", &env.git.http_url("fleet")];
    let moved = diff(env, plugins.path(), work, &[&config_repo[..], &["-o", "json"]].concat());
    assert_eq!(moved.code, Some(1), "{}", moved.render());
    let document = gitops_e2e::schema::document("Diff", &moved.stdout);
    assert_eq!(
        document["fetched"],
        serde_json::json!([{ "source": "GitRepository/flux-system/team", "at": "tag v2", "commit": v2 }]),
        "{document:#}"
    );
    let team_app = document["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "team-app").unwrap();
    assert_eq!(team_app["objects"][0]["name"], "team-config", "{team_app:#}");
    assert!(
        team_app["objects"][0]["diff"].as_str().unwrap().contains("-  size: small\n+  size: large\n"),
        "{team_app:#}"
    );
    let moved = diff(env, plugins.path(), work, &config_repo);
    assert!(
        moved.stdout.contains(&format!(
            "The change moves GitRepository/flux-system/team to tag v2: fetched at {}\n",
            &v2[..12]
        )),
        "{}",
        moved.stdout
    );
    // Pointed at another host too, it is not fetched: its Kustomization says why, exit 2, and
    // the host never hears from us.
    let elsewhere_git = gitops_e2e::http::Silent::start();
    let elsewhere = tagged.replace(&env.git.http_url("team"), &format!("http://{}/team.git", elsewhere_git.address));
    std::fs::write(work.join("clusters/dev/team.yaml"), elsewhere).unwrap();
    let untrusted = diff(env, plugins.path(), work, &config_repo);
    assert_eq!(untrusted.code, Some(2), "{}", untrusted.render());
    assert!(
        untrusted.stdout.contains(&format!(
            "the change moves its source GitRepository/flux-system/team: the change points it at http://{}/team.git, a URL the cluster does not pull from yet",
            elsewhere_git.address
        )),
        "{}",
        untrusted.stdout
    );
    assert_eq!(elsewhere_git.accepted(), 0, "diff connected to the git server the change names");
    std::fs::write(work.join("clusters/dev/team.yaml"), team_yaml).unwrap();

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
    assert!(branch.stdout.ends_with("\n1 added, 2 changed, 3 pruned, 0 refused, 10 unchanged\n"), "{}", branch.stdout);
    let pinned = diff(env, plugins.path(), elsewhere_dir(), &[&["--ref", &main_head][..], &key_flags].concat());
    assert_eq!(pinned.code, Some(0), "{}", pinned.render());
    let short = diff(env, plugins.path(), elsewhere_dir(), &["--ref", &main_head[..8]]);
    assert_eq!(short.code, Some(2), "{}", short.render());
    assert!(short.stderr.contains("looks like a short commit hash"), "{}", short.stderr);

    // The Helm app: a new chart version, a values change, a valuesFrom Secret change, and a
    // second release of the chart. Each release is rendered at its new version and values.
    let release = HELLO[2].1.replace("{url}", &env.helm.url).replace("version: 0.1.0", "version: 0.2.0");
    std::fs::write(work.join("apps/hello/release.yaml"), release + CANARY).unwrap();
    std::fs::write(work.join("apps/hello/values.yaml"), HELLO[3].1.replace("hello from git", "hello again")).unwrap();
    std::fs::write(work.join("apps/hello/secret.yaml"), HELLO[4].1.replace("\"1\"", "\"3\"")).unwrap();
    let admin = format!("--from-literal=values.yaml=tier: {ADMIN_TIER}");
    env.kubectl_ok(&["-n", "flux-system", "create", "secret", "generic", "hello-admin", &admin]).unwrap();
    let helm = diff(env, plugins.path(), work, &["-o", "json"]);
    assert_eq!(helm.code, Some(1), "{}", helm.render());
    assert!(!helm.render().contains(ADMIN_TIER), "{}", helm.render());
    let document = gitops_e2e::schema::document("Diff", &helm.stdout);
    let hello = document["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "hello").unwrap();
    let actions = |objects: &serde_json::Value| -> BTreeSet<(String, String)> {
        objects
            .as_array()
            .unwrap()
            .iter()
            .map(|object| {
                let name = format!("{}/{}", object["kind"].as_str().unwrap(), object["name"].as_str().unwrap());
                (name, object["action"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let pairs = |list: &[(&str, &str)]| -> BTreeSet<(String, String)> {
        list.iter().map(|(object, action)| (object.to_string(), action.to_string())).collect()
    };
    assert_eq!(
        actions(&hello["objects"]),
        pairs(&[
            ("HelmRelease/hello", "changed"),
            ("HelmRelease/hello-canary", "added"),
            ("ConfigMap/hello-values", "changed"),
            ("Secret/hello-secret-values", "changed"),
        ]),
        "{hello:#}"
    );
    let release = |name: &str| {
        hello["helmReleases"].as_array().unwrap().iter().find(|release| release["name"] == name).unwrap().clone()
    };
    let upgraded = release("hello");
    assert_eq!(upgraded["chart"], "hello@0.2.0", "{upgraded:#}");
    assert_eq!(
        actions(&upgraded["objects"]),
        pairs(&[
            ("Service/default-hello", "added"),
            ("ConfigMap/default-hello-greeting", "changed"),
            ("Deployment/default-hello", "changed")
        ]),
        "{upgraded:#}"
    );
    let upgraded_text = upgraded.to_string();
    for change in ["-  replicas: 1\\n+  replicas: 3", "-  greeting: hello from git\\n+  greeting: hello again"] {
        assert!(upgraded_text.contains(change), "{change} in {upgraded:#}");
    }
    // The new release's objects are what the real `helm template` renders from the same chart
    // and values, with what helm-controller and Helm add before applying.
    let canary = release("hello-canary");
    assert_eq!(canary["withheld"][0]["secret"], "flux-system/hello-admin", "{canary:#}");
    assert_eq!(canary["withheld"][0]["keys"], serde_json::json!(["values.yaml"]), "{canary:#}");
    let template = Run::of(
        Command::new(gitops_e2e::tools::path("helm"))
            .args(["template", "default-hello-canary"])
            .arg(env.helm.dir.join("hello-0.2.0.tgz"))
            .args(["--namespace", "default", "--set", "greeting=canary"]),
    );
    assert_eq!(template.code, Some(0), "{}", template.render());
    let rendered = gitops_shared::yaml::documents_from_str(&template.stdout).unwrap();
    assert_eq!(rendered.len(), 3, "{}", template.stdout);
    let added = canary["objects"].as_array().unwrap();
    assert_eq!(added.len(), 3, "{canary:#}");
    for mut expected in rendered {
        expected["metadata"]["namespace"] = "default".into();
        let found = added
            .iter()
            .find(|object| object["kind"] == expected["kind"] && object["name"] == expected["metadata"]["name"]);
        let found = added_object(found.unwrap_or_else(|| panic!("{expected} not in {canary:#}")));
        assert!(contains(&found, &expected), "helm template renders {expected:#}\ndiff shows {found:#}");
        assert_eq!(found["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"], "hello-canary", "{found:#}");
        assert_eq!(found["metadata"]["annotations"]["meta.helm.sh/release-name"], "default-hello-canary");
    }

    // The same chart from an OCI registry (the environment's docker-registry, where the real
    // helm pushed it): the highest tag the constraint allows, rendered as the canary is.
    let registry = format!("oci://{}/charts", env.registry.address);
    let helm_home = tempfile::tempdir().unwrap();
    for version in ["0.1.0", "0.2.0"] {
        let push = Run::of(
            Command::new(gitops_e2e::tools::path("helm"))
                .arg("push")
                .arg(env.helm.dir.join(format!("hello-{version}.tgz")))
                .args([registry.as_str(), "--plain-http"])
                .env("HOME", helm_home.path())
                .env("HELM_REGISTRY_CONFIG", helm_home.path().join("registry.json")),
        );
        assert_eq!(push.code, Some(0), "{}", push.render());
    }
    let without_oci = std::fs::read_to_string(work.join("apps/hello/release.yaml")).unwrap();
    let oci_release =
        CANARY.replace("hello-canary", "hello-oci").replace("version: 0.2.0", "version: \">=0.1.0 <1.0.0\"");
    let oci_release = oci_release.replace("name: hello\n", "name: hello-oci\n");
    let oci_repository = format!(
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: hello-oci\n  namespace: flux-system\nspec:\n  type: oci\n  insecure: true\n  interval: 10m0s\n  url: {registry}\n"
    );
    // And through a HelmRelease's chartRef: an OCIRepository of the chart, and a HelmChart of
    // the chart repository's.
    let chart_refs = format!(
        "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: hello-chart\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  url: {registry}/hello\n  insecure: true\n  ref:\n    semver: \">=0.1.0\"\n  layerSelector:\n    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmChart\nmetadata:\n  name: hello-pinned\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  chart: hello\n  version: 0.2.0\n  sourceRef:\n    kind: HelmRepository\n    name: hello\n"
    );
    let by_reference = |name: &str, kind: &str, source: &str| {
        format!(
            "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  targetNamespace: default\n  chartRef:\n    kind: {kind}\n    name: {source}\n  values:\n    greeting: canary\n"
        )
    };
    let referencing = by_reference("hello-oci-ref", "OCIRepository", "hello-chart")
        + &by_reference("hello-chart-ref", "HelmChart", "hello-pinned");
    std::fs::write(
        work.join("apps/hello/release.yaml"),
        format!("{without_oci}{oci_repository}{oci_release}{chart_refs}{referencing}"),
    )
    .unwrap();
    let oci = diff(env, plugins.path(), work, &["-o", "json", "--fetch-new-chart-repositories"]);
    assert_eq!(oci.code, Some(1), "{}", oci.render());
    let document = gitops_e2e::schema::document("Diff", &oci.stdout);
    let hello = document["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "hello").unwrap();
    let from_oci = hello["helmReleases"].as_array().unwrap().iter().find(|r| r["name"] == "hello-oci").unwrap();
    assert_eq!(from_oci["chart"], "hello@0.2.0", "{from_oci:#}");
    let diffs = |release: &serde_json::Value| -> Vec<String> {
        let objects = release["objects"].as_array().unwrap();
        objects.iter().map(|object| object["diff"].as_str().unwrap().replace("hello-canary", "hello-oci")).collect()
    };
    assert_eq!(diffs(from_oci), diffs(&canary), "{from_oci:#}");
    for name in ["hello-oci-ref", "hello-chart-ref"] {
        let release = hello["helmReleases"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap();
        assert_eq!(release["chart"], "hello@0.2.0", "{release:#}");
        let same = diffs(release).iter().map(|diff| diff.replace(name, "hello-oci")).collect::<Vec<_>>();
        assert_eq!(same, diffs(&canary), "{release:#}");
    }

    // valuesFiles replace the chart's values, merged in order, as source-controller packages
    // the chart: values.yaml, then values-prod.yaml over it.
    let values_files = |files: &str| {
        let files = format!("      version: 0.2.0\n      valuesFiles:\n{files}");
        without_oci.replacen("      version: 0.2.0\n", &files, 1)
    };
    std::fs::write(
        work.join("apps/hello/release.yaml"),
        values_files("      - values.yaml\n      - values-prod.yaml\n"),
    )
    .unwrap();
    let prod = diff(env, plugins.path(), work, &["-o", "json"]);
    assert_eq!(prod.code, Some(1), "{}", prod.render());
    let document = gitops_e2e::schema::document("Diff", &prod.stdout);
    let hello = document["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "hello").unwrap();
    let upgraded = hello["helmReleases"].as_array().unwrap().iter().find(|r| r["name"] == "hello").unwrap();
    let upgraded = upgraded.to_string();
    assert!(upgraded.contains("+  tier: prod\\n") && !upgraded.contains("tier: default"), "{upgraded}");
    // A file the chart does not hold is said, unless the release ignores missing ones.
    std::fs::write(work.join("apps/hello/release.yaml"), values_files("      - values-nope.yaml\n")).unwrap();
    let missing = diff(env, plugins.path(), work, &[]);
    assert_eq!(missing.code, Some(2), "{}", missing.render());
    assert!(
        missing.stdout.contains("valuesFiles names values-nope.yaml, which the chart does not hold"),
        "{}",
        missing.stdout
    );
    std::fs::write(work.join("apps/hello/release.yaml"), without_oci).unwrap();

    // A change that points the chart repository at another host does not make diff fetch from
    // it: the release is not rendered, said why, and the host never hears from us.
    let elsewhere_charts = gitops_e2e::http::Silent::start();
    let moved = std::fs::read_to_string(work.join("apps/hello/release.yaml"))
        .unwrap()
        .replace(&env.helm.url, &format!("http://{}", elsewhere_charts.address));
    std::fs::write(work.join("apps/hello/release.yaml"), moved).unwrap();
    let untrusted = diff(env, plugins.path(), work, &[]);
    assert_eq!(untrusted.code, Some(2), "{}", untrusted.render());
    assert!(
        untrusted.stdout.contains(&format!(
            "error: HelmRelease flux-system/hello (Kustomization flux-system/hello) is not rendered: HelmRepository flux-system/hello is at a URL the cluster does not pull from yet (http://{}); pass --fetch-new-chart-repositories",
            elsewhere_charts.address
        )),
        "{}",
        untrusted.stdout
    );
    assert_eq!(elsewhere_charts.accepted(), 0, "diff connected to the chart repository the change names");

    // An object the API server refuses: shown with its refusal, exit 2.
    std::fs::write(work.join("apps/web/deployment.yaml"), FLEET[2].1.replace("replicas: 1", "replicas: two")).unwrap();
    let refused = diff(env, plugins.path(), work, &[]);
    assert_eq!(refused.code, Some(2), "{}", refused.render());
    assert!(
        refused.stdout.contains("error: Deployment/default/web (Kustomization flux-system/web) would be refused: "),
        "{}",
        refused.stdout
    );

    std::fs::write(work.join("apps/web/deployment.yaml"), FLEET[2].1).unwrap();
    std::fs::write(work.join("apps/hello/release.yaml"), HELLO[2].1.replace("{url}", &env.helm.url)).unwrap();

    // What must be applied first (as a Kustomization this one depends on applies it): a new
    // namespace and a new CRD. The objects in them cannot be dry-run before: they are added,
    // worked out here and said so, not refused.
    std::fs::write(work.join("apps/hello/kustomization.yaml"), format!("{}- first.yaml\n", HELLO[1].1)).unwrap();
    std::fs::write(work.join("apps/hello/first.yaml"), FIRST_NAMESPACE_AND_CRD).unwrap();
    let first = diff(env, plugins.path(), work, &["-o", "json"]);
    assert_eq!(first.code, Some(1), "{}", first.render());
    let document = gitops_e2e::schema::document("Diff", &first.stdout);
    let hello = document["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "hello").unwrap();
    let object = |kind: &str, name: &str| {
        let objects = hello["objects"].as_array().unwrap();
        objects.iter().find(|o| o["kind"] == kind && o["name"] == name).unwrap().clone()
    };
    for (kind, name) in [("Namespace", "web-next"), ("CustomResourceDefinition", "widgets.example.com")] {
        let found = object(kind, name);
        assert_eq!((found["action"].as_str(), found["comparedHere"].as_bool()), (Some("added"), None), "{found:#}");
    }
    let config = object("ConfigMap", "next-config");
    assert_eq!((config["action"].as_str(), config["comparedHere"].as_bool()), (Some("added"), Some(true)));
    assert!(config["message"].as_str().unwrap().contains("its namespace web-next does not exist yet"), "{config:#}");
    let widget = object("Widget", "first");
    assert_eq!(widget["action"], "added", "{widget:#}");
    assert!(widget["message"].as_str().unwrap().contains("does not serve example.com/v1 Widget yet"), "{widget:#}");
    assert!(widget["diff"].as_str().unwrap().contains("+  size: 3\n"), "{widget:#}");
    assert_eq!(document["summary"]["refused"], 0, "{document:#}");
    std::fs::remove_file(work.join("apps/hello/first.yaml")).unwrap();
    std::fs::write(work.join("apps/hello/kustomization.yaml"), HELLO[1].1).unwrap();

    // A Kustomization the change adds, of the config repo: built and compared too, all new.
    std::fs::write(work.join("clusters/dev/more.yaml"), FLEET[6].1.replace("extras", "more")).unwrap();
    std::fs::create_dir_all(work.join("apps/more")).unwrap();
    std::fs::write(work.join("apps/more/config.yaml"), FLEET[7].1.replace("extras", "more")).unwrap();
    let more = diff(env, plugins.path(), work, &["-o", "json"]);
    assert_eq!(more.code, Some(1), "{}", more.render());
    let document = gitops_e2e::schema::document("Diff", &more.stdout);
    let added = document["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "more").unwrap();
    let objects: Vec<(&str, &str, &str)> = added["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["kind"].as_str().unwrap(), o["name"].as_str().unwrap(), o["action"].as_str().unwrap()))
        .collect();
    assert_eq!(objects, [("ConfigMap", "more", "added")], "{added:#}");
    std::fs::remove_file(work.join("clusters/dev/more.yaml")).unwrap();
    std::fs::remove_dir_all(work.join("apps/more")).unwrap();

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
