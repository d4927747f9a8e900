//! The calls GitHub, GitLab and Gitea answer the same way, written once over what differs between
//! them ([`Forge`]: paths, field names, statuses, wording). github.rs, gitlab.rs and gitea.rs say
//! only that, and keep the calls that really differ (a repository's creation).

use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;

use serde::Deserialize;

use super::{
    Comment, DeployKey, MergeMethod, MergeOutcome, Provider, ProviderError, PullRequest, PullRequestDetails, PullState,
    RepoInfo, RepoRef, encode_segment,
};

/// What one provider's REST API calls things, where it keeps them and how it answers.
pub(super) trait Forge {
    /// How messages name a repository: `GitHub repository`, `GitLab project`.
    const REPOSITORY: &'static str;
    /// How messages name a change request and its number: (`pull request`, `#`),
    /// (`merge request`, `!`).
    const CHANGE_REQUEST: (&'static str, &'static str);

    /// The API path of the repository itself, each part encoded.
    fn repository_path(repo: &RepoRef) -> String;
    /// A repository as the API returns it.
    type Repository: DeserializeOwned + Into<RepoInfo>;
    /// What to do when the token may not create the repository: `{host}`, `{repo}` and
    /// `{owner}` are filled in; the first when it is the token's own account, the second when it
    /// is an organization's or group's.
    const CREATE_REFUSED: (&'static str, &'static str);

    /// Below [`Forge::repository_path`]; a branch is below that.
    const BRANCHES: &'static str;
    /// Below [`Forge::repository_path`], where a protection rule for a branch name that does not
    /// exist yet is found (GitLab); `None` when a missing branch is never protected (GitHub).
    const PROTECTION_RULES: Option<&'static str>;

    /// Below [`Forge::repository_path`].
    const DEPLOY_KEYS: &'static str;
    /// The body that adds a deploy key.
    fn new_deploy_key(title: &str, key: &str, read_only: bool) -> Value;
    /// The statuses of a delete after which the key is gone (a key already gone included).
    const DEPLOY_KEY_GONE: &'static [u16];
    /// A refused addition, with what to do about it.
    fn deploy_key_refused(error: ProviderError, repo: &RepoRef) -> ProviderError;

    /// The path below [`Forge::repository_path`], the query and the body that create `branch`
    /// at `from_sha`.
    fn new_branch(branch: &str, from_sha: &str) -> (&'static str, Vec<(&'static str, String)>, Option<Value>);
    /// The status that answers "the branch exists already" (with those words in its message).
    const BRANCH_EXISTS: u16;

    /// Below [`Forge::repository_path`].
    const CHANGE_REQUESTS: &'static str;
    /// Below a request's path, where an approval is posted, and its body; the status of success.
    fn approval(head_sha: &str) -> (&'static str, Value);
    const APPROVED: u16;
    /// The method that merges a request (Gitea POSTs).
    const MERGE: Method = Method::PUT;
    /// The body of a merge guarded by `head_sha`; `auto`: once its checks pass (GitLab
    /// `auto_merge`, Gitea `merge_when_checks_succeed`; GitHub's is a GraphQL mutation instead).
    fn merge(head_sha: &str, method: MergeMethod, auto: bool) -> Value;
    /// Whether a refused merge call only has to wait: the forge is still checking whether the
    /// request can merge (a push just came), and says to ask again.
    fn merge_busy(_reply: &super::Reply) -> bool {
        false
    }
    /// Whether an accepted merge call merged or scheduled the merge.
    fn merge_outcome(_reply: &super::Reply) -> MergeOutcome {
        MergeOutcome::Merged
    }
    /// A request as the API returns it, read whole.
    type Details: DeserializeOwned + Into<PullRequestDetails>;
    /// The `state` query value of open requests.
    const OPEN: &'static str;
    /// How the open request from `head_branch` into `base` is found.
    fn open_change_request(repo: &RepoRef, head_branch: &str, base: &str) -> Lookup;
    /// The body that opens a request.
    fn new_change_request(head_branch: &str, base: &str, title: &str, body: &str) -> Value;
    /// The error for an answer that says a request for the branch is open already, if it is one:
    /// GitLab and Gitea answer 409.
    fn change_request_exists(provider: &Provider, reply: &super::Reply, what: &str) -> Option<ProviderError> {
        (reply.status == 409).then(|| ProviderError::AlreadyExists {
            what: format!("{what}: {}", provider.scrub(&super::server_message(&reply.body))),
        })
    }
    /// The method that edits a request (GitHub PATCH, GitLab PUT) and its status of success
    /// (Gitea 201), and the body that sets its title and description.
    const EDIT: (Method, u16);
    fn edited_change_request(title: &str, body: &str) -> Value;

    /// Below [`Forge::repository_path`]: request `number`'s comments (GitHub and Gitea keep a
    /// pull request's conversation on its issue; GitLab's are the merge request's notes).
    fn comments(number: u64) -> String;
    /// Below [`Forge::repository_path`]: one comment of request `number`, to edit.
    fn comment(number: u64, id: u64) -> String;
    /// The method that edits a comment (GitHub and Gitea PATCH, GitLab PUT).
    const EDIT_COMMENT: Method = Method::PATCH;
    /// The longest comment the forge takes, in characters.
    const MAX_COMMENT: usize;
}

