//! The failures of git operations, each with its hint.

/// A failed git operation. Secrets never appear in the message.
///
/// Every variant maps to exit code 4 (`ExitCode::Git`) except [`GitError::InvalidPath`],
/// [`GitError::InvalidBranch`] and [`GitError::InvalidUrl`] (bad input, exit 2) and
/// [`GitError::Io`] (local, exit 5); the command layer wraps it (`Error::Git`).
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The SSH server offered a key that `known_hosts` does not list for it.
    #[error(
        "host key verification failed for {host}: the server offered {found}, but known_hosts expects {}",
        expected.join(" or ")
    )]
    HostKeyMismatch {
        /// `host` or `[host]:port`, as in known_hosts.
        host: String,
        /// The keys known_hosts lists for the host (`type SHA256:…`).
        expected: Vec<String>,
        /// The key the server offered (`type SHA256:…`).
        found: String,
    },

    /// The SSH server's key is marked `@revoked` in known_hosts.
    #[error("host key verification failed for {host}: the server offered {found}, which known_hosts marks @revoked")]
    HostKeyRevoked {
        /// `host` or `[host]:port`.
        host: String,
        /// The key the server offered (`type SHA256:…`).
        found: String,
    },

    /// known_hosts has no entry for the SSH server.
    #[error("unknown host {host}: known_hosts has no key for it (the server offered {found}){}", note.as_deref().map(|n| format!("; {n}")).unwrap_or_default())]
    UnknownHost {
        /// `host` or `[host]:port`, as in known_hosts.
        host: String,
        /// The key the server offered (`type SHA256:…`), for checking out of band.
        found: String,
        /// Why entries that might have been meant for it were not used.
        note: Option<String>,
    },

    /// The server refused our credentials, or wanted some we do not have.
    #[error("authentication to {url} failed: {reason}")]
    AuthFailed {
        /// The URL, without any password.
        url: String,
        /// What was refused.
        reason: String,
    },

    /// The repository does not exist (or is hidden from us).
    #[error("repository {url} not found{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    NotFound {
        /// The URL, without any password.
        url: String,
        /// What the server said, when it said something.
        reason: Option<String>,
    },

    /// The server could not be reached (DNS, refused connection, TLS).
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The URL, without any password.
        url: String,
        /// The transport error.
        reason: String,
    },

    /// The server asked for our password or token from somewhere it must not go: another origin
    /// than the remote's (a redirect), or plain http to another machine.
    #[error("credentials for {url} were withheld: {reason}")]
    CredentialsWithheld {
        /// The remote's URL, without any password.
        url: String,
        /// Where they were asked for, and why not.
        reason: String,
    },

    /// The remote branch moved since we fetched it: our push would drop someone's commits.
    #[error("push to branch {branch} rejected: the remote has commits we do not have (non-fast-forward)")]
    NonFastForward {
        /// The branch pushed.
        branch: String,
    },

    /// The server refused the push for another reason (hooks, branch protection).
    #[error("push to branch {branch} rejected by the server: {reason}")]
    Rejected {
        /// The branch pushed.
        branch: String,
        /// The server's status message.
        reason: String,
    },

    /// A path given to [`Checkout`] is not a plain relative path inside the work tree.
    #[error("invalid path {path:?} in the config repo: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },

    /// Not a valid git branch name.
    #[error("invalid branch name {branch:?}")]
    InvalidBranch {
        /// The name as given.
        branch: String,
    },

    /// Not a valid git tag name.
    #[error("invalid tag name {tag:?}")]
    InvalidTag {
        /// The name as given.
        tag: String,
    },

    /// A URL we cannot use.
    #[error("invalid git URL {url}: {reason}")]
    InvalidUrl {
        /// The URL, without any password.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A git call did not finish in time: the server stalled, or the network did.
    #[error("{what} did not answer within {after}")]
    TimedOut {
        /// The server's URL (without any password), or `git`.
        what: String,
        /// The time given, as `30s`.
        after: String,
    },

    /// Ctrl-C or SIGTERM stopped the operation ([`crate::interrupt`]).
    #[error("interrupted while talking to {url}")]
    Interrupted {
        /// The URL, without any password.
        url: String,
    },

    /// Local I/O on the checkout failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing, naming the file.
        context: String,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },

    /// Any other libgit2 failure.
    #[error("git: {}", .0.message())]
    Other(#[from] git2::Error),
}

impl GitError {
    /// A line telling the user what to try next, when we know one.
    pub fn hint(&self) -> Option<String> {
        match self {
            GitError::HostKeyMismatch {
                host,
                expected,
                found,
            } => {
                let offered_type = found.split(' ').next().unwrap_or_default();
                if expected.iter().any(|e| e.starts_with(&format!("{offered_type} "))) {
                    Some(format!(
                        "someone may be intercepting the connection, or {host} changed its key: check the fingerprint {found} with the server's owner before updating known_hosts"
                    ))
                } else {
                    // ssh-keyscan -t wants the family, not the algorithm name.
                    let family = match offered_type {
                        t if t.starts_with("ecdsa-") => "ecdsa",
                        "ssh-rsa" => "rsa",
                        "ssh-dss" => "dsa",
                        _ => "ed25519",
                    };
                    Some(format!(
                        "known_hosts has no {offered_type} key for {host}; add that key (`ssh-keyscan -t {family}` prints it) after checking its fingerprint with the server's owner"
                    ))
                }
            }
            GitError::HostKeyRevoked { .. } => Some(
                "the server uses a key that was revoked: ask its owner which key is current".into(),
            ),
            GitError::UnknownHost { host, .. } => Some(format!(
                "add the server's key to known_hosts after checking its fingerprint (`ssh-keyscan` prints the line, as `{host} <type> <key>`)"
            )),
            GitError::AuthFailed { .. } => Some(
                "check the key or token: it must be valid and have write access to the repository (for a deploy key, allow write access)"
                    .into(),
            ),
            GitError::NotFound { .. } => Some(
                "check the URL; private repositories also answer \"not found\" when the credentials cannot see them"
                    .into(),
            ),
            GitError::Unreachable { .. } => {
                Some("check the host name, port and network (proxy, firewall)".into())
            }
            GitError::CredentialsWithheld { .. } => Some(
                "a password or token goes only to the repository's own origin, over https (plain http only to 127.0.0.1, ::1 or localhost): use the URL the server answers at"
                    .into(),
            ),
            GitError::NonFastForward { .. } => Some(
                "someone pushed to the branch meanwhile; run the command again to apply the change on top".into(),
            ),
            GitError::Rejected { .. } => Some(
                "the branch may be protected: allow this key or token to push, or use another branch".into(),
            ),
            GitError::InvalidPath { .. } => {
                Some("use a relative path with `/` separators inside the repository".into())
            }
            GitError::InvalidBranch { .. } => {
                Some("branch names follow `git check-ref-format --branch`".into())
            }
            GitError::InvalidTag { .. } => Some("tag names follow `git check-ref-format`".into()),
            GitError::InvalidUrl { .. } => Some(
                "use ssh://user@host[:port]/path, user@host:path, https://host/path or file:///path".into(),
            ),
            GitError::TimedOut { .. } => Some(
                "the git server is slow or not answering: try again later, or give it longer with --timeout".into(),
            ),
            GitError::Interrupted { .. } => Some(crate::interrupt::HINT.into()),
            GitError::Io { .. } | GitError::Other(_) => None,
        }
    }
}
