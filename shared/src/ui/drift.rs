//! Drift in the UI (`kubectl gitops ui --drift`): every Kustomization's drift kept current in the
//! background as `drift -A --watch` keeps it (one clone per source and commit, then watches), a
//! badge per app on the Apps page and a panel on the App page, both refreshed live when it moves
//! (the `drift` event). Off by default: it clones and builds every app's source.

use maud::{Markup, html};
use tokio::sync::watch;

use crate::change::{RepoSettings, Target};
use crate::drift::{Drift, DriftState, DriftedObject, LiveDrift};
use crate::output::Printer;
use crate::readers::{AppKind, AppStatus};

/// Starts following the drift in the background; the channel gets each report.
pub(crate) fn follow(target: Target, repo: RepoSettings, printer: Printer) -> watch::Receiver<LiveDrift> {
    let (sender, receiver) = watch::channel(None);
    tokio::spawn(async move {
        let request = crate::drift::DriftRequest::everywhere(repo);
        crate::drift::publish(&request, &target, sender, &printer).await;
    });
    receiver
}

/// The drifted objects of an app: a Kustomization's own objects, or those of a HelmRelease's
/// release (wherever the Kustomization that applies it is); `Err` says why it is not checked.
fn of_app<'a>(drift: &'a Drift, app: &AppStatus) -> Option<Result<Vec<&'a DriftedObject>, String>> {
    let id = format!("{}/{}", app.namespace, app.name);
    match app.kind {
        AppKind::Helm => {
            let objects: Vec<&DriftedObject> = drift
                .kustomizations
                .iter()
                .flat_map(|kustomization| &kustomization.objects)
                .filter(|object| object.helm_release.as_deref() == Some(id.as_str()))
                .collect();
            Some(Ok(objects))
        }
        _ => {
            let kustomization = drift
                .kustomizations
                .iter()
                .find(|kustomization| kustomization.namespace == app.namespace && kustomization.name == app.name)?;
            Some(match &kustomization.error {
                Some(error) => Err(error.clone()),
                None => Ok(kustomization.objects.iter().filter(|object| object.helm_release.is_none()).collect()),
            })
        }
    }
}

/// The Apps page's cell: in sync, drifted (how many objects), not checked, or nothing while the
/// first report is being made (and without `--drift`).
pub(super) fn cell(panel: Option<&LiveDrift>, app: &AppStatus) -> Markup {
    let Some(Some(report)) = panel else { return html! {} };
    let Ok(drift) = report.as_ref() else { return html! { span.badge.unknown title="drift not checked" { "?" } } };
    match of_app(drift, app) {
        Some(Ok(objects)) if objects.is_empty() => html! { span.badge.ready { "✓ in sync" } },
        Some(Ok(objects)) => html! {
            span.badge.drifted title="objects differ from what Flux applied" { "≠ drifted (" (objects.len()) ")" }
        },
        Some(Err(why)) => html! { span.badge.unknown title=(why) { "? not checked" } },
        None => html! {},
    }
}

/// The App page's drift section (what `part=drift` swaps in): each drifted object, its fields
/// and who changed them.
pub(super) fn section(panel: Option<&LiveDrift>, app: &AppStatus) -> Markup {
    let body = match panel {
        None => html! { p.hint { "Drift is not followed: start the UI with " code { "--drift" } "." } },
        Some(None) => html! { p.hint { "Being checked: each source is fetched at the commit Flux applied…" } },
        Some(Some(report)) => match report.as_ref() {
            Err(why) => html! { p.warning { "Drift not available: " (why) } },
            Ok(drift) => match of_app(drift, app) {
                None => html! { p.hint { "Not checked: drift reads Kustomizations and their HelmReleases." } },
                Some(Err(why)) => html! { p.warning { "Not checked: " (why) } },
                Some(Ok(objects)) if objects.is_empty() => {
                    html! { p.ready { "✓ In sync: every object is as Flux last applied it." } }
                }
                Some(Ok(objects)) => table(&objects),
            },
        },
    };
    html! { h2 { "Drift" } (body) }
}

fn table(objects: &[&DriftedObject]) -> Markup {
    html! {
        table.drift {
            thead { tr { th { "OBJECT" } th { "STATE" } th { "FIELDS" } th { "CHANGED BY" } th { "SINCE" } } }
            tbody {
                @for object in objects {
                    tr class=(if object.state == DriftState::Unchecked { "unknown" } else { "drifted" }) {
                        td { (object.kind) "/" @if let Some(namespace) = &object.namespace { (namespace) "/" } (object.name) }
                        td.state { (match object.state {
                            DriftState::Changed => "≠ changed",
                            DriftState::Missing => "✗ deleted",
                            DriftState::Unchecked => "? not checked",
                        }) }
                        td { @for field in &object.fields { code { (field.path) } " " } (object.message.clone().unwrap_or_default()) }
                        td { (if object.managers.is_empty() { "-".to_string() } else { object.managers.join(", ") }) }
                        td { (object.since.clone().unwrap_or_default()) }
                    }
                }
            }
        }
    }
}
