//! Snapshot tests of every binary's help, version, error paths and exit codes.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gitops_e2e::snapshot::Run;
use gitops_e2e::{binaries, flux_release};
use gitops_shared::dependencies::FLUX_RELEASE_URL;
use gitops_shared::env;

/// Runs one of our binaries with no kubeconfig and no flux CLI at hand (none on PATH, an empty
/// cache), so that what `version` says of the flux CLI is the same on every machine.
fn run(binary: &str, args: &[&str]) -> Run {
    let no_flux = flux_release::isolated_env(Path::new("/nonexistent/kubectl-gitops-cache"), FLUX_RELEASE_URL);
    Run::of(
        Command::new(binaries::path(binary))
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove(env::KUBECTL_GITOPS_FLUX_BIN)
            .envs(no_flux),
    )
}

#[test]
fn dispatcher_short_help() {
    insta::assert_snapshot!(run("kubectl-gitops", &["-h"]).render());
}

#[test]
fn dispatcher_without_a_command_prints_help_and_succeeds() {
    let run = run("kubectl-gitops", &[]);
    assert_eq!(run.code, Some(0));
    assert!(run.stdout.starts_with("GitOps for any Kubernetes cluster, on top of Flux"), "{}", run.stdout);
    assert!(run.stdout.contains("Exit codes: 0 ok"), "{}", run.stdout);
}

