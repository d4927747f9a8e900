//! One app across clusters: dev and UAT share one definition in one repo and keep their own values.

use std::path::Path;
use std::process::Command;

use gitops_e2e::binaries;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::servers::{GIT_HTTP_PASSWORD, GIT_HTTP_USER};
use gitops_e2e::testenv::{Options, TestEnv};

use super::{git, seed_layout};

/// dev and UAT share one repo: one Helm app, defined once, with each cluster's values in the
/// cluster's directory. Checked in the repo and by building each cluster's app list with kustomize.
#[test]
fn two_clusters_share_a_definition_and_keep_their_own_values() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let work = seed_layout(env, &["dev", "uat"], &env.git.http_url("fleet"));

    let dev_values = work.path().join("dev.yaml");
    std::fs::write(&dev_values, "database:\n  type: sqlite\n").unwrap();
    let uat_values = work.path().join("uat.yaml");
    std::fs::write(&uat_values, "database:\n  type: postgres\n  host: db.uat\n").unwrap();
    // No cluster at all: the repo alone, over HTTP with a password.
    let add = |cluster: &str, values: &Path| {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-app"))
                .args(["add", "mccp", "--url", "https://charts.example.com/mccp", "--chart", "mccp"])
                .args(["--cluster-name", cluster, "--config-repo", &env.git.http_url("fleet")])
                .arg("--values")
                .arg(values)
                .env("KUBECONFIG", "/nonexistent")
                .env("GITOPS_GIT_USERNAME", GIT_HTTP_USER)
                .env("GITOPS_GIT_PASSWORD", GIT_HTTP_PASSWORD),
        )
    };
    let dev = add("dev", &dev_values);
    assert_eq!(dev.code, Some(0), "{}\n{}", dev.stdout, dev.stderr);
    let uat = add("uat", &uat_values);
    assert_eq!(uat.code, Some(0), "{}\n{}", uat.stdout, uat.stderr);
    let unknown = add("prod", &uat_values);
    assert_eq!(unknown.code, Some(2));
    assert!(unknown.stderr.contains("unknown cluster \"prod\""), "{}", unknown.stderr);
    assert!(unknown.stderr.contains("hint: clusters in the repo: dev, uat"), "{}", unknown.stderr);

    git(env, work.path(), &["pull", "-q", &env.git.ssh_url("fleet"), "main"]);
    let read = |path: &str| std::fs::read_to_string(work.path().join(path)).unwrap();
    assert_eq!(read("clusters/dev/apps/mccp/values/dev.yaml"), "database:\n  type: sqlite\n");
    assert_eq!(read("clusters/uat/apps/mccp/values/uat.yaml"), "database:\n  type: postgres\n  host: db.uat\n");
    assert!(!work.path().join("apps/mccp/values").exists(), "per-cluster values are not shared");
    for cluster in ["dev", "uat"] {
        assert!(read(&format!("clusters/{cluster}/apps/kustomization.yaml")).contains("- mccp\n"));
    }

    // What Flux would apply in each cluster: the shared HelmRelease reading its cluster's values.
    let built = |cluster: &str| {
        let out = Command::new("kubectl")
            .args(["kustomize", &format!("clusters/{cluster}/apps")])
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        gitops_shared::yaml::documents_from_str(&String::from_utf8(out.stdout).unwrap()).unwrap()
    };
    for (cluster, database) in [("dev", "type: sqlite"), ("uat", "type: postgres")] {
        let objects = built(cluster);
        let of_kind = |kind: &str| objects.iter().find(|o| o["kind"] == kind).cloned().unwrap();
        assert_eq!(objects.len(), 3, "{cluster}: {objects:?}");
        let configmap = of_kind("ConfigMap");
        assert_eq!(configmap["metadata"]["name"], format!("mccp-{cluster}-values"));
        assert_eq!(configmap["metadata"]["namespace"], "flux-system");
        assert!(configmap["data"][format!("{cluster}.yaml")].as_str().unwrap().contains(database), "{configmap}");
        assert_eq!(of_kind("HelmRepository")["spec"]["url"], "https://charts.example.com/mccp");
        assert_eq!(
            of_kind("HelmRelease")["spec"]["valuesFrom"],
            serde_json::json!([{"kind": "ConfigMap", "name": format!("mccp-{cluster}-values"), "valuesKey": format!("{cluster}.yaml")}])
        );
    }
}
