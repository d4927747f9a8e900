//! One authenticated HTTP client for one provider host ([`Provider`]): building its requests,
//! sending them within the timeout (reads asked again on 429 and 5xx), paging through lists, and
//! sorting answers into results or [`ProviderError`]s with the token scrubbed out.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;

use super::model::{ProviderConfig, RepoRef, Token};
use crate::http::{Credential, Gate, GateError, Origin};
use crate::provider_error::ProviderError;
use crate::provider_kind::Kind;

/// How many pages a listing follows before giving up (100 items a page).
const MAX_PAGES: usize = 50;

/// One authenticated API client for one GitHub or GitLab host.
#[derive(Debug, Clone)]
pub struct Provider {
    pub(super) kind: Kind,
    pub(super) host: String,
    pub(super) base: String,
    token: Token,
    gate: Gate,
    timeout: Duration,
}

/// An answer, read in full.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: HeaderMap,
    pub(super) body: Vec<u8>,
}

impl Reply {
    pub(super) fn is(&self, statuses: &[u16]) -> bool {
        statuses.contains(&self.status)
    }

    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

impl Provider {
    /// A client for `config`, with the default [`REQUEST_TIMEOUT`].
    pub fn new(config: ProviderConfig) -> Result<Provider, ProviderError> {
        Provider::with_timeout(config, crate::timeouts::PROVIDER_REQUEST)
    }

    /// How long one call may take, retries included.
    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A client whose requests each time out after `timeout`. The token goes through a
    /// [`Gate`] bound to the API's origin, which is built from the typed host.
    pub fn with_timeout(config: ProviderConfig, timeout: Duration) -> Result<Provider, ProviderError> {
        let base = config.api_base_url()?;
        let origin = Url::parse(&base)
            .ok()
            .and_then(|url| Origin::of_url(&url).ok())
            .ok_or_else(|| ProviderError::InvalidConfig(format!("invalid {} API URL {base:?}", config.kind)))?;
        let host = match &config.api_base {
            Some(_) if config.host.is_none() => origin.host().to_string(),
            _ => config.host(),
        };
        if config.token.expose().is_empty() {
            return Err(ProviderError::InvalidConfig(format!(
                "no {} token: set {}",
                config.kind,
                config.kind.token_env()
            )));
        }
        let mut headers = HeaderMap::new();
        let credential = match config.kind {
            Kind::GitHub => {
                headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/vnd.github+json"));
                headers.insert(HeaderName::from_static("x-github-api-version"), HeaderValue::from_static("2022-11-28"));
                Credential::Bearer(config.token.expose())
            }
            Kind::GitLab => {
                headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/json"));
                Credential::PrivateToken(config.token.expose())
            }
            Kind::Gitea => {
                headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("application/json"));
                Credential::Token(config.token.expose())
            }
        };
        let gate = Gate::new(origin, &credential, timeout, headers).map_err(|error| match error {
            GateError::NotAHeader => ProviderError::InvalidConfig(format!(
                "the {} token contains characters that cannot be sent in an HTTP header; check {}",
                config.kind,
                config.kind.token_env()
            )),
            GateError::Client(_) => ProviderError::Transport(error.to_string()),
            GateError::PlainHttp(_) | GateError::OffOrigin { .. } | GateError::OffSite { .. } => {
                ProviderError::InvalidConfig(error.to_string())
            }
        })?;
        Ok(Provider { kind: config.kind, host, base, token: config.token, gate, timeout })
    }

    /// GitHub or GitLab.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The host named in messages (`github.com`, `git.example.com`).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Rejects references a provider cannot address.
    pub(super) fn check(&self, repo: &RepoRef) -> Result<(), ProviderError> {
        let nested_ok = self.kind == Kind::GitLab;
        let bad_owner = repo.owner.is_empty()
            || repo.owner.split('/').any(str::is_empty)
            || (!nested_ok && repo.owner.contains('/'));
        if bad_owner || repo.name.is_empty() || repo.name.contains('/') {
            let expected = if nested_ok {
                "group[/subgroup…]/name"
            } else {
                "owner/name (a user or organization, then the repository)"
            };
            return Err(ProviderError::InvalidConfig(format!(
                "invalid {} repository {:?}: expected {expected}",
                self.kind,
                repo.path()
            )));
        }
        Ok(())
    }