#[test]
fn dispatcher_version_flag() {
    insta::assert_snapshot!(run("kubectl-gitops", &["--version"]).render(), @r"
    exit_code: 0
    ----- stdout -----
    kubectl-gitops [VERSION] (commit [COMMIT])
    ----- stderr -----
    ");
}

#[test]
fn unknown_command_suggests_the_closest() {
    insta::assert_snapshot!(run("kubectl-gitops", &["stauts"]).render(), @r#"
    exit_code: 2
    ----- stdout -----
    ----- stderr -----
    error: unknown command "stauts"
    hint: did you mean "status"?
    installed commands: "app", "artifact", "completion", "component", "detect", "diff", "drift", "fleet", "flux", "install", "mcp", "metrics", "monitoring", "platform", "pr", "promote", "repo", "status", "tenant", "ui", "upgrade" and "version"
    "#);
}

#[test]
fn bad_global_flag_before_a_command_is_a_usage_error() {
    let run = run("kubectl-gitops", &["--color", "sometimes", "status"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.starts_with("error: invalid value 'sometimes' for '--color <WHEN>'"), "{}", run.stderr);
}

#[test]
fn version_never_fails_when_the_cluster_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(dir.path());
    let run = run("kubectl-gitops", &["version", "--kubeconfig", kubeconfig.to_str().unwrap()]);
    insta::assert_snapshot!(run.render(), @r"
    exit_code: 0
    ----- stdout -----
    Client Version: v[VERSION] (commit [COMMIT])
    Pinned Flux Version: v2.9.4 (development build: the sha256 of its checksums file is not pinned)
    Flux CLI: v2.9.4, downloaded and verified on first use from https://github.com/fluxcd/flux2/releases/download/v2.9.4
    Server Version: unreachable
    ----- stderr -----
    warning: cannot reach the cluster: cluster unreachable at https://127.0.0.1:[PORT]/: Connection refused (os error 111)
    ");
}

#[test]
fn version_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(dir.path());
    let run = run("kubectl-gitops", &["--kubeconfig", kubeconfig.to_str().unwrap(), "version", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report = gitops_e2e::schema::document("Version", &run.stdout);
    assert_eq!(report["client"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(report["client"]["pinnedFluxVersion"], "v2.9.4");
    assert_eq!(report["server"]["reachable"], false);
    assert!(report["server"]["error"].as_str().unwrap().contains("Connection refused"));
    assert_eq!(report["fluxCli"]["origin"], "download", "{report}");

    // A CLI named by the environment is the one that runs.
    let named = Run::of(
        Command::new(binaries::path("kubectl-gitops"))
            .args(["--kubeconfig", kubeconfig.to_str().unwrap(), "version", "-o", "json"])
            .env(env::KUBECTL_GITOPS_FLUX_BIN, "/bin/sh"),
    );
    let report = gitops_e2e::schema::document("Version", &named.stdout);
    assert_eq!(
        (report["fluxCli"]["path"].as_str(), report["fluxCli"]["origin"].as_str()),
        (Some("/bin/sh"), Some("environment"))
    );
}

#[test]
fn version_client_reads_neither_the_cluster_nor_the_flux_cli() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(dir.path());
    let kubeconfig = kubeconfig.to_str().unwrap();
    // No "cannot reach the cluster" warning: nothing was asked of it.
    insta::assert_snapshot!(run("kubectl-gitops", &["version", "--client", "--kubeconfig", kubeconfig]).render(), @r"
    exit_code: 0
    ----- stdout -----
    Client Version: v[VERSION] (commit [COMMIT])
    Pinned Flux Version: v2.9.4 (development build: the sha256 of its checksums file is not pinned)
    ----- stderr -----
    ");
    let run = run("kubectl-gitops", &["--kubeconfig", kubeconfig, "version", "--client", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report = gitops_e2e::schema::document("Version", &run.stdout);
    let keys: Vec<&String> = report.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["apiVersion", "client", "kind"], "{report}");
    assert_eq!(report["client"]["pinnedFluxVersion"], "v2.9.4");
}

#[test]
fn version_rejects_formats_it_does_not_print() {
    insta::assert_snapshot!(run("kubectl-gitops", &["version", "-o", "name"]).render(), @r"
    exit_code: 2
    ----- stdout -----
    ----- stderr -----
    error: invalid value 'name' for '--output <FORMAT>'
    hint: possible values: table, json, yaml
    ");
}

#[test]
fn completion_scripts_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let run = run("kubectl-gitops", &["completion", shell]);
        assert_eq!(run.code, Some(0), "{shell}: {}", run.stderr);
        assert!(run.stdout.contains("kubectl-gitops\" __complete"), "{shell}: {}", run.stdout);
    }
    let bash = run("kubectl-gitops", &["completion", "bash"]).stdout;
    let checked = Command::new("bash").args(["-n", "-c", &bash]).status().unwrap();
    assert!(checked.success(), "the bash script parses");
}

#[test]
fn kubectl_completion_hook_completes_commands_and_their_flags() {
    insta::assert_snapshot!(run("kubectl_complete-gitops", &["st"]).render(), @r"
    exit_code: 0
    ----- stdout -----
    status	What runs where, at which commit, healthy or not, and why
    :4
    ----- stderr -----
    ");
    insta::assert_snapshot!(run("kubectl_complete-gitops", &["detect", "-o", ""]).render(), @r"
    exit_code: 0
    ----- stdout -----
    table	Aligned columns for people
    json	JSON, for scripts. The schema is in docs/output.md
    yaml	YAML, the same data as json
    :4
    ----- stderr -----
    ");
}

#[cfg(unix)]
#[test]
fn dispatcher_forwards_global_flags_and_the_exit_code() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("kubectl-gitops-echo");
    std::fs::write(&script, "#!/bin/sh\necho \"$@\"\nexit 7\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = Run::of(
        Command::new(binaries::path("kubectl-gitops"))
            .args(["--context", "prod", "-o", "json", "echo", "a", "--b", "-n", "x"])
            .env("KUBECTL_GITOPS_PLUGIN_DIR", dir.path()),
    );
    insta::assert_snapshot!(run.render(), @r"
    exit_code: 7
    ----- stdout -----
    --context prod -o json a --b -n x
    ----- stderr -----
    ");
}

#[test]
fn detect_prints_unreachable_and_exits_3_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(dir.path());
    let started = Instant::now();
    let run = run("kubectl-gitops-detect", &["--kubeconfig", kubeconfig.to_str().unwrap()]);
    assert!(started.elapsed() < Duration::from_secs(5), "detect took {:?}", started.elapsed());
    insta::assert_snapshot!(run.render(), @r"
    exit_code: 3
    ----- stdout -----
    unreachable
    ----- stderr -----
    error: cluster unreachable at https://127.0.0.1:[PORT]/: Connection refused (os error 111)
    hint: check that the cluster is running and that `kubectl cluster-info` works with the same kubeconfig and context
    ");
}

/// The commands that need the cluster stop with the first request's own error, said once.
#[test]
fn status_app_list_and_component_list_say_an_unreachable_cluster_once() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(dir.path());
    for (binary, args) in [
        ("kubectl-gitops-status", &[][..]),
        ("kubectl-gitops-app", &["list"][..]),
        ("kubectl-gitops-component", &["list"][..]),
    ] {
        let run = run(binary, &[&["--kubeconfig", kubeconfig.to_str().unwrap()][..], args].concat());
        assert_eq!(run.code, Some(3), "{binary}: {}", run.stderr);
        assert_eq!(run.stderr.matches("cluster unreachable at").count(), 1, "{binary}: {}", run.stderr);
        assert!(run.stderr.contains("Connection refused"), "{binary}: {}", run.stderr);
    }
}

#[test]
fn detect_without_any_kubeconfig_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let run = run("kubectl-gitops-detect", &["--kubeconfig", dir.path().join("missing").to_str().unwrap()]);
    assert_eq!(run.code, Some(3));
    assert_eq!(run.stdout, "unreachable\n");
    assert!(run.stderr.starts_with("error: cannot load kubeconfig: "), "{}", run.stderr);
    assert!(run.stderr.contains("hint: check --kubeconfig, KUBECONFIG and --context"), "{}", run.stderr);
}

#[test]
fn detect_json_when_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(dir.path());
    let run = run("kubectl-gitops-detect", &["--kubeconfig", kubeconfig.to_str().unwrap(), "-o", "json"]);
    assert_eq!(run.code, Some(3));
    let detection = gitops_e2e::schema::document("Detection", &run.stdout);
    assert_eq!(detection["state"], "unreachable");
    assert_eq!(detection["flux"], serde_json::Value::Null);
    assert!(detection["error"].as_str().unwrap().contains("Connection refused"));
}

#[test]
fn artifact_help() {
    insta::assert_snapshot!(run("kubectl-gitops-artifact", &["-h"]).render());
    insta::assert_snapshot!(run("kubectl-gitops-artifact", &["push", "-h"]).render());
}

#[test]
fn detect_help() {
    insta::assert_snapshot!(run("kubectl-gitops-detect", &["-h"]).render());
}

#[test]
fn upgrade_help() {
    insta::assert_snapshot!(run("kubectl-gitops-upgrade", &["-h"]).render());
}

/// `kubectl gitops completion bash | head -0`: a reader that went away is not our error (exit 0,
/// nothing on stderr), in the dispatcher and in a command binary's runtime alike.
#[cfg(unix)]
#[test]
fn a_closed_stdout_pipe_exits_quietly() {
    for (binary, args) in [("kubectl-gitops", ["completion", "bash"]), ("kubectl-gitops-status", ["__complete", ""])] {
        let (reader, writer) = std::io::pipe().unwrap();
        // The reading end is closed before the child starts, so its first write fails with EPIPE.
        drop(reader);
        let output = Command::new(binaries::path(binary)).args(args).stdout(writer).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!((output.status.code(), stderr.as_ref()), (Some(0), ""), "{binary} {args:?}");
    }
}

#[test]
fn kubeconfig_lists_merge_like_kubectl_and_quiet_hides_warnings() {
    // The first file names the current context; the second defines it. kubectl merges both.
    let dir = tempfile::tempdir().unwrap();
    let full = binaries::unreachable_kubeconfig(dir.path());
    let first = dir.path().join("first.kubeconfig");
    std::fs::write(&first, "apiVersion: v1\nkind: Config\ncurrent-context: closed\n").unwrap();
    let list = format!("{}:{}", first.display(), full.display());
    let run = Run::of(Command::new(binaries::path("kubectl-gitops-detect")).arg("-v").env("KUBECONFIG", &list));
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.starts_with("cluster: https://127.0.0.1:"), "{}", run.stderr);
    assert!(run.stderr.contains("(context closed, namespace default, request timeout 5s)"), "{}", run.stderr);
    let quiet =
        Run::of(Command::new(binaries::path("kubectl-gitops")).args(["-q", "version"]).env("KUBECONFIG", &list));
    assert_eq!(quiet.code, Some(0));
    assert_eq!(quiet.stderr, "", "-q hides the unreachable warning");
}

#[test]
fn install_bad_input_is_a_usage_error_before_anything_happens() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(dir.path());
    let kubeconfig = kubeconfig.to_str().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (
            &["--url", "ssh://git@example.com/fleet.git", "--path", "../escape"],
            "error: --path \"../escape\" must be a relative directory inside the repo\nhint: use a path like clusters/dev (no leading /, no ..)\n",
        ),
        (
            &["--url", "ftp://example.com/fleet.git"],
            "error: unsupported repository URL \"ftp://example.com/fleet.git\"\nhint: use ssh://user@host[:port]/path, user@host:path or https://host/path\n",
        ),
        (
            &[],
            "error: --url is required with --provider git\nhint: pass --url ssh://git@host/path/repo.git (or https://…)\n",
        ),
        (
            &["--url", "ssh://git@example.com/fleet.git", "--cluster-name", "Dev_1"],
            "error: --cluster-name \"Dev_1\" is not a valid name\nhint: use lower-case letters, digits and '-', at most 63 characters, starting and ending with a letter or digit\n",
        ),
        (
            &["--url", "ssh://git@example.com/fleet.git", "--components", "source-controller,kustomize-controler"],
            "error: unknown Flux component \"kustomize-controler\"\nhint: known components: source-controller, kustomize-controller, helm-controller, notification-controller, image-reflector-controller, image-automation-controller\n",
        ),
        (
            &["--provider", "github", "--owner", "acme", "--repository", ".."],
            "error: \"..\" is not a --repository name: \"..\" names a directory, not a repository\nhint: give one name; a name needs a letter, digit, '-' or '_'\n",
        ),
        (
            &["--provider", "gitlab", "--owner", "group/.", "--repository", "fleet"],
            "error: \"group/.\" is not an --owner: \".\" names a directory, not a repository\nhint: give a user, an organisation or a GROUP/SUBGROUP; a name needs a letter, digit, '-' or '_'\n",
        ),
    ];
    for (args, stderr) in cases {
        let run = run("kubectl-gitops-install", &[&["--kubeconfig", kubeconfig], args].concat());
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr, stderr, "{args:?}");
        assert_eq!(run.stdout, "");
    }
    let unknown_provider = run("kubectl-gitops-install", &["--provider", "bitbucket"]);
    assert_eq!(unknown_provider.code, Some(2));
    assert!(
        unknown_provider.stderr.starts_with("error: invalid value 'bitbucket' for '--provider <PROVIDER>'"),
        "{}",
        unknown_provider.stderr
    );
}

#[test]
fn install_help() {
    insta::assert_snapshot!(run("kubectl-gitops-install", &["-h"]).render());
}

/// `--version X` is never a silent no-op (#58): it printed our version and exited 0 having done
/// nothing (`upgrade --version v2.7.0 --dry-run`). `install` and `upgrade` take it for
/// `--flux-version`, as `flux install --version` spells it, with a warning; every other command
/// refuses it by name. Only the dispatcher prints our version (`--version`, `-V`, `version`);
/// `flux` hands every word to the flux CLI.
#[test]
fn version_with_a_value_is_never_a_silent_no_op() {
    let commands = [
        "app",
        "artifact",
        "component",
        "detect",
        "diff",
        "drift",
        "fleet",
        "install",
        "mcp",
        "metrics",
        "monitoring",
        "platform",
        "pr",
        "promote",
        "repo",
        "status",
        "tenant",
        "ui",
        "upgrade",
    ];
    for command in commands {
        let run = run("kubectl-gitops", &[command, "--version", "v0.0.1"]);
        assert_ne!(run.code, Some(0), "{command}: {}", run.render());
        assert!(!run.stdout.contains("(commit "), "{command} printed a version: {}", run.render());
        if ["install", "upgrade"].contains(&command) {
            let warned = "--version is deprecated: use --flux-version";
            assert!(run.stderr.contains(warned), "{command}: {}", run.render());
        } else {
            let refused = "error: --version is not a flag of this command: it would have done nothing\nhint: ";
            assert!(run.stderr.starts_with(refused), "{command}: {}", run.render());
        }
    }
    for flag in ["--version", "-V"] {
        let run = run("kubectl-gitops", &[flag]);
        assert_eq!(run.code, Some(0), "{flag}: {}", run.render());
        assert!(run.stdout.starts_with("kubectl-gitops "), "{flag}: {}", run.render());
    }
}

/// `-o` may stand before a grouped command's subcommand, as `--help` and the README say (#58):
/// `kubectl gitops -o json app list` was refused with "possible values: table" before `list` was
/// read. The subcommand that runs judges the format, wherever `-o` stood. Without a cluster each
/// then fails at the cluster, not at `-o`.
#[test]
fn output_before_a_grouped_command_is_judged_by_the_subcommand() {
    let forms: [&[&str]; 6] = [
        &["-o", "json", "app", "list"],
        &["app", "-o", "json", "list"],
        &["-o", "json", "artifact", "list", "oci://127.0.0.1:1/x"],
        &["-o", "yaml", "tenant", "list"],
        &["-o", "json", "pr", "list"],
        &["platform", "-o", "json", "list"],
    ];
    for words in forms {
        let run = run("kubectl-gitops", words);
        assert_ne!(run.code, Some(0), "{words:?}: {}", run.render());
        assert!(!run.stderr.contains("'--output <FORMAT>'"), "{words:?}: {}", run.render());
    }
    // A format the group offers (app list's `name`) that the subcommand does not print.
    let run = run("kubectl-gitops", &["-o", "name", "app", "add", "web", "--url", "https://example.com/web.git"]);
    assert_eq!(run.code, Some(2), "{}", run.render());
    let refused = "error: invalid value 'name' for '--output <FORMAT>'\nhint: possible values: table, json, yaml\n";
    assert_eq!(run.stderr, refused, "{}", run.render());
}

/// Every duration flag reads days too (#58): `--timeout 1d` was refused while `metrics dora
/// --since 30d` worked. Without a cluster the command then fails at the cluster, not at the flag.
#[test]
fn every_duration_flag_takes_days() {
    let forms: [&[&str]; 3] = [
        &["app", "add", "web", "--url", "https://example.com/web.git", "--timeout", "1d", "--dry-run"],
        &["status", "--request-timeout", "1d"],
        &["app", "add", "web", "--url", "https://example.com/web.git", "--interval", "1d12h", "--dry-run"],
    ];
    for words in forms {
        let run = run("kubectl-gitops", words);
        assert_ne!(run.code, Some(0), "{words:?}: {}", run.render());
        assert!(!run.stderr.contains("invalid value"), "{words:?}: {}", run.render());
        assert!(!run.stderr.contains("invalid duration"), "{words:?}: {}", run.render());
    }
    let run = run("kubectl-gitops", &["status", "--request-timeout", "1w"]);
    assert_eq!(run.code, Some(2), "{}", run.render());
    assert!(run.stderr.contains("unknown unit \"w\" (use ms, s, m, h or d)"), "{}", run.render());
}

#[test]
fn app_help() {
    insta::assert_snapshot!(run("kubectl-gitops-app", &["-h"]).render());
}

#[test]
fn app_add_help() {
    insta::assert_snapshot!(run("kubectl-gitops-app", &["add", "-h"]).render());
}

/// Every kind of bad input is refused before any cluster, repo or provider is contacted (there
/// is no kubeconfig at all here): exit 2, `error:` naming the problem, `hint:` saying what to do.
#[test]
fn app_add_bad_input_is_a_usage_error_before_anything_happens() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "replicas: 2\nimage:\n  tag: [1, 2\n").unwrap();
    let list = dir.path().join("list.yaml");
    std::fs::write(&list, "- a\n- b\n").unwrap();
    let (broken, list) = (broken.to_str().unwrap(), list.to_str().unwrap());
    let git = "https://github.com/acme/app";
    let charts = "https://charts.example.com";
    let fleet = "ssh://git@example.com/fleet.git";
    let cases: Vec<Vec<&str>> = vec![
        vec!["add", "Pod_Info", "--url", git],
        vec!["add", "podinfo", "--url", "ftp://example.com/app"],
        vec!["add", "podinfo", "--url", git, "--path", "../../etc"],
        vec!["add", "podinfo", "--url", git, "--chart-path", "/charts/x"],
        vec!["add", "podinfo", "--url", charts, "--chart", "podinfo", "--values", "/nonexistent/values.yaml"],
        vec!["add", "podinfo", "--url", charts, "--chart", "podinfo", "--values", broken],
        vec!["add", "podinfo", "--url", charts, "--chart", "podinfo", "--values", list],
        vec!["add", "podinfo", "--url", git, "--values", list],
        vec!["add", "podinfo", "--url", charts, "--chart", "podinfo", "--path", "./x"],
        vec!["add", "podinfo", "--url", charts, "--chart", "podinfo", "--branch", "main"],
        vec!["add", "podinfo", "--url", "ssh://git@example.com/app.git", "--chart", "podinfo"],
        vec!["add", "podinfo", "--url", git, "--tag", "v1", "--branch", "main"],
        vec!["add", "podinfo", "--url", git, "--author", "nobody"],
        vec!["add", "podinfo", "--url", git, "--depends-on", "Bad Name"],
        vec!["add", "podinfo", "--url", git, "--pr", "--auto-merge"],
        // Unchecked before, these two got past the flags and failed on the missing SSH key.
        vec!["add", "podinfo", "--url", "ssh://git@example.com/app.git", "--semver", "~~x", "--config-repo", fleet],
        vec!["add", "podinfo", "--url", charts, "--chart", "podinfo", "--chart-version", ">>1", "--config-repo", fleet],
        // Names Kubernetes or git would refuse, so Flux never could use them.
        vec!["add", "podinfo", "--url", git, "--cluster-name", "Dev"],
        vec!["add", "podinfo", "--url", git, "--secret-ref", "Git_Creds"],
        vec!["add", "podinfo", "--url", git, "--branch", "a..b"],
        vec!["add", "podinfo", "--url", git, "--commit", "c88a2f4", "--config-repo", fleet],
        vec!["add", "podinfo", "--url", git, "--config-repo", fleet, "--config-branch", "a b"],
        vec!["remove", "Pod_Info"],
    ];
    let mut text = String::new();
    for args in cases {
        let run = run("kubectl-gitops-app", &args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("error: "), "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        text.push_str(&format!(
            "$ app {}\n{}\n",
            args.join(" ").replace(dir.path().to_str().unwrap(), "[DIR]"),
            run.stderr.replace(dir.path().to_str().unwrap(), "[DIR]")
        ));
    }
    insta::assert_snapshot!(text);
}

