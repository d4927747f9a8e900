//! The preview as a pull request comment, in the markdown GitHub, GitLab and Gitea share: a
//! marker the comment is found again by, the counts, the table of `diff`'s screen, the refusals
//! and failures, then one collapsed `<details>` per Kustomization and per HelmRelease with its
//! objects' unified diffs. Cut to the forge's limit: whole sections are left out from the end,
//! and the comment says how many and where the full output is.

use super::render;
use super::{Diff, ObjectDiff};
use crate::output::style::Style;

/// The first line of our comment: how `pr comment` finds it again to update it in place.
pub const MARKER: &str = "<!-- kubectl-gitops diff -->";

/// Room kept for the closing line of a cut comment.
const FOOTER_ROOM: usize = 600;

/// The comment for `diff`, at most `limit` characters; `full_output` is where the whole of it can
/// be read (a CI job's log), and `command` what prints it.
pub fn comment(diff: &Diff, limit: usize, full_output: Option<&str>, command: &str) -> String {
    let mut head = format!("{MARKER}\n### kubectl gitops diff: {}\n\n", diff.summary.counts());
    head.push_str(&format!("Comparing {} with the cluster ({}).\n", cell(&diff.compared), cell(&diff.source)));
    for fetched in &diff.fetched {
        head.push_str(&format!("{}.\n", cell(&super::fetched_line(fetched))));
    }
    head.push('\n');
    head.push_str("| Kustomization | Path | Added | Changed | Pruned | Refused | Unchanged | Images |\n");
    head.push_str("|---|---|--:|--:|--:|--:|--:|---|\n");
    for row in render::rows(diff) {
        head.push_str(&format!("| {} |\n", row.iter().map(|text| cell(text)).collect::<Vec<_>>().join(" | ")));
    }
    let problems: String =
        diff.kustomizations.iter().map(|kustomization| render::problems(kustomization, Style::plain())).collect();
    for line in problems.lines().filter(|line| !line.is_empty()) {
        head.push_str(&format!("\n> {}\n", line.replace('<', "&lt;")));
    }
    let mut sections = Vec::new();
    for kustomization in &diff.kustomizations {
        let name = format!("Kustomization {}/{}", kustomization.namespace, kustomization.name);
        sections.extend(section(&name, &kustomization.objects));
        for release in &kustomization.helm_releases {
            let name = format!("HelmRelease {}/{}", release.namespace, release.name);
            sections.extend(section(&name, &release.objects));
        }
    }
    let mut text = head;
    let mut left_out = 0;
    for section in &sections {
        if left_out == 0 && count(&text) + count(section) + FOOTER_ROOM <= limit {
            text.push_str(section);
        } else {
            left_out += 1;
        }
    }
    if left_out > 0 {
        let whole = match full_output {
            Some(url) => format!("the whole preview is in [the job's output]({url})"),
            None => format!("`{command}` prints the whole preview"),
        };
        text.push_str(&format!(
            "\n_{left_out} of {} sections left out: the comment is cut at this forge's limit of {limit} characters; {whole}._\n",
            sections.len()
        ));
    }
    // A table too long for the limit by itself (thousands of Kustomizations) is cut too.
    if count(&text) > limit {
        let cut: String = text.chars().take(limit.saturating_sub(FOOTER_ROOM)).collect();
        text = format!(
            "{cut}\n\n_Cut at this forge's limit of {limit} characters; `{command}` prints the whole preview._\n"
        );
    }
    text
}

fn count(text: &str) -> usize {
    text.chars().count()
}

