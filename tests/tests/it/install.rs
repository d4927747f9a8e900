//! `kubectl gitops install` end to end: the real binary, the real API server and Flux
//! controllers, the local git server over SSH.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;

use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::process::run;
use gitops_e2e::testenv::{Options, TestEnv};
use gitops_e2e::{binaries, flux_release};

fn install(env: &TestEnv, kubeconfig: &Path, args: &[&str]) -> Run {
    Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(args)
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .arg("--known-hosts-file")
            .arg(&env.git.known_hosts)
            .args(["--timeout", "3m"])
            .env("KUBECONFIG", kubeconfig),
    )
}

fn detect(kubeconfig: &Path) -> String {
    Run::of(Command::new(binaries::path("kubectl-gitops-detect")).env("KUBECONFIG", kubeconfig)).stdout
}

/// What the `flux-system` Kustomization last applied.
fn applied_revision(env: &TestEnv) -> String {
    let jsonpath = "-o=jsonpath={.status.lastAppliedRevision}";
    env.kubectl_ok(&["-n", "flux-system", "get", "kustomization", "flux-system", jsonpath]).unwrap()
}

/// Mutating requests kubectl-gitops sent (its user agent), from the audit log.
fn our_mutations(env: &TestEnv) -> Vec<String> {
    let requests = env.our_requests().unwrap();
    requests
        .into_iter()
        .filter(|request| request.mutates())
        .map(|request| format!("{} {}", request.verb, request.uri))
        .collect()
}

/// (resource, request URI) of the watches kubectl-gitops started, from the audit log.
fn our_watches(env: &TestEnv) -> Vec<(String, String)> {
    let requests = env.our_requests().unwrap();
    requests
        .into_iter()
        .filter(|request| request.verb == "watch")
        .map(|request| (request.resource, request.uri))
        .collect()
}

