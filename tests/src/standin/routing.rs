//! The HTTP side of the stand-in: the token's user, the recording of each request (token
//! redacted), arranged failures, routing to GitHub or GitLab, and pagination.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::github::github;
use super::gitlab::{gitlab, gitlab_not_found};
use super::{GITEA_IS_REAL, Kind, Recorded, Response, State, respond};
use crate::http::Incoming;

fn redact(name: &str, value: &str) -> String {
    match name {
        "authorization" => match value.split_once(' ') {
            Some((scheme, _)) => format!("{scheme} ***"),
            None => "***".to_string(),
        },
        "private-token" => "***".to_string(),
        _ => value.to_string(),
    }
}

pub(super) fn handle(state: &mut State, incoming: &Incoming) -> Response {
    let token = match state.kind {
        Kind::GitHub => incoming
            .headers
            .get("authorization")
            .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("token ")))
            .map(str::to_string),
        Kind::GitLab => incoming.headers.get("private-token").cloned(),
        Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
    };
    let caller = token.as_deref().and_then(|token| state.users.get(token)).map(|user| Caller {
        login: user.login.clone(),
        id: user.id,
        can_create: user.can_create_repos,
        can_push: user.can_push,
    });
    let body = if incoming.body.is_empty() {
        None
    } else {
        Some(
            serde_json::from_slice(&incoming.body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&incoming.body).into_owned())),
        )
    };
    state.requests.push(Recorded {
        method: incoming.method.clone(),
        path: incoming.path.clone(),
        query: incoming.query.clone(),
        headers: incoming.headers.iter().map(|(name, value)| (name.clone(), redact(name, value))).collect(),
        body: body.clone(),
        user: caller.as_ref().map(|caller| caller.login.clone()),
    });

    if let Some(position) =
        state.injected.iter().position(|fail| fail.method == incoming.method && fail.path == incoming.path)
    {
        let fail = state.injected.remove(position);
        return respond(fail.status, &fail.body);
    }
    let Some(caller) = caller else {
        return match state.kind {
            Kind::GitHub => respond(
                401,
                &json!({
                    "message": if token.is_some() { "Bad credentials" } else { "Requires authentication" },
                    "documentation_url": "https://docs.github.com/rest",
                    "status": "401",
                }),
            ),
            Kind::GitLab => respond(401, &json!({ "message": "401 Unauthorized" })),
            Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
        };
    };
    if state.rate_limited {
        let reset = SystemTime::now().duration_since(UNIX_EPOCH).map(|now| now.as_secs() + 60).unwrap_or(60);
        return match state.kind {
            Kind::GitHub => {
                let mut response = respond(
                    403,
                    &json!({
                        "message": format!("API rate limit exceeded for user ID {}.", caller.id),
                        "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                        "status": "403",
                    }),
                );
                response.headers = vec![
                    ("x-ratelimit-limit".into(), "5000".into()),
                    ("x-ratelimit-remaining".into(), "0".into()),
                    ("x-ratelimit-reset".into(), reset.to_string()),
                ];
                response
            }
            Kind::GitLab => Response {
                status: 429,
                headers: vec![("retry-after".into(), "60".into()), ("ratelimit-reset".into(), reset.to_string())],
                body: b"Retry later\n".to_vec(),
                content_type: "text/plain",
            },
            Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
        };
    }
    let body = body.unwrap_or(Value::Null);
    match state.kind {
        Kind::GitHub => github(state, incoming, &caller, &body),
        Kind::GitLab => match incoming.path.strip_prefix("/api/v4") {
            Some(rest) => gitlab(state, incoming, rest, &caller, &body),
            None => gitlab_not_found("404 Not Found"),
        },
        Kind::Gitea => unreachable!("{GITEA_IS_REAL}"),
    }
}

/// A request below one repository: who asks, the repository's path, the path after it and the body.
#[derive(Clone, Copy)]
pub(super) struct Route<'a> {
    pub(super) incoming: &'a Incoming,
    pub(super) caller: &'a Caller,
    pub(super) path: &'a str,
    pub(super) rest: &'a [&'a str],
    pub(super) body: &'a Value,
}

pub(super) struct Caller {
    pub(super) login: String,
    pub(super) id: u64,
    pub(super) can_create: bool,
    pub(super) can_push: bool,
}

/// The decoded segments of a raw path (split on literal `/` first, so `%2F` stays inside one).
pub(super) fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| percent_encoding::percent_decode_str(segment).decode_utf8_lossy().into_owned())
        .collect()
}

pub(super) fn str_field<'a>(body: &'a Value, name: &str) -> Option<&'a str> {
    body.get(name).and_then(Value::as_str)
}

pub(super) fn bool_field(body: &Value, name: &str) -> Option<bool> {
    match body.get(name) {
        Some(Value::Bool(value)) => Some(*value),
        Some(Value::String(value)) => Some(value == "true"),
        _ => None,
    }
}

/// A 200 answer with the page of a list that `page` and `per_page` ask for, and the `Link`
/// header for the next and last pages.
pub(super) fn paginate(incoming: &Incoming, origin: &str, items: &[Value], default_per_page: usize) -> Response {
    let param = |name: &str| incoming.query(name).and_then(|value| value.parse::<usize>().ok());
    let per_page = param("per_page").unwrap_or(default_per_page).clamp(1, 100);
    let page = param("page").unwrap_or(1).max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let start = ((page - 1) * per_page).min(items.len());
    let end = (start + per_page).min(items.len());
    let mut headers = Vec::new();
    let link = |number: usize, rel: &str| {
        format!("<{origin}{}?per_page={per_page}&page={number}>; rel=\"{rel}\"", incoming.path)
    };
    let mut links = Vec::new();
    if page < last {
        links.push(link(page + 1, "next"));
        links.push(link(last, "last"));
    }
    if page > 1 {
        links.push(link(1, "first"));
    }
    if !links.is_empty() {
        headers.push(("link".to_string(), links.join(", ")));
    }
    let mut response = respond(200, &Value::Array(items[start..end].to_vec()));
    response.headers = headers;
    response
}
