//! The cookies a request carries: the session's (`auth.rs`), the chosen cluster's
//! (`clusters.rs`) and the theme's (`theme.rs`); and where the answers that set them may send
//! the browser back to.

use axum::http::{HeaderMap, header};

/// Every `name=value` pair of the request's `Cookie` headers, in order.
pub(crate) fn pairs(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
}

/// The value of the first cookie called `name`.
pub(crate) fn named<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    pairs(headers).find(|(cookie, _)| *cookie == name).map(|(_, value)| value)
}

/// `path` when it is a path of this server, else `/`: `//host/…` (and `/\host/…`, which browsers
/// read the same way) would send the browser to another site.
pub(crate) fn own_path(path: &str) -> &str {
    if path.starts_with("//") || path.starts_with("/\\") { "/" } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_never_leaves_the_server() {
        assert_eq!(own_path("/apps"), "/apps");
        assert_eq!(own_path("//evil.example/"), "/");
        assert_eq!(own_path("/\\evil.example/"), "/");
    }
}