#[test]
fn install_dry_run_then_install_then_noop_then_rebuild_from_repo() {
    let components = flux_release::components();
    let components = components.to_str().unwrap();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("fleet").unwrap();
    let url = env.git.ssh_url("fleet");
    let args = ["--url", &url, "--path", "clusters/dev", "--cluster-name", "dev", "--components-file", components];

    // --dry-run: the plan, and no change anywhere.
    let dry = install(env, &env.kubeconfig, &[&args[..], &["--dry-run"]].concat());
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert!(dry.stdout.starts_with("Plan:\n  1. commit 12 file(s) to main"), "{}", dry.stdout);
    assert!(
        dry.stdout.contains(
            "  5. wait until Kustomization flux-system/flux-system and the layers platform, apps and tenants are Ready"
        ),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains("  add       clusters/dev/flux-system/gotk-sync.yaml\n"), "{}", dry.stdout);
    assert!(dry.stdout.contains("  add       clusters/dev/platform.yaml\n"), "{}", dry.stdout);
    assert!(!dry.stdout.contains("PRIVATE KEY"));
    // The same plan as a script reads it: a Change document.
    let planned = install(env, &env.kubeconfig, &[&args[..], &["--dry-run", "-o", "json"]].concat());
    assert_eq!(planned.code, Some(0), "{}", planned.stderr);
    assert!(!planned.stdout.contains("PRIVATE KEY"));
    let planned = gitops_e2e::schema::document("Change", &planned.stdout);
    assert_eq!((planned["verb"].as_str(), planned["dryRun"].as_bool()), (Some("install"), Some(true)), "{planned:#}");
    let sync = serde_json::json!({"path": "clusters/dev/flux-system/gotk-sync.yaml", "action": "add"});
    assert!(planned["plan"]["files"].as_array().unwrap().contains(&sync), "{planned:#}");
    assert_eq!(planned["done"], serde_json::Value::Null);
    assert_eq!(our_mutations(env), Vec::<String>::new(), "--dry-run made no mutating request");
    assert_eq!(env.git.head("fleet"), "", "--dry-run pushed nothing");
    assert_eq!(detect(&env.kubeconfig), "unmodified\n");

    // The install: pushes, applies, and waits for Flux to run the pushed commit.
    let installed = install(env, &env.kubeconfig, &args);
    assert_eq!(installed.code, Some(0), "stdout: {}\nstderr: {}", installed.stdout, installed.stderr);
    let head = env.git.head("fleet");
    assert_eq!(installed.stdout, format!("installed: {url} (branch main, path clusters/dev) at {}\n", &head[..12]));
    assert_eq!(applied_revision(env), format!("main@sha1:{head}"));
    assert_eq!(detect(&env.kubeconfig), "gitops\n");
    let secret_keys =
        env.kubectl_ok(&["-n", "flux-system", "get", "secret", "flux-system", "-o=jsonpath={.data}"]).unwrap();
    for key in ["identity", "identity.pub", "known_hosts"] {
        assert!(secret_keys.contains(&format!("\"{key}\"")), "{secret_keys}");
    }
    // No app yet: status shows the sync and the layers as the config repo's, and counts no app.
    let status = Run::of(Command::new(binaries::path("kubectl-gitops-status")).env("KUBECONFIG", &env.kubeconfig));
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    assert!(status.stdout.contains("\nConfig repo\nNAME "), "{}", status.stdout);
    assert!(!status.stdout.contains("\nApps\n"), "{}", status.stdout);
    assert!(
        status.stdout.ends_with("\n0 apps, 4 config repo layers: 4 ready, 0 failing, 0 progressing, 0 suspended\n"),
        "{}",
        status.stdout
    );

    // A second run changes nothing.
    let before = our_mutations(env).len();
    let again = install(env, &env.kubeconfig, &args);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(again.stdout.starts_with("already installed: "), "{}", again.stdout);
    assert_eq!(env.git.head("fleet"), head, "no new commit");
    assert_eq!(our_mutations(env).len(), before, "no new write to the cluster");
    let described = install(env, &env.kubeconfig, &[&args[..], &["-o", "json"]].concat());
    assert_eq!(described.code, Some(0), "{}", described.stderr);
    let described = gitops_e2e::schema::document("Change", &described.stdout);
    assert_eq!(
        (described["done"]["commit"].as_str(), described["plan"]["files"].as_array().map(Vec::len)),
        (Some(head.as_str()), Some(0)),
        "{described:#}"
    );
    assert_eq!(described["waited"]["commit"], head.as_str(), "{described:#}");

    // A re-run trusts the host keys the first run pinned in the Flux Secret: no known_hosts file,
    // no scan, no question.
    let home = tempfile::tempdir().unwrap();
    let pinned = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(args)
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .env("KUBECONFIG", &env.kubeconfig)
            .env("HOME", home.path()),
    );
    assert_eq!(pinned.code, Some(0), "{}", pinned.stderr);
    assert!(pinned.stdout.starts_with("already installed: "), "{}", pinned.stdout);

    // A different path on the same cluster is refused, naming both.
    let other =
        install(env, &env.kubeconfig, &["--url", &url, "--path", "clusters/prod", "--components-file", components]);
    assert_eq!(other.code, Some(2));
    assert!(other.stderr.contains("already installed from"), "{}", other.stderr);
    assert!(other.stderr.contains("(path clusters/dev), not from"), "{}", other.stderr);

    // A fresh cluster rebuilt from git alone converges to the same commit without a new one.
    let fresh = &TestEnv::start(Options { flux: false }).unwrap();
    fresh.run_flux_once_installed();
    let rebuilt = install(env, &fresh.kubeconfig, &["--from-repo", &url, "--path", "clusters/dev"]);
    assert_eq!(rebuilt.code, Some(0), "stdout: {}\nstderr: {}", rebuilt.stdout, rebuilt.stderr);
    assert_eq!(env.git.head("fleet"), head, "reconstitution commits nothing");
    assert_eq!(applied_revision(fresh), format!("main@sha1:{head}"));
    assert_eq!(detect(&fresh.kubeconfig), "gitops\n");
}

