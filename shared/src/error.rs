//! Typed errors for every command, and the exit codes they map to.
//!
//! Library code and the binaries return [`Error`], with its typed sources (git, provider, kube,
//! I/O); [`crate::runtime::finish`] words it as `error:` and `hint:` lines and picks the exit code.
//! No catch-all error type: every failure a user can meet has a variant, and so an exit code and a hint.
//! The codes are a contract with shell scripts and are documented in docs/exit-codes.md.

/// The process exit codes kubectl-gitops documents (docs/exit-codes.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything asked for was done, or everything shown is healthy.
    Ok = 0,
    /// The operation ran and the answer is "no": not ready, failed, a difference was found.
    No = 1,
    /// Usage error or bad input: nothing was changed.
    Usage = 2,
    /// The cluster is unreachable, or refused us (unauthorized, forbidden).
    Cluster = 3,
    /// A git server, a git provider (GitHub, GitLab) or a release server failed or refused us.
    Git = 4,
    /// Anything else: a local I/O problem or a bug.
    Internal = 5,
    /// Stopped by Ctrl-C or SIGTERM before it finished: 128 + SIGINT, as a shell reports a
    /// command that a Ctrl-C ended.
    Interrupted = 130,
}

impl ExitCode {
    /// The numeric code handed to the operating system.
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// Every failure the shared library reports. Each variant knows its exit code and a hint.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user gave input we cannot act on.
    #[error("{message}")]
    Usage {
        /// What is wrong, naming the input.
        message: String,
        /// What to do instead.
        hint: Option<String>,
    },

