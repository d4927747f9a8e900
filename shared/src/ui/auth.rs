//! Who may talk to the UI: the holder of the one-time token printed at start, through the session
//! cookie it is exchanged for (HttpOnly, SameSite=Strict, named for the port, for
//! [`crate::timeouts::UI_SESSION`]). Every request must name the server by the address it listens
//! on and its port in `Host` (a DNS-rebinding page names its own host: 421). Changes also need
//! `--allow-writes` and, from a browser, a same-origin `Origin` header.
//!
//! A browser sends a cookie to every port of its host, so the UI listens on an address of its
//! own, random in 127.0.0.0/8 ([`random_loopback`]): another local service the browser visits on
//! 127.0.0.1 or localhost never receives the session.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use ssh_key::rand_core::{OsRng, RngCore};

use super::Server;
use super::api::ApiError;
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
    pub(super) port: u16,
    /// The names a browser reaches the server by: its address, and `localhost` when that is
    /// where `localhost` leads.
    names: Vec<String>,
}

/// Whether a request carries the session, and if not why.
#[derive(Debug, PartialEq, Eq)]
enum Session {
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
    fn exchange(&self, offered: &str) -> bool {
        let Ok(mut token) = self.token.lock() else { return false };
        let matches =
            token.as_deref().is_some_and(|expected| constant_time_eq(expected.as_bytes(), offered.as_bytes()));
        if matches {
            *token = None;
            let _ = self.expires.set(Instant::now() + crate::timeouts::UI_SESSION);
        }
        matches
    }

    fn cookie_name(&self) -> String {
        format!("{COOKIE_PREFIX}{}", self.port)
    }

    /// The `Set-Cookie` value of the session.
    fn set_cookie(&self) -> String {
        format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
            self.cookie_name(),
            self.session,
            crate::timeouts::UI_SESSION.as_secs()
        )
    }

    fn session(&self, headers: &HeaderMap) -> Session {
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

/// The middleware in front of every route.
pub(super) async fn guard(State(server): State<Arc<Server>>, request: Request, next: Next) -> Response {
    let api = request.uri().path().starts_with("/api/");
    if !server.auth.host_is_ours(request.headers()) {
        let host =
            request.headers().get(header::HOST).map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        return refuse(
            api,
            StatusCode::MISDIRECTED_REQUEST,
            &format!("this server does not answer for the host {:?}", host.unwrap_or_default()),
            &format!("open {}/", server.auth.origin()),
        );
    }
    if let Some(offered) = token_in_query(request.uri().query()) {
        if !server.auth.exchange(&offered) {
            return refuse(api, StatusCode::UNAUTHORIZED, "this token is not valid (it works once)", RESTART_HINT);
        }
        // The token leaves the address bar: the cookie carries the session from here on.
        let mut response = Redirect::to(super::cookies::own_path(request.uri().path())).into_response();
        if let Ok(value) = server.auth.set_cookie().parse() {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        return response;
    }
    match server.auth.session(request.headers()) {
        Session::Valid => {}
        Session::Missing => {
            let message = "no session: open the URL `kubectl gitops ui` printed";
            return refuse(api, StatusCode::UNAUTHORIZED, message, RESTART_HINT);
        }
        Session::Expired => {
            let hours = crate::timeouts::UI_SESSION.as_secs() / 3600;
            let message = format!("the session ended: a session lasts {hours} hours");
            return refuse(api, StatusCode::UNAUTHORIZED, &message, RESTART_HINT);
        }
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        if let Some(origin) = request.headers().get(header::ORIGIN)
            && !server.auth.origin_is_ours(origin.as_bytes())
        {
            let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            return refuse(
                api,
                StatusCode::FORBIDDEN,
                &format!("a request from {origin} may not change anything here"),
                "changes are accepted only from the UI's own pages",
            );
        }
        if !server.allow_writes {
            return refuse(
                api,
                StatusCode::FORBIDDEN,
                "the UI is read-only",
                "restart it with `kubectl gitops ui --allow-writes` to add, remove, suspend, resume or reconcile apps from it",
            );
        }
        if let Some(refusal) = refuse_body(api, request.headers()) {
            return refusal;
        }
    }
    next.run(request).await
}

/// A change's body: at most [`super::BODY_LIMIT`], and JSON (from the API) or a form (from the
/// pages' buttons). Checked before any handler runs, whether or not it reads a body.
fn refuse_body(api: bool, headers: &HeaderMap) -> Option<Response> {
    let length: u64 = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    if length > super::BODY_LIMIT as u64 {
        return Some(refuse(
            api,
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body has {length} bytes, more than the {} allowed", super::BODY_LIMIT),
            "send at most 1 MiB",
        ));
    }
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or_default();
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    let accepted = ["application/json", "application/x-www-form-urlencoded"];
    if length > 0 && !accepted.contains(&media_type) {
        return Some(refuse(
            api,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("a body of type {media_type:?} is not accepted"),
            "send application/json",
        ));
    }
    None
}

const RESTART_HINT: &str = "run `kubectl gitops ui` again and open the URL it prints";

fn token_in_query(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes()).find(|(name, _)| name == "token").map(|(_, value)| value.into_owned())
}

fn refuse(api: bool, status: StatusCode, message: &str, hint: &str) -> Response {
    if api {
        ApiError::new(status, message, Some(hint)).into_response()
    } else {
        super::layout::refused(status, message, hint)
    }
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
