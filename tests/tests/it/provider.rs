//! The GitHub and GitLab clients (`gitops_shared::provider`) against the local stand-in
//! (`gitops_e2e::standin`), asserting the exact requests they send.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::future::Future;
use std::time::Duration;

use gitops_e2e::standin::{self, INITIAL_SHA, Recorded, StandIn};
use gitops_shared::provider::{
    DeployKeyOutcome, Kind, MergeMethod, Provider, ProviderConfig, ProviderError, PullRequestOutcome, PullState,
    RepoRef, Token,
};
use serde_json::json;

const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFluxSystemKeyMaterialForTests0000000000 flux@cluster";
const OTHER_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAnOlderRotatedKeyMaterialForTests000000 flux@old";

/// A client of `standin` with [`standin::TOKEN`].
fn client(standin: &StandIn) -> Provider {
    Provider::new(standin.provider_config(standin::TOKEN)).unwrap()
}

/// A stand-in holding the repository `path`, a client of it, and the repository's reference.
fn with_repo(kind: Kind, path: &str) -> (StandIn, Provider, RepoRef) {
    let stand_in = StandIn::start(kind);
    stand_in.add_repo(path);
    let provider = client(&stand_in);
    (stand_in, provider, RepoRef::parse(path).unwrap())
}

/// Runs one async block on a fresh runtime (which also installs the TLS provider).
fn run<T>(future: impl Future<Output = T>) -> T {
    gitops_e2e::block_on(future)
}

fn lines(requests: &[Recorded]) -> Vec<String> {
    requests.iter().map(Recorded::line).collect()
}

fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect()
}

fn assert_github_headers(request: &Recorded) {
    assert_eq!(request.header("accept"), Some("application/vnd.github+json"));
    assert_eq!(request.header("authorization"), Some("Bearer ***"));
    assert_eq!(request.header("x-github-api-version"), Some("2022-11-28"));
    assert!(request.header("user-agent").is_some_and(|agent| agent.starts_with("kubectl-gitops/")), "{request:?}");
    assert_eq!(request.header("private-token"), None);
    assert_eq!(request.user.as_deref(), Some(standin::USER));
}

