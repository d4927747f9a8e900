//! Who may talk to the UI: the holder of the one-time token printed at start, through the session
//! cookie it is exchanged for (HttpOnly, SameSite=Strict, named for the port, for
//! [`crate::timeouts::UI_SESSION`]). Every request must name the server by the address it listens
//! on and its port in `Host` (a DNS-rebinding page names its own host: 421). Changes also need
//! `--allow-writes` and, from a browser, a same-origin `Origin` header.
//!
//! The token, the session and the names are the local server's ([`crate::local_server::auth`]);
//! this is the UI's middleware over them.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use super::Server;
use super::api::ApiError;
use crate::local_server::auth::Session;

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
        let mut response = Redirect::to(crate::local_server::cookies::own_path(request.uri().path())).into_response();
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
