//! The token and session of a server on this machine that a browser or a client opens (the UI,
//! `mcp --http`): a one-time token printed at start, exchanged for a session cookie (HttpOnly,
//! SameSite=Strict, named for the port, for [`crate::timeouts::UI_SESSION`]); the names a request
//! must call the server by in `Host` and `Origin` (a DNS-rebinding page names its own host).
//!
//! A browser sends a cookie to every port of its host, so a server listens on an address of its
//! own, random in 127.0.0.0/8 ([`random_loopback`]): another local service the browser visits on
//! 127.0.0.1 or localhost never receives the session.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use axum::http::{HeaderMap, header};
use ssh_key::rand_core::{OsRng, RngCore};

use crate::error::{Error, Result};

/// The session cookie's name, before the port: browsers send a cookie to every port of a host,
/// so two UIs (or another local service's cookie) must not share one name.
const COOKIE_PREFIX: &str = "gitops_ui_session_";

/// The token printed at start (good for one exchange) and the session it opens.
pub(crate) struct Auth {
    token: Mutex<Option<String>>,
    session: String,
    /// When the session ends, set by the exchange.
    expires: OnceLock<Instant>,
    /// The port the server listens on: in the cookie's name, `Host` and `Origin`.
    pub(crate) port: u16,
    /// The names a browser reaches the server by: its address, and `localhost` when that is
    /// where `localhost` leads.
    names: Vec<String>,
}

/// Whether a request carries the session, and if not why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Session {
    Valid,
    Missing,
    Expired,
}

impl Auth {
    /// The guard of the server listening on `address`, and the token to print (it is kept only
    /// until its one exchange).
    pub(crate) fn new(address: SocketAddr) -> Result<(Auth, String)> {
        let token = random_hex()?;
        let literal = match address.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        };
        let mut names = vec![literal];
        if address.ip() == IpAddr::V4(Ipv4Addr::LOCALHOST) || address.ip() == IpAddr::V6(Ipv6Addr::LOCALHOST) {
            names.push("localhost".into());
        }
        let auth = Auth {
            token: Mutex::new(Some(token.clone())),
            session: random_hex()?,
            expires: OnceLock::new(),
            port: address.port(),
            names,
        };
        Ok((auth, token))
    }

    /// `http://ADDRESS:PORT`: where a browser opens the server.
    pub(crate) fn origin(&self) -> String {
        format!("http://{}:{}", self.names[0], self.port)
    }

    /// Takes the one-time token: true once, for the right value; the session's time starts.
    pub(crate) fn exchange(&self, offered: &str) -> bool {
        let Ok(mut token) = self.token.lock() else { return false };
        let matches =
            token.as_deref().is_some_and(|expected| constant_time_eq(expected.as_bytes(), offered.as_bytes()));
        if matches {
            *token = None;
            let _ = self.expires.set(Instant::now() + crate::timeouts::UI_SESSION);
        }
        matches
    }

    pub(crate) fn cookie_name(&self) -> String {
        format!("{COOKIE_PREFIX}{}", self.port)
    }

    /// The `Set-Cookie` value of the session.
    pub(crate) fn set_cookie(&self) -> String {
        format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
            self.cookie_name(),
            self.session,
            crate::timeouts::UI_SESSION.as_secs()
        )
    }

    pub(crate) fn session(&self, headers: &HeaderMap) -> Session {
        let name = self.cookie_name();
        let carried = super::cookies::pairs(headers)
            .any(|(cookie, value)| cookie == name && constant_time_eq(value.as_bytes(), self.session.as_bytes()));
        match self.expires.get() {
            Some(expires) if carried && Instant::now() < *expires => Session::Valid,
            Some(_) if carried => Session::Expired,
            _ => Session::Missing,
        }
    }

    /// Whether `Host` names this server: one of its names and our port. A page of another site
    /// whose name was made to resolve to a loopback address (DNS rebinding) sends its own name.
    pub(crate) fn host_is_ours(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|value| value.to_str().ok()) else {
            return false;
        };
        self.names.iter().any(|name| host.eq_ignore_ascii_case(&format!("{name}:{}", self.port)))
    }

    /// Whether `origin` is a page of this server, under any of its names.
    pub(crate) fn origin_is_ours(&self, origin: &[u8]) -> bool {
        self.names.iter().any(|name| origin == format!("http://{name}:{}", self.port).as_bytes())
    }
}