/// `--export` needs no cluster and no repo: the Flux YAML only, as `flux create … --export` writes it.
#[test]
fn app_add_export_prints_the_flux_objects() {
    let args =
        ["add", "podinfo", "--url", "https://github.com/stefanprodan/podinfo", "--path", "./kustomize", "--export"];
    insta::assert_snapshot!(run("kubectl-gitops-app", &args).render());
    let helm = [
        "add",
        "db",
        "--url",
        "oci://ghcr.io/acme/charts",
        "--chart",
        "postgres",
        "--chart-version",
        "16.x",
        "--export",
    ];
    insta::assert_snapshot!(run("kubectl-gitops-app", &helm).render());
}

/// The `--values` files are part of what `--export` prints: merged into the HelmRelease's
/// `spec.values` (later files win), as `flux create helmrelease --values … --export` prints them.
#[test]
fn app_add_export_includes_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.yaml");
    std::fs::write(&base, "replicaCount: 1\nimage:\n  tag: \"6.5\"\nui:\n  message: hello\n").unwrap();
    let prod = dir.path().join("prod.yaml");
    std::fs::write(&prod, "replicaCount: 3\nui:\n  color: blue\n").unwrap();
    let args = [
        "add",
        "podinfo",
        "--url",
        "https://stefanprodan.github.io/podinfo",
        "--chart",
        "podinfo",
        "--values",
        base.to_str().unwrap(),
        "--values",
        prod.to_str().unwrap(),
        "--export",
    ];
    insta::assert_snapshot!(run("kubectl-gitops-app", &args).render());
}

