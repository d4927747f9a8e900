//! A server on this machine for a browser or a local client: what `kubectl gitops ui` and
//! `kubectl gitops mcp --http` both stand on, so that neither face leans on the other. The
//! token, session and names a request must carry ([`auth`]), cookies read and a redirect kept on
//! the server ([`cookies`]), and axum on hyper with the deadlines a silent client meets
//! ([`serve`]).

pub mod auth;
pub mod cookies;
pub mod serve;