fn assert_gitlab_headers(request: &Recorded) {
    assert_eq!(request.header("private-token"), Some("***"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("accept"), Some("application/json"));
    assert!(request.header("user-agent").is_some_and(|agent| agent.starts_with("kubectl-gitops/")), "{request:?}");
    assert_eq!(request.user.as_deref(), Some(standin::USER));
}

// --- repositories -------------------------------------------------------------------------

#[test]
fn github_get_repository_existing_and_missing() {
    let (stand_in, github, repo) = with_repo(Kind::GitHub, "acme/fleet");

    let info = run(github.get_repository(&repo)).unwrap().unwrap();
    assert_eq!(info.default_branch.as_deref(), Some("main"));
    assert!(info.private);
    assert_eq!(info.ssh_url, "git@github.com:acme/fleet.git");
    assert_eq!(info.https_url, "https://github.com/acme/fleet.git");
    assert_eq!(info.web_url, "https://github.com/acme/fleet");

    let missing = run(github.get_repository(&RepoRef::new("acme", "nope"))).unwrap();
    assert_eq!(missing, None);

    let requests = stand_in.requests();
    assert_eq!(lines(&requests), ["GET /repos/acme/fleet", "GET /repos/acme/nope"]);
    for request in &requests {
        assert_github_headers(request);
        assert_eq!(request.body, None);
    }
}

#[test]
fn gitlab_get_repository_encodes_subgroup_paths() {
    let (stand_in, gitlab, repo) = with_repo(Kind::GitLab, "acme/platform/fleet");
    stand_in.add_empty_repo("acme/empty");
    stand_in.set_private("acme/empty", false);

    let info = run(gitlab.get_repository(&repo)).unwrap().unwrap();
    assert_eq!(info.default_branch.as_deref(), Some("main"));
    assert!(info.private);
    assert_eq!(info.ssh_url, "git@gitlab.com:acme/platform/fleet.git");
    assert_eq!(info.https_url, "https://gitlab.com/acme/platform/fleet.git");

    let empty = run(gitlab.get_repository(&RepoRef::new("acme", "empty"))).unwrap().unwrap();
    assert_eq!(empty.default_branch, None);
    assert!(!empty.private);

    assert_eq!(run(gitlab.get_repository(&RepoRef::new("acme", "nope"))).unwrap(), None);

    let requests = stand_in.requests();
    assert_eq!(
        lines(&requests),
        [
            "GET /api/v4/projects/acme%2Fplatform%2Ffleet",
            "GET /api/v4/projects/acme%2Fempty",
            "GET /api/v4/projects/acme%2Fnope",
        ]
    );
    for request in &requests {
        assert_gitlab_headers(request);
    }
}

#[test]
fn github_create_repository_in_org_and_personal() {
    let stand_in = StandIn::start(Kind::GitHub);
    let github = client(&stand_in);

    let org = run(github.create_repository(&RepoRef::new("acme", "fleet"), true, false)).unwrap();
    assert!(org.private);
    assert_eq!(org.ssh_url, "git@github.com:acme/fleet.git");
    let personal = run(github.create_repository(&RepoRef::new(standin::USER, "lab"), false, true)).unwrap();
    assert!(!personal.private);
    assert_eq!(personal.default_branch.as_deref(), Some("main"));

    let requests = stand_in.requests();
    assert_eq!(lines(&requests), ["POST /orgs/acme/repos", "GET /user", "POST /user/repos"]);
    assert_eq!(requests[0].body, Some(json!({ "name": "fleet", "private": true, "auto_init": false })));
    assert_eq!(requests[2].body, Some(json!({ "name": "lab", "private": false, "auto_init": false })));
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
    for request in &requests {
        assert_github_headers(request);
    }
    assert!(stand_in.has_repo("acme/fleet"));
    assert!(stand_in.has_repo("alice/lab"));
    // Nothing pushed: the repository starts empty.
    assert!(stand_in.branches("acme/fleet").is_empty());

    let again = run(github.create_repository(&RepoRef::new("acme", "fleet"), true, false)).unwrap_err();
    assert!(matches!(again, ProviderError::AlreadyExists { .. }), "{again:?}");
}

#[test]
fn gitlab_create_repository_in_group_and_personal() {
    let stand_in = StandIn::start(Kind::GitLab);
    let gitlab = client(&stand_in);

    let group = run(gitlab.create_repository(&RepoRef::parse("acme/platform/fleet").unwrap(), true, false)).unwrap();
    assert!(group.private);
    assert_eq!(group.default_branch, None);
    assert_eq!(group.ssh_url, "git@gitlab.com:acme/platform/fleet.git");
    run(gitlab.create_repository(&RepoRef::new(standin::USER, "lab"), false, true)).unwrap();

    let requests = stand_in.requests();
    assert_eq!(
        lines(&requests),
        [
            "GET /api/v4/namespaces/acme%2Fplatform",
            "POST /api/v4/projects",
            "GET /api/v4/user",
            "POST /api/v4/projects",
        ]
    );
    let group_id = stand_in.group_id(standin::SUBGROUP).unwrap();
    assert_eq!(
        requests[1].body,
        Some(json!({
            "name": "fleet",
            "path": "fleet",
            "visibility": "private",
            "initialize_with_readme": false,
            "namespace_id": group_id,
        }))
    );
    assert_eq!(
        requests[3].body,
        Some(json!({
            "name": "lab",
            "path": "lab",
            "visibility": "public",
            "initialize_with_readme": false,
        }))
    );
    for request in &requests {
        assert_gitlab_headers(request);
    }
    assert!(stand_in.has_repo("acme/platform/fleet"));
    assert_eq!(stand_in.is_private("alice/lab"), Some(false));

    let again =
        run(gitlab.create_repository(&RepoRef::parse("acme/platform/fleet").unwrap(), true, false)).unwrap_err();
    assert!(matches!(again, ProviderError::AlreadyExists { .. }), "{again:?}");

    let missing_group = run(gitlab.create_repository(&RepoRef::new("nogroup", "fleet"), true, false)).unwrap_err();
    assert!(missing_group.to_string().contains("GitLab group nogroup"), "{missing_group}");
}

#[test]
fn personal_repository_for_another_account_is_refused_before_creating() {
    for kind in [Kind::GitHub, Kind::GitLab] {
        let stand_in = StandIn::start(kind);
        let provider = client(&stand_in);
        let error = run(provider.create_repository(&RepoRef::new("bob", "fleet"), true, true)).unwrap_err();
        assert!(matches!(error, ProviderError::OwnerMismatch { .. }), "{error:?}");
        assert!(error.to_string().contains("belongs to alice, not bob"), "{error}");
        assert!(stand_in.writes().is_empty(), "{:?}", stand_in.writes());
    }
}

#[test]
fn create_without_rights_is_forbidden_with_a_hint_for_it() {
    for kind in [Kind::GitHub, Kind::GitLab] {
        let stand_in = StandIn::start(kind);
        stand_in.set_token_can_create_repos(false);
        let provider = client(&stand_in);

        let error = run(provider.create_repository(&RepoRef::new("acme", "fleet"), true, false)).unwrap_err();
        let ProviderError::Forbidden { message, hint } = &error else {
            panic!("{kind}: expected Forbidden, got {error:?}");
        };
        assert!(message.contains("creating"), "{message}");
        assert!(message.contains("acme/fleet"), "{message}");
        let hint = hint.as_deref().unwrap();
        assert!(hint.contains("ask an owner"), "{hint}");
        assert!(hint.contains("IT or platform team"), "{hint}");
        assert!(hint.contains("create projects in it") || hint.contains("create repositories in acme"), "{hint}");
        assert!(hint.contains("create acme/fleet empty"), "{hint}");
        assert_eq!(error.hint().as_deref(), Some(hint));

        let personal = run(provider.create_repository(&RepoRef::new(standin::USER, "lab"), true, true)).unwrap_err();
        assert!(
            matches!(&personal, ProviderError::Forbidden { hint: Some(hint), .. } if hint.contains("alice/lab yourself")),
            "{personal:?}"
        );
        assert!(!stand_in.has_repo("acme/fleet"));
    }
}

// --- branches -----------------------------------------------------------------------------

#[test]
fn github_branch_protection() {
    let (stand_in, github, repo) = with_repo(Kind::GitHub, "acme/fleet");
    stand_in.add_branch("acme/fleet", "dev/x", INITIAL_SHA);
    stand_in.protect_branch("acme/fleet", "main");

    assert!(run(github.is_branch_protected(&repo, "main")).unwrap());
    assert!(!run(github.is_branch_protected(&repo, "dev/x")).unwrap());
    assert!(!run(github.is_branch_protected(&repo, "missing")).unwrap());
    assert_eq!(
        lines(&stand_in.requests()),
        [
            "GET /repos/acme/fleet/branches/main",
            "GET /repos/acme/fleet/branches/dev%2Fx",
            "GET /repos/acme/fleet/branches/missing",
        ]
    );
}

#[test]
fn gitlab_branch_protection_covers_wildcards_and_unborn_branches() {
    let (stand_in, gitlab, repo) = with_repo(Kind::GitLab, "acme/fleet");
    stand_in.add_branch("acme/fleet", "release/v1", INITIAL_SHA);
    stand_in.add_branch("acme/fleet", "feature", INITIAL_SHA);
    stand_in.protect_branch("acme/fleet", "main");
    stand_in.protect_branch("acme/fleet", "release/*");
    stand_in.protect_branch("acme/fleet", "production");

    assert!(run(gitlab.is_branch_protected(&repo, "main")).unwrap());
    assert!(run(gitlab.is_branch_protected(&repo, "release/v1")).unwrap());
    assert!(!run(gitlab.is_branch_protected(&repo, "feature")).unwrap());
    // Not pushed yet, but a rule names it.
    assert!(run(gitlab.is_branch_protected(&repo, "production")).unwrap());
    assert!(!run(gitlab.is_branch_protected(&repo, "nothing")).unwrap());
    assert_eq!(
        lines(&stand_in.requests()),
        [
            "GET /api/v4/projects/acme%2Ffleet/repository/branches/main",
            "GET /api/v4/projects/acme%2Ffleet/repository/branches/release%2Fv1",
            "GET /api/v4/projects/acme%2Ffleet/repository/branches/feature",
            "GET /api/v4/projects/acme%2Ffleet/repository/branches/production",
            "GET /api/v4/projects/acme%2Ffleet/protected_branches/production",
            "GET /api/v4/projects/acme%2Ffleet/repository/branches/nothing",
            "GET /api/v4/projects/acme%2Ffleet/protected_branches/nothing",
        ]
    );
}

#[test]
fn create_branch_on_both_and_existing_is_already_exists() {
    let (stand_in, github, repo) = with_repo(Kind::GitHub, "acme/fleet");
    run(github.create_branch(&repo, "gitops/install", INITIAL_SHA)).unwrap();
    let again = run(github.create_branch(&repo, "gitops/install", INITIAL_SHA)).unwrap_err();
    assert!(matches!(again, ProviderError::AlreadyExists { .. }), "{again:?}");
    let requests = stand_in.requests();
    assert_eq!(lines(&requests), ["POST /repos/acme/fleet/git/refs", "POST /repos/acme/fleet/git/refs"]);
    assert_eq!(requests[0].body, Some(json!({ "ref": "refs/heads/gitops/install", "sha": INITIAL_SHA })));
    assert_eq!(stand_in.branches("acme/fleet").get("gitops/install").map(String::as_str), Some(INITIAL_SHA));

    let (stand_in, gitlab, _) = with_repo(Kind::GitLab, "acme/fleet");
    run(gitlab.create_branch(&repo, "gitops/install", INITIAL_SHA)).unwrap();
    let again = run(gitlab.create_branch(&repo, "gitops/install", INITIAL_SHA)).unwrap_err();
    assert!(matches!(again, ProviderError::AlreadyExists { .. }), "{again:?}");
    let requests = stand_in.requests();
    assert_eq!(requests[0].line(), "POST /api/v4/projects/acme%2Ffleet/repository/branches");
    assert_eq!(requests[0].query, query(&[("branch", "gitops/install"), ("ref", INITIAL_SHA)]));
    assert_eq!(requests[0].body, None);
    assert!(stand_in.branches("acme/fleet").contains_key("gitops/install"));
}

// --- deploy keys --------------------------------------------------------------------------

#[test]
fn github_deploy_key_is_created_once() {
    let (stand_in, github, repo) = with_repo(Kind::GitHub, "acme/fleet");

    let first = run(github.ensure_deploy_key(&repo, "flux-system", KEY, false)).unwrap();
    assert_eq!(first, DeployKeyOutcome::Created);
    let second = run(github.ensure_deploy_key(&repo, "flux-system", KEY, false)).unwrap();
    assert_eq!(second, DeployKeyOutcome::AlreadyPresent);

    let requests = stand_in.requests();
    assert_eq!(
        lines(&requests),
        ["GET /repos/acme/fleet/keys", "POST /repos/acme/fleet/keys", "GET /repos/acme/fleet/keys",]
    );
    assert_eq!(requests[0].query, query(&[("per_page", "100")]));
    assert_eq!(requests[1].body, Some(json!({ "title": "flux-system", "key": KEY, "read_only": false })));
    assert_eq!(stand_in.writes().len(), 1);
    for request in &requests {
        assert_github_headers(request);
    }
    let keys = stand_in.deploy_keys("acme/fleet");
    assert_eq!(keys.len(), 1);
    assert!(!keys[0].read_only);

    let listed = run(github.list_deploy_keys(&repo)).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].title, "flux-system");
    // GitHub drops the comment; the comparison ignores it.
    assert!(!listed[0].key.contains("flux@cluster"));
}

