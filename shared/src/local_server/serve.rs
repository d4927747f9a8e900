//! The HTTP server under `ui` and `mcp --http`: axum's router on hyper, with the deadlines
//! `axum::serve` leaves out. A client has `HEAD_DEADLINE` to send a request's head (an idle
//! keep-alive connection is closed after it too) and `BODY_DEADLINE` to send its body, so one
//! that connects and stays silent, or trickles a byte at a time, holds nothing for long. What a
//! response takes is the handler's own business: a tool call or an event stream runs as long as
//! its work does, under that work's own deadlines.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// How long a client has to send a request's head, from connecting or from its last response.
pub(crate) const HEAD_DEADLINE: Duration = Duration::from_secs(10);
/// How long a client has to send a request's body once its head is in.
pub(crate) const BODY_DEADLINE: Duration = Duration::from_secs(10);
/// The largest request body taken (a form, a JSON-RPC message): axum's default limit.
const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// Serves `router` on `listener` until `shutdown` completes, then waits for the open connections
/// to finish (the handlers end their streams on the same signal).
pub(crate) async fn serve(listener: TcpListener, router: Router, shutdown: impl Future<Output = ()>) {
    let service = TowerToHyperService::new(router.layer(axum::middleware::from_fn(body_within_deadline)));
    let connections = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A connection reset before it was accepted is that client's end, not the
                // server's; out of descriptors, the server waits for some to close.
                Err(error) if is_per_connection(&error) => continue,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEAD_DEADLINE)
            .serve_connection(TokioIo::new(stream), service.clone());
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            // A client that goes away or misses its deadline ends only its own connection.
            let _ = connection.await;
        });
    }
    drop(listener);
    connections.shutdown().await;
}

/// Errors of `accept` that belong to one connection, after which the listener goes on.
fn is_per_connection(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted};
    matches!(error.kind(), ConnectionAborted | ConnectionReset | Interrupted)
}

/// Reads the request's body within `BODY_DEADLINE` (and `BODY_LIMIT`) before any handler sees it.
async fn body_within_deadline(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    match tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, BODY_LIMIT)).await {
        Ok(Ok(bytes)) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Ok(Err(_)) => {
            (StatusCode::BAD_REQUEST, "error: the request's body was cut short or is over 2 MiB\n").into_response()
        }
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            format!("error: the request's body did not arrive within {} s\n", BODY_DEADLINE.as_secs()),
        )
            .into_response(),
    }
}
