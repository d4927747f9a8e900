#![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

use super::*;
use crate::change::plan::{Delivery, Plan};
use crate::git::log::BranchChange;

fn planned() -> Vec<FileChange> {
    let file = |path: &str, after: Option<&str>| FileChange {
        path: path.into(),
        before: after.is_none().then(|| "old\n".to_string()),
        after: after.map(String::from),
    };
    vec![
        file(
            "apps/web/release.yaml",
            Some("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\n"),
        ),
        file(
            "apps/web/source.yaml",
            Some("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: web\n"),
        ),
        file("clusters/dev/apps/old.yaml", None),
    ]
}

/// The body and branch name `app add` gives the planned files.
fn opened(files: &[FileChange]) -> (String, BranchName) {
    let plan = Plan {
        message: "Add app web".into(),
        repo: "https://example.com/fleet".into(),
        branch: "main".into(),
        files: files.to_vec(),
        delivery: Delivery::Push,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects: Vec::new(),
        wait: None,
        notes: Vec::new(),
        new_repo: None,
        request: Vec::new(),
    };
    let branch = plan::pull_request_branch("add", "web", files);
    (plan.pull_request_body(), BranchName::parse(&branch).unwrap())
}

/// The branch's change as git reads it back.
fn held(files: &[FileChange]) -> BranchChange {
    BranchChange {
        head: "a".repeat(40),
        merge_base: "b".repeat(40),
        files: files.iter().map(|file| (file.path.clone(), file.after.clone().map(String::into_bytes))).collect(),
        unusual: Vec::new(),
    }
}

#[test]
fn a_branch_that_holds_the_plan_is_one_passing_check_naming_its_flux_objects() {
    let (body, branch) = opened(&planned());
    let checks = change_checks(&branch, &body, Some(&held(&planned())), "gitops/add-web-x");
    assert_eq!(
        checks,
        [Check {
            name: "change",
            ok: true,
            detail: "the branch holds exactly the planned change, 3 file(s): Kustomization web, GitRepository web"
                .into()
        }]
    );
}

#[test]
fn each_difference_from_the_plan_is_named() {
    let (body, branch) = opened(&planned());
    let mut edited = planned();
    edited[0].after = Some("edited by hand\n".into());
    edited[2].after = Some("kept\n".into());
    edited.push(FileChange { path: "extra.yaml".into(), before: None, after: Some("x\n".into()) });
    edited.remove(1);
    let checks = change_checks(&branch, &body, Some(&held(&edited)), "gitops/add-web-x");
    let details: Vec<&str> = checks.iter().map(|check| check.detail.as_str()).collect();
    let hand = plan::blob_id(b"edited by hand\n");
    let planned_blob = plan::blob_id(planned()[0].after.as_deref().unwrap().as_bytes());
    assert_eq!(
        details,
        [
            format!(
                "apps/web/release.yaml differs from the plan: blob {hand} on the branch, blob {planned_blob} planned"
            )
            .as_str(),
            "apps/web/source.yaml is planned (add) but the branch does not change it",
            "clusters/dev/apps/old.yaml is planned to be deleted but the branch keeps it",
            "the branch also writes extra.yaml, which is not in the plan",
        ]
    );
    assert!(checks.iter().all(|check| !check.ok && check.name == "change"));
}

#[test]
fn an_edited_body_does_not_make_an_edited_branch_valid() {
    let mut edited = planned();
    edited[0].after = Some("edited by hand\n".into());
    // Someone rewrote the body to match the edit; the branch name still carries the plan's hash.
    let (_, branch) = opened(&planned());
    let (forged_body, _) = opened(&edited);
    let checks = change_checks(&branch, &forged_body, Some(&held(&edited)), "gitops/add-web-x");
    assert_eq!(checks.len(), 1);
    assert!(!checks[0].ok);
    assert!(
        checks[0].detail.starts_with(&format!("the branch's change does not hash to {}", branch.hash)),
        "{checks:?}"
    );
}

#[test]
fn a_deleted_branch_is_a_finding() {
    let (body, branch) = opened(&planned());
    let checks = change_checks(&branch, &body, None, "gitops/add-web-1234567");
    assert_eq!(checks[0].detail, "branch gitops/add-web-1234567 no longer exists");
}

fn details(state: PullState, mergeable: Option<bool>) -> PullRequestDetails {
    let (body, _) = opened(&planned());
    PullRequestDetails {
        number: 7,
        url: "https://github.com/acme/fleet/pull/7".into(),
        title: "Add app web".into(),
        body,
        head_branch: Some(plan::pull_request_branch("add", "web", &planned())),
        head_sha: None,
        base_branch: Some("main".into()),
        state,
        mergeable,
        merge_detail: mergeable.map(|yes| if yes { "clean" } else { "dirty" }.to_string()),
        merge_commit: None,
        author: Some("alice".into()),
        created_at: None,
    }
}

