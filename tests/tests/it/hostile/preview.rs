//! A pull request that asks the preview for the cluster's Secrets, by each route a change can
//! take: a Kustomization it adds that substitutes from a Secret the author names, and a value an
//! existing Kustomization substitutes from its own Secret, put where no Secret mask looks (a
//! ConfigMap). `diff --pull-request` (screen and JSON) and `pr comment` show neither value, say
//! what was withheld and why, and the API server's audit log shows no read of the Secret the
//! change asked for.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::process::Command;

use gitops_e2e::snapshot::Run;
use gitops_e2e::{binaries, flux_release};
use gitops_shared::provider::Kind;

use crate::app_provider::Fixture;

const REPO: &str = "acme/fleet";
/// The credentials Secret the attacker's Kustomization names.
const PASSWORD: &str = "pw-7f3a9c1e5b2d";
/// The value the operator's Kustomization `web` substitutes from its own Secret.
const ENDPOINT: &str = "https://db.internal/s3cr3t-path-91c2";

/// `git ARGS` in `dir`, as a committer.
fn git(dir: &std::path::Path, args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.name=Someone", "-c", "user.email=someone@example.invalid"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

fn write(dir: &std::path::Path, path: &str, text: &str) {
    std::fs::create_dir_all(dir.join(path).parent().unwrap()).unwrap();
    std::fs::write(dir.join(path), text).unwrap();
}

/// A Kustomization in flux-system applying `path` of the config repo into `default`, substituting
/// from the Secret `secret`.
fn kustomization(name: &str, path: &str, secret: &str) -> String {
    format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\n\
         spec:\n  interval: 10m0s\n  path: {path}\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n\
         \x20 postBuild:\n    substituteFrom:\n    - kind: Secret\n      name: {secret}\n"
    )
}

fn config_map(name: &str, data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{data}")
}

/// `clusters/dev/kustomization.yaml` with `extra` listed after install's entries.
fn listed(work: &std::path::Path, extra: &[&str]) {
    let path = work.join("clusters/dev/kustomization.yaml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for entry in extra {
        text.push_str(&format!("- {entry}\n"));
    }
    std::fs::write(path, text).unwrap();
}

fn assert_nothing_of_the_secrets(what: &str, text: &str) {
    use base64::Engine;
    for value in [PASSWORD, ENDPOINT, "s3cr3t-path", "7f3a9c1e5b2d"] {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        assert!(!text.contains(value) && !text.contains(&encoded), "{what} shows {value}:\n{text}");
    }
}

