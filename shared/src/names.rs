//! The names and paths users give on the command line, checked before any I/O: DNS-1123 labels
//! (apps, clusters, namespaces), repo-relative paths, and a kube context turned into a name.

use std::path::Path;

use crate::error::{Error, Result};

/// Rejects absolute paths and paths that leave the repo; strips `./` and trailing `/`.
pub fn normalize_path(path: &str) -> Result<String> {
    let trimmed = path.trim().trim_start_matches("./").trim_end_matches('/');
    let bad = trimmed.is_empty()
        || Path::new(trimmed).is_absolute()
        || trimmed.split('/').any(|part| part == ".." || part == "." || part.is_empty());
    if bad {
        return Err(Error::usage(
            format!("--path {path:?} must be a relative directory inside the repo"),
            "use a path like clusters/dev (no leading /, no ..)",
        ));
    }
    Ok(trimmed.to_string())
}

/// Lower-cases a kube context name into a DNS-1123 label: `arn:aws:eks:…/prod` → `prod`-like names.
pub fn sanitize_name(context: &str) -> String {
    let last = context.rsplit(['/', ':', '@']).next().unwrap_or(context);
    let mut name: String =
        last.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    name = name.trim_matches('-').chars().take(63).collect::<String>().trim_end_matches('-').to_string();
    if name.is_empty() { "default".to_string() } else { name }
}

/// The commit a full hash or a Flux git revision names (`<ref>@sha1:<hash>`, `sha1:<hash>`), in
/// lower case; `None` for anything else (a short hash names nothing for sure).
pub fn full_commit(text: &str) -> Option<String> {
    let hash = text.rsplit_once("sha1:").map_or(text, |(_, hash)| hash);
    (hash.len() == 40 && hash.chars().all(|c| c.is_ascii_hexdigit())).then(|| hash.to_ascii_lowercase())
}

/// Checks a DNS-1123 label.
pub fn validate_name(name: &str, flag: &str) -> Result<String> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if valid {
        Ok(name.to_string())
    } else {
        Err(Error::usage(
            format!("{flag} {name:?} is not a valid name"),
            "use lower-case letters, digits and '-', at most 63 characters, starting and ending with a letter or digit",
        ))
    }
}

