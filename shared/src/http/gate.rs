//! The one place that decides where a credential may go. A [`Gate`] holds one credential and the
//! one [`Origin`] it is bound to, and hands out requests only for URLs on that origin. The scheme
//! rule (https, or plain http to this machine) is checked when it is made, the redirect rule
//! (only within the origin, [`super::Carries::Credentials`]) is its client's. The provider APIs
//! and a registry's manifest reads go through it.
//!
//! Two libraries send a credential themselves: libgit2 (git over HTTP) and the registry client
//! (blobs, tags, pushes). Before either is handed one, [`admit`] (the URL a git server asks
//! credentials for) or [`admit_token_service`] (where a registry would have them sent) decides,
//! by the same rules. `architecture.rs` fails the unit tests when any other code attaches a
//! credential, or a file handing one to a library does not ask this module first.

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use reqwest::{Method, Url};

use super::origin::Origin;

/// A secret and how it is sent.
pub enum Credential<'a> {
    /// `Authorization: Bearer <token>` (GitHub, a registry's token).
    Bearer(&'a str),
    /// `Authorization: token <token>` (Gitea).
    Token(&'a str),
    /// `PRIVATE-TOKEN: <token>` (GitLab), a header reqwest does not drop on a redirect.
    PrivateToken(&'a str),
    /// `Authorization: Basic …` (a registry login).
    Basic {
        /// The user name.
        username: &'a str,
        /// The password.
        password: &'a str,
    },
}

/// Why a gate was not made, or a request not let through; nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// The origin is plain http to another machine.
    #[error(
        "{0} is plain http to another machine, and credentials are never sent over it: use https (http only to 127.0.0.1, ::1 or localhost)"
    )]
    PlainHttp(String),
    /// The request is for another origin than the credential's.
    #[error("{asked} is not {bound}, the only origin this credential goes to; nothing was sent")]
    OffOrigin {
        /// The origin of the URL asked for.
        asked: String,
        /// The credential's origin.
        bound: String,
    },
    /// A registry names a token service on neither its origin nor its site.
    #[error("{asked} is neither {bound} nor a host of its site, and a registry's credentials go to no other")]
    OffSite {
        /// The token service's origin.
        asked: String,
        /// The registry's origin.
        bound: String,
    },
    /// The secret holds characters an HTTP header cannot.
    #[error("the credential holds characters that cannot be sent in an HTTP header")]
    NotAHeader,
    /// reqwest could not build its client.
    #[error("cannot build an HTTP client: {0}")]
    Client(String),
}

/// One credential, bound to one origin.
#[derive(Debug, Clone)]
pub struct Gate {
    origin: Origin,
    client: reqwest::Client,
    name: HeaderName,
    secret: HeaderValue,
}

impl Gate {
    /// A gate sending `credential` to `origin` only, each request within `timeout`; `headers`
    /// (nothing secret: `Accept`, an API version) go on every request.
    pub fn new(
        origin: Origin,
        credential: &Credential<'_>,
        timeout: Duration,
        headers: reqwest::header::HeaderMap,
    ) -> Result<Gate, GateError> {
        if !origin.carries_credentials() {
            return Err(GateError::PlainHttp(origin.serialization()));
        }
        let (name, value) = match credential {
            Credential::Bearer(token) => (AUTHORIZATION, format!("Bearer {token}")),
            Credential::Token(token) => (AUTHORIZATION, format!("token {token}")),
            Credential::PrivateToken(token) => (HeaderName::from_static("private-token"), (*token).to_string()),
            Credential::Basic { username, password } => {
                let pair = format!("{username}:{password}");
                let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, pair);
                (AUTHORIZATION, format!("Basic {encoded}"))
            }
        };
        let mut secret = HeaderValue::from_str(&value).map_err(|_| GateError::NotAHeader)?;
        // Kept out of reqwest's and hyper's debug output.
        secret.set_sensitive(true);
        let client = super::builder(timeout, super::Carries::Credentials)
            .default_headers(headers)
            .build()
            .map_err(|error| GateError::Client(crate::diagnostic::chain_to_line(&error)))?;
        Ok(Gate { origin, client, name, secret })
    }

    /// The origin the credential goes to.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// A request for `url` carrying the credential, when [`admit`] lets it through.
    pub fn request(&self, method: Method, url: Url) -> Result<reqwest::RequestBuilder, GateError> {
        admit(&self.origin, &url)?;
        Ok(self.client.request(method, url).header(self.name.clone(), self.secret.clone()))
    }
}

/// Whether a credential bound to `bound` may go to `asked`: over https, or plain http to this
/// machine, and on `bound` itself (scheme, host and port).
pub fn admit(bound: &Origin, asked: &Url) -> Result<(), GateError> {
    if !super::carries_credentials(asked) {
        return Err(GateError::PlainHttp(asked.origin().ascii_serialization()));
    }
    if !bound.contains(asked) {
        return Err(GateError::OffOrigin { asked: asked.origin().ascii_serialization(), bound: bound.serialization() });
    }
    Ok(())
}

