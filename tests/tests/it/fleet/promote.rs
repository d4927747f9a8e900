//! The fleet test's git tag promotion: a git app on Gitea at tag v1.0.0 in dev and uat, dev moved
//! on by hand, then `promote --from dev --to uat --wait` carrying the tag and the image into uat.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gitops_e2e::binaries;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::testenv::gitea::Gitea;
use serde_json::{Value, json};

use super::{REPO, cells, fleet, keys, wired};

/// The web app's Deployment, at image 1.0.0 unless its Kustomization says otherwise.
const WEB_DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: web, image: \"registry.invalid/acme/web:1.0.0\"}\n";

/// A git app (on Gitea, public, over HTTP) added to dev and uat at tag v1.0.0; dev's overlay
/// moved to v1.1.0 by hand, and its image to 1.1.0 (the Kustomization's `spec.images`); then
/// `promote web --from dev --to uat --wait` carries the tag and the image dev runs into uat's
/// overlay, as patches of the app's GitRepository and Kustomization, and uat runs them.
pub(super) fn promote_a_git_tag(dev: &TestEnv, uat: &TestEnv, gitea: &Gitea, kubeconfig: &Path, clone: &Path) {
    gitea.api("POST", "/orgs/acme/repos", Some(&json!({ "name": "web", "private": false }))).unwrap();
    let source = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| gitea.git(source.path(), args).unwrap();
    git(&["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(source.path().join("deploy")).unwrap();
    let mut tagged = Vec::new();
    for tag in ["v1.0.0", "v1.1.0"] {
        let configmap = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  release: {tag}\n");
        std::fs::write(source.path().join("deploy/configmap.yaml"), configmap).unwrap();
        // No replicas: the image is what is looked at, and nothing waits for a pod to pull it.
        std::fs::write(source.path().join("deploy/deployment.yaml"), WEB_DEPLOYMENT).unwrap();
        git(&["add", "."]);
        git(&["commit", "-q", "-m", tag]);
        git(&["tag", tag]);
        tagged.push(format!("{tag}@sha1:{}", git(&["rev-parse", "HEAD"]).trim()));
    }
    git(&["push", "-q", &gitea.ssh_url("acme/web"), "main", "--tags"]);
    let url = format!("{}/acme/web.git", gitea.url);
    // Both at once, as the chart was added (the later push is planned again on the new head).
    let add_web = |env: &TestEnv, name: &str| {
        let mut command = Command::new(binaries::path("kubectl-gitops-app"));
        command.args(["add", "web", "--url", &url, "--tag", "v1.0.0", "--path", "./deploy", "--cluster-name", name]);
        command.args(keys(gitea));
        let run = wired(command, gitea, &env.kubeconfig);
        assert_eq!(run.code, Some(0), "add web to {name}: {}", run.render());
    };
    std::thread::scope(|scope| {
        scope.spawn(|| add_web(uat, "uat"));
        add_web(dev, "dev");
    });
    // dev moves on by hand: its overlay's patch of the GitRepository.
    gitea.git(clone, &["pull", "-q", "origin", "main"]).unwrap();
    let overlay = clone.join("clusters/dev/apps/web/kustomization.yaml");
    let mut config: Value = gitops_shared::yaml::from_str(&std::fs::read_to_string(&overlay).unwrap()).unwrap();
    config["patches"] = json!([{
        "patch": "- op: add\n  path: /spec/ref\n  value:\n    tag: v1.1.0\n",
        "target": {"kind": "GitRepository", "name": "web"},
    }, {
        "patch": "- op: add\n  path: /spec/images\n  value:\n  - name: registry.invalid/acme/web\n    newTag: 1.1.0\n",
        "target": {"kind": "Kustomization", "name": "web"},
    }]);
    std::fs::write(&overlay, gitops_shared::yaml::to_string(&config).unwrap()).unwrap();
    gitea.git(clone, &["commit", "-q", "-am", "dev: web at v1.1.0, image 1.1.0"]).unwrap();
    gitea.git(clone, &["push", "-q", "origin", "main"]).unwrap();
    let web = ["-n", "flux-system", "kustomization", "web"];
    let head = format!("main@sha1:{}", gitea.head(REPO, "main").unwrap());
    let applied = |env: &TestEnv, running: &str| {
        env.request_reconcile("flux-system", &["gitrepository/flux-system", "kustomization/flux-system"]).unwrap();
        let sync = ["-n", "flux-system", "kustomization", "flux-system"];
        env.wait_for_jsonpath(&sync, "{.status.lastAppliedRevision}", &head, Duration::from_secs(120)).unwrap();
        env.request_reconcile("flux-system", &["kustomization/apps"]).unwrap();
        if let Err(error) =
            env.wait_for_jsonpath(&web, "{.status.lastAppliedRevision}", running, Duration::from_secs(120))
        {
            let conditions = "{range .items[*]}{.metadata.name}: {.status.conditions[0].message}{\"\\n\"}{end}";
            let kustomizations =
                env.kubectl_ok(&["get", "kustomizations", "-A", "-o", &format!("jsonpath={conditions}")]);
            panic!("{error:#}; the Kustomizations: {kustomizations:?}");
        }
        env.wait_ready(&["kustomization/web"], Duration::from_secs(60)).unwrap();
    };
    std::thread::scope(|scope| {
        scope.spawn(|| applied(uat, &tagged[0]));
        applied(dev, &tagged[1]);
    });
    let status = gitops_e2e::schema::document(
        "FleetStatus",
        &fleet(kubeconfig, gitea, &["--context", "dev,uat", "-o", "json"]).stdout,
    );
    assert_eq!(cells(&status, "web"), [("ready".into(), tagged[1].clone()), ("ready".into(), tagged[0].clone())]);

    let image = |env: &TestEnv| {
        let image =
            ["get", "deployment", "web", "-n", "default", "-o", "jsonpath={.spec.template.spec.containers[0].image}"];
        env.kubectl_ok(&image).unwrap()
    };
    assert_eq!(
        (image(dev), image(uat)),
        ("registry.invalid/acme/web:1.1.0".into(), "registry.invalid/acme/web:1.0.0".into())
    );

    // Promoted: the tag and the image dev runs, one commit to main, waited for on uat.
    let mut planned = Command::new(binaries::path("kubectl-gitops-promote"));
    planned.args(["web", "--from", "dev", "--to", "uat", "--dry-run"]).args(keys(gitea));
    let planned = wired(planned, gitea, kubeconfig);
    assert_eq!(planned.code, Some(0), "{}", planned.render());
    let carried = "(\"Promote web (tag v1.1.0 and image registry.invalid/acme/web:1.1.0) from dev to uat\")";
    for line in [carried, "+      path: /spec/images\n", "+      - name: registry.invalid/acme/web\n"] {
        assert!(planned.stdout.contains(line), "{line} in {}", planned.render());
    }
    let mut command = Command::new(binaries::path("kubectl-gitops-promote"));
    command.args(["web", "--from", "dev", "--to", "uat", "--wait", "--timeout", "3m"]).args(keys(gitea));
    let promoted = wired(command, gitea, kubeconfig);
    assert_eq!(promoted.code, Some(0), "{}", promoted.render());
    assert!(promoted.stdout.starts_with("app web promoted at "), "{}", promoted.render());
    gitea.git(clone, &["pull", "-q", "origin", "main"]).unwrap();
    let written = std::fs::read_to_string(clone.join("clusters/uat/apps/web/kustomization.yaml")).unwrap();
    assert!(written.contains("path: /spec/ref") && written.contains("tag: v1.1.0"), "{written}");
    assert!(written.contains("path: /spec/images") && written.contains("newTag: \"1.1.0\""), "{written}");
    assert_eq!(image(uat), "registry.invalid/acme/web:1.1.0");
    assert_eq!(uat.jsonpath(&web, "{.status.lastAppliedRevision}").unwrap(), tagged[1]);
    let shown =
        uat.kubectl_ok(&["get", "configmap", "web", "-n", "default", "-o", "jsonpath={.data.release}"]).unwrap();
    assert_eq!(shown, "v1.1.0");
}
