//! Light or dark: the system's choice (`prefers-color-scheme`) unless the user picked one with the
//! navigation's toggle, which a cookie remembers. The page carries the choice as `data-theme` on
//! its root, so the stylesheet needs no script, and the toggle is a plain form.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};

/// The cookie that remembers the choice: a preference of the browser, not of one server, so it
/// does not carry the port.
const COOKIE: &str = "gitops_ui_theme";

/// The theme a page is drawn in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Theme {
    /// The system's (`prefers-color-scheme`).
    #[default]
    Auto,
    Light,
    Dark,
}

impl Theme {
    pub(crate) const ALL: [Theme; 3] = [Theme::Auto, Theme::Light, Theme::Dark];

    pub(crate) fn word(self) -> &'static str {
        match self {
            Theme::Auto => "auto",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    fn parse(word: &str) -> Option<Theme> {
        Theme::ALL.into_iter().find(|theme| theme.word() == word)
    }

    /// The root's `data-theme`: none for the system's.
    pub(crate) fn attribute(self) -> Option<&'static str> {
        (self != Theme::Auto).then(|| self.word())
    }

    /// The theme a request's cookie chose; anything else is the system's.
    pub(crate) fn of(headers: &HeaderMap) -> Theme {
        crate::local_server::cookies::named(headers, COOKIE).and_then(Theme::parse).unwrap_or_default()
    }
}

/// `GET /theme?theme=dark`: the toggle's form. Remembers the choice and goes back to the page the
/// form was on (its path, from the same-origin referrer: never another site), else the Apps page.
/// A theme it does not know is the system's.
pub(super) async fn choose(axum::extract::RawQuery(query): axum::extract::RawQuery, headers: HeaderMap) -> Response {
    let chosen = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(name, _)| name == "theme")
        .and_then(|(_, value)| Theme::parse(&value))
        .unwrap_or_default();
    let mut response = Redirect::to(&back(&headers)).into_response();
    // A year: a preference, not a session; not HttpOnly, the toggle's script sets it too.
    let cookie = format!("{COOKIE}={}; Path=/; Max-Age=31536000; SameSite=Strict", chosen.word());
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The path and query of the referring page: only ever a path on this server.
fn back(headers: &HeaderMap) -> String {
    let referrer = headers.get(header::REFERER).and_then(|value| value.to_str().ok());
    let path = referrer
        .and_then(|referrer| referrer.parse::<axum::http::Uri>().ok())
        .and_then(|uri| uri.path_and_query().map(|path| path.as_str().to_string()));
    match path {
        Some(path)
            if path.starts_with('/')
                && crate::local_server::cookies::own_path(&path) == path
                && !path.starts_with("/theme") =>
        {
            path
        }
        _ => "/apps".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static(""))))
            .collect()
    }

    #[test]
    fn the_cookie_chooses_the_theme_and_anything_else_is_the_systems() {
        assert_eq!(Theme::of(&headers(&[(header::COOKIE, "a=b; gitops_ui_theme=dark")])), Theme::Dark);
        assert_eq!(Theme::of(&headers(&[(header::COOKIE, "gitops_ui_theme=light")])), Theme::Light);
        assert_eq!(Theme::of(&headers(&[(header::COOKIE, "gitops_ui_theme=<script>")])), Theme::Auto);
        assert_eq!(Theme::of(&HeaderMap::new()), Theme::Auto);
        assert_eq!(Theme::Auto.attribute(), None);
        assert_eq!(Theme::Dark.attribute(), Some("dark"));
    }

    #[test]
    fn the_toggle_goes_back_to_a_path_of_this_server_only() {
        let back_from = |referrer: &str| back(&headers(&[(header::REFERER, referrer)]));
        assert_eq!(back_from("http://127.0.0.1:8080/apps/a/b?part=x"), "/apps/a/b?part=x");
        assert_eq!(back_from("http://evil.example//evil.example/x"), "/apps");
        assert_eq!(back_from("http://127.0.0.1:8080/theme?theme=dark"), "/apps");
        assert_eq!(back_from("not a url at all"), "/apps");
        assert_eq!(back(&HeaderMap::new()), "/apps");
    }
}