#[test]
fn install_over_an_existing_flux_reuses_it() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: true }).unwrap();
    env.apply_yaml(&std::fs::read_to_string(&components).unwrap()).unwrap();
    assert_eq!(detect(&env.kubeconfig), "flux2\n");
    env.git.create_repo("existing").unwrap();
    let url = env.git.ssh_url("existing");
    // A component shipped as an OCI artifact, the way pipeline-controller ships.
    let artifact = tempfile::tempdir().unwrap();
    std::fs::write(
        artifact.path().join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-oci-component\n  namespace: default\ndata:\n  shipped: as-oci\n",
    )
    .unwrap();
    let revision = "v1@sha1:0000000000000000000000000000000000000000";
    env.registry.push_artifact("components/hello", "v1", artifact.path(), revision).unwrap();
    let component = format!("oci://{}/components/hello:v1?insecure=true", env.registry.address);
    let components = components.to_str().unwrap();
    let args = ["--url", &url, "--path", "clusters/edge", "--components-file", components, "--component", &component];
    let run = install(env, &env.kubeconfig, &args);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("apply the Flux"), "the existing Flux is reused: {}", run.stderr);
    let shipped = ["-n", "default", "configmap/from-oci-component"];
    env.wait_for_jsonpath(&shipped, "{.data.shipped}", "as-oci", std::time::Duration::from_secs(120)).unwrap();
    assert_eq!(detect(&env.kubeconfig), "gitops\n");
}

#[test]
fn a_read_only_kubeconfig_is_refused_before_anything_is_pushed() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.git.create_repo("readonly").unwrap();
    let url = env.git.ssh_url("readonly");
    let run = install(
        env,
        &env.readonly_kubeconfig,
        &["--url", &url, "--path", "clusters/ro", "--components-file", components.to_str().unwrap(), "--yes"],
    );
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(run.stderr.starts_with("error: forbidden: you may not create customresourcedefinitions"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was pushed or applied"), "{}", run.stderr);
    assert_eq!(env.git.head("readonly"), "", "nothing pushed");
}

#[test]
fn git_failures_are_exit_4_and_name_the_problem() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    let components = components.to_str().unwrap();
    // A host key that does not match: the pinned line for another key.
    let wrong = env.dir.join("wrong_known_hosts");
    let other_key = env.dir.join("other_host_key");
    run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&other_key)).unwrap();
    let key_text = std::fs::read_to_string(other_key.with_extension("pub")).unwrap();
    let fields: Vec<&str> = key_text.split_whitespace().take(2).collect();
    std::fs::write(&wrong, format!("[127.0.0.1]:{} {}\n", env.git.ssh_port, fields.join(" "))).unwrap();
    env.git.create_repo("pinned").unwrap();
    let mismatch = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args([
                "--url",
                &env.git.ssh_url("pinned"),
                "--path",
                "clusters/x",
                "--components-file",
                components,
                "--yes",
            ])
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .arg("--known-hosts-file")
            .arg(&wrong)
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(mismatch.code, Some(4), "{}", mismatch.stderr);
    assert!(mismatch.stderr.to_lowercase().contains("host key"), "{}", mismatch.stderr);

    // A git host nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let closed = format!("ssh://root@127.0.0.1:{port}/srv/none.git");
    std::fs::write(&wrong, format!("[127.0.0.1]:{port} {}\n", fields.join(" "))).unwrap();
    let unreachable = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--url", &closed, "--path", "clusters/x", "--components-file", components, "--yes"])
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .arg("--known-hosts-file")
            .arg(&wrong)
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(unreachable.code, Some(4), "{}", unreachable.stderr);
    assert_eq!(our_mutations(env), Vec::<String>::new(), "the cluster was not touched");
}

#[test]
fn install_over_https_with_basic_auth_stores_the_credentials_for_flux() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("fleet-http").unwrap();
    let url = env.git.http_url("fleet-http");
    let run = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--url", &url, "--path", "clusters/web", "--components-file", components.to_str().unwrap()])
            .args(["--timeout", "3m"])
            .env("KUBECONFIG", &env.kubeconfig)
            .env("GITOPS_GIT_USERNAME", gitops_e2e::testenv::servers::GIT_HTTP_USER)
            .env("GITOPS_GIT_PASSWORD", gitops_e2e::testenv::servers::GIT_HTTP_PASSWORD),
    );
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(!run.stderr.contains(gitops_e2e::testenv::servers::GIT_HTTP_PASSWORD), "the password is never printed");
    let keys = env.kubectl_ok(&["-n", "flux-system", "get", "secret", "flux-system", "-o=jsonpath={.data}"]).unwrap();
    assert!(keys.contains("\"username\"") && keys.contains("\"password\""), "{keys}");
    assert_eq!(detect(&env.kubeconfig), "gitops\n");
}

