//! Which provider a host runs ([`Kind`]), and what follows from it: its token's environment
//! variable, its API's default host, what it calls a pull request.

use std::fmt;

use crate::env;

/// Which git provider a host runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// GitHub: github.com or GitHub Enterprise Server.
    GitHub,
    /// GitLab: gitlab.com or a self-managed instance.
    GitLab,
    /// Gitea: gitea.com or a self-hosted instance.
    Gitea,
}

impl Kind {
    /// The lower-case name used in flags and in the install record (`github`, `gitlab`, `gitea`).
    pub fn id(self) -> &'static str {
        match self {
            Kind::GitHub => "github",
            Kind::GitLab => "gitlab",
            Kind::Gitea => "gitea",
        }
    }

    /// The kind a lower-case name ([`Kind::id`]) stands for.
    pub fn from_id(id: &str) -> Option<Kind> {
        [Kind::GitHub, Kind::GitLab, Kind::Gitea].into_iter().find(|kind| kind.id() == id)
    }

    /// The environment variable holding this provider's API token.
    pub fn token_env(self) -> &'static str {
        match self {
            Kind::GitHub => env::GITHUB_TOKEN,
            Kind::GitLab => env::GITLAB_TOKEN,
            Kind::Gitea => env::GITEA_TOKEN,
        }
    }

    /// The environment variable that overrides this provider's API base URL.
    pub fn api_url_env(self) -> &'static str {
        match self {
            Kind::GitHub => env::KUBECTL_GITOPS_GITHUB_API_URL,
            Kind::GitLab => env::KUBECTL_GITOPS_GITLAB_API_URL,
            Kind::Gitea => env::KUBECTL_GITOPS_GITEA_API_URL,
        }
    }

    /// The user name that goes with the API token over git HTTPS (the token is the password).
    pub fn token_user(self) -> &'static str {
        match self {
            Kind::GitHub | Kind::Gitea => "git",
            Kind::GitLab => "oauth2",
        }
    }

    /// The public host, used when no hostname is configured.
    pub fn default_host(self) -> &'static str {
        match self {
            Kind::GitHub => "github.com",
            Kind::GitLab => "gitlab.com",
            Kind::Gitea => "gitea.com",
        }
    }

    /// The API's path on a host of its own: `/api/v3` (GitHub Enterprise Server), `/api/v4`, `/api/v1`.
    pub fn api_path(self) -> &'static str {
        match self {
            Kind::GitHub => "/api/v3",
            Kind::GitLab => "/api/v4",
            Kind::Gitea => "/api/v1",
        }
    }

    /// The public API: GitHub's lives on a host of its own.
    pub fn public_api_url(self) -> &'static str {
        match self {
            Kind::GitHub => "https://api.github.com",
            Kind::GitLab => "https://gitlab.com/api/v4",
            Kind::Gitea => "https://gitea.com/api/v1",
        }
    }

    /// What a pull request is called on this provider, for messages.
    pub fn pull_request_noun(self) -> &'static str {
        match self {
            Kind::GitHub | Kind::Gitea => "pull request",
            Kind::GitLab => "merge request",
        }
    }

    /// What precedes a request's number: `#42`, `!42`.
    pub fn pull_request_sign(self) -> &'static str {
        match self {
            Kind::GitHub | Kind::Gitea => "#",
            Kind::GitLab => "!",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::GitHub => "GitHub",
            Kind::GitLab => "GitLab",
            Kind::Gitea => "Gitea",
        })
    }
}