#[test]
fn gitlab_deploy_key_is_created_once() {
    let (stand_in, gitlab, repo) = with_repo(Kind::GitLab, "acme/platform/fleet");

    assert_eq!(run(gitlab.ensure_deploy_key(&repo, "flux-system", KEY, true)).unwrap(), DeployKeyOutcome::Created);
    assert_eq!(
        run(gitlab.ensure_deploy_key(&repo, "flux-system", KEY, true)).unwrap(),
        DeployKeyOutcome::AlreadyPresent
    );
    let requests = stand_in.requests();
    assert_eq!(
        lines(&requests),
        [
            "GET /api/v4/projects/acme%2Fplatform%2Ffleet/deploy_keys",
            "POST /api/v4/projects/acme%2Fplatform%2Ffleet/deploy_keys",
            "GET /api/v4/projects/acme%2Fplatform%2Ffleet/deploy_keys",
        ]
    );
    assert_eq!(requests[0].query, query(&[("per_page", "100")]));
    assert_eq!(requests[1].body, Some(json!({ "title": "flux-system", "key": KEY, "can_push": false })));
    assert_eq!(stand_in.writes().len(), 1);
    for request in &requests {
        assert_gitlab_headers(request);
    }
    assert!(stand_in.deploy_keys("acme/platform/fleet")[0].read_only);
}

