//! `metrics drift --listen`: the drift series served over HTTP for Prometheus to scrape, kept
//! current by [`super::watch`]. Until the first report is made, a scrape is answered 503, so
//! that Prometheus records the target as down rather than as free of drift.

use std::net::SocketAddr;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::output::Printer;

/// The text exposition format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Listens on `address`, prints the address of the series, and serves what is sent on the
/// channel it returns, until Ctrl-C.
pub(super) async fn serve(address: SocketAddr, printer: &Printer) -> Result<watch::Sender<String>> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| Error::io(format!("cannot listen on {address}"), error))?;
    let bound = listener.local_addr().map_err(|error| Error::io("cannot read the listening address", error))?;
    let (series, current) = watch::channel(String::new());
    let router = Router::new().route(
        "/metrics",
        get(move || {
            let text = current.borrow().clone();
            async move { scrape(text) }
        }),
    );
    let server = axum::serve(listener, router).with_graceful_shutdown(crate::interrupt::until_requested());
    tokio::spawn(async move { drop(server.await) });
    printer.data(&format!("http://{bound}/metrics\n"))?;
    printer.progress(&format!("serving the drift series on {bound} once the first report is made; Ctrl-C stops it"));
    Ok(series)
}

fn scrape(text: String) -> Response {
    if text.is_empty() {
        return (StatusCode::SERVICE_UNAVAILABLE, "the first drift report is not made yet\n").into_response();
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
}
