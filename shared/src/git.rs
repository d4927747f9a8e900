//! Cloning, committing to and pushing the config repo, with libgit2 (never the git CLI).
//!
//! `install` and `app` change files in the config repo Flux pulls from. They [`Checkout::clone`]
//! one branch into a temp dir, [`Checkout::write`] and [`Checkout::remove`] files,
//! [`Checkout::commit`] and [`Checkout::push`]. When someone else pushed in between, the push
//! fails with [`GitError::NonFastForward`]; [`Checkout::reset_to_remote`] moves to their head,
//! where `crate::publish` plans the change again (nothing is replayed or rebased).
//!
//! We link libgit2 rather than run `git` so that nothing depends on the user's git install,
//! ssh config, agent or `~/.ssh/known_hosts`: the credentials and host keys are exactly the
//! ones given in [`Remote`], which are also the ones Flux is given. SSH host keys are checked
//! against [`Auth::Ssh::known_hosts`] (see `known_hosts.rs`), never accepted blindly.
//!
//! Errors are [`GitError`], self-contained; the command layer maps them to exit code 4
//! (`ExitCode::Git`) and prints [`GitError::hint`].

pub mod known_hosts;
pub mod log;

#[cfg(test)]
pub(crate) mod tests;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, Direction, ErrorClass, ErrorCode, FetchOptions,
    IndexAddOption, Oid, PushOptions, RemoteCallbacks, RemoteRedirect, Repository, build::CheckoutBuilder,
};

/// What a branch of the remote holds, compared with the commit we would push to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteBranch {
    /// No such branch.
    Absent,
    /// The same change (the same tree on the same parent).
    Holds,
    /// One commit of ours (the same message), on an older base or with older contents: ours to
    /// replace.
    Stale,
    /// Commits someone else added, or another change: not ours to overwrite.
    Other,
}

/// What a push of the checked-out branch did to the remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// The remote branch moved to our head.
    Updated,
    /// The remote branch already was at our head: someone pushed the very same commit first.
    AlreadyThere,
    /// There was no commit to push.
    Nothing,
}

/// The remote name inside our checkouts.
const ORIGIN: &str = "origin";
/// How often libgit2 may ask for the same kind of credential in one operation. It asks again
/// after every rejection and would loop forever on a wrong key or password.
const MAX_CREDENTIAL_TRIES: u32 = 1;

/// How we authenticate to the git server.
///
/// `Debug` never shows the private key or the password.
#[derive(Clone)]
pub enum Auth {
    /// SSH with a private key, the host key checked against `known_hosts`.
    Ssh {
        /// The SSH user; default: the user in the URL, else `git`.
        user: Option<String>,
        /// The private key in OpenSSH or PEM text, kept in memory (never written to disk or logs).
        private_key: String,
        /// `known_hosts` lines trusted for this server (`host`, `[host]:port`, comma lists).
        known_hosts: String,
    },
    /// HTTP(S) basic auth: a user name and a password or access token.
    Basic {
        /// The user name (for token auth, whatever the provider expects, e.g. `git`).
        username: String,
        /// The password or token.
        password: String,
    },
    /// No credentials (public repositories, `file://`).
    Anonymous,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Ssh { user, known_hosts, .. } => f
                .debug_struct("Ssh")
                .field("user", user)
                .field("private_key", &"<redacted>")
                .field("known_hosts", &format!("{} lines", known_hosts.lines().count()))
                .finish(),
            Auth::Basic { username, .. } => {
                f.debug_struct("Basic").field("username", username).field("password", &"<redacted>").finish()
            }
            Auth::Anonymous => f.write_str("Anonymous"),
        }
    }
}

/// A git server URL and how to authenticate to it.
#[derive(Clone)]
pub struct Remote {
    /// `ssh://user@host[:port]/path`, `user@host:path`, `https://…`, `http://…` or `file://…`.
    pub url: String,
    /// Credentials for `url`.
    pub auth: Auth,
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote").field("url", &redact_url(&self.url)).field("auth", &self.auth).finish()
    }
}

/// Author (and committer) of the commits we make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Display name, e.g. `kubectl-gitops`.
    pub name: String,
    /// E-mail address.
    pub email: String,
}

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

/// Runs libgit2 work that owns what it needs off the async runtime's threads (`spawn_blocking`),
/// giving up after `timeout`: libgit2 blocks on disk and network, and must not hold a tokio
/// worker. Work on a borrowed [`Checkout`] goes through [`in_place`] instead.
pub async fn off_runtime<T: Send + 'static>(
    timeout: Duration,
    work: impl FnOnce() -> Result<T, GitError> + Send + 'static,
) -> Result<T, GitError> {
    match tokio::time::timeout(timeout, tokio::task::spawn_blocking(work)).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(failed)) => Err(GitError::Other(git2::Error::from_str(&format!("the git task failed: {failed}")))),
        Err(_) => Err(GitError::TimedOut { what: "git".into(), after: crate::duration::format(timeout) }),
    }
}