#[test]
fn a_wait_that_times_out_names_the_object_and_a_re_run_completes() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.git.create_repo("slow").unwrap();
    let url = env.git.ssh_url("slow");
    let components = components.to_str().unwrap();
    // No Flux controllers run yet: the first install stops at its last step.
    let first = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--url", &url, "--path", "clusters/slow", "--components-file", components, "--timeout", "5s"])
            .arg("--private-key-file")
            .arg(&env.git.client_key)
            .arg("--known-hosts-file")
            .arg(&env.git.known_hosts)
            .env("KUBECONFIG", &env.kubeconfig),
    );
    assert_eq!(first.code, Some(1), "{}", first.stderr);
    assert!(first.stderr.contains("error: step 5/5 (wait until Kustomization flux-system/flux-system and the layers platform, apps and tenants are Ready at the pushed commit) failed: Kustomization flux-system/flux-system is not Ready"), "{}", first.stderr);
    assert!(first.stderr.contains("not reconciled yet (are the Flux controllers running?)"), "{}", first.stderr);
    // The wait watches (the engine of `status --wait`) instead of reading every second;
    // Flux never syncs here, so every watch was started and waited on.
    let watched = our_watches(env);
    for (resource, selector) in [
        ("kustomizations", "fieldSelector=metadata.name%3Dflux-system"),
        ("gitrepositories", "fieldSelector=metadata.name%3Dflux-system"),
        ("deployments", "labelSelector=app.kubernetes.io%2Fpart-of%3Dflux"),
    ] {
        assert!(
            watched.iter().any(|(r, uri)| r == resource && uri.contains(selector)),
            "no watch of {resource} with {selector}: {watched:?}\n{}",
            first.stderr
        );
    }
    let head = env.git.head("slow");

    env.start_flux_controllers().unwrap();
    let second =
        install(env, &env.kubeconfig, &["--url", &url, "--path", "clusters/slow", "--components-file", components]);
    assert_eq!(second.code, Some(0), "stdout: {}\nstderr: {}", second.stdout, second.stderr);
    assert!(second.stdout.starts_with("already installed: "), "{}", second.stdout);
    assert_eq!(env.git.head("slow"), head, "the re-run commits nothing");
    assert_eq!(detect(&env.kubeconfig), "gitops\n");
}

#[test]
fn export_prints_the_manifests_without_a_cluster() {
    let components = flux_release::components();
    let run = Run::of(
        Command::new(binaries::path("kubectl-gitops-install"))
            .args(["--url", "ssh://git@git.example.com/fleet.git", "--path", "clusters/dev", "--cluster-name", "dev"])
            .arg("--components-file")
            .arg(&components)
            .arg("--export")
            .env("KUBECONFIG", "/nonexistent/kubeconfig"),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.starts_with("---\n# This manifest was generated by flux. DO NOT EDIT.\n# Flux Version: v2.9.4\n")
    );
    assert!(run.stdout.contains("  url: ssh://git@git.example.com/fleet.git\n"), "gotk-sync is there");
    assert!(run.stdout.contains("  name: kubectl-gitops\n"), "the record is there");
    assert!(run.stdout.contains("  components: source-controller,kustomize-controller,helm-controller,notification-controller,image-reflector-controller,image-automation-controller\n"));
    assert_eq!(run.stderr, "");
}