/// Checks a forge path of `segments` parts at most (`NAME`, `OWNER/NAME`, a GitLab group path),
/// `shape` as the hint names it: letters, digits, '-', '_' and '.', and no part of only dots, which
/// a URL or a clone would read as this directory or its parent rather than a repository.
pub(crate) fn validate_repo_path(path: &str, what: &str, shape: &str, segments: usize) -> Result<()> {
    let valid = |part: &str| {
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !path.split('/').all(valid) || path.split('/').count() > segments {
        return Err(Error::usage(
            format!("{path:?} is not {what}"),
            format!("give {shape}: letters, digits, '-', '_' and '.'"),
        ));
    }
    if let Some(dots) = path.split('/').find(|part| part.chars().all(|c| c == '.')) {
        return Err(Error::usage(
            format!("{path:?} is not {what}: {dots:?} names a directory, not a repository"),
            format!("give {shape}; a name needs a letter, digit, '-' or '_'"),
        ));
    }
    Ok(())
}

/// A branch or tag name git accepts (`refs/heads/<branch>`, `refs/tags/<tag>`); Flux could
/// never check out another.
pub(crate) fn validate_git_ref(name: &str, flag: &str, namespace: &str) -> Result<()> {
    if !name.starts_with('-') && git2::Reference::is_valid_name(&format!("refs/{namespace}/{name}")) {
        return Ok(());
    }
    Err(Error::usage(
        format!("{flag} {name:?} is not a valid git {} name", if namespace == "tags" { "tag" } else { "branch" }),
        "git names have no spaces, `..`, `~`, `^`, `:`, `?`, `*`, `[` or `\\`, and do not start with '-'",
    ))
}

/// A path inside a source, as Flux wants it: `./dir`, never leaving the source.
pub(crate) fn source_path(path: Option<&str>, flag: &str) -> Result<String> {
    let Some(path) = path else {
        return Ok("./".to_string());
    };
    let trimmed = path.trim().trim_start_matches("./").trim_end_matches('/');
    if trimmed.is_empty() || trimmed == "." {
        return Ok("./".to_string());
    }
    if Path::new(trimmed).is_absolute() || trimmed.split('/').any(|part| part == ".." || part.is_empty()) {
        return Err(Error::usage(
            format!("{flag} {path:?} leaves the source"),
            format!("give {flag} relative to the repository root, without `..`, e.g. ./deploy"),
        ));
    }
    Ok(format!("./{trimmed}"))
}

/// Checks a label selector as kubectl takes one with `-l`: requirements separated by commas, all
/// of which must hold: `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
/// `key notin (a,b)`. Keys are label keys (`[prefix/]name`), values label values.
pub fn validate_label_selector(selector: &str, flag: &str) -> Result<()> {
    parse_label_selector(selector).map(drop).map_err(|why| {
        Error::usage(
            format!("{flag} {selector:?} is not a label selector: {why}"),
            "e.g. -l team=a, -l 'tier in (web,api)', -l '!legacy' (comma-separated, all must hold)",
        )
    })
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key`: the label is there.
    Exists(String),
    /// `!key`: the label is not there.
    Absent(String),
    /// `key=value`, `key in (a,b)`: the label is there with one of the values.
    In(String, Vec<String>),
    /// `key!=value`, `key notin (a,b)`: the label is not there, or has none of the values.
    NotIn(String, Vec<String>),
}

/// How a parsed key and its values make a [`Requirement`].
type MakeRequirement = fn(String, Vec<String>) -> Requirement;

/// A label selector's requirements (all must hold), or why it is not one (as
/// [`validate_label_selector`] takes it).
pub fn parse_label_selector(selector: &str) -> std::result::Result<Vec<Requirement>, String> {
    if selector.trim().is_empty() {
        return Err("it is empty".into());
    }
    let mut requirements = Vec::new();
    for requirement in split_requirements(selector) {
        let requirement = requirement.trim();
        let owned = |values: Vec<&str>| values.into_iter().map(String::from).collect::<Vec<_>>();
        let (key, values, parsed): (&str, Vec<&str>, MakeRequirement) = if let Some(key) = requirement.strip_prefix('!')
        {
            (key.trim(), Vec::new(), |key, _| Requirement::Absent(key))
        } else if let Some((key, value)) = requirement.split_once("!=") {
            (key.trim(), vec![value.trim()], Requirement::NotIn)
        } else if let Some((key, value)) = requirement.split_once("==").or_else(|| requirement.split_once('=')) {
            (key.trim(), vec![value.trim()], Requirement::In)
        } else if let Some((key, negated, rest)) = set_operation(requirement) {
            let inner = rest
                .trim()
                .strip_prefix('(')
                .and_then(|rest| rest.strip_suffix(')'))
                .ok_or_else(|| format!("{requirement:?}: the values of in and notin go in parentheses"))?;
            let parsed = if negated { Requirement::NotIn } else { Requirement::In };
            (key, inner.split(',').map(str::trim).collect(), parsed)
        } else {
            (requirement, Vec::new(), |key, _| Requirement::Exists(key))
        };
        if !is_label_key(key) {
            return Err(format!("{key:?} is not a label key"));
        }
        if let Some(value) = values.iter().find(|value| !is_label_value(value)) {
            return Err(format!("{value:?} is not a label value"));
        }
        requirements.push(parsed(key.to_string(), owned(values)));
    }
    Ok(requirements)
}

/// Whether `labels` (a map of strings, as an object's labels or annotations) meet every one of
/// `requirements`, as the API server matches a label selector.
pub fn selector_matches(requirements: &[Requirement], labels: &serde_json::Value) -> bool {
    let value = |key: &str| labels.get(key).and_then(serde_json::Value::as_str);
    requirements.iter().all(|requirement| match requirement {
        Requirement::Exists(key) => value(key).is_some(),
        Requirement::Absent(key) => value(key).is_none(),
        Requirement::In(key, values) => value(key).is_some_and(|found| values.iter().any(|value| value == found)),
        Requirement::NotIn(key, values) => value(key).is_none_or(|found| values.iter().all(|value| value != found)),
    })
}

/// The requirements of a selector: split at commas outside parentheses.
fn split_requirements(selector: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0usize);
    for (at, character) in selector.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&selector[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&selector[start..]);
    parts
}

/// `key in (…)` or `key notin (…)`: the key, whether it is `notin`, and what follows the operator.
fn set_operation(requirement: &str) -> Option<(&str, bool, &str)> {
    let (key, rest) = requirement.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    match rest.strip_prefix("notin") {
        Some(rest) => Some((key, true, rest)),
        None => rest.strip_prefix("in").map(|rest| (key, false, rest)),
    }
}

/// A label key: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters.
fn is_label_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|prefix| {
        !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            })
    });
    prefix_ok && !name.is_empty() && is_label_value(name)
}

/// A label value: empty, or at most 63 alphanumerics, `-`, `_` and `.`, starting and ending with an
/// alphanumeric.
fn is_label_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_inside_the_repo() {
        assert_eq!(normalize_path("./clusters/dev/").unwrap(), "clusters/dev");
        for bad in ["../escape", "/etc", "clusters/../../x", "", "a//b"] {
            assert!(normalize_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn repository_paths_are_names_never_dots() {
        assert!(validate_repo_path("acme/app.v2", "a repository name", "NAME", 2).is_ok());
        assert!(validate_repo_path("group/sub/app", "an owner", "OWNER", usize::MAX).is_ok());
        for bad in [".", "..", "...", "acme/..", "../app", "acme/.", "", "a//b", "a b", "a/b/c"] {
            assert!(validate_repo_path(bad, "a repository name", "NAME", 2).is_err(), "{bad}");
        }
    }

    #[test]
    fn context_names_become_dns_labels() {
        assert_eq!(sanitize_name("kind-Dev_Cluster"), "kind-dev-cluster");
        assert_eq!(sanitize_name("arn:aws:eks:eu-west-1:123:cluster/prod"), "prod");
        assert_eq!(sanitize_name("admin@testenv"), "testenv");
        assert_eq!(sanitize_name("---"), "default");
        assert!(validate_name("Dev", "--cluster-name").is_err());
        assert_eq!(validate_name("dev-1", "--cluster-name").unwrap(), "dev-1");
    }

    #[test]
    fn label_selectors_match_as_the_api_server_matches_them() {
        let labels = serde_json::json!({"tier": "web", "team": "a"});
        let matches = |selector: &str| selector_matches(&parse_label_selector(selector).unwrap(), &labels);
        for yes in ["tier=web", "tier==web,team", "tier in (api, web)", "team notin (b)", "!legacy", "legacy!=x"] {
            assert!(matches(yes), "{yes}");
        }
        for no in ["tier=api", "tier notin (web)", "legacy", "!team", "tier in (api),team=a"] {
            assert!(!matches(no), "{no}");
        }
    }

    #[test]
    fn label_selectors_are_checked_as_kubectl_checks_them() {
        for good in [
            "team=a",
            "team==a,tier!=web",
            "app.kubernetes.io/name=web",
            "!legacy",
            "legacy",
            "tier in (web, api)",
            "tier notin (web),team=a",
            "team=",
        ] {
            assert!(validate_label_selector(good, "-l").is_ok(), "{good}");
        }
        for bad in ["", "team=a b", "Team/x=y", "-team=a", "tier in web", "team=a,", "a=b=c"] {
            let error = validate_label_selector(bad, "-l").unwrap_err();
            assert!(error.to_string().starts_with("-l "), "{bad}: {error}");
            assert!(error.hint().is_some(), "{bad}");
        }
    }
}
