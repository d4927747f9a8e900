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
}