#[test]
fn rotated_or_regranted_deploy_keys_are_replaced() {
    // GitHub: same title, other material → delete the old key, add the new one.
    let (stand_in, github, repo) = with_repo(Kind::GitHub, "acme/fleet");
    let old = stand_in.add_deploy_key("acme/fleet", "flux-system", OTHER_KEY, false);
    assert_eq!(run(github.ensure_deploy_key(&repo, "flux-system", KEY, false)).unwrap(), DeployKeyOutcome::Replaced);
    assert_eq!(
        lines(&stand_in.writes()),
        [format!("DELETE /repos/acme/fleet/keys/{old}"), "POST /repos/acme/fleet/keys".to_string(),]
    );
    let keys = stand_in.deploy_keys("acme/fleet");
    assert_eq!(keys.len(), 1);
    assert!(KEY.starts_with(&keys[0].key));

    // GitLab: same material but read-only where write is wanted → replaced with write access.
    let (stand_in, gitlab, _) = with_repo(Kind::GitLab, "acme/fleet");
    let old = stand_in.add_deploy_key("acme/fleet", "someone else's title", KEY, true);
    assert_eq!(run(gitlab.ensure_deploy_key(&repo, "flux-system", KEY, false)).unwrap(), DeployKeyOutcome::Replaced);
    assert_eq!(
        lines(&stand_in.writes()),
        [
            format!("DELETE /api/v4/projects/acme%2Ffleet/deploy_keys/{old}"),
            "POST /api/v4/projects/acme%2Ffleet/deploy_keys".to_string(),
        ]
    );
    let keys = stand_in.deploy_keys("acme/fleet");
    assert_eq!(keys.len(), 1);
    assert!(!keys[0].read_only);
    assert_eq!(keys[0].title, "flux-system");
}

#[test]
fn github_key_in_use_elsewhere_explains_why() {
    let (stand_in, github, repo) = with_repo(Kind::GitHub, "acme/fleet");
    stand_in.add_repo("acme/other");
    stand_in.add_deploy_key("acme/other", "flux-system", KEY, true);
    let error = run(github.ensure_deploy_key(&repo, "flux-system", KEY, true)).unwrap_err();
    assert!(matches!(error, ProviderError::Api { status: 422, .. }), "{error:?}");
    assert!(error.to_string().contains("key is already in use"), "{error}");
    assert!(error.hint().unwrap().contains("generate a new key"));
}

#[test]
fn deploy_key_listing_follows_pages() {
    let (stand_in, github, repo) = with_repo(Kind::GitHub, "acme/fleet");
    for index in 0..150 {
        stand_in.add_deploy_key("acme/fleet", &format!("key-{index}"), &format!("ssh-ed25519 AAAAKEY{index:04}"), true);
    }
    let keys = run(github.list_deploy_keys(&repo)).unwrap();
    assert_eq!(keys.len(), 150);
    assert_eq!(keys[149].title, "key-149");
    let requests = stand_in.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].query_param("page"), Some("2"));
    assert_github_headers(&requests[1]);
}

// --- pull and merge requests --------------------------------------------------------------

#[test]
fn github_pull_request_is_created_then_found_and_updated() {
    let (stand_in, github, repo) = with_repo(Kind::GitHub, "acme/fleet");
    stand_in.add_branch("acme/fleet", "gitops/install", INITIAL_SHA);

    let (created, outcome) =
        run(github.ensure_pull_request(&repo, "gitops/install", "main", "Install Flux", "first body")).unwrap();
    assert_eq!(outcome, PullRequestOutcome::Created);
    assert_eq!(created.number, 1);
    assert_eq!(created.url, "https://github.com/acme/fleet/pull/1");

    let found = run(github.find_open_pull_request(&repo, "gitops/install", "main")).unwrap().unwrap();
    assert_eq!(found, created);
    assert_eq!(run(github.find_open_pull_request(&repo, "other", "main")).unwrap(), None);

    // A re-run updates the same pull request instead of failing.
    let (updated, outcome) =
        run(github.ensure_pull_request(&repo, "gitops/install", "main", "Install Flux v2", "second body")).unwrap();
    assert_eq!(outcome, PullRequestOutcome::Updated);
    assert_eq!(updated.number, 1);
    assert_eq!(updated.title, "Install Flux v2");

    let requests = stand_in.requests();
    assert_eq!(
        lines(&requests),
        [
            "GET /repos/acme/fleet/pulls",
            "POST /repos/acme/fleet/pulls",
            "GET /repos/acme/fleet/pulls",
            "GET /repos/acme/fleet/pulls",
            "GET /repos/acme/fleet/pulls",
            "PATCH /repos/acme/fleet/pulls/1",
        ]
    );
    assert_eq!(requests[0].query, query(&[("state", "open"), ("head", "acme:gitops/install"), ("base", "main")]));
    assert_eq!(
        requests[1].body,
        Some(json!({ "title": "Install Flux", "head": "gitops/install", "base": "main", "body": "first body" }))
    );
    assert_eq!(requests[5].body, Some(json!({ "title": "Install Flux v2", "body": "second body" })));
    for request in &requests {
        assert_github_headers(request);
    }
    let pulls = stand_in.pull_requests("acme/fleet");
    assert_eq!(pulls.len(), 1);
    assert_eq!(pulls[0].body, "second body");

    // Creating a second one directly is refused the way GitHub refuses it.
    let duplicate = run(github.create_pull_request(&repo, "gitops/install", "main", "t", "b")).unwrap_err();
    assert!(matches!(duplicate, ProviderError::AlreadyExists { .. }), "{duplicate:?}");
    assert!(duplicate.to_string().contains("A pull request already exists"), "{duplicate}");
}