#[test]
fn state_base_and_mergeable_checks() {
    assert!(state_check(&details(PullState::Open, Some(true))).ok);
    assert_eq!(state_check(&details(PullState::Merged, None)).detail, "merged already");
    assert_eq!(state_check(&details(PullState::Closed, None)).detail, "closed without merging");
    assert!(base_check(&details(PullState::Open, None), "main").ok);
    assert_eq!(
        base_check(&details(PullState::Open, None), "production").detail,
        "into main, not production, the branch Flux follows"
    );
    assert!(mergeable_check(&details(PullState::Open, Some(true))).ok);
    assert_eq!(mergeable_check(&details(PullState::Open, Some(false))).detail, "not mergeable (dirty)");
    assert!(!mergeable_check(&details(PullState::Open, None)).ok, "unknown is not valid");
}

#[test]
fn ours_are_known_by_branch_and_body() {
    assert!(is_ours(&details(PullState::Open, None)));
    let mut theirs = details(PullState::Open, None);
    theirs.body = "Fixes a typo".into();
    assert!(!is_ours(&theirs));
    let mut branch = details(PullState::Open, None);
    branch.head_branch = Some("feature/typo".into());
    assert!(!is_ours(&branch));
}

#[test]
fn a_reference_is_a_number_or_an_address_ending_in_one() {
    let global = GlobalArgs::default();
    for (reference, number) in [
        ("42", 42),
        ("#42", 42),
        ("!42", 42),
        ("https://github.com/acme/fleet/pull/42", 42),
        ("https://gitlab.com/acme/fleet/-/merge_requests/7/", 7),
    ] {
        let request = ShowArgs { reference: reference.into(), opened_by: None, repo: RepoArgs::default() }
            .request(&global, false)
            .unwrap();
        assert_eq!(request.number, Some(number), "{reference}");
        assert_eq!(request.url.is_some(), reference.contains("://"), "{reference}");
    }
    for bad in ["", "0", "web", "https://github.com/acme/fleet/pulls"] {
        let error = ShowArgs { reference: bad.into(), opened_by: None, repo: RepoArgs::default() }
            .request(&global, false)
            .unwrap_err();
        assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{bad}");
    }
}

#[test]
fn an_older_branch_name_never_validates() {
    let files = planned();
    let (body, _) = opened(&files);
    let older = BranchName::parse("gitops/add-web-1234abc").unwrap();
    let checks = change_checks(&older, &body, Some(&held(&files)), "gitops/add-web-1234abc");
    assert_eq!(checks.len(), 1);
    assert!(!checks[0].ok);
    assert!(checks[0].detail.contains("named by an older kubectl-gitops, with 7 digits of SHA-1"), "{checks:?}");
    assert!(checks[0].detail.contains("run the change's command again to open it anew"), "{checks:?}");
}

#[test]
fn only_the_identity_vouched_for_makes_a_request_verified() {
    let ours = details(PullState::Open, Some(true));
    let check = author_check(&ours, "Alice", false);
    assert_eq!((check.ok, check.detail.as_str()), (true, "opened by alice, the token's own user"));
    let check = author_check(&ours, "bob", true);
    assert!(!check.ok);
    assert_eq!(check.detail, "opened by alice, not by bob (named by --opened-by): unverified, whatever it holds");
    let mut nobody = ours;
    nobody.author = None;
    assert!(!author_check(&nobody, "alice", false).ok, "an author the provider does not name is not ours");
}

fn validation(checks: Vec<Check>, verified: bool) -> Validation {
    Validation {
        number: 7,
        title: "Add app web".into(),
        url: "https://github.com/acme/fleet/pull/7".into(),
        branch: "gitops/add-web-1234567".into(),
        base: "main".into(),
        head: Some("0123456789abcdef0123456789abcdef01234567".into()),
        author: Some("mallory".into()),
        verified,
        valid: verified && checks.iter().all(|check| check.ok),
        checks,
        preview: None,
        trusted: "alice".into(),
    }
}

