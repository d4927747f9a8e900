//! Approving and merging pull and merge requests, guarded by their head, and `repo create`'s
//! calls: generating from templates, forking and deleting repositories.

use gitops_e2e::standin::{self, INITIAL_SHA, Recorded};
use gitops_shared::provider::{Kind, MergeMethod, Provider, ProviderError, PullState, RepoRef};
use serde_json::json;

use super::{assert_github_headers, assert_gitlab_headers, lines, run, with_repo};

#[test]
fn a_merge_or_approval_guarded_by_a_moved_head_is_refused_and_changes_nothing() {
    for (kind, path) in [(Kind::GitHub, "acme/fleet"), (Kind::GitLab, "acme/platform/fleet")] {
        let (stand_in, provider, repo) = with_repo(kind, path);
        stand_in.add_branch(path, "gitops/add-web-1234567", "2222222222222222222222222222222222222222");
        let number = stand_in.add_pull_request(path, "gitops/add-web-1234567", "main", "Add app web");
        let validated = "3333333333333333333333333333333333333333";

        let error = run(provider.merge_pull_request(&repo, number, validated, MergeMethod::Merge)).unwrap_err();
        assert!(error.to_string().contains("moved since it was validated"), "{kind}: {error}");
        assert!(error.hint().unwrap().contains("pr show"), "{kind}: {error:?}");
        let error = run(provider.approve_pull_request(&repo, number, validated)).unwrap_err();
        assert!(matches!(error, ProviderError::Api { status: 409 | 422, .. }), "{kind}: {error:?}");
        let pull = &stand_in.pull_requests(path)[0];
        assert!(pull.open && !pull.merged && pull.approved_by.is_empty(), "{kind}: {pull:?}");
        assert_eq!(stand_in.branches(path)["main"], INITIAL_SHA, "{kind}: main did not move");
    }
}

#[test]
fn github_refuses_an_authors_approval_and_a_rebase_merge() {
    let (stand_in, provider, repo) = with_repo(Kind::GitHub, "acme/fleet");
    let head = "2222222222222222222222222222222222222222";
    stand_in.add_branch("acme/fleet", "gitops/add-web-1234567", head);
    let number = stand_in.add_pull_request("acme/fleet", "gitops/add-web-1234567", "main", "Add app web");
    let error = run(provider.approve_pull_request(&repo, number, head)).unwrap_err();
    assert!(error.to_string().contains("Can not approve your own pull request"), "{error}");
    let error = run(provider.merge_pull_request(&repo, number, head, MergeMethod::Rebase)).unwrap_err();
    assert!(error.to_string().contains("Rebase merges are not allowed"), "{error}");

    stand_in.add_token("reviewer-token", "bob", false);
    let reviewer = Provider::new(stand_in.provider_config("reviewer-token")).unwrap();
    run(reviewer.approve_pull_request(&repo, number, head)).unwrap();
    let review = stand_in.writes().into_iter().last().unwrap();
    assert_eq!(review.line(), "POST /repos/acme/fleet/pulls/1/reviews");
    assert_eq!(review.body.unwrap(), json!({ "event": "APPROVE", "commit_id": head }));
    assert_eq!(stand_in.pull_requests("acme/fleet")[0].approved_by, ["bob"]);

    run(provider.merge_pull_request(&repo, number, head, MergeMethod::Squash)).unwrap();
    let merge = stand_in.writes().into_iter().last().unwrap();
    assert_eq!(merge.line(), "PUT /repos/acme/fleet/pulls/1/merge");
    assert_eq!(merge.body.unwrap(), json!({ "merge_method": "squash", "sha": head }));
    let details = run(provider.get_pull_request(&repo, number)).unwrap().unwrap();
    assert_eq!(details.state, PullState::Merged);
}

#[test]
fn gitlab_approves_and_merges_with_the_head_as_guard() {
    let (stand_in, provider, repo) = with_repo(Kind::GitLab, "acme/fleet");
    let head = "2222222222222222222222222222222222222222";
    stand_in.add_branch("acme/fleet", "gitops/add-web-1234567", head);
    let number = stand_in.add_pull_request("acme/fleet", "gitops/add-web-1234567", "main", "Add app web");
    run(provider.approve_pull_request(&repo, number, head)).unwrap();
    let error = run(provider.merge_pull_request(&repo, number, head, MergeMethod::Rebase)).unwrap_err();
    assert!(error.to_string().contains("use --method merge or squash"), "{error}");
    run(provider.merge_pull_request(&repo, number, head, MergeMethod::Merge)).unwrap();
    let lines: Vec<String> = stand_in.writes().iter().map(Recorded::line).collect();
    assert_eq!(
        lines,
        [
            "POST /api/v4/projects/acme%2Ffleet/merge_requests/1/approve",
            "PUT /api/v4/projects/acme%2Ffleet/merge_requests/1/merge"
        ]
    );
    let merge = stand_in.writes().into_iter().last().unwrap();
    assert_eq!(merge.body.unwrap(), json!({ "sha": head, "squash": false }));
    let details = run(provider.get_pull_request(&repo, number)).unwrap().unwrap();
    assert_eq!(details.state, PullState::Merged);
}