/// Where the open request from a branch is found.
pub(super) enum Lookup {
    /// The first of the listing below [`Forge::CHANGE_REQUESTS`] with this query.
    Listed(Vec<(&'static str, String)>),
    /// The request at this path below [`Forge::CHANGE_REQUESTS`], when it is open.
    One(String),
}

fn path<F: Forge>(repo: &RepoRef, below: &str) -> String {
    format!("{}{below}", F::repository_path(repo))
}

/// The hint for a refused repository creation ([`Forge::CREATE_REFUSED`]).
pub(super) fn create_refused_hint<F: Forge>(host: &str, repo: &RepoRef, personal: bool) -> String {
    let (own, organization) = F::CREATE_REFUSED;
    let template = if personal { own } else { organization };
    template.replace("{host}", host).replace("{repo}", &repo.to_string()).replace("{owner}", &repo.owner)
}

/// A deploy key as both APIs return it: GitHub says `read_only`, GitLab `can_push`.
#[derive(Deserialize)]
pub(super) struct Key {
    pub(super) id: u64,
    pub(super) title: String,
    pub(super) key: String,
    pub(super) read_only: Option<bool>,
    pub(super) can_push: Option<bool>,
}

impl From<Key> for DeployKey {
    fn from(key: Key) -> DeployKey {
        let read_only = key.read_only.unwrap_or(!key.can_push.unwrap_or(false));
        DeployKey { id: key.id, title: key.title, key: key.key, read_only }
    }
}

/// A pull request (GitHub: `number`, `html_url`) or merge request (GitLab: `iid`, `web_url`).
#[derive(Deserialize)]
pub(super) struct ChangeRequest {
    #[serde(alias = "iid")]
    pub(super) number: u64,
    #[serde(alias = "web_url")]
    pub(super) html_url: String,
    pub(super) title: String,
}

impl From<ChangeRequest> for PullRequest {
    fn from(request: ChangeRequest) -> PullRequest {
        PullRequest { number: request.number, url: request.html_url, title: request.title }
    }
}

/// A comment as the three APIs return it: GitHub's and Gitea's `user.login` (Gitea's user also
/// has a `username`), GitLab's `author.username`.
#[derive(Deserialize)]
pub(super) struct Note {
    pub(super) id: u64,
    #[serde(default)]
    pub(super) body: String,
    pub(super) user: Option<NoteAuthor>,
    pub(super) author: Option<NoteAuthor>,
}

#[derive(Deserialize)]
pub(super) struct NoteAuthor {
    pub(super) login: Option<String>,
    pub(super) username: Option<String>,
}

impl From<Note> for Comment {
    fn from(note: Note) -> Comment {
        let author = note.user.or(note.author).and_then(|who| who.login.or(who.username));
        Comment { id: note.id, body: note.body, author }
    }
}

/// A branch as both APIs return it.
#[derive(Deserialize)]
pub(super) struct Branch {
    pub(super) protected: bool,
}

pub(super) async fn get_repository<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
) -> Result<Option<RepoInfo>, ProviderError> {
    let what = format!("reading {} {repo}", F::REPOSITORY);
    Ok(provider.get_if_found::<F::Repository>(&F::repository_path(repo), &what).await?.map(Into::into))
}

pub(super) async fn is_branch_protected<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    branch: &str,
) -> Result<bool, ProviderError> {
    let what = format!("reading branch {branch} of {} {repo}", F::REPOSITORY);
    let found = path::<F>(repo, &format!("{}/{}", F::BRANCHES, encode_segment(branch)));
    if let Some(found) = provider.get_if_found::<Branch>(&found, &what).await? {
        return Ok(found.protected);
    }
    let Some(rules) = F::PROTECTION_RULES else {
        return Ok(false);
    };
    // The branch does not exist yet: is there a rule for its name?
    let what = format!("reading protection of branch {branch} of {} {repo}", F::REPOSITORY);
    let rule = path::<F>(repo, &format!("{rules}/{}", encode_segment(branch)));
    let reply = provider.call(Method::GET, &rule, &[], None).await?;
    match reply.status {
        200 => Ok(true),
        404 => Ok(false),
        _ => Err(provider.failure(&reply, &what)),
    }
}