#[test]
fn gitlab_merge_request_is_created_then_found_and_updated() {
    let (stand_in, gitlab, repo) = with_repo(Kind::GitLab, "acme/platform/fleet");
    stand_in.add_branch("acme/platform/fleet", "gitops/install", INITIAL_SHA);

    let (created, outcome) =
        run(gitlab.ensure_pull_request(&repo, "gitops/install", "main", "Install Flux", "first body")).unwrap();
    assert_eq!(outcome, PullRequestOutcome::Created);
    assert_eq!(created.number, 1);
    assert_eq!(created.url, "https://gitlab.com/acme/platform/fleet/-/merge_requests/1");
    let found = run(gitlab.find_open_pull_request(&repo, "gitops/install", "main")).unwrap().unwrap();
    assert_eq!(found, created);

    let (updated, outcome) =
        run(gitlab.ensure_pull_request(&repo, "gitops/install", "main", "Install Flux v2", "second body")).unwrap();
    assert_eq!(outcome, PullRequestOutcome::Updated);
    assert_eq!(updated.number, 1);

    let base = "/api/v4/projects/acme%2Fplatform%2Ffleet/merge_requests";
    let requests = stand_in.requests();
    assert_eq!(
        lines(&requests),
        [
            format!("GET {base}"),
            format!("POST {base}"),
            format!("GET {base}"),
            format!("GET {base}"),
            format!("PUT {base}/1"),
        ]
    );
    assert_eq!(
        requests[0].query,
        query(&[("state", "opened"), ("source_branch", "gitops/install"), ("target_branch", "main"),])
    );
    assert_eq!(
        requests[1].body,
        Some(json!({
            "source_branch": "gitops/install",
            "target_branch": "main",
            "title": "Install Flux",
            "description": "first body",
        }))
    );
    assert_eq!(requests[4].body, Some(json!({ "title": "Install Flux v2", "description": "second body" })));
    for request in &requests {
        assert_gitlab_headers(request);
    }
    let requests_held = stand_in.pull_requests("acme/platform/fleet");
    assert_eq!(requests_held.len(), 1);
    assert_eq!(requests_held[0].title, "Install Flux v2");

    let duplicate = run(gitlab.create_pull_request(&repo, "gitops/install", "main", "t", "b")).unwrap_err();
    assert!(matches!(duplicate, ProviderError::AlreadyExists { .. }), "{duplicate:?}");
    assert!(duplicate.to_string().contains("Another open merge request"), "{duplicate}");
}

// --- failures -----------------------------------------------------------------------------

#[test]
fn bad_token_is_unauthorized_without_the_token_in_the_message() {
    let secret = "ghp_ThisIsNotARealTokenButMustNeverBePrinted";
    for kind in [Kind::GitHub, Kind::GitLab] {
        let stand_in = StandIn::start(kind);
        stand_in.add_repo("acme/fleet");
        let provider = Provider::new(stand_in.provider_config(secret)).unwrap();
        let error = run(provider.get_repository(&RepoRef::new("acme", "fleet"))).unwrap_err();
        assert!(matches!(error, ProviderError::Unauthorized { .. }), "{kind}: {error:?}");
        let message = error.to_string();
        let hint = error.hint().unwrap();
        let debug = format!("{error:?} {provider:?}");
        for text in [&message, &hint, &debug] {
            assert!(!text.contains(secret), "{kind}: token leaked in {text}");
        }
        assert!(message.contains("rejected the API token (HTTP 401"), "{message}");
        match kind {
            Kind::GitHub => {
                assert!(message.contains("Bad credentials"), "{message}");
                assert!(hint.contains("GITHUB_TOKEN"), "{hint}");
            }
            Kind::GitLab => {
                assert!(message.contains("401 Unauthorized"), "{message}");
                assert!(hint.contains("GITLAB_TOKEN"), "{hint}");
            }
            Kind::Gitea => unreachable!("the stand-in imitates GitHub and GitLab only"),
        }
        let request = &stand_in.requests()[0];
        assert_eq!(request.user, None);
    }
}

#[test]
fn rate_limits_are_reported_with_the_reset_time() {
    for kind in [Kind::GitHub, Kind::GitLab] {
        let (stand_in, provider, repo) = with_repo(kind, "acme/fleet");
        stand_in.set_rate_limited(true);
        let error = run(provider.list_deploy_keys(&repo)).unwrap_err();
        let ProviderError::RateLimited { retry_after_secs, .. } = error else {
            panic!("{kind}: expected RateLimited, got {error:?}");
        };
        let secs = retry_after_secs.unwrap();
        assert!((55..=60).contains(&secs), "{kind}: {secs}");
    }
}