#[test]
fn status_help() {
    insta::assert_snapshot!(run("kubectl-gitops-status", &["-h"]).render());
}

#[test]
fn metrics_dora_help() {
    insta::assert_snapshot!(run("kubectl-gitops-metrics", &["dora", "-h"]).render());
}

#[test]
fn tenant_add_help() {
    insta::assert_snapshot!(run("kubectl-gitops-tenant", &["add", "-h"]).render());
}

#[test]
fn repo_create_help() {
    insta::assert_snapshot!(run("kubectl-gitops-repo", &["create", "-h"]).render());
}

/// `repo create` refuses bad names and sources before connecting (no kubeconfig here).
#[test]
fn repo_create_bad_input_is_a_usage_error_before_anything_happens() {
    let bad_name = run("kubectl-gitops-repo", &["create", "a/b/c"]);
    assert_eq!(bad_name.code, Some(2), "{}", bad_name.render());
    assert_eq!(
        bad_name.stderr,
        "error: \"a/b/c\" is not a repository name\nhint: give NAME or OWNER/NAME: letters, digits, '-', '_' and '.'\n"
    );
    for dots in [".", "..", "...", "acme/.."] {
        let refused = run("kubectl-gitops-repo", &["create", dots]);
        assert_eq!(refused.code, Some(2), "{}", refused.render());
        let part = dots.rsplit('/').next().unwrap();
        assert_eq!(
            refused.stderr,
            format!(
                "error: {dots:?} is not a repository name: {part:?} names a directory, not a repository\nhint: give NAME \
                 or OWNER/NAME; a name needs a letter, digit, '-' or '_'\n"
            )
        );
    }
    let bad_url = run("kubectl-gitops-repo", &["create", "shop", "--from-url", "nowhere"]);
    assert_eq!(bad_url.code, Some(2), "{}", bad_url.render());
    assert!(
        bad_url.stderr.starts_with("error: unsupported repository URL \"nowhere\"\nhint: "),
        "{}",
        bad_url.render()
    );
    let fork_alone = run("kubectl-gitops-repo", &["create", "shop", "--fork"]);
    assert_eq!(fork_alone.code, Some(2), "{}", fork_alone.render());
    assert!(fork_alone.stderr.contains("--from-template"), "{}", fork_alone.render());
}

