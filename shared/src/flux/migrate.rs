//! Rewriting Flux manifests to the API versions a Flux release serves, the way `flux migrate -f`
//! does: line by line, so that comments, key order and quoting stay exactly as the user wrote
//! them. Each document's `apiVersion` moves to the kind's latest version
//! ([`super::release::latest_version`]); fields the latest version dropped are removed when they
//! did nothing any more, and reported as blockers when they need a person to rewrite them.

use super::release;

/// One line the migration changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// 1-based line number in the file before the change.
    pub line: usize,
    /// The object's kind and name, e.g. `Alert/on-call`.
    pub object: String,
    /// What changed, e.g. `notification.toolkit.fluxcd.io/v1beta2 -> v1beta3`.
    pub what: String,
}

/// Something the migration cannot rewrite on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    /// 1-based line number.
    pub line: usize,
    /// The object's kind and name.
    pub object: String,
    /// Why, and what to do.
    pub why: String,
}

/// A file after migration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Migrated {
    /// The new text (the same text when nothing changed).
    pub text: String,
    /// The lines changed.
    pub rewrites: Vec<Rewrite>,
    /// Objects at an old API version left alone because kubectl-gitops did not generate them
    /// (`--all-manifests` migrates them too), with the version they need.
    pub not_ours: Vec<Rewrite>,
    /// What needs a person.
    pub blockers: Vec<Blocker>,
}

/// Fields a kind's latest API version no longer has: `(group, kind, field under spec, whether
/// it can simply go)`. Fields that did nothing by then go; the others need rewriting by hand.
const DROPPED_FIELDS: [(&str, &str, &str, Dropped); 6] = [
    ("kustomize.toolkit.fluxcd.io", "Kustomization", "validation", Dropped::Remove),
    ("kustomize.toolkit.fluxcd.io", "Kustomization", "patchesStrategicMerge", Dropped::Rewrite("spec.patches")),
    ("kustomize.toolkit.fluxcd.io", "Kustomization", "patchesJson6902", Dropped::Rewrite("spec.patches")),
    ("source.toolkit.fluxcd.io", "GitRepository", "gitImplementation", Dropped::Remove),
    ("source.toolkit.fluxcd.io", "GitRepository", "accessFrom", Dropped::Rewrite("a NetworkPolicy")),
    ("helm.toolkit.fluxcd.io", "HelmRelease", "valuesFile", Dropped::Rewrite("spec.chart.spec.valuesFiles")),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dropped {
    /// The field had no effect any more: the line goes.
    Remove,
    /// The field needs rewriting as this.
    Rewrite(&'static str),
}

/// The label every object kubectl-gitops generates carries.
fn is_ours(document: &[&str]) -> bool {
    let managed = format!("{}: {}", crate::record::MANAGED_BY_LABEL, crate::record::MANAGED_BY_VALUE);
    let component = format!("{}:", super::bootstrap::COMPONENT_LABEL);
    document.iter().any(|line| {
        let line = line.trim();
        line == managed || line.starts_with(&component)
    })
}

/// Migrates every Flux document of `text`. `all`: every Flux object, else only those
/// kubectl-gitops generated (the others are reported in [`Migrated::not_ours`]).
pub fn migrate(text: &str, all: bool) -> Migrated {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut migrated = Migrated::default();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut start = 0;
    while start < lines.len() {
        let end = (start + 1..lines.len()).find(|&i| lines[i].starts_with("---")).unwrap_or(lines.len());
        let (first, document) = if lines[start].starts_with("---") {
            out.push(lines[start].to_string());
            (start + 1, &lines[start + 1..end])
        } else {
            (start, &lines[start..end])
        };
        out.extend(migrate_document(document, first, all || is_ours(document), &mut migrated));
        start = end;
    }
    migrated.text = out.join("\n");
    migrated
}

/// The value of a top-level `key:` line, without quotes or a trailing comment.
fn top_level<'a>(document: &[&'a str], key: &str) -> Option<(usize, &'a str)> {
    document.iter().enumerate().find_map(|(index, line)| {
        let value = line.strip_prefix(key)?.strip_prefix(':')?;
        let value = value.split(" #").next().unwrap_or_default().trim().trim_matches(['"', '\'']);
        Some((index, value))
    })
}

