//! The failures of talking to a provider.

use crate::provider_kind::Kind;

/// A failure talking to a git provider. Each has a [`hint`](ProviderError::hint); none contains
/// the token.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The configuration cannot work (bad URL, bad repository name, unusable token characters).
    #[error("{0}")]
    InvalidConfig(String),

    /// The host answered 401: the token is missing, wrong, expired or revoked.
    #[error("{host} rejected the API token (HTTP 401{})", detail_suffix(.detail))]
    Unauthorized {
        /// The host, e.g. `github.com`.
        host: String,
        /// The provider: which token variable to check.
        kind: Kind,
        /// The provider's message, e.g. `Bad credentials`.
        detail: String,
    },

    /// The host answered 403: the token works but may not do this.
    #[error("forbidden: {message}")]
    Forbidden {
        /// What we tried and what the provider said.
        message: String,
        /// Whom to ask for which right.
        hint: Option<String>,
    },

    /// The host answered 404 for something that must exist.
    #[error("not found: {what}")]
    NotFound {
        /// What is missing, e.g. `GitHub repository acme/fleet`.
        what: String,
        /// The provider.
        kind: Kind,
    },

    /// The thing to create exists already (a branch, a repository).
    #[error("already exists: {what}")]
    AlreadyExists {
        /// What exists, and the provider's message.
        what: String,
    },

    /// A personal repository was asked for under another account than the token's.
    #[error("cannot create {repo} as a personal repository: the token belongs to {authenticated}, not {requested}")]
    OwnerMismatch {
        /// The repository asked for.
        repo: String,
        /// The owner asked for.
        requested: String,
        /// The account the token authenticates.
        authenticated: String,
    },

    /// The host's rate limit is exhausted.
    #[error("rate limited by {host}{}", retry_suffix(*.retry_after_secs))]
    RateLimited {
        /// The host.
        host: String,
        /// Seconds until the limit resets, when the host says.
        retry_after_secs: Option<u64>,
    },

    /// Any other error status.
    #[error("{message} (HTTP {status})")]
    Api {
        /// The HTTP status.
        status: u16,
        /// What we tried and what the provider said.
        message: String,
        /// What to do, when we know.
        hint: Option<String>,
    },

    /// The host did not answer (DNS, connection, TLS, timeout).
    #[error("{0}")]
    Transport(String),

    /// The host answered something we could not read.
    #[error("{0}")]
    InvalidResponse(String),

    /// The host redirected to another origin (or from https to http), where the token would
    /// have gone along; the redirect was not followed.
    #[error("{from} redirected the API request to {to}; it was not followed, so the token was not sent there")]
    RedirectRefused {
        /// `scheme://host[:port]` asked.
        from: String,
        /// `scheme://host[:port]` it redirected to.
        to: String,
    },
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() { String::new() } else { format!(": {detail}") }
}

fn retry_suffix(retry_after_secs: Option<u64>) -> String {
    retry_after_secs.map_or_else(String::new, |secs| format!("; the limit resets in {secs}s"))
}

impl ProviderError {
    /// A [`ProviderError::Forbidden`] with `hint` (made only then) in place of its own; any other
    /// error as it is.
    pub(super) fn with_forbidden_hint(self, hint: impl FnOnce() -> String) -> ProviderError {
        match self {
            ProviderError::Forbidden { message, .. } => ProviderError::Forbidden { message, hint: Some(hint()) },
            other => other,
        }
    }

    /// A line telling the user what to try next, when we know one.
    pub fn hint(&self) -> Option<String> {
        match self {
            ProviderError::InvalidConfig(_) => None,
            ProviderError::Unauthorized { host, kind, .. } => Some(match kind {
                Kind::GitHub => format!(
                    "set {} to a valid token for {host}: a fine-grained token with Administration, Contents and Pull requests read/write on the repository, or a classic token with the `repo` scope",
                    kind.token_env()
                ),
                Kind::GitLab => format!(
                    "set {} to a valid token for {host} with the `api` scope (personal, group or project access token, Maintainer role on the project)",
                    kind.token_env()
                ),
                Kind::Gitea => format!(
                    "set {} to a valid access token for {host} with the write:repository, write:user and write:organization scopes (Settings → Applications)",
                    kind.token_env()
                ),
            }),
            ProviderError::Forbidden { hint, .. } | ProviderError::Api { hint, .. } => hint.clone(),
            ProviderError::NotFound { kind, .. } => Some(format!(
                "check the owner and name, and that the token in {} can see it (private repositories answer 404 to tokens without access)",
                kind.token_env()
            )),
            ProviderError::AlreadyExists { .. } => None,
            ProviderError::OwnerMismatch { requested, .. } => Some(format!(
                "use a token of {requested}, or drop the personal option to create the repository under the organization or group {requested}"
            )),
            ProviderError::RateLimited { .. } => {
                Some("wait for the limit to reset and run the command again".to_string())
            }
            ProviderError::Transport(_) => Some(
                "check the network, proxy settings and the hostname; the provider API must be reachable from this machine".to_string(),
            ),
            ProviderError::RedirectRefused { to, .. } => Some(format!(
                "credentials never follow a redirect to another origin: if the API really moved to {to}, point the hostname (or KUBECTL_GITOPS_<PROVIDER>_API_URL) there"
            )),
            ProviderError::InvalidResponse(_) => Some(
                "check that the hostname points at the provider's API (GitHub Enterprise: https://host/api/v3, GitLab: https://host/api/v4)".to_string(),
            ),
        }
    }
}
