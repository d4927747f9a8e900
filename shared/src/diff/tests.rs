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