/// How long one network operation (a clone's fetch, a push, an ls-remote) may take: connecting,
/// a silence of the server, the whole; from the command's `--timeout` ([`limit_network`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    connect: Duration,
    stall: Duration,
    operation: Duration,
}

impl Limits {
    /// `crate::timeouts`' limits, none longer than the command's `--timeout` (zero: none given).
    fn within(command_timeout: Option<Duration>) -> Limits {
        use crate::timeouts::{GIT_CONNECT, GIT_OPERATION, GIT_STALL};
        match command_timeout.filter(|timeout| !timeout.is_zero()) {
            Some(timeout) => {
                Limits { connect: GIT_CONNECT.min(timeout), stall: GIT_STALL.min(timeout), operation: timeout }
            }
            None => Limits { connect: GIT_CONNECT, stall: GIT_STALL, operation: GIT_OPERATION },
        }
    }

    /// The limits [`limit_network`] set, else the defaults (unit tests).
    fn current() -> Limits {
        LIMITS.get().copied().unwrap_or_else(|| Limits::within(None))
    }
}

static LIMITS: OnceLock<Limits> = OnceLock::new();

/// Bounds every network operation of this process by the command's `--timeout` (and
/// `crate::timeouts`): libgit2 gives up connecting after [`crate::timeouts::GIT_CONNECT`] and on a
/// server silent for [`crate::timeouts::GIT_STALL`] (for HTTP(S) and SSH: libssh2 gets the same
/// timeout), and our callbacks end an operation that outlasts the whole limit. Once per process
/// (`runtime` calls it first); later calls change nothing. It only records the limits: libgit2
/// (which loads OpenSSL and the system's CA bundle, 20-30 ms) starts with the first network
/// operation, so commands that never touch git do not pay for it.
pub fn limit_network(command_timeout: Option<Duration>) {
    let _ = LIMITS.set(Limits::within(command_timeout));
}

/// Hands [`Limits::current`] to libgit2, once, before the first network operation.
#[allow(unsafe_code, reason = "libgit2's timeouts have only unsafe setters; see SAFETY")]
fn apply_limits_to_libgit2(limits: Limits) {
    static APPLIED: std::sync::Once = std::sync::Once::new();
    let millis = |limit: Duration| i32::try_from(limit.as_millis()).unwrap_or(i32::MAX).max(1);
    APPLIED.call_once(|| {
        // SAFETY: the setters write two C ints of libgit2 without a lock, which libgit2 reads
        // only when it opens a connection. Every connection we open starts from a `Session`, whose
        // constructor comes here first, and `Once` makes every other caller wait until the
        // writes are done, so no read can race them. Both setters only store an int (after
        // git2's own once-guarded init) and cannot fail.
        unsafe {
            let _ = git2::opts::set_server_connect_timeout_in_milliseconds(millis(limits.connect));
            let _ = git2::opts::set_server_timeout_in_milliseconds(millis(limits.stall));
        }
    });
}

/// Runs libgit2 work on a borrowed [`Checkout`] where it is: on a multi-threaded runtime (the
/// binaries') tokio first moves this worker's other tasks elsewhere (`block_in_place`). Each
/// network operation inside is bounded by [`limit_network`]'s limits and ends at Ctrl-C (the
/// callbacks check [`crate::interrupt::requested`]).
pub fn in_place<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// One branch of a remote repository, checked out in a temp dir that is deleted on drop.
pub struct Checkout {
    // Declared before `dir` so that libgit2 lets go of the files before the dir is deleted.
    repo: Repository,
    dir: crate::interrupt::ScratchDir,
    remote: Remote,
    branch: String,
    /// The remote commit our local commits are based on; `None` when the remote branch did
    /// not exist.
    base: Option<Oid>,
}

