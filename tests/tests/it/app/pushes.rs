//! Pushing to the config repo: sixteen concurrent adds all land (and sixteen of one app land
//! once), and an unusable SSH key is a clear error with nothing pushed.

use std::process::Command;

use gitops_e2e::binaries;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::process::run;
use gitops_e2e::testenv::{Options, TestEnv};

use super::{git, seed_layout};

/// Runs `app add` for each name at once against `fleet`; their outputs, in the order given.
fn race(env: &TestEnv, names: &[&str]) -> Vec<std::process::Output> {
    let spawn = |name: &&str| {
        Command::new(binaries::path("kubectl-gitops-app"))
            .args(["add", name, "--url", "https://github.com/acme/apps", "--path", &format!("./{name}")])
            .args(["--cluster-name", "dev", "--config-repo", &env.git.ssh_url("fleet"), "--timeout", "4m"])
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .arg("--known-hosts-file")
            .arg(&env.git.known_hosts)
            .env("KUBECONFIG", "/nonexistent")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let racers: Vec<_> = names.iter().map(spawn).collect();
    racers.into_iter().map(|racer| racer.wait_with_output().unwrap()).collect()
}

/// 16 adds of different apps racing on one repo all land: each loser waits a jittered backoff,
/// moves to the new head, re-plans and pushes again until its --timeout. Then 16 adds of one
/// and the same app land exactly once; the other 15 answer "nothing to change".
#[test]
fn sixteen_concurrent_adds_all_land_and_sixteen_of_one_app_land_once() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let work = seed_layout(env, &["dev"], &env.git.ssh_url("fleet"));

    let names: Vec<String> = (1..=16).map(|n| format!("app-{n:02}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for (name, out) in names.iter().zip(race(env, &names)) {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.starts_with(&format!("app {name} added at ")), "{name}: {stdout}");
    }
    git(env, work.path(), &["pull", "-q", &env.git.ssh_url("fleet"), "main"]);
    let list = std::fs::read_to_string(work.path().join("clusters/dev/apps/kustomization.yaml")).unwrap();
    let expected: String = names.iter().map(|name| format!("- {name}\n")).collect();
    assert!(list.contains(&expected), "{list}");
    let log = git(env, work.path(), &["log", "--format=%s"]);
    assert_eq!(log.lines().filter(|line| line.starts_with("Add app ")).count(), 16, "{log}");

    let outs = race(env, &["same"; 16]);
    let said: Vec<String> = outs
        .iter()
        .map(|out| format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
        .collect();
    let mut added = 0;
    for (out, said) in outs.iter().zip(&said) {
        assert!(out.status.success(), "{said}");
        if said.starts_with("app same added at ") {
            added += 1;
        } else {
            assert!(said.contains("nothing to change"), "{said}");
        }
    }
    assert_eq!(added, 1, "exactly one of the 16 commits the app:\n{}", said.join("\n----\n"));
    git(env, work.path(), &["pull", "-q", &env.git.ssh_url("fleet"), "main"]);
    let log = git(env, work.path(), &["log", "--format=%s"]);
    assert_eq!(log.lines().filter(|line| line.starts_with("Add app same ")).count(), 1, "{log}");
}

/// A key the server refuses, and a file that is no key at all: a clear error, nothing pushed.
#[test]
fn an_unusable_ssh_key_is_a_clear_error_and_nothing_is_pushed() {
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let _work = seed_layout(env, &["dev"], &env.git.ssh_url("fleet"));
    let head = env.git.head("fleet");
    let keys = tempfile::tempdir().unwrap();
    let stranger = keys.path().join("stranger");
    run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&stranger)).unwrap();
    let garbage = keys.path().join("garbage");
    std::fs::write(&garbage, "not a key\n").unwrap();
    for (key, code, message) in [(&stranger, 4, "authentication"), (&garbage, 2, "holds no private key")] {
        let out = Run::of(
            Command::new(binaries::path("kubectl-gitops-app"))
                .args(["add", "web", "--url", "https://github.com/acme/web", "--cluster-name", "dev"])
                .args(["--config-repo", &env.git.ssh_url("fleet")])
                .arg("--private-key-file")
                .arg(key)
                .arg("--known-hosts-file")
                .arg(&env.git.known_hosts)
                .env("KUBECONFIG", "/nonexistent"),
        );
        assert_eq!(out.code, Some(code), "{}", out.stderr);
        assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
        assert!(out.stderr.to_lowercase().contains(message), "{}", out.stderr);
        assert!(out.stderr.contains("\nhint: "), "{}", out.stderr);
        assert!(!out.stderr.contains("PRIVATE KEY"), "{}", out.stderr);
    }
    assert_eq!(env.git.head("fleet"), head, "nothing pushed");
}