    /// The kubeconfig could not be read or does not name a usable cluster.
    #[error("cannot load kubeconfig: {0}")]
    Kubeconfig(#[source] kube::config::KubeconfigError),

    /// The API server did not answer (connection refused, DNS, TLS, timeout).
    #[error("cluster unreachable at {server}: {reason}")]
    Unreachable {
        /// The API server URL from the kubeconfig.
        server: String,
        /// The underlying transport error, flattened to one line.
        reason: String,
    },

    /// The API server answered 401.
    #[error("unauthorized: the cluster at {server} rejected our credentials")]
    Unauthorized {
        /// The API server URL from the kubeconfig.
        server: String,
    },

    /// The API server answered 403.
    #[error("forbidden: {message}")]
    Forbidden {
        /// The API server's message, which names the verb, resource and user.
        message: String,
    },

    /// Any other API error. Displayed as a sentence from the API server's own message, code and
    /// reason ([`crate::diagnostic::describe`]); kube's `Display` would add a debug dump of the
    /// Status, so the kube error is deliberately not a `#[source]` (the chain stays readable).
    #[error("{}", crate::diagnostic::describe(.0))]
    Api(kube::Error),

    /// The operation ran and the answer is "no" (not ready, failing, timed out).
    #[error("{message}")]
    Negative {
        /// The reason, naming the object that is not as wanted.
        message: String,
        /// What to look at next.
        hint: Option<String>,
    },

    /// A git operation failed (the server refused us, a push was rejected, a path was bad).
    #[error(transparent)]
    Git(#[from] crate::git_error::GitError),

    /// GitHub or GitLab failed or refused us.
    #[error(transparent)]
    Provider(#[from] crate::provider_error::ProviderError),

    /// The git server or provider answered, and the answer stops us: the repository is missing,
    /// the token may not push, the branch is protected.
    #[error("{message}")]
    Remote {
        /// What the answer was, naming the repository or host.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },

    /// A download did not match its checksum, or could not be unpacked; nothing of it was kept.
    #[error("{message}")]
    Untrusted {
        /// What did not match, naming the file.
        message: String,
        /// What to do about it.
        hint: String,
    },

    /// A step of a multi-step operation failed; names the step.
    #[error("step {number}/{total} ({step}) failed: {source}")]
    Step {
        /// 1-based step number.
        number: usize,
        /// How many steps the plan has.
        total: usize,
        /// The step's description.
        step: String,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },

    /// Local I/O failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },

    /// Serialising our own output failed; this is a bug.
    #[error("cannot render output: {0}")]
    Render(String),

    /// Something that cannot happen did (a task panicked, a key could not be encoded).
    #[error("internal error: {0}")]
    Internal(String),

    /// Ctrl-C or SIGTERM stopped the command before it finished.
    #[error("interrupted before the command finished")]
    Interrupted,
}

impl Error {
    /// A usage error with a hint.
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Usage { message: message.into(), hint: Some(hint.into()) }
    }

    /// Wraps an I/O error with what we were doing.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }

    /// The exit code this error maps to.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Usage { .. } | Error::Untrusted { .. } => ExitCode::Usage,
            Error::Kubeconfig(_)
            | Error::Unreachable { .. }
            | Error::Unauthorized { .. }
            | Error::Forbidden { .. }
            | Error::Api(_) => ExitCode::Cluster,
            Error::Negative { .. } => ExitCode::No,
            Error::Git(error) => git_exit_code(error),
            Error::Provider(_) | Error::Remote { .. } => ExitCode::Git,
            Error::Step { source, .. } => source.exit_code(),
            Error::Io { .. } | Error::Render(_) | Error::Internal(_) => ExitCode::Internal,
            Error::Interrupted => ExitCode::Interrupted,
        }
    }

    /// A line telling the user what to try next, when we know one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Usage { hint, .. } | Error::Negative { hint, .. } | Error::Remote { hint, .. } => hint.clone(),
            Error::Untrusted { hint, .. } => Some(hint.clone()),
            Error::Git(error) => error.hint(),
            Error::Provider(error) => error.hint(),
            Error::Step { source, .. } => source.hint(),
            Error::Kubeconfig(_) => Some(
                "check --kubeconfig, KUBECONFIG and --context; `kubectl config get-contexts` lists contexts"
                    .into(),
            ),
            Error::Unreachable { .. } => Some(
                "check that the cluster is running and that `kubectl cluster-info` works with the same kubeconfig and context"
                    .into(),
            ),
            Error::Unauthorized { .. } => {
                Some("your credentials expired or are wrong: refresh them, or pick another --context".into())
            }
            Error::Forbidden { .. } => Some(
                "ask a cluster admin for the RBAC rights named above, or use a --context that has them".into(),
            ),
            Error::Api(error) => Some(crate::diagnostic::api_hint(error).into()),
            Error::Io { .. } => None,
            Error::Render(_) | Error::Internal(_) => Some("this is a bug in kubectl-gitops; please report it".into()),
            Error::Interrupted => Some(crate::interrupt::HINT.into()),
        }
    }
}

/// Bad input for a path, branch or URL we were given; a local failure for local I/O; a git
/// failure otherwise.
fn git_exit_code(error: &crate::git_error::GitError) -> ExitCode {
    use crate::git_error::GitError;
    match error {
        GitError::InvalidPath { .. }
        | GitError::InvalidBranch { .. }
        | GitError::InvalidTag { .. }
        | GitError::InvalidUrl { .. } => ExitCode::Usage,
        GitError::Io { .. } => ExitCode::Internal,
        GitError::Interrupted { .. } => ExitCode::Interrupted,
        _ => ExitCode::Git,
    }
}

/// Result with the shared [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_numbers() {
        assert_eq!(ExitCode::Ok.code(), 0);
        assert_eq!(ExitCode::No.code(), 1);
        assert_eq!(ExitCode::Usage.code(), 2);
        assert_eq!(ExitCode::Cluster.code(), 3);
        assert_eq!(ExitCode::Git.code(), 4);
        assert_eq!(ExitCode::Interrupted.code(), 130);
        assert_eq!(Error::Interrupted.exit_code(), ExitCode::Interrupted);
        assert_eq!(Error::usage("bad", "fix it").exit_code(), ExitCode::Usage);
        let unreachable = Error::Unreachable { server: "https://x".into(), reason: "refused".into() };
        assert_eq!(unreachable.exit_code(), ExitCode::Cluster);
    }
}