/// `tenant add|list|remove` refuse bad flags before connecting (no kubeconfig here).
#[test]
fn tenant_bad_input_is_a_usage_error_before_anything_happens() {
    let cases: [&[&str]; 7] = [
        &["list", "-l", "team in web"],
        &["add", "Team_A", "--with-namespace", "a"],
        &["add", "team-a"],
        &["add", "team-a", "--with-namespace", "a", "--cluster-role", "cluster-admin"],
        &["add", "team-a", "--with-namespace", "a", "--repo", "https://h/x", "--path", "../up"],
        &["remove", "Team_X"],
        &["list", "-o", "prometheus"],
    ];
    let mut text = String::new();
    for args in cases {
        let run = run("kubectl-gitops-tenant", args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("error: ") && run.stderr.contains("\nhint: "), "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        text.push_str(&format!("$ kubectl-gitops-tenant {}\n{}\n", args.join(" "), run.stderr));
    }
    insta::assert_snapshot!(text);
}

/// `metrics dora` and `app history` refuse bad flags before connecting (no kubeconfig here).
#[test]
fn history_and_dora_bad_input_is_a_usage_error_before_anything_happens() {
    let cases: [(&str, &[&str]); 8] = [
        ("kubectl-gitops-metrics", &["dora", "--since", "forever"]),
        ("kubectl-gitops-metrics", &["dora", "--since", "0d"]),
        ("kubectl-gitops-metrics", &["dora", "--failure-window=1x"]),
        ("kubectl-gitops-metrics", &["dora", "--app", "Web_App"]),
        ("kubectl-gitops-metrics", &["dora", "-o", "wide"]),
        ("kubectl-gitops-app", &["history", "Web_App"]),
        ("kubectl-gitops-app", &["history", "web", "-o", "prometheus"]),
        ("kubectl-gitops-status", &["-o", "prometheus"]),
    ];
    let mut text = String::new();
    for (binary, args) in cases {
        let run = run(binary, args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with("error: ") && run.stderr.contains("\nhint: "), "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        text.push_str(&format!("$ {binary} {}\n{}\n", args.join(" "), run.stderr));
    }
    insta::assert_snapshot!(text);
}

/// A token in a URL's userinfo is refused wherever a URL is taken, before anything is asked, and
/// never shown: a repository URL (`https://user:token@…`, or the token as the user name, as GitHub
/// takes it), an app's source, a Helm repository, Prometheus (#32).
#[test]
fn a_token_in_a_url_is_refused_and_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = binaries::unreachable_kubeconfig(dir.path());
    let kubeconfig = kubeconfig.to_str().unwrap();
    let secret = "glpat-s3cret-token";
    let with_user = format!("https://ci:{secret}@gitlab.example.com/acme/fleet.git");
    let as_user = format!("https://{secret}@github.com/acme/app.git");
    let charts = format!("https://ci:{secret}@charts.example.com");
    let prometheus = format!("http://admin:{secret}@127.0.0.1:9090");
    let ssh = "ssh://git@example.com/fleet.git";
    let cases: [(&str, Vec<&str>); 9] = [
        ("kubectl-gitops-app", vec!["add", "app", "--url", &as_user, "--export"]),
        ("kubectl-gitops-app", vec!["add", "app", "--url", &charts, "--chart", "app", "--export"]),
        ("kubectl-gitops-app", vec!["add", "app", "--url", "https://github.com/acme/app", "--config-repo", &with_user]),
        ("kubectl-gitops-install", vec!["--kubeconfig", kubeconfig, "--url", &with_user]),
        ("kubectl-gitops-install", vec!["--kubeconfig", kubeconfig, "--url", &as_user, "--export"]),
        ("kubectl-gitops-install", vec!["--kubeconfig", kubeconfig, "--url", ssh, "--platform-repo", &as_user]),
        ("kubectl-gitops-repo", vec!["create", "app", "--from-url", &as_user]),
        ("kubectl-gitops-tenant", vec!["add", "team-a", "--with-namespace", "a", "--repo", &as_user]),
        ("kubectl-gitops-monitoring", vec!["status", "--prometheus-url", &prometheus]),
    ];
    for (binary, args) in cases {
        let run = run(binary, &args);
        assert_eq!(run.code, Some(2), "{binary} {args:?}: {}", run.render());
        let shown = format!("{}{}", run.stdout, run.stderr);
        assert!(!shown.contains(secret), "{binary} {args:?} shows the token: {shown}");
        assert!(run.stderr.starts_with("error: the URL ") && run.stderr.contains("://***@"), "{}", run.stderr);
        assert!(run.stderr.contains("\nhint: remove them from the URL and "), "{}", run.stderr);
    }
}
