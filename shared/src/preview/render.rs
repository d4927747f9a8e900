//! The screen of `diff`: a summary table per Kustomization (and a row per HelmRelease it makes),
//! the refusals and build failures, then the unified diff of every object that changes.

use super::{Action, Diff, ImageChange, KustomizationDiff, ObjectDiff, Withheld};
use crate::output::style::Style;
use crate::output::table::Table;

/// The whole screen.
pub fn text(diff: &Diff, headers: bool, style: Style) -> String {
    let mut text = format!("Comparing {} with the cluster ({})\n", diff.compared, diff.source);
    for fetched in &diff.fetched {
        text.push_str(&super::fetched_line(fetched));
        text.push('\n');
    }
    text.push('\n');
    let mut table =
        Table::new(["KUSTOMIZATION", "PATH", "ADDED", "CHANGED", "PRUNED", "REFUSED", "UNCHANGED", "IMAGES"]);
    for row in rows(diff) {
        table.push(row);
    }
    text.push_str(&table.render(headers));
    for kustomization in &diff.kustomizations {
        text.push_str(&problems(kustomization, style));
    }
    for kustomization in &diff.kustomizations {
        let releases = kustomization.helm_releases.iter().flat_map(|release| &release.objects);
        for object in kustomization.objects.iter().chain(releases).filter(|object| object.action != Action::Refused) {
            text.push('\n');
            for line in object.diff.as_deref().unwrap_or_default().lines() {
                let line = match line.chars().next() {
                    _ if line.starts_with("---") || line.starts_with("+++") => style.bold(line),
                    Some('+') => style.good(line),
                    Some('-') => style.bad(line),
                    Some('@') => style.dim(line),
                    _ => line.to_string(),
                };
                text.push_str(&line);
                text.push('\n');
            }
        }
    }
    let summary = diff.summary;
    let line = summary.counts();
    let line = if summary.refused + summary.failed > 0 { style.bad(&line) } else { style.bold(&line) };
    text.push_str(&format!("\n{line}\n"));
    text
}

/// The table's rows: a Kustomization, then each HelmRelease it makes.
pub(super) fn rows(diff: &Diff) -> Vec<[String; 8]> {
    let mut rows = Vec::new();
    for kustomization in &diff.kustomizations {
        let deleted = if kustomization.deleted { " (deleted)" } else { "" };
        let name = format!("{}/{}{deleted}", kustomization.namespace, kustomization.name);
        let failed = kustomization.error.is_some();
        rows.push(row(name, kustomization.path.clone(), &kustomization.objects, kustomization.unchanged, failed));
        for release in &kustomization.helm_releases {
            let name = format!("└ HelmRelease {}/{}", release.namespace, release.name);
            let chart = release.chart.clone().unwrap_or_else(|| "-".into());
            rows.push(row(name, chart, &release.objects, release.unchanged, release.error.is_some()));
        }
    }
    rows
}

/// One row of the table: the counts of `objects` by action, and the images that move.
fn row(name: String, path: String, objects: &[ObjectDiff], unchanged: usize, failed: bool) -> [String; 8] {
    let count = |action: Action| objects.iter().filter(|object| object.action == action).count().to_string();
    let images: Vec<ImageChange> = objects.iter().flat_map(|object| object.images.clone()).collect();
    [
        name,
        path,
        count(Action::Added),
        count(Action::Changed),
        count(Action::Pruned),
        count(Action::Refused),
        unchanged.to_string(),
        if failed { "-".to_string() } else { image_words(&images) },
    ]
}

/// A Kustomization's build failure, its HelmReleases' rendering failures, and the objects either
/// would have refused, each on its own lines.
pub(super) fn problems(kustomization: &KustomizationDiff, style: Style) -> String {
    let name = format!("{}/{}", kustomization.namespace, kustomization.name);
    let mut text = String::new();
    if let Some(error) = &kustomization.error {
        text.push_str(&format!("\n{} Kustomization {name} is not built: {error}\n", style.bad("error:")));
    }
    text.push_str(&withheld_lines(&format!("Kustomization {name}"), &kustomization.withheld, style));
    let by_kustomization = format!("Kustomization {name}");
    let mut refused: Vec<(&ObjectDiff, String)> =
        kustomization.objects.iter().map(|object| (object, by_kustomization.clone())).collect();
    for release in &kustomization.helm_releases {
        let by_release = format!("HelmRelease {}/{}", release.namespace, release.name);
        text.push_str(&withheld_lines(&by_release, &release.withheld, style));
        if let Some(error) = &release.error {
            text.push_str(&format!(
                "\n{} {by_release} ({by_kustomization}) is not rendered: {error}\n",
                style.bad("error:")
            ));
        }
        refused.extend(release.objects.iter().map(|object| (object, by_release.clone())));
    }
    for (object, by) in refused.into_iter().filter(|(object, _)| object.action == Action::Refused) {
        let namespace = object.namespace.as_deref().map(|namespace| format!("{namespace}/")).unwrap_or_default();
        text.push_str(&format!(
            "\n{} {}/{namespace}{} ({by}) would be refused: {}\n",
            style.bad("error:"),
            object.kind,
            object.name,
            object.message.as_deref().unwrap_or_default()
        ));
    }
    text
}

/// A line for each Secret `by` did not read: which, what it would have given, and why.
fn withheld_lines(by: &str, withheld: &[Withheld], style: Style) -> String {
    let mut text = String::new();
    for Withheld { secret, keys, reason } in withheld {
        let gave = match keys.as_slice() {
            [] => String::new(),
            keys => format!(" (it would give {}: shown as WITHHELD(…))", keys.join(", ")),
        };
        text.push_str(&format!("\n{} {by}: Secret {secret} is not read{gave}: {reason}\n", style.warn("withheld:")));
    }
    text
}

/// `repo:v1 → repo:v2` for an image whose tag or digest moves, `+image` for one started and
/// `-image` for one stopped; `-` for none.
fn image_words(images: &[ImageChange]) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut started: Vec<&String> = images.iter().filter_map(|change| change.to.as_ref()).collect();
    for stopped in images.iter().filter_map(|change| change.from.as_ref()) {
        match started.iter().position(|to| repository(to) == repository(stopped)) {
            Some(at) => words.push(format!("{stopped} → {}", started.remove(at))),
            None => words.push(format!("-{stopped}")),
        }
    }
    words.extend(started.into_iter().map(|to| format!("+{to}")));
    if words.is_empty() { "-".to_string() } else { words.join(", ") }
}

/// An image without its tag or digest: `ghcr.io/acme/web` of `ghcr.io/acme/web:1.0` (a
/// registry's port is not a tag).
fn repository(image: &str) -> &str {
    let name = image.split('@').next().unwrap_or(image);
    match name.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(from: Option<&str>, to: Option<&str>) -> ImageChange {
        ImageChange { from: from.map(String::from), to: to.map(String::from) }
    }

    #[test]
    fn an_image_that_moves_is_one_arrow_and_the_others_are_signed() {
        let images = [
            change(Some("ghcr.io/acme/web:1.0"), None),
            change(Some("redis:7"), None),
            change(None, Some("ghcr.io/acme/web:1.1")),
            change(None, Some("localhost:5000/side@sha256:ab")),
        ];
        assert_eq!(
            image_words(&images),
            "ghcr.io/acme/web:1.0 → ghcr.io/acme/web:1.1, -redis:7, +localhost:5000/side@sha256:ab"
        );
        assert_eq!(image_words(&[]), "-");
    }
}
