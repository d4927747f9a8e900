//! #56: the cluster's Secret pins the config repo's host keys, and whoever writes it may add a
//! line whose pattern is built to make a backtracking matcher run for hours: forty stars, then a
//! letter no host name here ends with. A command that reads the Secret still finishes, and still
//! verifies the real key.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::process::Command;
use std::time::Duration;

use gitops_e2e::background::Background;
use gitops_e2e::binaries;
use gitops_e2e::testenv::{Options, TestEnv};

use crate::credentials::install;

/// Far beyond what a plan takes here (about a second), far below what the old matcher took.
const STALLED: Duration = Duration::from_secs(120);

#[test]
fn a_known_hosts_pattern_built_to_backtrack_does_not_stall_a_command() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    install(env);
    let secret = ["secret", "flux-system", "-n", "flux-system"];
    let template = r#"go-template={{index .data "known_hosts" | base64decode}}"#;
    let pinned = env.kubectl_ok(&[&["get"][..], &secret, &["-o", template]].concat()).unwrap();
    let key = pinned.lines().next().unwrap().split_once(' ').unwrap().1;
    let hostile = format!("{}Z {key}\n{pinned}", "*".repeat(40));
    let patch = serde_json::json!({"stringData": {"known_hosts": hostile}}).to_string();
    env.kubectl_ok(&[&["patch"][..], &secret, &["--type", "merge", "-p", &patch]].concat()).unwrap();

    let web = env.git.ssh_url("web");
    let mut command = Command::new(binaries::path("kubectl-gitops-app"));
    command
        .args(["add", "web", "--url", &web, "--path", "./deploy", "--secret-ref", "flux-system", "--dry-run"])
        .arg("--private-key-file")
        .arg(&env.git.client_key)
        .env("KUBECONFIG", &env.kubeconfig)
        .env("NO_COLOR", "1");
    // Killed, and the test failed, while it is still matching host patterns after STALLED.
    let (code, stdout, stderr) = Background::spawn(binaries::isolate_config(&mut command)).wait_within(STALLED);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("Plan:\n"), "the host key was verified and the plan made: {stdout}");
}
