//! The diff's summary and its lines, without a cluster.

use super::*;

fn object(action: Action) -> ObjectDiff {
    ObjectDiff {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some("default".into()),
        name: "a".into(),
        action,
        diff: None,
        images: Vec::new(),
        message: None,
        compared_here: false,
    }
}

fn kustomization(objects: Vec<ObjectDiff>, error: Option<&str>) -> KustomizationDiff {
    KustomizationDiff {
        namespace: "flux-system".into(),
        name: "web".into(),
        source: "GitRepository/flux-system/flux-system".into(),
        path: "./apps/web".into(),
        objects,
        unchanged: 2,
        compared_here: 0,
        error: error.map(String::from),
        deleted: false,
        helm_releases: Vec::new(),
        withheld: Vec::new(),
    }
}

fn diff_of(kustomizations: Vec<KustomizationDiff>) -> Diff {
    Diff {
        source: String::new(),
        compared: String::new(),
        fetched: Vec::new(),
        summary: summarize(&kustomizations),
        kustomizations,
    }
}

#[test]
fn exit_codes_are_kubectl_diff_s() {
    assert_eq!(diff_of(vec![kustomization(vec![], None)]).exit_code(), ExitCode::Ok);
    let changed = diff_of(vec![kustomization(vec![object(Action::Added), object(Action::Pruned)], None)]);
    assert_eq!(changed.exit_code(), ExitCode::No);
    assert_eq!(changed.summary, DiffSummary { added: 1, pruned: 1, unchanged: 2, ..DiffSummary::default() });
    let refused = diff_of(vec![kustomization(vec![object(Action::Changed), object(Action::Refused)], None)]);
    assert_eq!(refused.exit_code(), ExitCode::Usage);
    assert_eq!(diff_of(vec![kustomization(vec![], Some("no such path"))]).exit_code(), ExitCode::Usage);
}

#[test]
fn every_text_of_a_diff_is_masked_and_withheld_secrets_are_named() {
    let secrets = SecretValues::default();
    secrets.record("flux-system", "creds", "password", "hunter2-hunter2".into());
    let mut leaking = object(Action::Changed);
    leaking.diff = Some("+  pw: hunter2-hunter2\n".into());
    leaking.message = Some("admission says hunter2-hunter2 is weak".into());
    leaking.images = vec![ImageChange { from: None, to: Some("registry/hunter2-hunter2:v1".into()) }];
    let mut built = kustomization(vec![leaking], Some("build failed near hunter2-hunter2"));
    built.withheld = vec![Withheld {
        secret: "flux-system/other".into(),
        keys: vec!["token".into()],
        reason: build::WITHHELD_ADDED.into(),
    }];
    let diff = masked::diff(diff_of(vec![built]), &secrets);
    let json = serde_json::to_string(&diff).unwrap();
    let screen = render::text(&diff, true, crate::output::style::Style::plain());
    let comment = markdown::comment(&diff, 65_536, None, "kubectl gitops diff");
    for shown in [&json, &screen, &comment] {
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("[secret flux-system/creds:password]"), "{shown}");
    }
    assert!(
        screen.contains(
            "withheld: Kustomization flux-system/web: Secret flux-system/other is not read (it would give token"
        ),
        "{screen}"
    );
    assert!(comment.contains("Secret flux-system/other is not read"), "{comment}");
}

#[test]
fn an_error_that_carries_a_value_is_masked() {
    let secrets = SecretValues::default();
    secrets.record("ns", "s", "k", "hunter2-hunter2".into());
    let error = Error::Negative { message: "refused: hunter2-hunter2".into(), hint: None };
    assert_eq!(secrets.masked_error(error).to_string(), "refused: [secret ns/s:k]");
}
