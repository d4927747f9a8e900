//! One network operation of libgit2 (a fetch, a push, an ls-remote): where it goes
//! ([`Endpoint`]), the credentials and host key checks libgit2's callbacks ask for ([`Session`]),
//! and the limits it keeps to ([`limit_network`]).

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, ErrorClass, ErrorCode, FetchOptions, RemoteCallbacks,
    RemoteRedirect,
};

use super::{Auth, GitError, MAX_CREDENTIAL_TRIES, Remote, known_hosts};
use crate::http::GateError;

/// How long one network operation (a clone's fetch, a push, an ls-remote) may take: connecting,
/// a silence of the server, the whole; from the command's `--timeout` ([`limit_network`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Limits {
    pub(super) connect: Duration,
    pub(super) stall: Duration,
    pub(super) operation: Duration,
}

impl Limits {
    /// `crate::timeouts`' limits, none longer than the command's `--timeout` (zero: none given).
    pub(super) fn within(command_timeout: Option<Duration>) -> Limits {
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

/// How long one whole network operation of this process may take ([`limit_network`]).
pub(super) fn operation_limit() -> Duration {
    Limits::current().operation
}

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

/// The URL with any password replaced, for messages.
pub(super) fn redact_url(url: &str) -> String {
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
pub(super) enum Endpoint {
    Ssh { host: String, port: u16 },
    Http,
    Local,
}

impl Endpoint {
    pub(super) fn parse(url: &str) -> Result<Endpoint, GitError> {
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
pub(super) struct Session<'a> {
    remote: &'a Remote,
    endpoint: &'a Endpoint,
    limits: Limits,
    /// When the operation must be over ([`Limits::operation`] from its start).
    pub(super) deadline: Instant,
    failure: RefCell<Option<GitError>>,
    key_tries: Cell<u32>,
    password_tries: Cell<u32>,
    username_tries: Cell<u32>,
}

impl<'a> Session<'a> {
    pub(super) fn new(remote: &'a Remote, endpoint: &'a Endpoint) -> Session<'a> {
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
    pub(super) fn fetch_options(&self) -> FetchOptions<'_> {
        let mut options = FetchOptions::new();
        options
            .remote_callbacks(self.callbacks())
            .download_tags(AutotagOption::None)
            .follow_redirects(RemoteRedirect::None);
        options
    }

    pub(super) fn callbacks(&self) -> RemoteCallbacks<'_> {
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
    pub(super) fn stop_check(&self) -> Result<(), git2::Error> {
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
    pub(super) fn credentials(
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

    /// Why the password must not be given for `asked`: the gate's word ([`crate::http::admit`])
    /// on another origin than the remote's (a redirect to another port or host), or plain http
    /// to another machine. `None`: give it.
    pub(super) fn withhold_password(&self, asked: &str) -> Option<String> {
        let not_a_url = || Some(format!("{} is not a URL a password can be sent to", redact_url(asked)));
        let (Ok(asked), Ok(remote)) = (url::Url::parse(asked), url::Url::parse(&self.remote.url)) else {
            return not_a_url();
        };
        let Ok(bound) = crate::http::Origin::of_url(&remote) else { return not_a_url() };
        match crate::http::admit(&bound, &asked) {
            Ok(()) => None,
            Err(GateError::PlainHttp(origin)) => Some(format!("{origin} is plain http to another machine")),
            Err(GateError::OffOrigin { asked, bound }) => {
                Some(format!("{asked} asked for them, and they belong to {bound} only"))
            }
            Err(other) => Some(other.to_string()),
        }
    }

    /// Records the real error for [`Session::finish`] and gives libgit2 something to abort with.
    pub(super) fn fail(&self, error: GitError) -> git2::Error {
        let message = error.to_string();
        self.failure.borrow_mut().get_or_insert(error);
        git2::Error::from_str(&message)
    }

    /// The error of a failed operation: what a callback recorded, else libgit2's, sorted.
    pub(super) fn finish(&self, error: git2::Error) -> GitError {
        if let Some(recorded) = self.failure.borrow_mut().take() {
            return recorded;
        }
        self.classify(error)
    }

    pub(super) fn classify(&self, error: git2::Error) -> GitError {
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

    pub(super) fn url(&self) -> String {
        redact_url(&self.remote.url)
    }

    /// Removes the password and the URL's own password from server or libgit2 text.
    pub(super) fn scrub(&self, text: &str) -> String {
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
pub(super) fn public_key_fingerprint(private_key: &str) -> Option<String> {
    let key = ssh_key::PrivateKey::from_openssh(private_key).ok()?;
    Some(key.public_key().fingerprint(ssh_key::HashAlg::Sha256).to_string())
}

/// The credential kinds a server asks for, in words (`ssh key, username`), never `CredentialType(…)`.
pub(super) fn credential_kinds(allowed: CredentialType) -> String {
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