#[test]
fn a_pull_request_asking_for_secrets_gets_placeholders_in_the_preview_and_the_comment() {
    let fixture = Fixture::install_with_flux(Kind::GitHub);
    let env = &fixture.env;
    for (secret, key, value) in [("cluster-creds", "password", PASSWORD), ("web-vars", "endpoint", ENDPOINT)] {
        env.kubectl_ok(&[
            "-n",
            "flux-system",
            "create",
            "secret",
            "generic",
            secret,
            &format!("--from-literal={key}={value}"),
        ])
        .unwrap();
    }
    // The operator's Kustomization `web`, which substitutes from its own Secret.
    let clone = tempfile::tempdir().unwrap();
    let work = clone.path();
    let bare = env.git.repos.join(format!("{REPO}.git"));
    git(work, &["clone", "-q", bare.to_str().unwrap(), "."]);
    write(work, "clusters/dev/web.yaml", &kustomization("web", "./apps/web", "web-vars"));
    write(work, "apps/web/kustomization.yaml", "resources:\n- config.yaml\n");
    write(work, "apps/web/config.yaml", &config_map("web-config", "  greeting: hello\n"));
    listed(work, &["web.yaml"]);
    git(work, &["add", "."]);
    git(work, &["commit", "-q", "-m", "web"]);
    git(work, &["push", "-q", "origin", "main"]);
    env.kubectl_ok(&[
        "-n",
        "flux-system",
        "annotate",
        "--overwrite",
        "gitrepository/flux-system",
        "reconcile.fluxcd.io/requestedAt=web",
    ])
    .unwrap();
    env.wait_ready(&["kustomization/web"], std::time::Duration::from_secs(120)).unwrap();

    // The attacker's pull request: a Kustomization of its own naming the credentials Secret, and
    // `web`'s variable put into a ConfigMap.
    git(work, &["checkout", "-q", "-b", "innocent"]);
    write(work, "clusters/dev/steal.yaml", &kustomization("steal", "./apps/steal", "cluster-creds"));
    write(work, "apps/steal/kustomization.yaml", "resources:\n- config.yaml\n");
    write(work, "apps/steal/config.yaml", &config_map("stolen", "  pw: \"${password}\"\n"));
    listed(work, &["steal.yaml"]);
    write(work, "apps/web/kustomization.yaml", "resources:\n- config.yaml\n- leak.yaml\n");
    write(work, "apps/web/leak.yaml", &config_map("leak", "  e: \"${endpoint}\"\n  wrapped: \"x-${endpoint}-y\"\n"));
    git(work, &["add", "."]);
    git(work, &["commit", "-q", "-m", "Tidy the config"]);
    git(work, &["push", "-q", "origin", "innocent"]);
    let number = fixture.standin.add_pull_request(REPO, "innocent", "main", "Tidy the config").to_string();
    let plugins = binaries::plugin_dir();
    let key = env.git.client_key.display().to_string();
    let hosts = env.git.known_hosts.display().to_string();
    let keyed = |args: &[&str]| -> Run {
        let args: Vec<&str> =
            args.iter().copied().chain(["--private-key-file", &key, "--known-hosts-file", &hosts]).collect();
        let mut command = fixture.kubectl_gitops_command(plugins.path(), &args);
        command.env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli()).env("NO_COLOR", "1");
        Run::of(&mut command)
    };
    let before = env.our_requests().unwrap().len();

    let screen = keyed(&["diff", "--pull-request", &number]);
    assert_eq!(screen.code, Some(1), "{}", screen.render());
    assert_nothing_of_the_secrets("diff", &screen.render());
    let line = |start: &str| screen.stdout.lines().find(|line| line.starts_with(start)).unwrap_or_default();
    assert!(line("+  pw: ").contains("WITHHELD(Secret flux-system/cluster-creds)"), "{}", screen.stdout);
    assert!(line("+  e: ").contains("[secret flux-system/web-vars:endpoint]"), "{}", screen.stdout);
    assert!(line("+  wrapped: ").contains("x-[secret flux-system/web-vars:endpoint]-y"), "{}", screen.stdout);
    let withheld = "withheld: Kustomization flux-system/steal: Secret flux-system/cluster-creds is not read (it would \
                    give password: shown as WITHHELD(…)): the change adds this Kustomization";
    assert!(screen.stdout.contains(withheld), "{}", screen.stdout);
    let json = keyed(&["diff", "--pull-request", &number, "-o", "json"]);
    assert_nothing_of_the_secrets("diff -o json", &json.render());
    let document = gitops_e2e::schema::document("Diff", &json.stdout);
    let steal = document["kustomizations"].as_array().unwrap().iter().find(|k| k["name"] == "steal").unwrap();
    assert_eq!(steal["withheld"][0]["secret"], "flux-system/cluster-creds", "{steal:#}");
    assert_eq!(steal["withheld"][0]["keys"], serde_json::json!(["password"]), "{steal:#}");

    let posted = keyed(&["pr", "comment", &number]);
    assert_eq!(posted.code, Some(0), "{}", posted.render());
    let comments = fixture.standin.comments(REPO, number.parse().unwrap());
    let [(_, _, body)] = &comments[..] else { panic!("{comments:?}") };
    assert_nothing_of_the_secrets("the comment", body);
    assert!(body.contains("Secret flux-system/cluster-creds is not read"), "{body}");
    assert_nothing_of_the_secrets("pr comment", &posted.render());

    // Not one read of the Secret the change named; `web`'s own, which its controller reads too.
    let ours = env.our_requests().unwrap();
    let secrets: Vec<&str> =
        ours[before..].iter().filter(|r| r.resource == "secrets").map(|r| r.uri.as_str()).collect();
    assert!(!secrets.iter().any(|uri| uri.contains("cluster-creds")), "{secrets:#?}");
    assert!(secrets.iter().any(|uri| uri.contains("/secrets/web-vars")), "{secrets:#?}");
}