/// The document's `metadata.name`, for messages.
fn name_of(document: &[&str]) -> String {
    let Some((metadata, _)) = top_level(document, "metadata") else { return String::new() };
    document[metadata + 1..]
        .iter()
        .take_while(|line| line.starts_with(' ') || line.is_empty())
        .find_map(|line| {
            let rest = line.trim_start();
            (line.len() - rest.len() <= 2).then_some(())?;
            Some(rest.strip_prefix("name:")?.trim().trim_matches(['"', '\'']).to_string())
        })
        .unwrap_or_default()
}

fn migrate_document(document: &[&str], first: usize, ours: bool, migrated: &mut Migrated) -> Vec<String> {
    let mut out: Vec<String> = document.iter().map(|line| line.to_string()).collect();
    let (Some((version_index, api_version)), Some((_, kind))) =
        (top_level(document, "apiVersion"), top_level(document, "kind"))
    else {
        return out;
    };
    let Some((group, version)) = api_version.split_once('/') else { return out };
    let Some(latest) = release::latest_version(group, kind) else { return out };
    if latest == version {
        return out;
    }
    let object = format!("{kind}/{}", name_of(document));
    let rewrite = Rewrite {
        line: first + version_index + 1,
        object: object.clone(),
        what: format!("{group}/{version} -> {latest}"),
    };
    if !ours {
        migrated.not_ours.push(rewrite);
        return out;
    }
    out[version_index] = document[version_index].replacen(&format!("/{version}"), &format!("/{latest}"), 1);
    migrated.rewrites.push(rewrite);
    let mut removed = Vec::new();
    for (index, line) in document.iter().enumerate() {
        let rest = line.trim_start();
        let indent = line.len() - rest.len();
        let Some(field) = rest.split(':').next().filter(|_| rest.contains(':')) else { continue };
        let dropped = DROPPED_FIELDS.iter().find(|(g, k, f, _)| *g == group && *k == kind && *f == field);
        let Some((_, _, _, how)) = dropped else { continue };
        // Only keys of spec (or, for valuesFile, of the chart template's spec).
        if indent == 0 || !within_spec(document, index, indent) {
            continue;
        }
        let line_number = first + index + 1;
        match how {
            Dropped::Remove if !has_children(document, index, indent) => {
                removed.push(index);
                migrated.rewrites.push(Rewrite {
                    line: line_number,
                    object: object.clone(),
                    what: format!("removed {field} (not in {group}/{latest}, where it had no effect)"),
                });
            }
            Dropped::Remove | Dropped::Rewrite(_) => {
                let instead = match how {
                    Dropped::Rewrite(instead) => instead,
                    Dropped::Remove => "nothing",
                };
                migrated.blockers.push(Blocker {
                    line: line_number,
                    object: object.clone(),
                    why: format!("{field} is not in {group}/{latest}: rewrite it as {instead}"),
                });
            }
        }
    }
    for index in removed.into_iter().rev() {
        out.remove(index);
    }
    out
}

/// Whether the key at `index` (indented by `indent`) is inside the top-level `spec:` block.
fn within_spec(document: &[&str], index: usize, indent: usize) -> bool {
    let parent = document[..index].iter().rev().find(|line| {
        let rest = line.trim_start();
        !rest.is_empty() && !rest.starts_with('#') && line.len() - rest.len() < indent
    });
    let top = document[..index].iter().rev().find(|line| !line.starts_with(' ') && !line.trim().is_empty());
    parent.is_some() && top.is_some_and(|line| line.starts_with("spec:"))
}

/// Whether the key at `index` has a nested block (a mapping or a list under it).
fn has_children(document: &[&str], index: usize, indent: usize) -> bool {
    let value = document[index].split_once(':').map(|(_, value)| value.trim()).unwrap_or_default();
    if !value.is_empty() && !value.starts_with('#') {
        return false;
    }
    document[index + 1..].iter().find(|line| !line.trim().is_empty()).is_some_and(|line| {
        let rest = line.trim_start();
        line.len() - rest.len() > indent || (line.len() - rest.len() == indent && rest.starts_with("- "))
    })
}

#[cfg(test)]
mod tests;