/// A random address of 127.0.0.0/8 other than 127.0.0.x: Linux and Windows route the whole
/// block to the loopback interface, so a server can listen on it without any setup.
pub(crate) fn random_loopback() -> Result<Ipv4Addr> {
    let mut bytes = [0u8; 3];
    OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|error| Error::Internal(format!("no randomness for the UI's address: {error}")))?;
    // Neither 0 nor 255 in the last two bytes, and not 127.0.x.x.
    let byte = |value: u8| 1 + value % 254;
    Ok(Ipv4Addr::new(127, byte(bytes[0]), byte(bytes[1]), byte(bytes[2])))
}

/// 32 random bytes from the operating system, as hex.
fn random_hex() -> Result<String> {
    let mut bytes = [0u8; 32];
    OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|error| Error::Internal(format!("no randomness for the UI token: {error}")))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Compares without stopping at the first difference, so timing does not leak the secret.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_works_once() {
        let (auth, token) = Auth::new(SocketAddr::from((Ipv4Addr::LOCALHOST, 8080))).unwrap();
        assert_eq!(token.len(), 64);
        assert!(!auth.exchange("wrong"));
        assert!(auth.exchange(&token));
        assert!(!auth.exchange(&token));
    }

    #[test]
    fn the_session_cookie_is_found_among_others_under_the_ports_name_until_it_expires() {
        let (auth, token) = Auth::new(SocketAddr::from((Ipv4Addr::LOCALHOST, 8080))).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, format!("theme=dark; gitops_ui_session_8080={}", auth.session).parse().unwrap());
        assert_eq!(auth.session(&headers), Session::Missing, "no session before the token's exchange");
        assert!(auth.exchange(&token));
        assert_eq!(auth.session(&headers), Session::Valid);
        assert!(auth.set_cookie().starts_with("gitops_ui_session_8080="), "{}", auth.set_cookie());
        assert!(auth.set_cookie().ends_with("; Max-Age=43200"), "{}", auth.set_cookie());
        headers.insert(header::COOKIE, "gitops_ui_session_8080=not-the-session".parse().unwrap());
        assert_eq!(auth.session(&headers), Session::Missing);
        // Another UI's cookie, with this one's value, is not this session.
        headers.insert(header::COOKIE, format!("gitops_ui_session_8081={}", auth.session).parse().unwrap());
        assert_eq!(auth.session(&headers), Session::Missing);

        // A session whose time is up.
        let (ended, _) = Auth::new(SocketAddr::from((Ipv4Addr::LOCALHOST, 8080))).unwrap();
        let expired = Auth { expires: OnceLock::from(Instant::now()), ..ended };
        headers.insert(header::COOKIE, format!("gitops_ui_session_8080={}", expired.session).parse().unwrap());
        assert_eq!(expired.session(&headers), Session::Expired);
    }

    #[test]
    fn host_and_origin_must_name_this_server() {
        let (auth, _) = Auth::new(SocketAddr::from((Ipv4Addr::LOCALHOST, 8080))).unwrap();
        let with_host = |auth: &Auth, host: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, host.parse().unwrap());
            auth.host_is_ours(&headers)
        };
        for ours in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080"] {
            assert!(with_host(&auth, ours), "{ours}");
        }
        for theirs in ["evil.example:8080", "127.0.0.1:8081", "127.0.0.1", "localhost", "127.0.0.2:8080", "[::1]:8080"]
        {
            assert!(!with_host(&auth, theirs), "{theirs}");
        }
        assert!(!auth.host_is_ours(&HeaderMap::new()), "no Host at all");
        assert!(auth.origin_is_ours(b"http://localhost:8080"));
        assert!(auth.origin_is_ours(b"http://127.0.0.1:8080"));
        assert!(!auth.origin_is_ours(b"http://localhost:8081"));
        assert!(!auth.origin_is_ours(b"https://localhost:8080"));
        assert!(!auth.origin_is_ours(b"null"));
        // On an address of its own, that address only: localhost leads elsewhere.
        let (own, _) = Auth::new(SocketAddr::from(([127, 9, 8, 7], 8080))).unwrap();
        assert!(with_host(&own, "127.9.8.7:8080"));
        assert!(!with_host(&own, "localhost:8080") && !with_host(&own, "127.0.0.1:8080"));
        assert_eq!(own.origin(), "http://127.9.8.7:8080");
    }

    #[test]
    fn a_random_loopback_address_is_never_127_0_x_x() {
        for _ in 0..100 {
            let address = random_loopback().unwrap();
            let [first, second, third, fourth] = address.octets();
            assert_eq!(first, 127);
            assert!(second != 0 && ![0, 255].contains(&third) && ![0, 255].contains(&fourth), "{address}");
        }
    }
}
