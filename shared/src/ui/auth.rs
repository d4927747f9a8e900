//! Who may talk to the UI: the holder of the one-time token printed at start, through the session
//! cookie it is exchanged for (HttpOnly, SameSite=Strict). Changes also need `--allow-writes`
//! and, from a browser, a same-origin `Origin` header.

use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use ssh_key::rand_core::{OsRng, RngCore};

use super::Server;
use super::api::ApiError;
use crate::error::{Error, Result};

/// The session cookie's name.
const COOKIE: &str = "gitops_ui_session";

/// The token printed at start (good for one exchange) and the session it opens.
pub(super) struct Auth {
    token: Mutex<Option<String>>,
    session: String,
}

impl Auth {
    /// The guard and the token to print (it is kept only until its one exchange).
    pub(super) fn new() -> Result<(Auth, String)> {
        let token = random_hex()?;
        Ok((Auth { token: Mutex::new(Some(token.clone())), session: random_hex()? }, token))
    }

    /// Takes the one-time token: true once, for the right value.
    fn exchange(&self, offered: &str) -> bool {
        let Ok(mut token) = self.token.lock() else { return false };
        let matches =
            token.as_deref().is_some_and(|expected| constant_time_eq(expected.as_bytes(), offered.as_bytes()));
        if matches {
            *token = None;
        }
        matches
    }

    fn has_session(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == COOKIE && constant_time_eq(value.as_bytes(), self.session.as_bytes()))
    }
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
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The middleware in front of every route.
pub(super) async fn guard(State(server): State<Arc<Server>>, request: Request, next: Next) -> Response {
    let api = request.uri().path().starts_with("/api/");
    if let Some(offered) = token_in_query(request.uri().query()) {
        if !server.auth.exchange(&offered) {
            return refuse(api, StatusCode::UNAUTHORIZED, "this token is not valid (it works once)", RESTART_HINT);
        }
        // The token leaves the address bar: the cookie carries the session from here on.
        let mut response = Redirect::to(request.uri().path()).into_response();
        let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", server.auth.session);
        if let Ok(value) = cookie.parse() {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        return response;
    }
    if !server.auth.has_session(request.headers()) {
        return refuse(
            api,
            StatusCode::UNAUTHORIZED,
            "no session: open the URL `kubectl gitops ui` printed",
            RESTART_HINT,
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        if let Some(origin) = request.headers().get(header::ORIGIN)
            && origin.as_bytes() != server.origin.as_bytes()
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
        super::pages::refused(status, message, hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_works_once() {
        let (auth, token) = Auth::new().unwrap();
        assert_eq!(token.len(), 64);
        assert!(!auth.exchange("wrong"));
        assert!(auth.exchange(&token));
        assert!(!auth.exchange(&token));
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let (auth, _) = Auth::new().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, format!("theme=dark; {COOKIE}={}", auth.session).parse().unwrap());
        assert!(auth.has_session(&headers));
        headers.insert(header::COOKIE, format!("{COOKIE}=not-the-session").parse().unwrap());
        assert!(!auth.has_session(&headers));
    }
}