    /// `base + path`, with `query` appended (form-encoded). `path` must already be encoded.
    pub(super) fn url(&self, path: &str, query: &[(&str, &str)]) -> Result<Url, ProviderError> {
        let mut url = Url::parse(&format!("{}{path}", self.base))
            .map_err(|error| ProviderError::InvalidConfig(format!("cannot build an API URL for {path:?}: {error}")))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// Sends one request to `path` (with `query`, see [`Provider::url`]) and reads the whole
    /// answer. Only transport failures are errors here.
    pub(super) async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, ProviderError> {
        self.send(method, self.url(path, query)?, body).await
    }

    /// A GET of `path` answered 200, decoded; 404 is `None`; anything else is its failure.
    pub(super) async fn get_if_found<T: DeserializeOwned>(
        &self,
        path: &str,
        what: &str,
    ) -> Result<Option<T>, ProviderError> {
        let reply = self.call(Method::GET, path, &[], None).await?;
        match reply.status {
            200 => self.decode(&reply, what).map(Some),
            404 => Ok(None),
            _ => Err(self.failure(&reply, what)),
        }
    }

    /// The answer decoded when its status is `ok`, else the failure it is.
    pub(super) fn expect<T: DeserializeOwned>(&self, reply: &Reply, ok: u16, what: &str) -> Result<T, ProviderError> {
        if reply.status == ok { self.decode(reply, what) } else { Err(self.failure(reply, what)) }
    }

    /// `Ok` when the answer's status is one of `ok`, else the failure it is; the body is not read.
    pub(super) fn expect_status(&self, reply: &Reply, ok: &[u16], what: &str) -> Result<(), ProviderError> {
        if reply.is(ok) { Ok(()) } else { Err(self.failure(reply, what)) }
    }

    /// Fails with [`ProviderError::OwnerMismatch`] unless the token's own account
    /// ([`Provider::token_login`]) is `repo.owner`: the check before creating a personal
    /// repository.
    pub(super) async fn check_personal_owner(&self, repo: &RepoRef) -> Result<(), ProviderError> {
        let authenticated = self.token_login().await?;
        if authenticated.eq_ignore_ascii_case(&repo.owner) {
            return Ok(());
        }
        Err(ProviderError::OwnerMismatch { repo: repo.path(), requested: repo.owner.clone(), authenticated })
    }

    /// Sends one request and reads the whole answer. Only transport failures are errors here. A
    /// read (GET) answered 429 or 5xx is asked again ([`crate::retry`]) within the timeout, which
    /// bounds the whole, retries included.
    pub(super) async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, ProviderError> {
        if method != Method::GET {
            return self.send_once(method, url, body, self.timeout).await;
        }
        let mut backoff = crate::retry::Backoff::until(std::time::Instant::now() + self.timeout);
        // The last 429 or 5xx: what the caller gets when the deadline cuts the next attempt short.
        let mut refused: Option<Reply> = None;
        loop {
            let reply = match self.send_once(Method::GET, url.clone(), None, backoff.remaining()).await {
                Ok(reply) => reply,
                Err(error) => {
                    return match refused {
                        Some(reply) if backoff.remaining().is_zero() => Ok(reply),
                        _ => Err(error),
                    };
                }
            };
            if !crate::retry::is_transient(reply.status) {
                return Ok(reply);
            }
            let Some(pause) = backoff.pause(reply.header("retry-after").and_then(crate::retry::retry_after)) else {
                return Ok(reply);
            };
            refused = Some(reply);
            tokio::time::sleep(pause).await;
        }
    }

    /// One attempt of [`Provider::send`], given `timeout`.
    pub(super) async fn send_once(
        &self,
        method: Method,
        url: Url,
        body: Option<&serde_json::Value>,
        timeout: Duration,
    ) -> Result<Reply, ProviderError> {
        let request =
            self.gate.request(method, url).map_err(|error| ProviderError::InvalidConfig(error.to_string()))?;
        let mut request = request.timeout(timeout);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|error| self.transport(&error))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|error| self.transport(&error))?.to_vec();
        Ok(Reply { status, headers, body })
    }

    /// A GET of every page of the list at `path`, 100 items a page (Gitea 50), following
    /// `Link: <…>; rel="next"` on the same host.
    pub(super) async fn get_all<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<Vec<T>, ProviderError> {
        let mut items = Vec::new();
        // Gitea reads `limit`, and serves at most 50 a page unless its admin raised MAX_RESPONSE_ITEMS.
        let page_size = match self.kind {
            Kind::GitHub | Kind::GitLab => ("per_page", "100"),
            Kind::Gitea => ("limit", "50"),
        };
        let mut next = Some(self.url(path, &[page_size])?);
        let mut pages = 0;
        while let Some(url) = next.take() {
            pages += 1;
            let origin = url.origin();
            let reply = self.send(Method::GET, url, None).await?;
            items.extend(self.expect::<Vec<T>>(&reply, 200, what)?);
            if pages >= MAX_PAGES {
                break;
            }
            next = reply
                .header("link")
                .and_then(next_link)
                .and_then(|link| Url::parse(&link).ok())
                .filter(|link| link.origin() == origin);
        }
        Ok(items)
    }

    pub(super) fn decode<T: DeserializeOwned>(&self, reply: &Reply, what: &str) -> Result<T, ProviderError> {
        serde_json::from_slice(&reply.body).map_err(|error| {
            ProviderError::InvalidResponse(format!(
                "unexpected answer from {} for {what} (HTTP {}): {error}",
                self.host, reply.status
            ))
        })
    }

    pub(super) fn transport(&self, error: &reqwest::Error) -> ProviderError {
        if let Some(refused) = crate::http::refused_redirect(error) {
            let (from, to) = refused.ends();
            return ProviderError::RedirectRefused { from, to };
        }
        if error.is_timeout() {
            return ProviderError::Transport(format!(
                "{} did not answer within {}s",
                self.host,
                self.timeout.as_secs_f64()
            ));
        }
        let line = crate::diagnostic::chain_to_line(error);
        ProviderError::Transport(self.scrub(&format!("cannot reach {}: {line}", self.host)))
    }

    /// Sorts an unexpected answer into an error. `what` names the operation and its object.
    pub(super) fn failure(&self, reply: &Reply, what: &str) -> ProviderError {
        let detail = self.scrub(&server_message(&reply.body));
        let rate_limited = match reply.status {
            429 => true,
            403 => {
                reply.header("x-ratelimit-remaining") == Some("0")
                    || reply.header("retry-after").is_some()
                    || detail.to_ascii_lowercase().contains("rate limit")
            }
            _ => false,
        };
        if rate_limited {
            return ProviderError::RateLimited { host: self.host.clone(), retry_after_secs: retry_after(reply) };
        }
        let message = if detail.is_empty() { what.to_string() } else { format!("{what}: {detail}") };
        match reply.status {
            401 => ProviderError::Unauthorized { host: self.host.clone(), kind: self.kind, detail },
            403 => ProviderError::Forbidden { message, hint: None },
            404 => ProviderError::NotFound { what: what.to_string(), kind: self.kind },
            status if crate::retry::is_transient(status) => {
                let hint = format!(
                    "{} is failing for now (reads are asked again until the timeout): try again later",
                    self.host
                );
                ProviderError::Api { status, message, hint: Some(hint) }
            }
            status => ProviderError::Api { status, message, hint: None },
        }
    }

    /// Removes the token from text that came from elsewhere, in case a server echoes it.
    pub(super) fn scrub(&self, text: &str) -> String {
        let secret = self.token.expose();
        if secret.len() >= 4 { text.replace(secret, "***") } else { text.to_string() }
    }
}

