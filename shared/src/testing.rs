//! Test helpers: a fake API server for unit tests (canned responses by path, every request
//! recorded), and a printer that prints no progress.
//!
//! Unit tests of code that talks to Kubernetes build a [`Cluster`] on top of this instead of
//! a network connection. End-to-end tests use the real API server of the test environment.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use http::{Request, Response, StatusCode};
use kube::client::Body;

use crate::cluster::Cluster;

/// Canned responses, matched on the request path (and query, when the route has one).
#[derive(Clone, Default)]
pub struct FakeApi {
    routes: Arc<Vec<(String, u16, String)>>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl FakeApi {
    /// A fake that answers 404 to everything.
    pub fn new() -> FakeApi {
        FakeApi::default()
    }

    /// Answers `GET path` (or `path?query`) with a status and JSON body.
    pub fn route(mut self, path: &str, status: u16, body: impl Into<String>) -> FakeApi {
        Arc::make_mut(&mut self.routes).push((path.to_string(), status, body.into()));
        self
    }

    /// Answers with a recorded response from `shared/testdata/api/<file>`.
    pub fn recorded(self, path: &str, file: &str) -> FakeApi {
        let full = format!("{}/testdata/api/{file}", env!("CARGO_MANIFEST_DIR"));
        let body = std::fs::read_to_string(&full).unwrap_or_else(|error| panic!("{full}: {error}"));
        self.route(path, 200, body)
    }

    /// Every request seen so far, as `METHOD path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().map(|seen| seen.clone()).unwrap_or_default()
    }

    /// A cluster whose client talks to this fake.
    pub fn cluster(&self) -> Cluster {
        let fake = self.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let fake = fake.clone();
            async move { Ok::<_, Infallible>(fake.answer(&request)) }
        });
        Cluster {
            client: kube::Client::new(service, "default"),
            server: "https://fake.test:6443".to_string(),
            context: Some("fake".to_string()),
            namespace: "default".to_string(),
            request_timeout: None,
        }
    }

    fn answer(&self, request: &Request<Body>) -> Response<Body> {
        let uri = request.uri();
        let path_and_query = uri.path_and_query().map(|pq| pq.as_str()).unwrap_or(uri.path());
        if let Ok(mut seen) = self.requests.lock() {
            seen.push(format!("{} {path_and_query}", request.method()));
        }
        let matched = self
            .routes
            .iter()
            .find(|(route, _, _)| if route.contains('?') { route == path_and_query } else { route == uri.path() });
        let (status, body) = match matched {
            Some((_, status, body)) => (*status, body.clone()),
            None => (404, not_found(uri.path())),
        };
        let mut response = Response::new(Body::from(body.into_bytes()));
        *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        response
    }
}

/// The body a real API server sends for a missing object.
pub fn not_found(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or_default();
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("\"{name}\" not found"), "reason": "NotFound", "code": 404
    })
    .to_string()
}

/// The body a real API server sends for a forbidden request.
pub fn forbidden(message: &str) -> String {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Forbidden", "code": 403
    })
    .to_string()
}

/// A file of ../shared/fixtures/flux beside the checkout; panics, naming it, when it is absent.
/// Tests that call this carry `#[cfg_attr(shared_fixtures_absent, ignore = "…")]` (see build.rs).
pub fn flux_fixture(relative: &str) -> String {
    let path = format!("{}/../../shared/fixtures/flux/{relative}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("the fixture {path} is absent ({error}): ../shared must be beside the checkout"))
}

/// A printer without colour, progress or warnings: what the tests check is returned, not printed.
pub fn quiet() -> crate::output::Printer {
    crate::output::Printer::new(crate::cli::ColorChoice::Never, 0, 1)
}
