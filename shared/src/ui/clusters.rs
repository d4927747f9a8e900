//! The clusters the server follows: one kubeconfig context each (`ui --context dev,uat`, else the
//! current one), each with its own set of watches, and which of them a request is about: the
//! `context` of its query when given (the cluster switcher's links and form send it, and the
//! session remembers it), else the one the session last chose, else the first.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::watch;

use super::theme::Theme;
use super::{Server, dora, drift, live};
use crate::change::{RepoSettings, Target};
use crate::cluster::{Cluster, Connection};
use crate::error::Result;
use crate::output::Printer;
use crate::readers::apps_query::Snapshot;
use crate::readers::events::EventFeed;

/// One cluster the server follows.
pub(crate) struct ClusterView {
    /// Its kubeconfig context (the current one's name when none was named).
    pub(crate) context: String,
    pub(crate) cluster: Cluster,
    /// The cluster as the app commands take it, for adding an app.
    pub(crate) target: Target,
    pub(crate) snapshots: watch::Receiver<Arc<Snapshot>>,
    /// The Apps page's DORA panel, worked out in the background.
    pub(crate) dora: watch::Receiver<dora::Panel>,
    /// `--drift`: every Kustomization's drift, followed in the background.
    pub(crate) drift: Option<watch::Receiver<crate::drift::LiveDrift>>,
    /// The cluster's events, followed once a page or the API first asks for them.
    events: OnceLock<EventFeed>,
}

impl ClusterView {
    /// Connects to the context (`None`: the kubeconfig's current one) and starts following it.
    /// Only the kubeconfig is read here: a cluster that does not answer is a snapshot that says
    /// so, not a server that does not start.
    pub(crate) async fn start(
        base: &Target,
        context: Option<String>,
        drift: Option<RepoSettings>,
        printer: Printer,
    ) -> Result<ClusterView> {
        let connection = Connection { context: context.clone(), ..base.connection.clone() };
        let target = Target { connection, namespace: base.namespace.clone() };
        let cluster = Cluster::connect(&target.connection, &printer).await?;
        let snapshots = live::follow(cluster.clone(), printer);
        let dora = dora::follow(cluster.clone(), snapshots.clone());
        let drift = drift.map(|repo| drift::follow(target.clone(), repo, printer));
        let context = context.or_else(|| cluster.context.clone()).unwrap_or_else(|| "current".to_string());
        Ok(ClusterView { context, cluster, target, snapshots, dora, drift, events: OnceLock::new() })
    }

    /// The cluster's events: their watch starts on the first call, so that a server whose
    /// Events page nobody opens holds none of them.
    pub(crate) fn events(&self, printer: Printer) -> &EventFeed {
        self.events.get_or_init(|| EventFeed::follow(self.cluster.clone(), printer))
    }
}

/// The name of the cookie that remembers the chosen cluster; it carries the port, as the
/// session's does, so two servers on one machine do not share it.
fn cookie_name(server: &Server) -> String {
    format!("gitops_ui_context_{}", server.auth.port)
}

/// The `context` of a query string.
fn asked(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(name, _)| name == "context")
        .map(|(_, value)| value.into_owned())
}

/// The context the session's cookie remembers.
fn remembered(server: &Server, headers: &axum::http::HeaderMap) -> Option<String> {
    crate::local_server::cookies::named(headers, &cookie_name(server)).and_then(decoded)
}

/// A cookie's value as [`remember`] encoded it.
fn decoded(value: &str) -> Option<String> {
    form_urlencoded::parse(format!("value={value}").as_bytes()).next().map(|(_, value)| value.into_owned())
}

/// The cluster a request is about, and the server: handlers read both through it.
pub(crate) struct Viewed {
    pub(crate) server: Arc<Server>,
    index: usize,
    /// The theme the pages are drawn in.
    theme: Theme,
}

impl Deref for Viewed {
    type Target = ClusterView;

    fn deref(&self) -> &ClusterView {
        &self.server.views[self.index]
    }
}

impl Viewed {
    /// What the navigation shows: every cluster, this one chosen.
    pub(crate) fn nav(&self) -> Nav {
        let contexts = self.server.views.iter().map(|view| view.context.clone()).collect();
        Nav { contexts, chosen: self.index, theme: self.theme }
    }
}

/// A `context` the server does not follow: 404, as a page or as the API's error
/// (`pages.rs` renders it).
pub(crate) struct UnknownContext {
    pub(crate) context: String,
    /// The contexts the server follows.
    pub(crate) followed: Vec<String>,
    /// Asked of the API (`/api/…`): answered as JSON.
    pub(crate) api: bool,
}

impl FromRequestParts<Arc<Server>> for Viewed {
    type Rejection = UnknownContext;

    async fn from_request_parts(
        parts: &mut Parts,
        server: &Arc<Server>,
    ) -> std::result::Result<Viewed, UnknownContext> {
        let server = Arc::clone(server);
        let theme = Theme::of(&parts.headers);
        let index_of = |context: &str| server.views.iter().position(|view| view.context == context);
        if let Some(context) = asked(parts.uri.query()) {
            return match index_of(&context) {
                Some(index) => Ok(Viewed { server, index, theme }),
                None => Err(UnknownContext {
                    context,
                    followed: server.views.iter().map(|view| view.context.clone()).collect(),
                    api: parts.uri.path().starts_with("/api/"),
                }),
            };
        }
        // A remembered context the server no longer follows (it was restarted with others) is
        // forgotten: the first cluster.
        let chosen = remembered(&server, &parts.headers).and_then(|context| index_of(&context));
        Ok(Viewed { server, index: chosen.unwrap_or(0), theme })
    }
}

/// The middleware that remembers the cluster a page asked for (`?context=`), so that the next
/// pages, and their live updates, are about it too.
pub(super) async fn remember(State(server): State<Arc<Server>>, request: Request, next: Next) -> Response {
    let chosen =
        asked(request.uri().query()).filter(|context| server.views.iter().any(|view| view.context == *context));
    let mut response = next.run(request).await;
    if let Some(context) = chosen {
        let value: String = form_urlencoded::byte_serialize(context.as_bytes()).collect();
        let cookie = format!("{}={value}; Path=/; HttpOnly; SameSite=Strict", cookie_name(&server));
        if let Ok(cookie) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, cookie);
        }
    }
    response
}

/// The clusters the navigation offers, and the one chosen; the theme the page is drawn in.
#[derive(Debug, Clone, Default)]
pub(crate) struct Nav {
    pub(crate) contexts: Vec<String>,
    pub(crate) chosen: usize,
    pub(crate) theme: Theme,
}

impl Nav {
    /// The chosen cluster's context, when there is a choice to make.
    pub(crate) fn switching(&self) -> Option<&str> {
        (self.contexts.len() > 1).then(|| self.contexts[self.chosen].as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_is_read_from_the_query_and_survives_its_cookie() {
        assert_eq!(asked(Some("namespace=a&context=kind-dev%2Beu&q=x")).as_deref(), Some("kind-dev+eu"));
        assert_eq!(asked(Some("namespace=a")), None);
        assert_eq!(asked(None), None);
        // What `remember` writes into the cookie, read back as it was.
        for context in ["uat", "arn:aws:eks:eu-west-1:1:cluster/prod", "a b;c=d"] {
            let value: String = form_urlencoded::byte_serialize(context.as_bytes()).collect();
            assert!(!value.contains([';', ' ', '=']), "{value}");
            assert_eq!(decoded(&value).as_deref(), Some(context));
        }
    }
}
