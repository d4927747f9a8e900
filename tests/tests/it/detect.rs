//! `kubectl gitops detect` against the real API server: unmodified → flux2 → gitops.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::process::Command;
use std::time::Duration;

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};

fn detect(env: &TestEnv, args: &[&str]) -> Run {
    Run::of(Command::new(binaries::path("kubectl-gitops-detect")).arg("--kubeconfig").arg(&env.kubeconfig).args(args))
}

#[test]
fn unmodified_then_flux2_after_the_real_flux_manifests_then_gitops_with_our_record() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    eprintln!("testenv (no Flux) started in {:.1?}", env.startup);

    let run = detect(env, &[]);
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "unmodified\n"), "{}", run.stderr);
    let json = gitops_e2e::schema::document("Detection", &detect(env, &["-o", "json"]).stdout);
    assert_eq!(json["kubernetesVersion"], "v1.36.3");
    assert_eq!(json["flux"], serde_json::Value::Null);

    let components = flux_release::components();
    env.apply_yaml(&std::fs::read_to_string(components).unwrap()).unwrap();
    for controller in ["source-controller", "kustomize-controller", "helm-controller", "notification-controller"] {
        env.wait_for_jsonpath(
            &["-n", "flux-system", "deployment", controller],
            "{.status.readyReplicas}",
            "1",
            Duration::from_secs(90),
        )
        .unwrap();
    }
    let run = detect(env, &[]);
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "flux2\n"), "{}", run.stderr);
    let json = gitops_e2e::schema::document("Detection", &detect(env, &["-o", "json"]).stdout);
    assert_eq!(json["flux"]["namespace"], "flux-system");
    assert_eq!(json["flux"]["version"], "v2.9.4");
    assert_eq!(json["flux"]["versionSource"], "namespace-label");
    assert_eq!(json["apiVersions"]["GitRepository"][0], "v1");
    assert_eq!(json["apiVersions"]["HelmRelease"][0], "v2");
    let controllers: Vec<(&str, &str, bool)> = json["controllers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["tag"].as_str().unwrap(), c["ready"].as_bool().unwrap()))
        .collect();
    assert!(controllers.contains(&("source-controller", "v1.9.4", true)), "{controllers:?}");
    assert!(controllers.contains(&("helm-controller", "v1.6.3", true)), "{controllers:?}");
    assert_eq!(json["warnings"], serde_json::json!([]));

    // The record `install` commits and Flux applies; written here by hand until install exists.
    env.apply_yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kubectl-gitops\n  namespace: flux-system\n  labels:\n    app.kubernetes.io/managed-by: kubectl-gitops\ndata:\n  url: ssh://root@127.0.0.1:2222/srv/fleet.git\n  branch: main\n  path: clusters/dev\n  clusterName: dev\n  fluxVersion: v2.9.4\n  components: source-controller,kustomize-controller,helm-controller,notification-controller\n",
    )
    .unwrap();
    let run = detect(env, &[]);
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "gitops\n"), "{}", run.stderr);
    let yaml = detect(env, &["-o", "yaml"]).stdout;
    assert!(yaml.contains("state: gitops\n") && yaml.contains("clusterName: dev\n"), "{yaml}");
}

#[test]
fn the_read_only_user_can_detect() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let run = Run::of(
        Command::new(binaries::path("kubectl-gitops-detect")).arg("--kubeconfig").arg(&env.readonly_kubeconfig),
    );
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), "unmodified\n"), "{}", run.stderr);
}

/// Two namespaces labelled as Flux's: which one's record (and so whose credentials) a command
/// uses is never a silent choice. Without `-n` naming one, detect (and every command that detects)
/// refuses, naming both (#32).
#[test]
fn two_flux_namespaces_are_refused_unless_one_is_named() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    for namespace in ["flux-a", "flux-b"] {
        env.kubectl_ok(&["create", "namespace", namespace]).unwrap();
        env.kubectl_ok(&["label", "namespace", namespace, "app.kubernetes.io/part-of=flux"]).unwrap();
    }
    let both = detect(env, &[]);
    assert_eq!(both.code, Some(2), "{}", both.render());
    assert_eq!(
        both.stderr,
        "error: this cluster has 2 Flux installations: namespaces flux-a, flux-b\nhint: pass -n NAMESPACE to say which one, e.g. -n flux-a\n"
    );
    assert_eq!(both.stdout, "");
    let named = detect(env, &["-n", "flux-b", "-o", "json"]);
    assert_eq!(named.code, Some(0), "{}", named.render());
    let json = gitops_e2e::schema::document("Detection", &named.stdout);
    assert_eq!(json["flux"]["namespace"], "flux-b");
}
