//! The providers' response structs parse the GitHub and GitLab docs' published response examples
//! (`tests/fixtures/providers/<provider>`, provenance in `tests/fixtures/providers/PROVENANCE.md`),
//! so that our client and our stand-in cannot share one misunderstanding of the API. Gitea's are
//! answers recorded from the real Gitea the end-to-end tests run (tests/tests/it/gitea/).

#![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

mod github {
    use super::super::forge::{Branch, ChangeRequest, Key, Note};
    use super::super::github::{Pull, Repository, User};
    use super::super::{Comment, DeployKey, PullRequest, PullRequestDetails, PullState, RepoInfo};

    #[test]
    fn full_repository_reads_urls_default_branch_and_push_permission() {
        let repo: Repository =
            serde_json::from_str(published_example!("github", "create-org-repository.json")).unwrap();
        let info = RepoInfo::from(repo);
        assert_eq!(info.default_branch.as_deref(), Some("master"));
        assert!(!info.private);
        assert_eq!(info.ssh_url, "git@github.com:octocat/Hello-World.git");
        assert_eq!(info.https_url, "https://github.com/octocat/Hello-World.git");
        assert_eq!(info.web_url, "https://github.com/octocat/Hello-World");
        assert_eq!(info.can_push, Some(false));
    }

    #[test]
    fn authenticated_user_reads_login() {
        let user: User = serde_json::from_str(published_example!("github", "authenticated-user.json")).unwrap();
        assert_eq!(user.login, "octocat");
    }

    #[test]
    fn deploy_keys_read_id_title_key_and_read_only() {
        let keys: Vec<Key> = serde_json::from_str(published_example!("github", "list-deploy-keys.json")).unwrap();
        assert_eq!(keys.len(), 1);
        let created: Key = serde_json::from_str(published_example!("github", "create-deploy-key.json")).unwrap();
        for key in keys.into_iter().chain([created]).map(DeployKey::from) {
            assert_eq!((key.id, key.title.as_str(), key.key.as_str()), (1, "octocat@octomac", "ssh-rsa AAA..."));
            assert!(key.read_only);
        }
    }

    #[test]
    fn branch_reads_protected() {
        let branches: Vec<Branch> = serde_json::from_str(published_example!("github", "list-branches.json")).unwrap();
        assert!(branches[0].protected);
    }

    #[test]
    fn pull_requests_read_number_url_and_title() {
        let pulls: Vec<ChangeRequest> =
            serde_json::from_str(published_example!("github", "list-pull-requests.json")).unwrap();
        let pull = PullRequest::from(pulls.into_iter().next().unwrap());
        assert_eq!(pull.number, 1347);
        assert_eq!(pull.url, "https://github.com/octocat/Hello-World/pull/1347");
        assert_eq!(pull.title, "Amazing new feature");
    }

    /// The published listing lacks `head` and `base` (trimmed, PROVENANCE.md) and, being Pull
    /// Request Simple, `mergeable`: those read as unknown.
    #[test]
    fn pull_request_details_read_state_body_author_and_time() {
        let pulls: Vec<Pull> = serde_json::from_str(published_example!("github", "list-pull-requests.json")).unwrap();
        let pull = PullRequestDetails::from(pulls.into_iter().next().unwrap());
        assert_eq!((pull.number, pull.state), (1347, PullState::Open));
        assert_eq!(pull.body, "Please pull these awesome changes in!");
        assert_eq!(pull.author.as_deref(), Some("octocat"));
        assert_eq!(pull.created_at.as_deref(), Some("2011-01-26T19:01:12Z"));
        assert_eq!((pull.head_branch, pull.mergeable), (None, None));
        assert_eq!(pull.merge_commit, None, "an open request's merge_commit_sha is only GitHub's test merge");
    }

    #[test]
    fn issue_comments_read_id_body_and_author() {
        let listed: Vec<Note> = serde_json::from_str(published_example!("github", "list-issue-comments.json")).unwrap();
        let created: Note = serde_json::from_str(published_example!("github", "create-issue-comment.json")).unwrap();
        let updated: Note = serde_json::from_str(published_example!("github", "update-issue-comment.json")).unwrap();
        for note in listed.into_iter().chain([created, updated]) {
            let comment = Comment::from(note);
            assert_eq!(comment, Comment { id: 1, body: "Me too".into(), author: Some("octocat".into()) });
        }
    }
}

mod gitlab {
    use super::super::forge::{Branch, ChangeRequest, Key, Note};
    use super::super::gitlab::MergeRequest;
    use super::super::{Comment, DeployKey, PullRequest, PullRequestDetails, PullState};

    #[test]
    fn deploy_keys_read_id_title_key_and_can_push_as_read_only() {
        let keys: Vec<Key> = serde_json::from_str(published_example!("gitlab", "list-deploy-keys.json")).unwrap();
        assert_eq!(keys.len(), 1);
        let listed = DeployKey::from(keys.into_iter().next().unwrap());
        assert_eq!((listed.id, listed.title.as_str()), (1, "Public key"));
        assert!(listed.key.starts_with("ssh-rsa AAAAB3NzaC1yc2E"));
        assert!(listed.read_only, "can_push: false");

        let added: Key = serde_json::from_str(published_example!("gitlab", "add-deploy-key.json")).unwrap();
        let added = DeployKey::from(added);
        assert_eq!((added.id, added.title.as_str(), added.key.as_str()), (12, "My deploy key", "ssh-rsa AAAA..."));
        assert!(!added.read_only, "can_push: true");
    }

    #[test]
    fn branch_reads_protected() {
        let branch: Branch = serde_json::from_str(published_example!("gitlab", "get-branch.json")).unwrap();
        assert!(branch.protected);
    }

