//! The GitHub and GitLab clients (`gitops_shared::provider`) against the local stand-in
//! (`gitops_e2e::standin`), asserting the exact requests they send.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

mod merging;
mod published;

use std::future::Future;
use std::time::Duration;

use gitops_e2e::standin::{self, INITIAL_SHA, Recorded, StandIn};
use gitops_shared::provider::{
    DeployKeyOutcome, Kind, Provider, ProviderConfig, ProviderError, PullRequestOutcome, RepoRef, Token,
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
