//! What every page is drawn in: the document, its navigation (the cluster switcher, the theme
//! toggle), the stylesheet and script compiled into the binary, and errors as pages.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use maud::{DOCTYPE, Markup, html};

use super::api::ApiError;
use super::clusters::{Nav, UnknownContext};
use super::theme::Theme;

const CSS: &str = include_str!("assets/ui.css");
const JS: &str = include_str!("assets/ui.js");

pub(super) fn layout(nav: &Nav, title: &str, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" data-theme=[nav.theme.attribute()] {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " · kubectl gitops" }
                    link rel="stylesheet" href="/assets/ui.css";
                    script src="/assets/ui.js" defer {}
                }
                body {
                    nav {
                        a href="/apps" { "Apps" } " " a href="/apps/new" { "Add an app" } " " a href="/graph" { "Graph" } " " a href="/events" { "Events" } " " a href="/cluster" { "Cluster" }
                        @if let Some(chosen) = nav.switching() {
                            " " a href="/fleet" { "Fleet" }
                            // The cluster switcher: a plain form, so it works without JavaScript.
                            form.switcher method="get" action="/apps" {
                                label { "Cluster " select name="context" {
                                    @for context in &nav.contexts {
                                        option value=(context) selected[context == chosen] { (context) }
                                    }
                                } }
                                " " button type="submit" { "Switch" }
                            }
                        }
                        // Light, dark or the system's: a plain form too (the script applies it
                        // without a reload).
                        form.theme method="get" action="/theme" {
                            label { "Theme " select name="theme" {
                                @for theme in Theme::ALL {
                                    option value=(theme.word()) selected[theme == nav.theme] { (theme.word()) }
                                }
                            } }
                            " " button type="submit" { "Apply" }
                        }
                    }
                    main data-context=[nav.switching()] { (body) }
                }
            }
        }
        .into_string(),
    )
}

/// A listing page's title and the start of its filter form (`#filters`, a GET to `action` that
/// keeps the page's cluster): the page's own fields follow (`fields`), then its `limit` and the
/// Filter button.
pub(super) fn filter_form(nav: &Nav, title: &str, action: &str, limit: Option<&str>, fields: Markup) -> Markup {
    html! {
        h1 { (title) @if let Some(context) = nav.switching() { " in " (context) } }
        form #filters method="get" action=(action) {
            @if let Some(context) = nav.switching() { input type="hidden" name="context" value=(context); }
            (fields)
            @if let Some(limit) = limit { input type="hidden" name="limit" value=(limit); }
            " " button type="submit" { "Filter" }
        }
    }
}

/// One choice of a filter form: `any` (the empty value, no filter), then `options`, the one the
/// query `chosen` selected.
pub(super) fn filter_choice<'a>(
    label: &str,
    name: &str,
    any: &str,
    options: impl IntoIterator<Item = &'a str>,
    chosen: Option<&str>,
) -> Markup {
    html! {
        label { (label) " " select name=(name) {
            option value="" { (any) }
            @for option in options { option value=(option) selected[Some(option) == chosen] { (option) } }
        } }
        " "
    }
}

/// A refusal or failure, as a page.
fn error_page(status: StatusCode, message: &str, hint: Option<&str>) -> Response {
    let body = html! {
        h1 { "Error" }
        p.error { (message) }
        @if let Some(hint) = hint { p.hint { "hint: " (hint) } }
    };
    (status, layout(&Nav::default(), "Error", body)).into_response()
}

impl IntoResponse for UnknownContext {
    fn into_response(self) -> Response {
        let hint = format!("it follows {} (`kubectl gitops ui --context` names them)", self.followed.join(", "));
        let error = ApiError::new(
            StatusCode::NOT_FOUND,
            &format!("this server does not follow a context {:?}", self.context),
            Some(&hint),
        );
        if self.api { error.into_response() } else { failed(error) }
    }
}

pub(super) fn refused(status: StatusCode, message: &str, hint: &str) -> Response {
    error_page(status, message, Some(hint))
}

pub(super) fn failed(error: ApiError) -> Response {
    let (message, hint) = error.message();
    error_page(error.status(), message, hint)
}

pub(super) async fn root() -> Redirect {
    Redirect::to("/apps")
}

/// `GET /assets/{file}`: the stylesheet and the script, compiled into the binary.
pub(super) async fn asset(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "ui.css" => ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS).into_response(),
        "ui.js" => ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], JS).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