#[test]
fn a_generated_deploy_key_is_shown_never_its_private_half_and_reused_on_re_runs() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.run_flux_once_installed();
    env.git.create_repo("keys").unwrap();
    let url = env.git.ssh_url("keys");
    // The user's own key pushes (~/.ssh/id_ed25519); no known_hosts anywhere, so the host key is
    // scanned, shown and, with --yes, pinned.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::copy(&env.git.client_key, home.path().join(".ssh/id_ed25519")).unwrap();
    let run_install = || {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-install"))
                .args(["--url", &url, "--path", "clusters/keys", "--components-file", components.to_str().unwrap()])
                .args(["--yes", "--no-wait"])
                .env("HOME", home.path())
                .env("KUBECONFIG", &env.kubeconfig),
        )
    };
    let first = run_install();
    assert_eq!(first.code, Some(0), "stdout: {}\nstderr: {}", first.stdout, first.stderr);
    assert!(first.stderr.contains("the SSH host keys of [127.0.0.1]:"), "{}", first.stderr);
    assert!(first.stderr.contains("ssh-ed25519 SHA256:"), "the scanned key's fingerprint is shown: {}", first.stderr);
    assert!(!first.stderr.contains("PRIVATE KEY") && !first.stdout.contains("PRIVATE KEY"));
    let public = first
        .stderr
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("ssh-ed25519 ") && line.ends_with(" flux-testenv"))
        .unwrap_or_else(|| panic!("the deploy key is printed: {}", first.stderr))
        .to_string();

    // The user adds the key to the git server; Flux then pulls with it.
    env.git.authorize_key(&public).unwrap();
    let ready = ["-n", "flux-system", "kustomization", "flux-system"];
    env.wait_for_jsonpath(
        &ready,
        "{.status.conditions[?(@.type==\"Ready\")].status}",
        "True",
        std::time::Duration::from_secs(180),
    )
    .unwrap();

    // A re-run reuses the key in the Secret: nothing to add, nothing to confirm.
    let second = run_install();
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert!(!second.stderr.contains("Add this public key"), "{}", second.stderr);
    let stored = run(Command::new("sh").arg("-c").arg(format!(
        "kubectl --kubeconfig '{}' -n flux-system get secret flux-system -o jsonpath='{{.data.identity\\.pub}}' | base64 -d",
        env.kubeconfig.display()
    )))
    .unwrap();
    assert_eq!(stored.trim(), public, "the Secret holds the key that was shown");
}

/// A known_hosts hashed by OpenSSH (`ssh-keygen -H`, what Debian and Ubuntu write by default)
/// verifies the git host it lists; the same key also marked `@revoked` is refused.
#[test]
fn a_hashed_known_hosts_verifies_the_git_host_and_a_revoked_key_is_refused() {
    let components = flux_release::components();
    let env = &TestEnv::start(Options { flux: false }).unwrap();
    env.git.create_repo("hashed").unwrap();
    let hashed = env.dir.join("hashed_known_hosts");
    std::fs::write(&hashed, format!("{}\n", env.git.known_hosts_line)).unwrap();
    run(Command::new("ssh-keygen").arg("-H").arg("-f").arg(&hashed)).unwrap();
    let hashed_line = std::fs::read_to_string(&hashed).unwrap();
    assert!(hashed_line.starts_with("|1|") && !hashed_line.contains("127.0.0.1"), "{hashed_line}");
    let dry_run = |known_hosts: &Path| {
        Run::of(
            Command::new(binaries::path("kubectl-gitops-install"))
                .args(["--url", &env.git.ssh_url("hashed"), "--path", "clusters/dev", "--dry-run"])
                .arg("--components-file")
                .arg(&components)
                .arg("--private-key-file")
                .arg(&env.git.client_key)
                .arg("--known-hosts-file")
                .arg(known_hosts)
                .env("KUBECONFIG", &env.kubeconfig),
        )
    };
    let accepted = dry_run(&hashed);
    assert_eq!(accepted.code, Some(0), "{}", accepted.render());
    assert!(accepted.stdout.starts_with("Plan:\n"), "{}", accepted.stdout);

    let revoked = env.dir.join("revoked_known_hosts");
    std::fs::write(&revoked, format!("{hashed_line}@revoked {hashed_line}")).unwrap();
    let refused = dry_run(&revoked);
    assert_eq!(refused.code, Some(4), "{}", refused.render());
    assert!(refused.stderr.contains("which known_hosts marks @revoked"), "{}", refused.render());
    assert!(refused.stderr.contains("\nhint: "), "{}", refused.render());
    assert_eq!(our_mutations(env), Vec::<String>::new(), "the cluster was not touched");
}