/// `repo create`'s calls on GitHub: generating from a template (refused for a repository that
/// is not one, and for a taken name), forking into an organization and into the token's own
/// account, deleting, and who the token is.
#[test]
fn github_generates_from_templates_forks_and_deletes_repositories() {
    let (stand_in, github, template) = with_repo(Kind::GitHub, "acme/app-template");
    let target = RepoRef::new("acme", "shop");

    let info = run(github.get_repository(&template)).unwrap().unwrap();
    assert_eq!(info.is_template, Some(false));
    let refused = run(github.generate_repository(&template, &target, true)).unwrap_err();
    assert!(refused.to_string().contains("acme/app-template is not a template repository"), "{refused}");
    assert!(!stand_in.has_repo("acme/shop"));

    stand_in.set_template("acme/app-template", true);
    assert_eq!(run(github.get_repository(&template)).unwrap().unwrap().is_template, Some(true));
    stand_in.clear_requests();
    let generated = run(github.generate_repository(&template, &target, true)).unwrap();
    assert!(generated.private);
    assert_eq!(generated.ssh_url, "git@github.com:acme/shop.git");
    let requests = stand_in.requests();
    assert_eq!(lines(&requests), ["POST /repos/acme/app-template/generate"]);
    assert_eq!(
        requests[0].body,
        Some(json!({ "owner": "acme", "name": "shop", "private": true, "include_all_branches": false }))
    );
    assert_github_headers(&requests[0]);
    let taken = run(github.generate_repository(&template, &target, true)).unwrap_err();
    assert!(matches!(taken, ProviderError::AlreadyExists { .. }), "{taken:?}");

    stand_in.clear_requests();
    run(github.fork_repository(&template, &RepoRef::new("acme", "shop-fork"))).unwrap();
    run(github.fork_repository(&template, &RepoRef::new(standin::USER, "mine"))).unwrap();
    let requests = stand_in.requests();
    assert_eq!(
        lines(&requests),
        ["GET /user", "POST /repos/acme/app-template/forks", "GET /user", "POST /repos/acme/app-template/forks"]
    );
    assert_eq!(
        requests[1].body,
        Some(json!({ "name": "shop-fork", "default_branch_only": true, "organization": "acme" }))
    );
    assert_eq!(
        requests[3].body,
        Some(json!({ "name": "mine", "default_branch_only": true })),
        "personal: no organization"
    );
    assert_eq!(stand_in.fork_of("acme/shop-fork").as_deref(), Some("acme/app-template"));
    assert_eq!(stand_in.fork_of(&format!("{}/mine", standin::USER)).as_deref(), Some("acme/app-template"));

    assert_eq!(run(github.token_login()).unwrap(), standin::USER);
    run(github.delete_repository(&target)).unwrap();
    assert!(!stand_in.has_repo("acme/shop"));
    run(github.delete_repository(&target)).unwrap();
}

/// On GitLab: a fork into a group (`namespace_path`), deleting (202), and no generation call:
/// GitLab generates projects from templates only through group settings.
#[test]
fn gitlab_forks_and_deletes_projects_and_has_no_generate_call() {
    let (stand_in, gitlab, upstream) = with_repo(Kind::GitLab, "acme/app-template");
    let target = RepoRef::new("acme", "shop");
    stand_in.clear_requests();
    let refused = run(gitlab.generate_repository(&upstream, &target, true)).unwrap_err();
    assert!(refused.to_string().contains("GitLab generates projects from templates only through group settings"));
    assert!(stand_in.requests().is_empty(), "refused before any request");

    run(gitlab.fork_repository(&upstream, &target)).unwrap();
    let requests = stand_in.requests();
    assert_eq!(lines(&requests), ["GET /api/v4/user", "POST /api/v4/projects/acme%2Fapp-template/fork"]);
    assert_eq!(requests[1].body, Some(json!({ "namespace_path": "acme", "name": "shop", "path": "shop" })));
    assert_gitlab_headers(&requests[1]);
    assert_eq!(stand_in.fork_of("acme/shop").as_deref(), Some("acme/app-template"));
    assert_eq!(run(gitlab.token_login()).unwrap(), standin::USER);

    run(gitlab.delete_repository(&target)).unwrap();
    assert!(!stand_in.has_repo("acme/shop"));
}
