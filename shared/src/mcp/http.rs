//! `kubectl gitops mcp --http`: the same tools over the protocol's streamable HTTP, on loopback
//! only, behind the UI's token scheme: a random token printed at start (32 bytes from the OS),
//! here sent by the client as `Authorization: Bearer <token>` on every request (MCP clients take
//! headers, not cookies), compared in constant time; `Host` must name this server by a loopback
//! name and its port, and a browser's `Origin` must be this server's (a DNS-rebinding page or
//! another site is refused before any tool runs).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::tools::Tools;
use crate::error::{Error, Result};
use crate::local_server::auth::{Auth, constant_time_eq};
use crate::output::Printer;

/// The path the protocol is served on.
const PATH: &str = "/mcp";

/// Who may call: the holder of the token, naming this server.
struct Guard {
    auth: Auth,
    token: String,
}

/// Serves `tools` on 127.0.0.1:`port` (a free port when 0) until Ctrl-C. Prints the address and
/// the header to send on stdout.
pub(super) async fn serve(tools: Tools, port: u16, printer: &Printer) -> Result<()> {
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await.map_err(|error| {
            Error::usage(
                format!("cannot listen on 127.0.0.1:{port}: {error}"),
                "pick another --port, or leave it out for a free one",
            )
        })?;
    let address =
        listener.local_addr().map_err(|error| Error::Internal(format!("the listener has no address: {error}")))?;
    let (auth, token) = Auth::new(address)?;
    let guard = Arc::new(Guard { auth, token: token.clone() });
    let config = StreamableHttpServerConfig::default();
    let stop = config.cancellation_token.clone();
    let service =
        StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(LocalSessionManager::default()), config);
    let router =
        axum::Router::new().nest_service(PATH, service).layer(axum::middleware::from_fn_with_state(guard, guarded));
    printer.data(&format!("http://{address}{PATH}\nAuthorization: Bearer {token}\n"))?;
    let shutdown = async move {
        crate::interrupt::until_requested().await;
        stop.cancel();
    };
    crate::local_server::serve::serve(listener, router, shutdown).await;
    Ok(())
}

/// The middleware in front of the protocol.
async fn guarded(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if !guard.auth.host_is_ours(headers) {
        return (StatusCode::MISDIRECTED_REQUEST, "error: this server answers to 127.0.0.1 and localhost only\n")
            .into_response();
    }
    if headers.get(header::ORIGIN).is_some_and(|origin| !guard.auth.origin_is_ours(origin.as_bytes())) {
        return (StatusCode::FORBIDDEN, "error: a page of another origin may not call this server\n").into_response();
    }
    let offered = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    if !offered.is_some_and(|offered| constant_time_eq(offered.as_bytes(), guard.token.as_bytes())) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "error: send the token kubectl gitops mcp --http printed, as Authorization: Bearer <token>\n",
        )
            .into_response();
    }
    next.run(request).await
}