pub(super) async fn list_deploy_keys<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
) -> Result<Vec<DeployKey>, ProviderError> {
    let what = format!("listing deploy keys of {} {repo}", F::REPOSITORY);
    let keys: Vec<Key> = provider.get_all(&path::<F>(repo, F::DEPLOY_KEYS), &what).await?;
    Ok(keys.into_iter().map(Into::into).collect())
}

pub(super) async fn create_deploy_key<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    title: &str,
    public_key: &str,
    read_only: bool,
) -> Result<(), ProviderError> {
    let what = format!("adding deploy key {title:?} to {} {repo}", F::REPOSITORY);
    let body = F::new_deploy_key(title, public_key.trim(), read_only);
    let reply = provider.call(Method::POST, &path::<F>(repo, F::DEPLOY_KEYS), &[], Some(&body)).await?;
    provider.expect_status(&reply, &[201], &what).map_err(|error| F::deploy_key_refused(error, repo))
}

pub(super) async fn delete_deploy_key<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    key_id: u64,
) -> Result<(), ProviderError> {
    let what = format!("deleting deploy key {key_id} of {} {repo}", F::REPOSITORY);
    let key = path::<F>(repo, &format!("{}/{key_id}", F::DEPLOY_KEYS));
    let reply = provider.call(Method::DELETE, &key, &[], None).await?;
    provider.expect_status(&reply, F::DEPLOY_KEY_GONE, &what)
}

pub(super) async fn create_branch<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    branch: &str,
    from_sha: &str,
) -> Result<(), ProviderError> {
    let what = format!("creating branch {branch} in {} {repo}", F::REPOSITORY);
    let (below, query, body) = F::new_branch(branch, from_sha);
    let query: Vec<(&str, &str)> = query.iter().map(|(name, value)| (*name, value.as_str())).collect();
    let reply = provider.call(Method::POST, &path::<F>(repo, below), &query, body.as_ref()).await?;
    provider.expect_status(&reply, &[201], &what).map_err(|error| match error {
        ProviderError::Api { status, message, .. }
            if status == F::BRANCH_EXISTS && message.contains("already exists") =>
        {
            ProviderError::AlreadyExists { what: format!("branch {branch} in {} {repo}", F::REPOSITORY) }
        }
        other => other,
    })
}

pub(super) async fn find_open_pull_request<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    head_branch: &str,
    base: &str,
) -> Result<Option<PullRequest>, ProviderError> {
    let what = format!("looking up the open {} from {head_branch} in {} {repo}", F::CHANGE_REQUEST.0, F::REPOSITORY);
    match F::open_change_request(repo, head_branch, base) {
        Lookup::Listed(query) => {
            let query: Vec<(&str, &str)> = query.iter().map(|(name, value)| (*name, value.as_str())).collect();
            let reply = provider.call(Method::GET, &path::<F>(repo, F::CHANGE_REQUESTS), &query, None).await?;
            let requests: Vec<ChangeRequest> = provider.expect(&reply, 200, &what)?;
            Ok(requests.into_iter().next().map(Into::into))
        }
        Lookup::One(below) => {
            let request = path::<F>(repo, &format!("{}{below}", F::CHANGE_REQUESTS));
            let found: Option<PullRequestDetails> =
                provider.get_if_found::<F::Details>(&request, &what).await?.map(Into::into);
            Ok(found.filter(|request| request.state == PullState::Open).map(|request| PullRequest {
                number: request.number,
                url: request.url,
                title: request.title,
            }))
        }
    }
}