#[test]
fn server_errors_carry_status_and_message() {
    let stand_in = StandIn::start(Kind::GitLab);
    stand_in.add_repo("acme/fleet");
    let repo = RepoRef::parse("acme/fleet").unwrap();
    // A read is asked again while the server fails: a server failing past the timeout is reported.
    let gitlab = Provider::with_timeout(stand_in.provider_config(standin::TOKEN), Duration::from_secs(1)).unwrap();
    for _ in 0..100 {
        stand_in.fail_next(
            "GET",
            "/api/v4/projects/acme%2Ffleet/deploy_keys",
            500,
            json!({ "message": "500 Internal Server Error" }),
        );
    }
    let error = run(gitlab.list_deploy_keys(&repo)).unwrap_err();
    assert!(matches!(error, ProviderError::Api { status: 500, .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "listing deploy keys of GitLab project acme/fleet: 500 Internal Server Error (HTTP 500)"
    );
    assert!(error.hint().is_some_and(|hint| hint.contains("try again later")), "{error:?}");
    assert!(stand_in.requests().len() > 1, "asked again: {:?}", lines(&stand_in.requests()));
}

#[test]
fn a_retry_cut_short_by_the_deadline_reports_the_servers_last_answer() {
    let stand_in = StandIn::start(Kind::GitLab);
    stand_in.add_repo("acme/fleet");
    let repo = RepoRef::parse("acme/fleet").unwrap();
    // Each answer takes 0.6 s of a 1 s budget: the first is a 500, the retry cannot finish in time.
    stand_in.set_delay(Duration::from_millis(600));
    for _ in 0..3 {
        stand_in.fail_next(
            "GET",
            "/api/v4/projects/acme%2Ffleet/deploy_keys",
            503,
            json!({ "message": "503 Service Unavailable" }),
        );
    }
    let gitlab = Provider::with_timeout(stand_in.provider_config(standin::TOKEN), Duration::from_secs(1)).unwrap();
    let error = run(gitlab.list_deploy_keys(&repo)).unwrap_err();
    assert!(matches!(error, ProviderError::Api { status: 503, .. }), "{error:?}");
}

#[test]
fn slow_answers_time_out() {
    let stand_in = StandIn::start(Kind::GitHub);
    stand_in.add_repo("acme/fleet");
    stand_in.set_delay(Duration::from_secs(2));
    let github = Provider::with_timeout(stand_in.provider_config(standin::TOKEN), Duration::from_millis(300)).unwrap();
    let error = run(github.get_repository(&RepoRef::new("acme", "fleet"))).unwrap_err();
    assert!(matches!(error, ProviderError::Transport(_)), "{error:?}");
    assert!(error.to_string().contains("did not answer within 0.3s"), "{error}");
}

#[test]
fn unreachable_host_is_a_transport_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let github = Provider::new(ProviderConfig {
        kind: Kind::GitHub,
        host: None,
        api_base: Some(format!("http://127.0.0.1:{port}")),
        token: Token::new(standin::TOKEN),
    })
    .unwrap();
    let error = run(github.get_repository(&RepoRef::new("acme", "fleet"))).unwrap_err();
    assert!(matches!(error, ProviderError::Transport(_)), "{error:?}");
    assert!(error.to_string().starts_with("cannot reach 127.0.0.1"), "{error}");
    assert!(!error.to_string().contains(standin::TOKEN));
}

// --- the stand-in against the providers' published examples --------------------------------
//
// For each endpoint, every JSON key path our client reads that the provider's published
// example has (tests/fixtures/providers, see PROVENANCE.md) must be in the stand-in's answer
// with the same JSON type.

macro_rules! published {
    ($file:literal) => {
        serde_json::from_str::<serde_json::Value>(include_str!(concat!("../../fixtures/providers/", $file))).unwrap()
    };
}

/// One raw HTTP/1.1 request to the stand-in, authenticated as [`standin::USER`]: (status, JSON body).
fn raw(stand_in: &StandIn, method: &str, path: &str, body: Option<&serde_json::Value>) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};

    let base = stand_in.provider_config(standin::TOKEN).api_base.unwrap();
    let rest = base.strip_prefix("http://").unwrap();
    let (host, prefix) =
        rest.split_once('/').map_or((rest, String::new()), |(host, prefix)| (host, format!("/{prefix}")));
    let auth = match stand_in.kind() {
        Kind::GitHub => format!("Authorization: Bearer {}", standin::TOKEN),
        Kind::GitLab => format!("PRIVATE-TOKEN: {}", standin::TOKEN),
        Kind::Gitea => unreachable!("the stand-in imitates GitHub and GitLab only"),
    };
    let payload = body.map(serde_json::Value::to_string).unwrap_or_default();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "{method} {prefix}{path} HTTP/1.1\r\nHost: {host}\r\n{auth}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(serde_json::Value::Null))
}

fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// Each of `pointers` present in `example` is in `answer` with the same JSON type.
fn assert_same_shape(what: &str, example: &serde_json::Value, answer: &serde_json::Value, pointers: &[&str]) {
    let mut checked = 0;
    for pointer in pointers {
        let Some(published) = example.pointer(pointer) else { continue };
        let ours = answer.pointer(pointer);
        assert_eq!(
            ours.map(json_type),
            Some(json_type(published)),
            "{what}: {pointer} is {published} in the published example, {ours:?} in the stand-in's answer {answer}"
        );
        checked += 1;
    }
    assert!(checked > 0, "{what}: none of {pointers:?} is in the published example");
}

const GITHUB_REPO_PATHS: &[&str] =
    &["/default_branch", "/private", "/ssh_url", "/clone_url", "/html_url", "/permissions", "/permissions/push"];
const GITHUB_KEY_PATHS: &[&str] = &["/id", "/title", "/key", "/read_only"];
const GITLAB_KEY_PATHS: &[&str] = &["/id", "/title", "/key", "/can_push"];

