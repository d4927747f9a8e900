//! Every default timeout, once: how long one request may take, how long a command waits, how long
//! a failure must last before a wait gives up on it. Flags that take a duration default to the
//! `*_FLAG` text, which a unit test checks against the value.

use std::time::Duration;

/// One Kubernetes API request, for commands that read and write (kubectl's `--request-timeout`
/// overrides it).
pub const REQUEST: Duration = Duration::from_secs(30);
/// One Kubernetes API request of a command that only looks (`detect`, `version`): an unreachable
/// cluster is an answer, and should come quickly.
pub const PROBE: Duration = Duration::from_secs(5);
/// One GitHub or GitLab API request.
pub const PROVIDER_REQUEST: Duration = Duration::from_secs(30);
/// Connecting to the GitHub or GitLab API (within [`PROVIDER_REQUEST`]).
pub const PROVIDER_CONNECT: Duration = Duration::from_secs(10);
/// One git call made while showing something (`app status`'s commit): a slow server must not
/// hold the answer.
pub const GIT_READ: Duration = Duration::from_secs(30);

/// Downloading a flux CLI release, the checksums file and the archive together (each connection
/// also has [`PROVIDER_CONNECT`] and each read [`PROVIDER_REQUEST`]).
pub const FLUX_DOWNLOAD: Duration = Duration::from_secs(300);
/// Connecting to a git server (libgit2's connect timeout; shorter when `--timeout` is).
pub const GIT_CONNECT: Duration = Duration::from_secs(10);
/// How long a git server may stay silent in a clone, fetch or push before we give up on it
/// (libgit2's read and write timeout, for HTTP(S) and SSH alike; shorter when `--timeout` is).
/// Servers send progress or keep-alives every few seconds while they work.
pub const GIT_STALL: Duration = Duration::from_secs(30);
/// One whole clone, fetch or push of a command without `--timeout` (with it, `--timeout`).
pub const GIT_OPERATION: Duration = Duration::from_secs(300);
/// Connecting to an OCI registry.
pub const REGISTRY_CONNECT: Duration = Duration::from_secs(10);
/// How long an OCI registry may stay silent in one request (a blob is read in many).
pub const REGISTRY_READ: Duration = Duration::from_secs(60);
/// One `flux build kustomization` of `diff` (a kustomization may name remote bases, which the
/// build fetches): a build still running then is stopped and reported as not built.
pub const BUILD: Duration = Duration::from_secs(120);
/// How long a command has after Ctrl-C or SIGTERM to stop by itself (drop its clones, refuse
/// its next step) before it is stopped without unwinding; either way within 2 s.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(1);

/// How long a command's `--timeout` lets it push and wait (`install`, `app`, `status --wait`).
pub const COMMAND: Duration = Duration::from_secs(300);
/// [`COMMAND`] as the flag's default.
pub const COMMAND_FLAG: &str = "5m";
/// How long a failure must last before a wait gives up on it, so that one that heals by itself
/// (a retry) is not one (`--grace-period`, and `app --wait`).
pub const GRACE_PERIOD: Duration = Duration::from_secs(30);
/// [`GRACE_PERIOD`] as the flag's default.
pub const GRACE_PERIOD_FLAG: &str = "30s";
/// How long a `kubectl gitops ui` session lasts from its token's exchange (the cookie's
/// `Max-Age`, and the server's own limit): a working day, then `ui` is started again.
pub const UI_SESSION: Duration = Duration::from_secs(12 * 60 * 60);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_defaults_are_the_values() {
        assert_eq!(crate::duration::parse(GRACE_PERIOD_FLAG), Ok(GRACE_PERIOD));
        assert_eq!(crate::duration::parse(COMMAND_FLAG), Ok(COMMAND));
    }
}