/// Seconds to wait, from `Retry-After` or the reset time in `X-RateLimit-Reset` (GitHub, epoch
/// seconds) / `RateLimit-Reset` (GitLab, epoch seconds).
fn retry_after(reply: &Reply) -> Option<u64> {
    if let Some(secs) = reply.header("retry-after").and_then(|value| value.trim().parse().ok()) {
        return Some(secs);
    }
    let reset: u64 =
        reply.header("x-ratelimit-reset").or_else(|| reply.header("ratelimit-reset"))?.trim().parse().ok()?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(reset.saturating_sub(now))
}

/// The provider's explanation in an error body: GitHub `message` and `errors[]`, GitLab
/// `message` (a string, a list, or a map of field → messages) or `error`/`error_description`.
pub(super) fn server_message(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        return text.chars().take(200).collect();
    };
    let mut parts: Vec<String> = Vec::new();
    for field in ["message", "error", "error_description"] {
        flatten_message(value.get(field), None, &mut parts);
    }
    if let Some(errors) = value.get("errors").and_then(serde_json::Value::as_array) {
        for error in errors {
            match error {
                serde_json::Value::Object(map) => {
                    if let Some(text) = map.get("message").and_then(serde_json::Value::as_str) {
                        parts.push(text.to_string());
                    } else {
                        let field = map.get("field").and_then(serde_json::Value::as_str);
                        let code = map.get("code").and_then(serde_json::Value::as_str);
                        match (field, code) {
                            (Some(field), Some(code)) => parts.push(format!("{field} {code}")),
                            (None, Some(code)) => parts.push(code.to_string()),
                            _ => {}
                        }
                    }
                }
                other => flatten_message(Some(other), None, &mut parts),
            }
        }
    }
    parts.dedup();
    parts.join("; ")
}

fn flatten_message(value: Option<&serde_json::Value>, field: Option<&str>, parts: &mut Vec<String>) {
    match value {
        Some(serde_json::Value::String(text)) => match field {
            Some(field) => parts.push(format!("{field} {text}")),
            None => parts.push(text.clone()),
        },
        Some(serde_json::Value::Array(items)) => {
            for item in items {
                flatten_message(Some(item), field, parts);
            }
        }
        Some(serde_json::Value::Object(map)) => {
            for (key, item) in map {
                flatten_message(Some(item), Some(key), parts);
            }
        }
        _ => {}
    }
}

/// The `rel="next"` URL of a `Link` header (RFC 8288), as GitHub and GitLab paginate.
pub(super) fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let is_next = params.split(';').any(|param| {
            let param = param.trim().replace(' ', "");
            param == "rel=\"next\"" || param == "rel=next"
        });
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| target.to_string())
    })
}

/// Percent-encodes one path segment: everything but RFC 3986 unreserved characters, so `/`
/// becomes `%2F` (GitLab's namespaced paths, branch names with slashes).
pub(super) fn encode_segment(segment: &str) -> String {
    let mut encoded = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}