#[test]
fn github_stand_in_answers_in_the_published_shapes() {
    let (stand_in, _github, _repo) = with_repo(Kind::GitHub, "acme/fleet");
    stand_in.protect_branch("acme/fleet", "main");
    stand_in.add_deploy_key("acme/fleet", "flux", KEY, true);
    stand_in.add_branch("acme/fleet", "flux/update", INITIAL_SHA);
    stand_in.add_pull_request("acme/fleet", "flux/update", "main", "Update");

    let repository = published!("github/create-org-repository.json");
    let (status, got) = raw(&stand_in, "GET", "/repos/acme/fleet", None);
    assert_eq!(status, 200);
    assert_same_shape("GET /repos/{owner}/{repo}", &repository, &got, GITHUB_REPO_PATHS);
    let body = json!({ "name": "made", "private": true, "auto_init": false });
    let (status, got) = raw(&stand_in, "POST", "/orgs/acme/repos", Some(&body));
    assert_eq!(status, 201);
    assert_same_shape("POST /orgs/{org}/repos", &repository, &got, GITHUB_REPO_PATHS);
    let body = json!({ "name": "lab", "private": false, "auto_init": false });
    let (status, got) = raw(&stand_in, "POST", "/user/repos", Some(&body));
    assert_eq!(status, 201);
    assert_same_shape("POST /user/repos", &repository, &got, GITHUB_REPO_PATHS);

    let (status, got) = raw(&stand_in, "GET", "/user", None);
    assert_eq!(status, 200);
    assert_same_shape("GET /user", &published!("github/authenticated-user.json"), &got, &["/login"]);

    let (status, got) = raw(&stand_in, "GET", "/repos/acme/fleet/branches/main", None);
    assert_eq!(status, 200);
    assert_eq!(got["protected"], json!(true));
    assert_same_shape("GET …/branches/{branch}", &published!("github/list-branches.json")[0], &got, &["/protected"]);

    let (status, got) = raw(&stand_in, "GET", "/repos/acme/fleet/keys", None);
    assert_eq!(status, 200);
    assert_same_shape("GET …/keys", &published!("github/list-deploy-keys.json")[0], &got[0], GITHUB_KEY_PATHS);
    let body = json!({ "title": "other", "key": OTHER_KEY, "read_only": false });
    let (status, got) = raw(&stand_in, "POST", "/repos/acme/fleet/keys", Some(&body));
    assert_eq!(status, 201);
    assert_same_shape("POST …/keys", &published!("github/create-deploy-key.json"), &got, GITHUB_KEY_PATHS);

    let (status, got) = raw(&stand_in, "GET", "/repos/acme/fleet/pulls?state=open", None);
    assert_eq!(status, 200);
    let pulls = published!("github/list-pull-requests.json");
    assert_same_shape("GET …/pulls", &pulls[0], &got[0], GITHUB_PULL_PATHS);
    let (status, got) = raw(&stand_in, "GET", "/repos/acme/fleet/pulls/1", None);
    assert_eq!(status, 200);
    assert_same_shape("GET …/pulls/{number}", &pulls[0], &got, GITHUB_PULL_PATHS);
}

/// What `pr list` and `pr show` read of a pull request. `head`, `base` and `mergeable` are not in
/// the published listing (trimmed, and Pull Request Simple has no `mergeable`; PROVENANCE.md);
/// `merged_at` is read too, but the published example's is a time and an open request's is null.
const GITHUB_PULL_PATHS: &[&str] = &[
    "/number",
    "/html_url",
    "/title",
    "/body",
    "/state",
    "/user/login",
    "/created_at",
    "/head/ref",
    "/head/sha",
    "/base/ref",
    "/mergeable",
    "/mergeable_state",
];
/// What `pr comment` reads of a comment: GitHub's and Gitea's, and GitLab's note.
const GITHUB_COMMENT_PATHS: &[&str] = &["/id", "/body", "/user/login"];
const GITLAB_NOTE_PATHS: &[&str] = &["/id", "/body", "/author/username"];

#[test]
fn the_stand_in_s_comments_answer_in_the_published_shapes() {
    let (stand_in, _github, _repo) = with_repo(Kind::GitHub, "acme/fleet");
    stand_in.add_branch("acme/fleet", "flux/update", INITIAL_SHA);
    stand_in.add_pull_request("acme/fleet", "flux/update", "main", "Update");
    let body = json!({ "body": "Me too" });
    let (status, created) = raw(&stand_in, "POST", "/repos/acme/fleet/issues/1/comments", Some(&body));
    assert_eq!(status, 201, "{created}");
    let example = published!("github/create-issue-comment.json");
    assert_same_shape("POST …/issues/{n}/comments", &example, &created, GITHUB_COMMENT_PATHS);
    let (status, listed) = raw(&stand_in, "GET", "/repos/acme/fleet/issues/1/comments", None);
    assert_eq!(status, 200);
    let example = published!("github/list-issue-comments.json");
    assert_same_shape("GET …/issues/{n}/comments", &example[0], &listed[0], GITHUB_COMMENT_PATHS);
    let path = format!("/repos/acme/fleet/issues/comments/{}", created["id"]);
    let (status, updated) = raw(&stand_in, "PATCH", &path, Some(&json!({ "body": "Me three" })));
    assert_eq!(status, 200, "{updated}");
    let example = published!("github/update-issue-comment.json");
    assert_same_shape("PATCH …/issues/comments/{id}", &example, &updated, GITHUB_COMMENT_PATHS);

    let (stand_in, _gitlab, _repo) = with_repo(Kind::GitLab, "acme/platform/fleet");
    stand_in.add_branch("acme/platform/fleet", "flux/update", INITIAL_SHA);
    stand_in.add_pull_request("acme/platform/fleet", "flux/update", "main", "Update");
    let notes = "/projects/acme%2Fplatform%2Ffleet/merge_requests/1/notes";
    let note = published!("gitlab/get-merge-request-note.json");
    let (status, created) = raw(&stand_in, "POST", notes, Some(&json!({ "body": "Comment for MR" })));
    assert_eq!(status, 201, "{created}");
    assert_same_shape("POST …/merge_requests/:iid/notes", &note, &created, GITLAB_NOTE_PATHS);
    let (status, listed) = raw(&stand_in, "GET", notes, None);
    assert_eq!(status, 200);
    assert_same_shape("GET …/merge_requests/:iid/notes", &note, &listed[0], GITLAB_NOTE_PATHS);
    let (status, updated) =
        raw(&stand_in, "PUT", &format!("{notes}/{}", created["id"]), Some(&json!({ "body": "Edited" })));
    assert_eq!(status, 200, "{updated}");
    assert_same_shape("PUT …/merge_requests/:iid/notes/:id", &note, &updated, GITLAB_NOTE_PATHS);
}