impl fmt::Debug for Checkout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checkout")
            .field("root", &self.dir.path())
            .field("remote", &self.remote)
            .field("branch", &self.branch)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Checkout {
    /// Fetches `branch` of the remote into a fresh temp dir and checks it out.
    ///
    /// An empty repository (no commits), or one where `branch` does not exist, gives an
    /// unborn branch: [`Checkout::head`] is `None` and the first commit has no parent. We
    /// deliberately do not start from the default branch: the branch Flux follows must hold
    /// only what we put there, and inheriting another branch's files would surprise.
    pub fn clone(remote: &Remote, branch: &str) -> Result<Checkout, GitError> {
        let local_ref = branch_ref(branch)?;
        let endpoint = Endpoint::parse(&remote.url)?;
        let dir = crate::interrupt::ScratchDir::new("kubectl-gitops-")
            .map_err(|source| GitError::Io { context: "cannot create a temp dir for the checkout".into(), source })?;
        let repo = Repository::init(dir.path())?;
        repo.remote(ORIGIN, &remote.url)?;
        // Unborn until we know the remote has the branch.
        repo.set_head(&local_ref)?;
        let mut checkout = Checkout { repo, dir, remote: remote.clone(), branch: branch.to_string(), base: None };
        let base = checkout.fetch(&endpoint)?;
        checkout.reset_to(base)?;
        checkout.base = base;
        Ok(checkout)
    }

    /// The work tree's root directory.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The branch checked out.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The commit hash (hex) of the local branch, `None` while it is unborn.
    pub fn head(&self) -> Option<String> {
        self.head_oid().map(|oid| oid.to_string())
    }

    /// A file of the work tree (including uncommitted writes); `None` when it does not exist.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        let full = self.checked_path(path)?;
        match std::fs::read(&full) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(GitError::Io { context: format!("cannot read {path} in the checkout"), source }),
        }
    }

    /// Writes a file, creating its directories. The path is relative to the root, `/`-separated;
    /// absolute paths, `..`, `.git` and paths through symbolic links are refused.
    pub fn write(&mut self, path: &str, contents: &[u8]) -> Result<(), GitError> {
        let full = self.checked_path(path)?;
        write_file(&full, path, contents)
    }

    /// Removes a file or a whole directory; removing what does not exist is not an error.
    pub fn remove(&mut self, path: &str) -> Result<(), GitError> {
        let full = self.checked_path(path)?;
        remove_path(&full, path)
    }

    /// Stages every change (new, modified and removed files) and commits it on the branch.
    ///
    /// Returns the new commit's hash, or `None` without committing when nothing changed, so
    /// that running a command twice does not make empty commits.
    pub fn commit(&mut self, message: &str, author: &Signature) -> Result<Option<String>, GitError> {
        Ok(self.commit_staged(message, author)?.map(|oid| oid.to_string()))
    }

    /// Pushes the branch. Nothing to push (no commit since clone or the last push) is a no-op.
    ///
    /// Fails with [`GitError::NonFastForward`] when the remote branch moved meanwhile; then
    /// [`Checkout::reset_to_remote`], make the change again and push again (`crate::publish`).
    ///
    /// Two writers that make the same change on the same head at the same second make the very
    /// same commit (same tree, parent, author, time and message); the second push then moves
    /// nothing, and says so with [`Pushed::AlreadyThere`].
    pub fn push(&mut self) -> Result<Pushed, GitError> {
        let Some(head) = self.head_oid() else {
            return Ok(Pushed::Nothing);
        };
        if Some(head) == self.base {
            return Ok(Pushed::Nothing);
        }
        let refspec = format!("{0}:{0}", branch_ref(&self.branch)?);
        let pushed = self.push_refspec(&refspec, &self.branch)?;
        self.base = Some(head);
        Ok(pushed)
    }

    /// Pushes the local branch to another branch of the remote, replacing whatever that branch
    /// held (a pull request branch of ours, pushed again on a re-run). The checked-out branch
    /// of the remote is not touched.
    pub fn push_to_branch(&self, branch: &str) -> Result<(), GitError> {
        if self.head_oid().is_none() {
            return Ok(());
        }
        let refspec = format!("+{}:{}", branch_ref(&self.branch)?, branch_ref(branch)?);
        self.push_refspec(&refspec, branch).map(drop)
    }

    /// Deletes a branch of the remote (one we pushed and must not leave behind).
    pub fn delete_remote_branch(&self, branch: &str) -> Result<(), GitError> {
        self.push_refspec(&format!(":{}", branch_ref(branch)?), branch).map(drop)
    }

    /// Runs one push and turns libgit2's ways of refusing into [`GitError`]s naming `branch`.
    fn push_refspec(&self, refspec: &str, branch: &str) -> Result<Pushed, GitError> {
        let endpoint = Endpoint::parse(&self.remote.url)?;
        let session = Session::new(&self.remote, &endpoint);
        // libgit2 reports per-ref rejections (hooks, a ref that moved) through this callback
        // and still returns Ok from push(), so we must look.
        let refused: RefCell<Option<String>> = RefCell::new(None);
        let mut callbacks = session.callbacks();
        callbacks.push_update_reference(|_refname, status| {
            if let Some(status) = status {
                *refused.borrow_mut() = Some(status.to_string());
            }
            Ok(())
        });
        // The remote's value of each ref before the push: when it already is ours, nothing moved.
        let already_there = Cell::new(false);
        callbacks.push_negotiation(|updates| {
            // The last moment a push can be called off: nothing is sent yet.
            session.stop_check()?;
            already_there.set(!updates.is_empty() && updates.iter().all(|update| update.src() == update.dst()));
            Ok(())
        });
        let mut options = PushOptions::new();
        options.remote_callbacks(callbacks).follow_redirects(RemoteRedirect::None);
        let mut origin = self.repo.find_remote(ORIGIN)?;
        let result = origin.push(&[refspec], Some(&mut options));
        drop(options);
        match result {
            // libgit2 checks fast-forward itself before sending anything.
            Err(error) if error.code() == ErrorCode::NotFastForward => {
                return Err(GitError::NonFastForward { branch: branch.to_string() });
            }
            Err(error) => return Err(session.finish(error)),
            Ok(()) => {}
        }
        if let Some(reason) = refused.into_inner() {
            let lower = reason.to_ascii_lowercase();
            // A server that moved between our fetch and its ref update says one of these
            // ("failed to update ref": git receive-pack losing the ref lock to a concurrent push).
            let moved = [
                "non-fast-forward",
                "fetch first",
                "stale info",
                "cannot lock ref",
                "but expected",
                "failed to update ref",
            ];
            return Err(if moved.iter().any(|m| lower.contains(m)) {
                GitError::NonFastForward { branch: branch.to_string() }
            } else {
                GitError::Rejected { branch: branch.to_string(), reason: session.scrub(&reason) }
            });
        }
        Ok(if already_there.get() { Pushed::AlreadyThere } else { Pushed::Updated })
    }

    /// Drops the local commits and changes and moves to the remote branch's current head: after
    /// a refused push, to build the change again on what others pushed.
    pub fn reset_to_remote(&mut self) -> Result<(), GitError> {
        let head = self.fetch(&Endpoint::parse(&self.remote.url)?)?;
        self.reset_to(head)?;
        self.base = head;
        Ok(())
    }

    /// Moves the local branch to `commit`, which the fetch brought (an ancestor of the remote
    /// branch): to plan on the commit a pull request branch left it at.
    pub fn reset_to_commit(&mut self, commit: &str) -> Result<(), GitError> {
        let oid = Oid::from_str(commit)?;
        self.reset_to(Some(oid))?;
        self.base = Some(oid);
        Ok(())
    }

    fn head_oid(&self) -> Option<Oid> {
        self.repo.head().ok().and_then(|head| head.target())
    }

    /// Fetches the checked-out branch into `refs/remotes/origin/<branch>`; returns the remote head.
    fn fetch(&self, endpoint: &Endpoint) -> Result<Option<Oid>, GitError> {
        self.fetch_branch(endpoint, &self.branch)
    }

    /// What `branch` of the remote holds, compared with the local branch's last commit (one
    /// fetch). A re-run of the same change pushes nothing when the branch holds it already (a new
    /// commit would start CI again and can dismiss reviews).
    pub fn remote_branch(&self, branch: &str) -> Result<RemoteBranch, GitError> {
        let Some(theirs) = self.fetch_branch(&Endpoint::parse(&self.remote.url)?, branch)? else {
            return Ok(RemoteBranch::Absent);
        };
        let Some(head) = self.head_oid() else { return Ok(RemoteBranch::Other) };
        let (ours, their_commit) = (self.repo.find_commit(head)?, self.repo.find_commit(theirs)?);
        if ours.tree_id() == their_commit.tree_id() && ours.parent_ids().eq(their_commit.parent_ids()) {
            return Ok(RemoteBranch::Holds);
        }
        // The branch's own commits: those our base does not have.
        let mut walk = self.repo.revwalk()?;
        walk.push(theirs)?;
        for parent in ours.parent_ids() {
            walk.hide(parent)?;
        }
        let own: Vec<Oid> = walk.collect::<Result<_, _>>()?;
        let only_ours = match own.as_slice() {
            [one] => self.repo.find_commit(*one)?.message_bytes() == ours.message_bytes(),
            _ => false,
        };
        Ok(if only_ours { RemoteBranch::Stale } else { RemoteBranch::Other })
    }

    /// Fetches a branch of the remote into `refs/remotes/origin/<branch>`; returns its head.
    fn fetch_branch(&self, endpoint: &Endpoint, branch: &str) -> Result<Option<Oid>, GitError> {
        let tracking = format!("refs/remotes/{ORIGIN}/{branch}");
        // libgit2 neither fails nor prunes when the branch is missing remotely: clear the
        // tracking ref first so that its absence afterwards means "no such branch".
        if let Ok(mut reference) = self.repo.find_reference(&tracking) {
            reference.delete()?;
        }
        let session = Session::new(&self.remote, endpoint);
        let mut options = session.fetch_options();
        let refspec = format!("+{}:{tracking}", branch_ref(branch)?);
        let mut origin = self.repo.find_remote(ORIGIN)?;
        origin.fetch(&[refspec.as_str()], Some(&mut options), None).map_err(|error| session.finish(error))?;
        drop(options);
        match self.repo.find_reference(&tracking) {
            Ok(reference) => Ok(reference.target()),
            Err(error) if error.code() == ErrorCode::NotFound => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Points the branch at `target` (or makes it unborn) and makes the work tree and index
    /// match it exactly, dropping local files.
    fn reset_to(&self, target: Option<Oid>) -> Result<(), GitError> {
        let local_ref = branch_ref(&self.branch)?;
        match target {
            Some(oid) => {
                self.repo.reference(&local_ref, oid, true, "kubectl-gitops: reset to remote")?;
                self.repo.set_head(&local_ref)?;
                self.repo
                    .checkout_head(Some(CheckoutBuilder::new().force().remove_untracked(true).remove_ignored(true)))?;
            }
            None => {
                if let Ok(mut reference) = self.repo.find_reference(&local_ref) {
                    reference.delete()?;
                }
                self.repo.set_head(&local_ref)?;
                let mut index = self.repo.index()?;
                index.clear()?;
                index.write()?;
                let entries = std::fs::read_dir(self.root())
                    .map_err(|source| GitError::Io { context: "cannot list the checkout".into(), source })?;
                for entry in entries.flatten() {
                    if entry.file_name() != ".git" {
                        remove_path(&entry.path(), &entry.file_name().to_string_lossy())?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Stages the whole work tree into the index (additions, changes and removals).
    fn stage(&self) -> Result<git2::Index, GitError> {
        let mut index = self.repo.index()?;
        // FORCE: a file we were asked to write is committed even if a .gitignore matches it;
        // the work tree holds nothing but the checkout and our writes.
        index.add_all(["*"], IndexAddOption::DEFAULT | IndexAddOption::FORCE, None)?;
        index.update_all(["*"], None)?;
        index.write()?;
        Ok(index)
    }

    fn commit_staged(&self, message: &str, author: &Signature) -> Result<Option<Oid>, GitError> {
        let mut index = self.stage()?;
        let parent = match self.head_oid() {
            Some(oid) => Some(self.repo.find_commit(oid)?),
            None => None,
        };
        let tree_id = index.write_tree()?;
        let unchanged = match &parent {
            Some(parent) => parent.tree_id() == tree_id,
            // No first commit of an empty tree: an empty branch is not worth a commit.
            None => index.is_empty(),
        };
        if unchanged {
            return Ok(None);
        }
        let tree = self.repo.find_tree(tree_id)?;
        let signature = git2::Signature::now(&author.name, &author.email)?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let oid = self.repo.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents)?;
        Ok(Some(oid))
    }

    /// The absolute path of `path` in the work tree, after refusing anything that could
    /// leave it: absolute paths, `..`, `.git` and symbolic links (a cloned repo could hold a
    /// link to `/`).
    fn checked_path(&self, path: &str) -> Result<PathBuf, GitError> {
        let invalid = |reason| GitError::InvalidPath { path: path.to_string(), reason };
        if path.contains('\0') {
            return Err(invalid("it contains a NUL byte"));
        }
        // Git on Windows reads `\` as a separator; refusing it keeps repos portable.
        if path.contains('\\') {
            return Err(invalid("use `/` as the separator"));
        }
        let mut full = self.root().to_path_buf();
        let mut named = false;
        for component in Path::new(path).components() {
            match component {
                Component::Prefix(_) | Component::RootDir => {
                    return Err(invalid("it is absolute; give it relative to the repository root"));
                }
                Component::ParentDir => return Err(invalid("`..` would leave the repository")),
                Component::CurDir => {}
                Component::Normal(name) => {
                    if name.eq_ignore_ascii_case(".git") {
                        return Err(invalid("it is inside .git"));
                    }
                    full.push(name);
                    if std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
                        return Err(invalid("it goes through a symbolic link"));
                    }
                    named = true;
                }
            }
        }
        if !named {
            return Err(invalid("it names no file"));
        }
        Ok(full)
    }
}

/// The commit hash (hex) of `branch` on the remote, `None` when the branch (or any commit)
/// does not exist; like `git ls-remote`, without cloning.
pub fn remote_head(remote: &Remote, branch: &str) -> Result<Option<String>, GitError> {
    let wanted = branch_ref(branch)?;
    let endpoint = Endpoint::parse(&remote.url)?;
    let session = Session::new(remote, &endpoint);
    let mut detached = git2::Remote::create_detached(remote.url.as_str())?;
    let connection = detached
        .connect_auth(Direction::Fetch, Some(session.callbacks()), None)
        .map_err(|error| session.finish(error))?;
    let heads = connection.list().map_err(|error| session.finish(error))?;
    Ok(heads.iter().find(|head| head.name() == wanted).map(|head| head.oid().to_string()))
}

/// `refs/heads/<branch>`, after checking the name.
fn branch_ref(branch: &str) -> Result<String, GitError> {
    let name = format!("refs/heads/{branch}");
    if branch.is_empty() || branch.starts_with('-') || !git2::Reference::is_valid_name(&name) {
        return Err(GitError::InvalidBranch { branch: branch.to_string() });
    }
    Ok(name)
}

fn write_file(full: &Path, path: &str, contents: &[u8]) -> Result<(), GitError> {
    let io = |source| GitError::Io { context: format!("cannot write {path} in the checkout"), source };
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(full, contents).map_err(io)
}

fn remove_path(full: &Path, path: &str) -> Result<(), GitError> {
    let result = match std::fs::symlink_metadata(full) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(full),
        Ok(_) => std::fs::remove_file(full),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    };
    result.map_err(|source| GitError::Io { context: format!("cannot remove {path} in the checkout"), source })
}

/// The URL with any password replaced, for messages.
fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("<redacted>"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

/// How a URL is reached: the parts host key checking and error messages need.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Endpoint {
    Ssh { host: String, port: u16 },
    Http,
    Local,
}

impl Endpoint {
    fn parse(url: &str) -> Result<Endpoint, GitError> {
        let invalid = |reason: &str| GitError::InvalidUrl { url: redact_url(url), reason: reason.to_string() };
        if !url.contains("://") {
            // scp-like `[user@]host:path`; a `/` before the first `:` makes it a local path.
            return match url.split_once(':') {
                Some((authority, _)) if !authority.contains('/') && !authority.is_empty() => {
                    let host = authority.rsplit('@').next().unwrap_or(authority);
                    if host.is_empty() {
                        return Err(invalid("no host before `:`"));
                    }
                    Ok(Endpoint::Ssh { host: host.trim_start_matches('[').trim_end_matches(']').to_string(), port: 22 })
                }
                _ => Ok(Endpoint::Local),
            };
        }
        let parsed = url::Url::parse(url).map_err(|error| invalid(&error.to_string()))?;
        match parsed.scheme() {
            "ssh" | "git+ssh" | "ssh+git" => {
                let host = match parsed.host() {
                    Some(url::Host::Domain(domain)) => domain.to_string(),
                    Some(url::Host::Ipv4(ip)) => ip.to_string(),
                    Some(url::Host::Ipv6(ip)) => ip.to_string(),
                    None => return Err(invalid("no host")),
                };
                Ok(Endpoint::Ssh { host, port: parsed.port().unwrap_or(22) })
            }
            "http" | "https" => Ok(Endpoint::Http),
            "file" => Ok(Endpoint::Local),
            other => Err(invalid(&format!("the scheme {other}:// is not supported (use ssh, https, http or file)"))),
        }
    }
}

/// State shared between one network operation and libgit2's callbacks: credential attempts,
/// and the precise error a callback found (libgit2 itself only reports "callback failed").
struct Session<'a> {
    remote: &'a Remote,
    endpoint: &'a Endpoint,
    limits: Limits,
    /// When the operation must be over ([`Limits::operation`] from its start).
    deadline: Instant,
    failure: RefCell<Option<GitError>>,
    key_tries: Cell<u32>,
    password_tries: Cell<u32>,
    username_tries: Cell<u32>,
}

impl<'a> Session<'a> {
    fn new(remote: &'a Remote, endpoint: &'a Endpoint) -> Session<'a> {
        let limits = Limits::current();
        apply_limits_to_libgit2(limits);
        Session {
            remote,
            endpoint,
            limits,
            deadline: Instant::now() + limits.operation,
            failure: RefCell::new(None),
            key_tries: Cell::new(0),
            password_tries: Cell::new(0),
            username_tries: Cell::new(0),
        }
    }

    /// Options for one fetch: these callbacks, no tags, and no redirect to another host (a
    /// redirect to another port of the same host is followed by libgit2, but the credentials
    /// callback answers only the remote's own origin).
    fn fetch_options(&self) -> FetchOptions<'_> {
        let mut options = FetchOptions::new();
        options
            .remote_callbacks(self.callbacks())
            .download_tags(AutotagOption::None)
            .follow_redirects(RemoteRedirect::None);
        options
    }

    fn callbacks(&self) -> RemoteCallbacks<'_> {
        let mut callbacks = RemoteCallbacks::new();
        // libgit2 calls these as the operation goes (each packet of a fetch, each progress line of
        // the server); an `Err` or `false` ends it. A server silent in between is libgit2's own
        // read timeout's (`limit_network`).
        callbacks.transfer_progress(|_| self.stop_check().is_ok());
        callbacks.sideband_progress(|_| self.stop_check().is_ok());
        callbacks.credentials(|url, user_from_url, allowed| {
            self.stop_check()?;
            self.credentials(url, user_from_url, allowed)
        });
        callbacks.certificate_check(|cert, _host| match (cert.as_hostkey(), self.endpoint) {
            (Some(hostkey), Endpoint::Ssh { host, port }) => {
                let Auth::Ssh { known_hosts, .. } = &self.remote.auth else {
                    // Without known_hosts no host can be verified; say what is missing.
                    return Err(self.fail(GitError::AuthFailed {
                        url: self.url(),
                        reason: "an SSH URL needs an SSH private key and known_hosts, and none were given".into(),
                    }));
                };
                let Some(offered) = hostkey.hostkey() else {
                    return Err(self.fail(GitError::Unreachable {
                        url: self.url(),
                        reason: "the SSH server's host key could not be read, so it cannot be verified".into(),
                    }));
                };
                known_hosts::verify(known_hosts, host, *port, offered)
                    .map(|()| CertificateCheckStatus::CertificateOk)
                    .map_err(|error| self.fail(error))
            }
            (Some(_), _) => Err(self.fail(GitError::Unreachable {
                url: self.url(),
                reason: "an SSH host key came from a URL that is not ssh://".into(),
            })),
            // TLS: keep libgit2's own verification against the system's CAs.
            (None, _) => Ok(CertificateCheckStatus::CertificatePassthrough),
        });
        callbacks
    }

    /// An error that ends the operation when the user interrupted us or its time is up.
    fn stop_check(&self) -> Result<(), git2::Error> {
        if crate::interrupt::requested() {
            return Err(self.fail(GitError::Interrupted { url: self.url() }));
        }
        if Instant::now() >= self.deadline {
            let after = crate::duration::format(self.limits.operation);
            return Err(self.fail(GitError::TimedOut { what: self.url(), after }));
        }
        Ok(())
    }

    /// The credentials libgit2 asks for on behalf of `asked` (the URL it is talking to, after any
    /// redirect).
    fn credentials(
        &self,
        asked: &str,
        user_from_url: Option<&str>,
        allowed: CredentialType,
    ) -> Result<Cred, git2::Error> {
        let refused = |reason: String| self.fail(GitError::AuthFailed { url: self.url(), reason });
        let tried = |counter: &Cell<u32>| {
            counter.set(counter.get() + 1);
            counter.get() > MAX_CREDENTIAL_TRIES
        };
        match &self.remote.auth {
            Auth::Ssh { user, private_key, .. } => {
                let user = user.as_deref().or(user_from_url).unwrap_or("git");
                if allowed.contains(CredentialType::USERNAME) {
                    if tried(&self.username_tries) {
                        return Err(refused(format!("the server refused the user {user:?}")));
                    }
                    return Cred::username(user);
                }
                if !allowed.intersects(CredentialType::SSH_KEY | CredentialType::SSH_MEMORY) {
                    return Err(refused("the server does not accept SSH keys for this URL".into()));
                }
                if tried(&self.key_tries) {
                    return Err(refused(format!(
                        "the server refused the SSH key{} for user {user:?}",
                        public_key_fingerprint(private_key).map(|f| format!(" {f}")).unwrap_or_default()
                    )));
                }
                Cred::ssh_key_from_memory(user, None, private_key, None)
            }
            Auth::Basic { username, password } => {
                if let Some(reason) = self.withhold_password(asked) {
                    return Err(self.fail(GitError::CredentialsWithheld { url: self.url(), reason }));
                }
                if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
                    if tried(&self.password_tries) {
                        return Err(refused(format!("the server refused the password or token of user {username:?}")));
                    }
                    return Cred::userpass_plaintext(username, password);
                }
                if allowed.contains(CredentialType::USERNAME) {
                    if tried(&self.username_tries) {
                        return Err(refused(format!("the server refused the user {username:?}")));
                    }
                    return Cred::username(username);
                }
                Err(refused(format!(
                    "the server wants credentials of a kind a username and password cannot give ({})",
                    credential_kinds(allowed)
                )))
            }
            Auth::Anonymous => Err(refused("the server asks for credentials, and none were given".into())),
        }
    }

    /// Why the password must not be given for `asked`: another origin than the remote's (a
    /// redirect to another port or host), or plain http to another machine. `None`: give it.
    fn withhold_password(&self, asked: &str) -> Option<String> {
        let (Ok(asked), Ok(remote)) = (url::Url::parse(asked), url::Url::parse(&self.remote.url)) else {
            return Some(format!("{} is not a URL a password can be sent to", redact_url(asked)));
        };
        let origin = |url: &url::Url| url.origin().ascii_serialization();
        if !crate::http::same_origin(&asked, &remote) {
            return Some(format!("{} asked for them, and they belong to {} only", origin(&asked), origin(&remote)));
        }
        if !crate::http::carries_credentials(&asked) {
            return Some(format!("{} is plain http to another machine", origin(&asked)));
        }
        None
    }

    /// Records the real error for [`Session::finish`] and gives libgit2 something to abort with.
    fn fail(&self, error: GitError) -> git2::Error {
        let message = error.to_string();
        self.failure.borrow_mut().get_or_insert(error);
        git2::Error::from_str(&message)
    }

    /// The error of a failed operation: what a callback recorded, else libgit2's, sorted.
    fn finish(&self, error: git2::Error) -> GitError {
        if let Some(recorded) = self.failure.borrow_mut().take() {
            return recorded;
        }
        self.classify(error)
    }

    fn classify(&self, error: git2::Error) -> GitError {
        let url = self.url();
        let reason = self.scrub(error.message().trim());
        let lower = reason.to_ascii_lowercase();
        // libgit2 words HTTP failures as "unexpected http status code: 404".
        let status = lower
            .split_once("http status code: ")
            .and_then(|(_, rest)| rest.get(..3))
            .and_then(|code| code.parse::<u16>().ok());
        if error.code() == ErrorCode::Auth || matches!(status, Some(401 | 403)) {
            return GitError::AuthFailed { url, reason };
        }
        // A signal cut a blocking read or connect short, and the only ones we catch are Ctrl-C
        // and SIGTERM (`crate::runtime`), which may reach this thread before the flag is set.
        if lower.contains("interrupted system call") {
            return GitError::Interrupted { url };
        }
        // libgit2's socket timeouts (`limit_network`), over HTTP(S) and SSH alike.
        if error.code() == ErrorCode::Timeout || lower.contains("timed out") {
            let limit = if lower.contains("connect") { self.limits.connect } else { self.limits.stall };
            return GitError::TimedOut { what: url, after: crate::duration::format(limit) };
        }
        let missing = [
            "does not appear to be a git repository",
            "repository not found",
            "could not find repository",
            "no such file or directory",
            "not found",
        ];
        if status == Some(404)
            || (error.code() == ErrorCode::NotFound && *self.endpoint == Endpoint::Local)
            || missing.iter().any(|m| lower.contains(m))
        {
            let said = status.is_none().then_some(reason);
            return GitError::NotFound { url, reason: said };
        }
        if error.code() == ErrorCode::Certificate
            || matches!(error.class(), ErrorClass::Net | ErrorClass::Os | ErrorClass::Ssl)
            || ["failed to connect", "connection refused", "failed to resolve", "failed to start ssh session"]
                .iter()
                .any(|m| lower.contains(m))
        {
            return GitError::Unreachable { url, reason };
        }
        GitError::Other(git2::Error::new(error.code(), error.class(), reason))
    }

    fn url(&self) -> String {
        redact_url(&self.remote.url)
    }

    /// Removes the password and the URL's own password from server or libgit2 text.
    fn scrub(&self, text: &str) -> String {
        let mut text = text.to_string();
        if let Auth::Basic { password, .. } = &self.remote.auth
            && !password.is_empty()
        {
            text = text.replace(password.as_str(), "<redacted>");
        }
        if let Ok(parsed) = url::Url::parse(&self.remote.url)
            && let Some(password) = parsed.password()
            && !password.is_empty()
        {
            text = text.replace(password, "<redacted>");
        }
        text
    }
}

/// `SHA256:…` of the public half of a private key, to name the key in errors.
fn public_key_fingerprint(private_key: &str) -> Option<String> {
    let key = ssh_key::PrivateKey::from_openssh(private_key).ok()?;
    Some(key.public_key().fingerprint(ssh_key::HashAlg::Sha256).to_string())
}

/// The credential kinds a server asks for, in words (`ssh key, username`), never `CredentialType(…)`.
fn credential_kinds(allowed: CredentialType) -> String {
    let names = [
        (CredentialType::USER_PASS_PLAINTEXT, "username and password"),
        (CredentialType::SSH_KEY, "ssh key"),
        (CredentialType::SSH_MEMORY, "ssh key in memory"),
        (CredentialType::SSH_CUSTOM, "custom ssh signature"),
        (CredentialType::DEFAULT, "Negotiate/NTLM"),
        (CredentialType::SSH_INTERACTIVE, "keyboard-interactive ssh"),
        (CredentialType::USERNAME, "username"),
    ];
    let kinds: Vec<&str> = names.iter().filter(|(kind, _)| allowed.contains(*kind)).map(|(_, name)| *name).collect();
    if kinds.is_empty() { "none named".to_string() } else { kinds.join(", ") }
}