#[test]
fn the_validation_reads_check_by_check() {
    let validation = validation(
        vec![
            state_check(&details(PullState::Open, Some(false))),
            mergeable_check(&details(PullState::Open, Some(false))),
        ],
        true,
    );
    insta::assert_snapshot!(render_validation(&validation, "#"), @r"
    #7 Add app web
    https://github.com/acme/fleet/pull/7
    branch gitops/add-web-1234567 into main at 0123456789ab

    ok    open       open
    FAIL  mergeable  not mergeable (dirty)

    #7 is not valid: 1 finding(s)
    ");
}

#[test]
fn a_request_another_identity_opened_reads_as_unverified() {
    let forged = details(PullState::Open, Some(true));
    let checks = vec![state_check(&forged), author_check(&forged, "bob", false), mergeable_check(&forged)];
    let text = render_validation(&validation(checks.clone(), false), "#");
    assert!(text.contains("FAIL  author     opened by alice, not by bob (the token's own user)"), "{text}");
    assert!(text.ends_with("\n#7 is unverified: mallory opened it, not alice\n"), "{text}");
    let mut failing = checks;
    failing.push(differs("the branch also writes x.yaml, which is not in the plan".into()));
    let text = render_validation(&validation(failing, false), "#");
    assert!(text.ends_with("\n#7 is unverified and not valid: 1 finding(s)\n"), "{text}");
    let refused = unverified(&validation(Vec::new(), false), "#", "merged");
    assert_eq!(refused.to_string(), "#7 was opened by mallory, not by alice: it is unverified, and was not merged");
    assert_eq!(refused.exit_code(), crate::error::ExitCode::No);
    assert!(refused.hint().is_some_and(|hint| hint.contains("--opened-by LOGIN")));
}

const BRANCH: &str = "gitops/add-web-x";

fn recorded_as(words: &[String], planned: Result<Vec<FileChange>>) -> Option<(Vec<String>, Result<Replanned>)> {
    Some((words.to_vec(), planned.map(|files| Replanned { branch: BRANCH.into(), files })))
}

#[test]
fn the_recorded_request_planned_again_is_compared_file_by_file() {
    let words: Vec<String> = ["app", "add", "web", "--url", "https://example.com/web"].map(String::from).to_vec();
    let checks = request_checks(recorded_as(&words, Ok(planned())), &held(&planned()), BRANCH);
    assert_eq!(
        checks,
        [Check {
            name: "request",
            ok: true,
            detail: "`kubectl gitops app add web --url https://example.com/web` planned again at bbbbbbbbbbbb: the \
                     branch holds exactly that plan"
                .into()
        }]
    );
    let mut other = planned();
    other[0].after = Some("another plan\n".into());
    other.remove(1);
    other.push(FileChange { path: "apps/web/values/x.yaml".into(), before: None, after: Some("a: 1\n".into()) });
    let details: Vec<String> = request_checks(recorded_as(&words, Ok(other)), &held(&planned()), BRANCH)
        .into_iter()
        .map(|check| check.detail)
        .collect();
    let (held_blob, planned_blob) =
        (plan::blob_id(planned()[0].after.as_ref().unwrap().as_bytes()), plan::blob_id(b"another plan\n"));
    assert_eq!(
        details,
        [
            format!(
                "apps/web/release.yaml: blob {held_blob} on the branch, blob {planned_blob} as the recorded request plans it"
            ),
            "the recorded request plans to add apps/web/values/x.yaml, but the branch does not change it".into(),
            "the branch changes apps/web/source.yaml, which the recorded request does not plan".into(),
        ]
    );
    let error = Error::usage("cannot plan", "hint");
    let failed = request_checks(recorded_as(&words, Err(error)), &held(&planned()), BRANCH);
    assert_eq!((failed.len(), failed[0].ok, failed[0].detail.as_str()), (1, false, "cannot plan"));
}

#[test]
fn a_request_is_valid_only_as_recorded_planned_and_named() {
    let words: Vec<String> = ["tenant", "add", "team"].map(String::from).to_vec();
    let none = request_checks(None, &held(&planned()), BRANCH);
    assert_eq!(none.len(), 1);
    assert!(!none[0].ok && none[0].detail.starts_with("the body records no request"), "{none:?}");
    // The very plan, on a branch named for another change.
    let renamed = request_checks(recorded_as(&words, Ok(planned())), &held(&planned()), "gitops/add-other-x");
    assert_eq!(
        renamed.iter().map(|check| (check.ok, check.detail.as_str())).collect::<Vec<_>>(),
        [(
            false,
            "the branch holds the recorded request's plan, but is named gitops/add-other-x, not gitops/add-web-x"
        )]
    );
    // A plain file turned into a symlink or an executable is no plan's.
    let mut linked = held(&planned());
    linked.unusual.push("apps/web/run.sh".into());
    let checks = request_checks(recorded_as(&words, Ok(planned())), &linked, BRANCH);
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].detail, "the branch makes apps/web/run.sh more than a plain file, which no plan does");
}