#[test]
fn a_comment_is_posted_listed_and_edited_by_its_author_only() {
    for (kind, path) in [(Kind::GitHub, "acme/fleet"), (Kind::GitLab, "acme/platform/fleet")] {
        let (stand_in, provider, repo) = with_repo(kind, path);
        stand_in.add_branch(path, "gitops/add-web-1234567", "2222222222222222222222222222222222222222");
        let number = stand_in.add_pull_request(path, "gitops/add-web-1234567", "main", "Add app web");
        let posted = run(provider.create_comment(&repo, number, "first")).unwrap();
        assert_eq!((posted.body.as_str(), posted.author.as_deref()), ("first", Some(standin::USER)), "{kind}");
        let listed = run(provider.list_comments(&repo, number)).unwrap();
        assert_eq!(listed, std::slice::from_ref(&posted), "{kind}");
        let edited = run(provider.update_comment(&repo, number, posted.id, "second")).unwrap();
        assert_eq!((edited.id, edited.body.as_str()), (posted.id, "second"), "{kind}");
        assert_eq!(run(provider.list_comments(&repo, number)).unwrap().len(), 1, "{kind}: edited in place");
        // Another user's comment is not ours to edit: the forge refuses.
        stand_in.add_token("other-token", "mallory", false);
        let other = Provider::new(ProviderConfig {
            token: Token::new("other-token"),
            ..stand_in.provider_config(standin::TOKEN)
        })
        .unwrap();
        let error = run(other.update_comment(&repo, number, posted.id, "defaced")).unwrap_err();
        assert!(matches!(error, ProviderError::Forbidden { .. }), "{kind}: {error:?}");
        let requests = stand_in.writes();
        let methods: Vec<&str> = requests.iter().map(|request| request.method.as_str()).collect();
        let edit = if kind == Kind::GitHub { "PATCH" } else { "PUT" };
        assert_eq!(methods, ["POST", edit, edit], "{kind}");
        assert!(provider.max_comment() >= 65_536, "{kind}");
    }
}

/// What `pr list` and `pr show` read of a merge request (`detailed_merge_status` is newer than
/// the published example, which has `merge_status`).
const GITLAB_MERGE_REQUEST_PATHS: &[&str] = &[
    "/iid",
    "/web_url",
    "/title",
    "/description",
    "/state",
    "/source_branch",
    "/target_branch",
    "/sha",
    "/author/username",
    "/created_at",
    "/merge_status",
    "/detailed_merge_status",
];

#[test]
fn gitlab_stand_in_answers_in_the_published_shapes() {
    let (stand_in, _gitlab, _repo) = with_repo(Kind::GitLab, "acme/platform/fleet");
    stand_in.protect_branch("acme/platform/fleet", "main");
    stand_in.add_deploy_key("acme/platform/fleet", "flux", KEY, true);
    stand_in.add_branch("acme/platform/fleet", "flux/update", INITIAL_SHA);
    stand_in.add_pull_request("acme/platform/fleet", "flux/update", "main", "Update");
    let project = "/projects/acme%2Fplatform%2Ffleet";

    let (status, got) = raw(&stand_in, "GET", &format!("{project}/repository/branches/main"), None);
    assert_eq!(status, 200);
    assert_eq!(got["protected"], json!(true));
    assert_same_shape(
        "GET …/repository/branches/:branch",
        &published!("gitlab/get-branch.json"),
        &got,
        &["/protected"],
    );

    let (status, got) = raw(&stand_in, "GET", &format!("{project}/deploy_keys"), None);
    assert_eq!(status, 200);
    assert_same_shape("GET …/deploy_keys", &published!("gitlab/list-deploy-keys.json")[0], &got[0], GITLAB_KEY_PATHS);
    let body = json!({ "title": "other", "key": OTHER_KEY, "can_push": true });
    let (status, got) = raw(&stand_in, "POST", &format!("{project}/deploy_keys"), Some(&body));
    assert_eq!(status, 201);
    assert_same_shape("POST …/deploy_keys", &published!("gitlab/add-deploy-key.json"), &got, GITLAB_KEY_PATHS);

    let (status, got) = raw(&stand_in, "GET", &format!("{project}/merge_requests?state=opened"), None);
    assert_eq!(status, 200);
    let requests = published!("gitlab/list-project-merge-requests.json");
    assert_same_shape("GET …/merge_requests", &requests[0], &got[0], GITLAB_MERGE_REQUEST_PATHS);
    let (status, got) = raw(&stand_in, "GET", &format!("{project}/merge_requests/1"), None);
    assert_eq!(status, 200);
    assert_same_shape("GET …/merge_requests/:iid", &requests[0], &got, GITLAB_MERGE_REQUEST_PATHS);
}

// --- approving and merging ----------------------------------------------------------------------

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
