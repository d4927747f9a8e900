//! The one way we build HTTP clients (reqwest): our user agent, a connect and an overall timeout,
//! and a redirect policy. The provider APIs, Helm repositories and Prometheus are asked through it.
//!
//! reqwest drops `Authorization` on a redirect to another host, but not GitLab's `PRIVATE-TOKEN`
//! or any other header, and it follows https → http. So a client whose requests carry
//! credentials ([`Carries::Credentials`]) follows a redirect only within the origin (scheme, host
//! and port) of the URL first asked; any other stops the request with [`RedirectRefused`], which
//! names both ends. A client without credentials ([`Carries::Nothing`]: a Helm index, a release
//! download) follows redirects anywhere (CDNs live on other hosts), except from https to http.
//!
//! Credentials in general go only over https, or plain http to this machine ([`carries_credentials`]).
//!
//! A host named by text (a record, a flag, the environment, a file) is parsed once, strictly, into
//! an [`Origin`] (`origin.rs`); a credential is put on a request only by a [`Gate`] bound to one
//! origin (`gate.rs`).

mod gate;
mod origin;

use std::fmt;
use std::time::Duration;

use reqwest::Url;

pub use self::gate::{Credential, Gate, GateError, admit, admit_token_service};
pub use self::origin::{Flaw, Origin, OriginError, Scheme};

/// The `User-Agent` we send; GitHub rejects requests without one.
pub const USER_AGENT: &str = concat!("kubectl-gitops/", env!("CARGO_PKG_VERSION"));

/// How many redirects within one origin a request follows (reqwest's own default).
const MAX_REDIRECTS: usize = 10;

/// Installs rustls' ring crypto provider as the process default, if none is installed yet.
///
/// reqwest is built without a crypto provider of its own and panics when it builds a client
/// without one; [`builder`] calls this, and tests that build clients directly can too.
pub fn install_crypto_provider() {
    // Err only means a provider is installed already, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// What a client's requests carry, which decides the redirects it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carries {
    /// Nothing secret: redirects are followed anywhere but from https to http.
    Nothing,
    /// A token or password in a header: redirects are followed only within the first URL's origin.
    Credentials,
}

/// A client builder with our user agent, `timeout` for a whole request (connecting within
/// [`crate::timeouts::PROVIDER_CONNECT`] of it) and the redirect policy for what its requests
/// carry; callers add their default headers.
pub fn builder(timeout: Duration, carries: Carries) -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .timeout(timeout)
        .connect_timeout(crate::timeouts::PROVIDER_CONNECT.min(timeout))
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            let Some(first) = attempt.previous().first().cloned() else { return attempt.follow() };
            let to = attempt.url();
            let refused = match carries {
                Carries::Credentials => !same_origin(&first, to),
                Carries::Nothing => {
                    attempt.previous().iter().any(|hop| hop.scheme() == "https") && to.scheme() != "https"
                }
            };
            if refused {
                let to = to.clone();
                attempt.error(RedirectRefused { from: first, to })
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        }))
}

/// A client without credentials, with the provider timeouts (connect 10 s, a request 30 s), for
/// the other servers commands ask: Helm repositories, Prometheus.
pub fn client() -> Result<reqwest::Client, reqwest::Error> {
    builder(crate::timeouts::PROVIDER_REQUEST, Carries::Nothing).build()
}

/// Whether `a` and `b` have one origin: the same scheme, host and port (the scheme's default
/// port counts as given).
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
}

/// A redirect we would not follow: with credentials to another origin, or from https to http.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectRefused {
    /// The URL first asked.
    pub from: Url,
    /// Where the server sent us.
    pub to: Url,
}

impl RedirectRefused {
    /// `scheme://host[:port]` of each end, for messages (no paths, no query: they may hold anything).
    pub fn ends(&self) -> (String, String) {
        (self.from.origin().ascii_serialization(), self.to.origin().ascii_serialization())
    }
}

impl fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (from, to) = self.ends();
        write!(f, "{from} redirected to {to}; the redirect was not followed, and nothing was sent there")
    }
}

impl std::error::Error for RedirectRefused {}

/// The [`RedirectRefused`] behind a failed request, if that is why it failed.
pub fn refused_redirect(error: &reqwest::Error) -> Option<&RedirectRefused> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<RedirectRefused>() {
            return Some(refused);
        }
        source = current.source();
    }
    None
}

/// Why a body was not read whole.
#[derive(Debug)]
pub enum BodyError {
    /// It declared, or sent, more than the limit.
    TooLarge,
    /// The connection failed.
    Transport(reqwest::Error),
}

/// A response's whole body, at most `limit` bytes: refused as soon as its declared length or
/// the bytes that arrive pass it, so a server cannot fill the memory. `progress` is told the
/// bytes read so far after each chunk.
pub async fn body_within(
    response: &mut reqwest::Response,
    limit: u64,
    mut progress: impl FnMut(u64),
) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|length| length > limit) {
        return Err(BodyError::TooLarge);
    }
    let mut body = Vec::with_capacity(response.content_length().unwrap_or(0).min(limit) as usize);
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
        progress(body.len() as u64);
    }
    Ok(body)
}

/// Whether credentials may be sent to `url`: over https, or plain http to this machine
/// (127.0.0.0/8, ::1, `localhost`), where nothing travels over a network.
pub fn carries_credentials(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => is_loopback(url),
        _ => false,
    }
}

/// Whether the URL's host is this machine: 127.0.0.0/8, ::1 or `localhost`.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert!(same_origin(&url("https://gitlab.com/api/v4/a"), &url("https://gitlab.com:443/api/v4/b")));
        assert!(!same_origin(&url("https://gitlab.com/a"), &url("http://gitlab.com/a")));
        assert!(!same_origin(&url("https://gitlab.com/a"), &url("https://evil.example/a")));
        assert!(!same_origin(&url("http://127.0.0.1:8080/a"), &url("http://127.0.0.1:8081/a")));
    }

    #[test]
    fn credentials_go_over_https_or_to_this_machine() {
        for ok in ["https://git.example.com/a", "http://127.0.0.1:3000/a", "http://127.9.9.9/a", "http://[::1]:80/a"] {
            assert!(carries_credentials(&url(ok)), "{ok}");
        }
        assert!(carries_credentials(&url("http://LOCALHOST:3000/a")));
        for refused in ["http://git.example.com/a", "http://10.0.0.1/a", "http://localhost.evil.example/a", "ftp://h/a"]
        {
            assert!(!carries_credentials(&url(refused)), "{refused}");
        }
    }

    #[test]
    fn a_refused_redirect_names_both_origins_without_paths() {
        let refused = RedirectRefused {
            from: url("https://gitlab.example.com/api/v4/projects?private_token=x"),
            to: url("http://evil.example:8080/steal?x=1"),
        };
        assert_eq!(
            refused.to_string(),
            "https://gitlab.example.com redirected to http://evil.example:8080; the redirect was not followed, and nothing was sent there"
        );
    }
}