pub(super) async fn create_pull_request<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    head_branch: &str,
    base: &str,
    title: &str,
    body: &str,
) -> Result<PullRequest, ProviderError> {
    let what = format!("opening a {} from {head_branch} into {base} in {} {repo}", F::CHANGE_REQUEST.0, F::REPOSITORY);
    let request = F::new_change_request(head_branch, base, title, body);
    let reply = provider.call(Method::POST, &path::<F>(repo, F::CHANGE_REQUESTS), &[], Some(&request)).await?;
    if let Some(exists) = F::change_request_exists(provider, &reply, &what) {
        return Err(exists);
    }
    Ok(provider.expect::<ChangeRequest>(&reply, 201, &what)?.into())
}

pub(super) async fn update_pull_request<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
    title: &str,
    body: &str,
) -> Result<PullRequest, ProviderError> {
    let (noun, sign) = F::CHANGE_REQUEST;
    let what = format!("updating {noun} {sign}{number} of {} {repo}", F::REPOSITORY);
    let request = F::edited_change_request(title, body);
    let edited = path::<F>(repo, &format!("{}/{number}", F::CHANGE_REQUESTS));
    let (method, edited_status) = F::EDIT;
    let reply = provider.call(method, &edited, &[], Some(&request)).await?;
    Ok(provider.expect::<ChangeRequest>(&reply, edited_status, &what)?.into())
}

pub(super) async fn list_open_pull_requests<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
) -> Result<Vec<PullRequestDetails>, ProviderError> {
    let what = format!("listing the open {}s of {} {repo}", F::CHANGE_REQUEST.0, F::REPOSITORY);
    let listing = path::<F>(repo, &format!("{}?state={}", F::CHANGE_REQUESTS, F::OPEN));
    let requests: Vec<F::Details> = provider.get_all(&listing, &what).await?;
    Ok(requests.into_iter().map(Into::into).collect())
}

pub(super) async fn get_pull_request<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
) -> Result<Option<PullRequestDetails>, ProviderError> {
    let (noun, sign) = F::CHANGE_REQUEST;
    let what = format!("reading {noun} {sign}{number} of {} {repo}", F::REPOSITORY);
    let request = path::<F>(repo, &format!("{}/{number}", F::CHANGE_REQUESTS));
    Ok(provider.get_if_found::<F::Details>(&request, &what).await?.map(Into::into))
}

pub(super) async fn list_comments<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
) -> Result<Vec<Comment>, ProviderError> {
    let (noun, sign) = F::CHANGE_REQUEST;
    let what = format!("listing the comments of {noun} {sign}{number} of {} {repo}", F::REPOSITORY);
    let notes: Vec<Note> = provider.get_all(&path::<F>(repo, &F::comments(number)), &what).await?;
    Ok(notes.into_iter().map(Into::into).collect())
}

pub(super) async fn create_comment<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
    body: &str,
) -> Result<Comment, ProviderError> {
    let (noun, sign) = F::CHANGE_REQUEST;
    let what = format!("commenting on {noun} {sign}{number} of {} {repo}", F::REPOSITORY);
    let request = serde_json::json!({ "body": body });
    let reply = provider.call(Method::POST, &path::<F>(repo, &F::comments(number)), &[], Some(&request)).await?;
    Ok(provider.expect::<Note>(&reply, 201, &what)?.into())
}

pub(super) async fn update_comment<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
    id: u64,
    body: &str,
) -> Result<Comment, ProviderError> {
    let (noun, sign) = F::CHANGE_REQUEST;
    let what = format!("updating comment {id} of {noun} {sign}{number} of {} {repo}", F::REPOSITORY);
    let request = serde_json::json!({ "body": body });
    let reply = provider.call(F::EDIT_COMMENT, &path::<F>(repo, &F::comment(number, id)), &[], Some(&request)).await?;
    Ok(provider.expect::<Note>(&reply, 200, &what)?.into())
}

