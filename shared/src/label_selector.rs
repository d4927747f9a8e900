//! Label selectors as kubectl takes them with `-l` and as the API server matches them:
//! requirements separated by commas, all of which must hold: `key`, `!key`, `key=value`,
//! `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`. Keys are label keys
//! (`[prefix/]name`), values label values.

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

/// A label selector's requirements (all must hold), or why it is not one.
pub fn parse(selector: &str) -> std::result::Result<Vec<Requirement>, String> {
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
pub fn matches(requirements: &[Requirement], labels: &serde_json::Value) -> bool {
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
    fn label_selectors_match_as_the_api_server_matches_them() {
        let labels = serde_json::json!({"tier": "web", "team": "a"});
        let matches = |selector: &str| matches(&parse(selector).unwrap(), &labels);
        for yes in ["tier=web", "tier==web,team", "tier in (api, web)", "team notin (b)", "!legacy", "legacy!=x"] {
            assert!(matches(yes), "{yes}");
        }
        for no in ["tier=api", "tier notin (web)", "legacy", "!team", "tier in (api),team=a"] {
            assert!(!matches(no), "{no}");
        }
    }
}