/// A table cell: one line, its `|` escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A collapsed section with the diffs of the objects that change, or nothing when none does.
fn section(name: &str, objects: &[ObjectDiff]) -> Option<String> {
    let diffs: Vec<&str> = objects.iter().filter_map(|object| object.diff.as_deref()).collect();
    if diffs.is_empty() {
        return None;
    }
    let body = diffs.join("\n");
    // A fence longer than any run of backticks in the diff, so that none ends it early.
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let count_of = |action| objects.iter().filter(|object| object.action == action).count();
    let words = [
        (count_of(super::Action::Added), "added"),
        (count_of(super::Action::Changed), "changed"),
        (count_of(super::Action::Pruned), "pruned"),
    ]
    .iter()
    .filter(|(count, _)| *count > 0)
    .map(|(count, word)| format!("{count} {word}"))
    .collect::<Vec<_>>()
    .join(", ");
    Some(format!(
        "\n<details><summary>{}: {words}</summary>\n\n{fence}diff\n{}\n{fence}\n\n</details>\n",
        name.replace('<', "&lt;"),
        body.trim_end()
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{Action, DiffSummary, KustomizationDiff};
    use super::*;

    fn object(name: &str, diff: &str) -> ObjectDiff {
        ObjectDiff {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("default".into()),
            name: name.into(),
            action: Action::Changed,
            diff: Some(diff.into()),
            images: Vec::new(),
            message: None,
            compared_here: false,
        }
    }

    fn diff_of(objects: Vec<ObjectDiff>) -> Diff {
        let kustomizations = vec![KustomizationDiff {
            namespace: "flux-system".into(),
            name: "web|x".into(),
            source: "GitRepository/flux-system/flux-system".into(),
            path: "./apps/web".into(),
            objects,
            unchanged: 1,
            compared_here: 0,
            error: None,
            deleted: false,
            helm_releases: Vec::new(),
            withheld: Vec::new(),
        }];
        Diff {
            source: "GitRepository/flux-system/flux-system".into(),
            compared: "pull request #3".into(),
            fetched: Vec::new(),
            summary: DiffSummary { changed: 1, unchanged: 1, ..DiffSummary::default() },
            kustomizations,
        }
    }

    #[test]
    fn a_comment_has_the_marker_the_counts_a_table_and_a_collapsed_diff() {
        let text = comment(&diff_of(vec![object("a", "--- live/a\n+++ after/a\n-x\n+y\n")]), 65_536, None, "diff");
        assert!(text.starts_with(&format!("{MARKER}\n### kubectl gitops diff: 0 added, 1 changed, 0 pruned")));
        assert!(text.contains("| flux-system/web\\|x | ./apps/web | 0 | 1 | 0 | 0 | 1 | - |\n"), "{text}");
        assert!(
            text.contains(
                "<details><summary>Kustomization flux-system/web|x: 1 changed</summary>\n\n```diff\n--- live/a\n"
            ),
            "{text}"
        );
        assert!(!text.contains("left out"), "{text}");
    }

    #[test]
    fn a_diff_with_backticks_gets_a_longer_fence() {
        let text = comment(&diff_of(vec![object("a", "+ ```\n+ ````x\n")]), 65_536, None, "diff");
        assert!(text.contains("\n`````diff\n"), "{text}");
    }

    #[test]
    fn a_comment_over_the_limit_leaves_out_whole_sections_and_says_where_the_rest_is() {
        let big = "+".repeat(3_000);
        let objects = vec![object("a", &big)];
        let mut diff = diff_of(objects);
        for name in ["b", "c", "d"] {
            let mut more = diff.kustomizations[0].clone();
            more.name = name.into();
            diff.kustomizations.push(more);
        }
        let text = comment(&diff, 8_000, Some("https://ci.example/job/1"), "kubectl gitops diff --pull-request 3");
        assert!(text.chars().count() <= 8_000, "{}", text.len());
        assert_eq!(text.matches("<details>").count(), 2, "{text}");
        assert!(
            text.ends_with("_2 of 4 sections left out: the comment is cut at this forge's limit of 8000 characters; the whole preview is in [the job's output](https://ci.example/job/1)._\n"),
            "{text}"
        );
        let tiny = comment(&diff, 1_000, None, "kubectl gitops diff --pull-request 3");
        assert!(tiny.chars().count() <= 1_000, "{tiny}");
        assert!(tiny.contains("`kubectl gitops diff --pull-request 3` prints the whole preview"), "{tiny}");
    }
}