/// The longest comment the forge takes, in characters.
pub(super) fn max_comment<F: Forge>() -> usize {
    F::MAX_COMMENT
}

pub(super) async fn approve_pull_request<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
    head_sha: &str,
) -> Result<(), ProviderError> {
    let (noun, sign) = F::CHANGE_REQUEST;
    let what = format!("approving {noun} {sign}{number} of {} {repo}", F::REPOSITORY);
    let (below, body) = F::approval(head_sha);
    let approval = path::<F>(repo, &format!("{}/{number}{below}", F::CHANGE_REQUESTS));
    let reply = provider.call(Method::POST, &approval, &[], Some(&body)).await?;
    provider.expect_status(&reply, &[F::APPROVED], &what).map_err(|error| moved(error, noun, sign, number))
}

pub(super) async fn merge_pull_request<F: Forge>(
    provider: &Provider,
    repo: &RepoRef,
    number: u64,
    head_sha: &str,
    method: MergeMethod,
    auto: bool,
) -> Result<MergeOutcome, ProviderError> {
    let (noun, sign) = F::CHANGE_REQUEST;
    let what = format!("merging {noun} {sign}{number} of {} {repo}", F::REPOSITORY);
    let merge = path::<F>(repo, &format!("{}/{number}/merge", F::CHANGE_REQUESTS));
    let mut backoff = crate::retry::Backoff::until(std::time::Instant::now() + provider.timeout());
    let reply = loop {
        let reply = provider.call(F::MERGE, &merge, &[], Some(&F::merge(head_sha, method, auto))).await?;
        // The guard (head_sha) still holds on the next try: a head that moved meanwhile is a 409.
        if !(F::merge_busy(&reply) && backoff.wait().await) {
            break reply;
        }
    };
    let no_right =
        || format!("merging needs write access to {repo} and the right to merge into its base branch: ask its owners");
    provider.expect_status(&reply, &[200, 201], &what).map_err(|error| match error {
        // Gitea answers 405 to a user who may not merge, as GitHub and GitLab do to a request
        // that cannot be merged.
        ProviderError::Api { status: 405, message, .. } if message.contains("not allowed to merge") => {
            ProviderError::Api { status: 405, message, hint: Some(no_right()) }
        }
        ProviderError::Api { status: 405, message, .. } => ProviderError::Api {
            status: 405,
            message,
            hint: Some(format!("`kubectl gitops pr show {number}` says why it cannot be merged")),
        },
        other => moved(other, noun, sign, number).with_forbidden_hint(no_right),
    })?;
    Ok(F::merge_outcome(&reply))
}

/// A 409 to a guarded approval or merge: the head moved since it was validated.
fn moved(error: ProviderError, noun: &str, sign: &str, number: u64) -> ProviderError {
    match error {
        ProviderError::Api { status: 409, message, .. } => ProviderError::Api {
            status: 409,
            message: format!("{message}: the head of {noun} {sign}{number} moved since it was validated"),
            hint: Some(format!("run `kubectl gitops pr show {number}` again to validate what it holds now")),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gitea's user carries both `login` and `username` (the real Gitea of the end-to-end tests
    /// answers so: tests/tests/it/gitea/ posts and edits a comment); GitHub's has `login`,
    /// GitLab's note an `author` with `username` (published_examples.rs).
    #[test]
    fn a_comment_s_author_is_read_from_each_forge_s_shape() {
        let gitea = r#"{"id": 7, "body": "b", "user": {"id": 1, "login": "gitea-admin", "username": "gitea-admin"}}"#;
        let note: Note = serde_json::from_str(gitea).unwrap();
        assert_eq!(Comment::from(note).author.as_deref(), Some("gitea-admin"));
        let gitlab = r#"{"id": 8, "body": "b", "author": {"id": 1, "username": "pipin"}}"#;
        let note: Note = serde_json::from_str(gitlab).unwrap();
        assert_eq!(Comment::from(note).author.as_deref(), Some("pipin"));
        let anonymous: Note = serde_json::from_str(r#"{"id": 9}"#).unwrap();
        assert_eq!(Comment::from(anonymous), Comment { id: 9, body: String::new(), author: None });
    }
}