    #[test]
    fn merge_requests_read_iid_web_url_and_title() {
        let requests: Vec<ChangeRequest> =
            serde_json::from_str(published_example!("gitlab", "list-project-merge-requests.json")).unwrap();
        let request = PullRequest::from(requests.into_iter().next().unwrap());
        assert_eq!(request.number, 1);
        assert_eq!(request.url, "http://gitlab.example.com/my-group/my-project/merge_requests/1");
        assert_eq!(request.title, "test1");
    }

    #[test]
    fn merge_request_details_read_branches_state_author_and_merge_status() {
        let requests: Vec<MergeRequest> =
            serde_json::from_str(published_example!("gitlab", "list-project-merge-requests.json")).unwrap();
        let request = PullRequestDetails::from(requests.into_iter().next().unwrap());
        assert_eq!((request.number, request.state), (1, PullState::Merged));
        assert_eq!((request.head_branch.as_deref(), request.base_branch.as_deref()), (Some("test1"), Some("master")));
        assert_eq!(request.head_sha.as_deref(), Some("8888888888888888888888888888888888888888"));
        assert_eq!(request.body, "fixed login page css paddings");
        assert_eq!(request.author.as_deref(), Some("admin"));
        assert_eq!(request.created_at.as_deref(), Some("2017-04-29T08:46:00Z"));
        assert_eq!((request.mergeable, request.merge_detail.as_deref()), (Some(true), Some("can_be_merged")));
        assert_eq!(request.merge_commit, None, "merged, with merge_commit_sha and squash_commit_sha null");
    }

    #[test]
    fn a_merge_request_note_reads_id_body_and_author() {
        let note: Note = serde_json::from_str(published_example!("gitlab", "get-merge-request-note.json")).unwrap();
        let comment = Comment::from(note);
        assert_eq!(comment, Comment { id: 301, body: "Comment for MR".into(), author: Some("pipin".into()) });
    }
}

mod gitea {
    use super::super::forge::{Branch, ChangeRequest, Key};
    use super::super::gitea::Pull;
    use super::super::github::Repository;
    use super::super::{DeployKey, PullRequest, PullRequestDetails, PullState, RepoInfo};

    #[test]
    fn repository_reads_urls_default_branch_and_push_permission() {
        let repo: Repository = serde_json::from_str(published_example!("gitea", "get-repository.json")).unwrap();
        let info = RepoInfo::from(repo);
        assert_eq!(info.default_branch.as_deref(), Some("main"));
        assert!(info.private);
        assert_eq!(info.ssh_url, "ssh://root@127.0.0.1:13022/acme/fleet.git");
        assert_eq!(info.https_url, "http://127.0.0.1:13000/acme/fleet.git");
        assert_eq!(info.web_url, "http://127.0.0.1:13000/acme/fleet");
        assert_eq!(info.can_push, Some(true));
    }

    #[test]
    fn deploy_keys_read_id_title_key_and_read_only() {
        let keys: Vec<Key> = serde_json::from_str(published_example!("gitea", "list-deploy-keys.json")).unwrap();
        let keys: Vec<DeployKey> = keys.into_iter().map(DeployKey::from).collect();
        assert_eq!(keys.len(), 1);
        assert_eq!((keys[0].id, keys[0].title.as_str()), (1, "flux-system"));
        assert!(keys[0].key.starts_with("ssh-ed25519 AAAA"), "{}", keys[0].key);
        assert!(keys[0].read_only);
    }

    #[test]
    fn branch_reads_protected() {
        let branch: Branch = serde_json::from_str(published_example!("gitea", "get-branch.json")).unwrap();
        assert!(!branch.protected);
    }

    #[test]
    fn an_open_pull_request_reads_number_branches_head_and_mergeable() {
        let text = published_example!("gitea", "get-pull-request-open.json");
        let request = PullRequest::from(serde_json::from_str::<ChangeRequest>(text).unwrap());
        assert_eq!(request.number, 1);
        assert_eq!(request.url, "http://127.0.0.1:13000/acme/fleet/pulls/1");
        assert_eq!(request.title, "Add app hello");
        let details = PullRequestDetails::from(serde_json::from_str::<Pull>(text).unwrap());
        assert_eq!((details.number, details.state), (1, PullState::Open));
        assert_eq!(
            (details.head_branch.as_deref(), details.base_branch.as_deref()),
            (Some("gitops/add-hello-1a2b3c4"), Some("main"))
        );
        assert_eq!(details.head_sha.as_deref(), Some("b76795ae34214ef1180ee7d033748d9f08edee31"));
        assert_eq!((details.mergeable, details.merge_commit), (Some(true), None));
        assert_eq!(details.author.as_deref(), Some("gitops"));
        assert_eq!(details.body, "kubectl-gitops");
    }

    #[test]
    fn a_merged_pull_request_reads_its_merge_commit() {
        let text = published_example!("gitea", "get-pull-request-merged.json");
        let details = PullRequestDetails::from(serde_json::from_str::<Pull>(text).unwrap());
        assert_eq!(details.state, PullState::Merged);
        assert_eq!(details.merge_commit.as_deref(), Some("fc104283a848924a0314b130d7693f39222bcc1e"));
    }

    /// Gitea answers `mergeable: false` while it checks for conflicts, too: that reads as not
    /// known yet (`pr show` asks again), with Gitea's possible reasons.
    #[test]
    fn not_mergeable_reads_as_not_known_yet() {
        let text = published_example!("gitea", "get-pull-request-open.json")
            .replace("\"mergeable\": true", "\"mergeable\": false");
        let details = PullRequestDetails::from(serde_json::from_str::<Pull>(&text).unwrap());
        assert_eq!(details.mergeable, None);
        assert!(details.merge_detail.unwrap().contains("conflict"));
    }
}
