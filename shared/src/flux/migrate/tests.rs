//! Golden tests of the migration on manifests shaped the way older Flux CLIs and Weave GitOps
//! wrote them, with the edits users make (comments, odd intervals, extra fields).

use super::*;

const WEAVE_GITOPS_APP: &str = include_str!("testdata/weave-gitops-app.yaml");
const FLUX_CLI_HELM: &str = include_str!("testdata/flux-cli-helm.yaml");
const ALERTING: &str = include_str!("testdata/alerting.yaml");
const PATCHES_BY_HAND: &str = include_str!("testdata/patches-by-hand.yaml");
const HELM_V2BETA2: &str = include_str!("testdata/helm-v2beta2.yaml");

/// The migrated text, then what was rewritten, left alone and blocked: one golden per file.
fn report(name: &str, text: &str, all: bool) -> String {
    let migrated = migrate(text, all);
    let mut out = format!("# {name}\n{}\n# rewrites\n", migrated.text);
    for rewrite in &migrated.rewrites {
        out.push_str(&format!("{}: {} {}\n", rewrite.line, rewrite.object, rewrite.what));
    }
    for rewrite in &migrated.not_ours {
        out.push_str(&format!("not ours {}: {} {}\n", rewrite.line, rewrite.object, rewrite.what));
    }
    for blocker in &migrated.blockers {
        out.push_str(&format!("blocked {}: {} {}\n", blocker.line, blocker.object, blocker.why));
    }
    out
}

/// Every line but the rewritten ones is kept byte for byte (comments, quoting, order).
fn assert_only_rewritten_lines_changed(before: &str, migrated: &Migrated) {
    let removed = migrated.rewrites.iter().filter(|r| r.what.starts_with("removed ")).count();
    assert_eq!(before.lines().count() - removed, migrated.text.lines().count());
    let changed: usize = {
        let after: Vec<&str> = migrated.text.lines().collect();
        let kept: Vec<&str> = before
            .lines()
            .enumerate()
            .filter(|(index, _)| {
                !migrated.rewrites.iter().any(|r| r.line == index + 1 && r.what.starts_with("removed "))
            })
            .map(|(_, line)| line)
            .collect();
        kept.iter().zip(&after).filter(|(a, b)| a != b).count()
    };
    let version_rewrites = migrated.rewrites.iter().filter(|r| !r.what.starts_with("removed ")).count();
    assert_eq!(changed, version_rewrites, "only apiVersion lines differ");
    assert_eq!(before.ends_with('\n'), migrated.text.ends_with('\n'));
}

#[test]
fn a_weave_gitops_app_moves_to_v1_and_keeps_every_edit() {
    let migrated = migrate(WEAVE_GITOPS_APP, false);
    assert_only_rewritten_lines_changed(WEAVE_GITOPS_APP, &migrated);
    assert!(migrated.blockers.is_empty());
    insta::assert_snapshot!(report("weave-gitops-app.yaml", WEAVE_GITOPS_APP, false));
}

#[test]
fn a_helm_release_from_the_flux_cli_moves_to_helm_v2() {
    let migrated = migrate(FLUX_CLI_HELM, false);
    assert_only_rewritten_lines_changed(FLUX_CLI_HELM, &migrated);
    assert!(migrated.text.contains("    apiVersion: v1beta2   # a value"), "values are not objects");
    insta::assert_snapshot!(report("flux-cli-helm.yaml", FLUX_CLI_HELM, false));
}

#[test]
fn a_helm_release_at_v2beta2_moves_to_v2_with_its_remediation_settings() {
    let migrated = migrate(HELM_V2BETA2, false);
    assert_only_rewritten_lines_changed(HELM_V2BETA2, &migrated);
    assert!(migrated.blockers.is_empty(), "valuesFiles is still in v2");
    insta::assert_snapshot!(report("helm-v2beta2.yaml", HELM_V2BETA2, false));
}

#[test]
fn alerts_and_providers_move_to_v1beta3_and_only_ours_unless_all() {
    let ours = migrate(ALERTING, false);
    assert_only_rewritten_lines_changed(ALERTING, &ours);
    assert_eq!(ours.not_ours.len(), 1);
    insta::assert_snapshot!(report("alerting.yaml", ALERTING, false));
    let all = migrate(ALERTING, true);
    assert_eq!(all.rewrites.len(), 3);
    assert!(all.not_ours.is_empty());
    assert!(!all.text.contains("v1beta2"));
}

#[test]
fn fields_that_need_a_person_block_the_migration() {
    let migrated = migrate(PATCHES_BY_HAND, false);
    insta::assert_snapshot!(report("patches-by-hand.yaml", PATCHES_BY_HAND, false));
    assert_eq!(migrated.blockers.len(), 1);
    assert!(migrated.blockers[0].why.contains("spec.patches"));
}

#[test]
fn current_manifests_are_left_as_they_are() {
    let current = WEAVE_GITOPS_APP
        .replace("/v1beta2", "/v1")
        .replace("  gitImplementation: go-git\n", "")
        .replace("  validation: client\n", "");
    let migrated = migrate(&current, true);
    assert_eq!(migrated.text, current);
    assert!(migrated.rewrites.is_empty() && migrated.blockers.is_empty());
    assert_eq!(migrate("", false).text, "");
    assert_eq!(migrate("kind: ConfigMap\napiVersion: v1\n", true).text, "kind: ConfigMap\napiVersion: v1\n");
}

/// The migrated manifests still build with kustomize (the real `kubectl kustomize`), and the
/// objects they build are the migrated ones.
#[test]
fn migrated_manifests_still_kustomize_build() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("app.yaml", WEAVE_GITOPS_APP),
        ("helm.yaml", FLUX_CLI_HELM),
        ("alerting.yaml", ALERTING),
        ("ingress.yaml", HELM_V2BETA2),
    ];
    let mut resources = String::from("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), migrate(text, true).text).unwrap();
        resources.push_str(&format!("  - {name}\n"));
    }
    std::fs::write(dir.path().join("kustomization.yaml"), resources).unwrap();
    let output = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(dir.path())
        .output()
        .expect("kubectl on PATH: make test and .ci/run provide it");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let built = crate::yaml::documents_from_str(&String::from_utf8_lossy(&output.stdout)).unwrap();
    assert_eq!(built.len(), 8);
    for object in &built {
        let (api_version, kind) = (object["apiVersion"].as_str().unwrap(), object["kind"].as_str().unwrap());
        let (group, version) = api_version.split_once('/').unwrap();
        assert_eq!(Some(version), super::release::latest_version(group, kind), "{kind}");
    }
    let kustomization = built.iter().find(|o| o["kind"] == "Kustomization").unwrap();
    assert_eq!(kustomization["spec"]["timeout"], "5m0s");
    assert!(kustomization["spec"].get("validation").is_none());
}