/// Whether the token service at `realm`, which a registry's challenge names, may have the
/// registry's credentials: [`admit`]'s rules, except that a host name of the registry's own site
/// may serve it (Docker Hub's `index.docker.io` asks `auth.docker.io`). An address is its own
/// site: another port on it may be another program.
pub fn admit_token_service(registry: &Origin, realm: &Url) -> Result<(), GateError> {
    let refused = match admit(registry, realm) {
        Err(GateError::OffOrigin { asked, bound }) => GateError::OffSite { asked, bound },
        decided => return decided,
    };
    let same_scheme = realm.scheme() == registry.scheme_name();
    let same_site = match (url::Host::parse(registry.host()), realm.host()) {
        (Ok(url::Host::Domain(ours)), Some(url::Host::Domain(theirs))) => site(&ours) == site(theirs),
        _ => false,
    };
    if same_scheme && same_site { Ok(()) } else { Err(refused) }
}

/// The last two labels of a host name, lower case: `index.docker.io` and `auth.docker.io` are
/// both `docker.io`.
fn site(host: &str) -> String {
    let labels: Vec<&str> = host.trim_end_matches('.').rsplitn(3, '.').take(2).collect();
    labels.into_iter().rev().collect::<Vec<_>>().join(".").to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    fn origin(url: &str) -> Origin {
        Origin::of_url(&Url::parse(url).unwrap()).unwrap()
    }

    fn gate(url: &str, credential: &Credential<'_>) -> Result<Gate, GateError> {
        Gate::new(origin(url), credential, Duration::from_secs(1), reqwest::header::HeaderMap::new())
    }

    #[test]
    fn a_credential_goes_only_to_its_own_origin_and_never_over_plain_http_elsewhere() {
        let api = gate("https://ghe.example.com", &Credential::Bearer("t0ken")).unwrap();
        let ok = api.request(Method::GET, Url::parse("https://GHE.example.com:443/api/v3/user").unwrap()).unwrap();
        let built = ok.build().unwrap();
        assert_eq!(built.headers()[AUTHORIZATION], "Bearer t0ken");
        assert!(built.headers()[AUTHORIZATION].is_sensitive());
        for elsewhere in ["https://ghe.example.com:8443/", "http://ghe.example.com/", "https://api.github.com/"] {
            let refused = api.request(Method::GET, Url::parse(elsewhere).unwrap()).unwrap_err();
            assert!(matches!(refused, GateError::OffOrigin { .. } | GateError::PlainHttp(_)), "{elsewhere}: {refused}");
        }
        let plain = gate("http://ghe.example.com", &Credential::Token("t")).unwrap_err();
        assert_eq!(plain, GateError::PlainHttp("http://ghe.example.com".into()));
        let local = gate("http://127.0.0.1:3000", &Credential::PrivateToken("glpat")).unwrap();
        let built = local.request(Method::GET, Url::parse("http://127.0.0.1:3000/api/v4").unwrap()).unwrap();
        assert_eq!(built.build().unwrap().headers()["private-token"], "glpat");
        let basic = gate("https://registry.example", &Credential::Basic { username: "u", password: "p" }).unwrap();
        let built = basic.request(Method::GET, Url::parse("https://registry.example/v2/").unwrap()).unwrap();
        assert_eq!(built.build().unwrap().headers()[AUTHORIZATION], "Basic dTpw");
        assert_eq!(gate("https://h", &Credential::Bearer("a\nb")).unwrap_err(), GateError::NotAHeader);
    }

    fn token_service(registry: &str, realm: &str) -> Result<(), GateError> {
        admit_token_service(&origin(registry), &Url::parse(realm).unwrap())
    }

    #[test]
    fn a_registry_s_credentials_go_to_its_own_origin_or_site_over_https_only() {
        token_service("https://index.docker.io", "https://auth.docker.io/token").unwrap();
        token_service("https://ghcr.io", "https://ghcr.io/token").unwrap();
        token_service("http://127.0.0.1:5000", "http://127.0.0.1:5000/token").unwrap();
        let off_site = token_service("https://ghcr.io", "https://collector.example/token").unwrap_err();
        assert!(matches!(off_site, GateError::OffSite { .. }), "{off_site}");
        let plain = token_service("https://registry.example.com", "http://auth.example.com/token").unwrap_err();
        assert!(matches!(plain, GateError::PlainHttp(_)), "{plain}");
        for refused in ["http://127.0.0.1:5001/token", "https://127.0.0.1:5000/token"] {
            token_service("http://127.0.0.1:5000", refused).unwrap_err();
        }
        token_service("https://10.0.0.5", "https://10.0.0.6/token").unwrap_err();
        token_service("https://registry.example.com", "file:///etc/passwd").unwrap_err();
    }

    #[test]
    fn a_git_server_gets_the_password_only_on_its_own_origin() {
        let remote = origin("https://git.example.com");
        admit(&remote, &Url::parse("https://git.example.com/acme/fleet.git/info/refs").unwrap()).unwrap();
        let moved = admit(&remote, &Url::parse("https://evil.example/x").unwrap()).unwrap_err();
        assert!(matches!(moved, GateError::OffOrigin { .. }), "{moved}");
        let plain = admit(&remote, &Url::parse("http://git.example.com/x").unwrap()).unwrap_err();
        assert_eq!(plain, GateError::PlainHttp("http://git.example.com".into()));
    }
}
