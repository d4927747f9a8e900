//! The real kubectl finds and runs our binaries as plugins.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;

use gitops_e2e::binaries;
use gitops_e2e::snapshot::Run;

pub(crate) fn kubectl_with_plugins(kubectl: &Path, plugin_dir: &Path, kubeconfig: &Path, args: &[&str]) -> Run {
    let path = format!("{}:/usr/bin:/bin", plugin_dir.display());
    Run::of(Command::new(kubectl).args(args).env("PATH", path).env("KUBECONFIG", kubeconfig))
}

#[test]
fn kubectl_runs_version_detect_and_lists_our_plugins() {
    let kubectl = binaries::kubectl();
    let plugins = binaries::plugin_dir();
    let scratch = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(scratch.path());

    let version = kubectl_with_plugins(&kubectl, plugins.path(), &kubeconfig, &["gitops", "version"]);
    assert_eq!(version.code, Some(0), "{}", version.stderr);
    assert!(version.stdout.starts_with("Client Version: v"), "{}", version.stdout);
    assert!(version.stdout.contains("Server Version: unreachable"), "{}", version.stdout);

    let detect = kubectl_with_plugins(&kubectl, plugins.path(), &kubeconfig, &["gitops", "detect"]);
    assert_eq!(detect.code, Some(3), "kubectl passes the plugin's exit code through: {}", detect.stderr);
    assert_eq!(detect.stdout, "unreachable\n");

    let list = kubectl_with_plugins(&kubectl, plugins.path(), &kubeconfig, &["plugin", "list", "--name-only"]);
    assert_eq!(list.code, Some(0), "kubectl plugin list warned: {}", list.stderr);
    let listed: Vec<&str> = list.stdout.lines().filter(|line| line.starts_with("kubectl-gitops")).collect();
    assert_eq!(
        listed,
        [
            "kubectl-gitops",
            "kubectl-gitops-app",
            "kubectl-gitops-artifact",
            "kubectl-gitops-component",
            "kubectl-gitops-detect",
            "kubectl-gitops-diff",
            "kubectl-gitops-drift",
            "kubectl-gitops-fleet",
            "kubectl-gitops-flux",
            "kubectl-gitops-install",
            "kubectl-gitops-mcp",
            "kubectl-gitops-metrics",
            "kubectl-gitops-monitoring",
            "kubectl-gitops-platform",
            "kubectl-gitops-pr",
            "kubectl-gitops-promote",
            "kubectl-gitops-repo",
            "kubectl-gitops-status",
            "kubectl-gitops-tenant",
            "kubectl-gitops-ui",
            "kubectl-gitops-upgrade"
        ]
    );
    assert!(!list.stderr.contains("warning"), "{}", list.stderr);
}

#[test]
fn kubectl_nested_lookup_reaches_the_command_binary_directly() {
    let kubectl = binaries::kubectl();
    let plugins = binaries::plugin_dir();
    let scratch = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(scratch.path());
    let run =
        kubectl_with_plugins(&kubectl, plugins.path(), &kubeconfig, &["gitops", "upgrade", "--flux-version", "latest"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.starts_with("error: \"latest\" is not a Flux version\nhint: "), "{}", run.stderr);
}
