//! Semver ranges as Flux reads them: source-controller parses a GitRepository's and an
//! OCIRepository's `ref.semver` and a chart's `version` with Masterminds/semver v3's
//! `NewConstraint`. The `semver` crate's `VersionReq` follows Cargo's grammar and refuses forms
//! Flux takes (`>=1.0.0 <2.0.0`, `1.0 - 2.0`, `1.2.3 || 2.x`, `v1.x`), so that grammar is
//! checked here, so that bad input stops before anything is cloned or pushed:
//!
//! ```text
//! range       = all-of ("||" all-of)*
//! all-of      = comparison ((spaces | "," spaces?) comparison)*  |  version spaces "-" spaces version
//! comparison  = operator? spaces? version
//! operator    = "!=" | ">=" | "=>" | "<=" | "=<" | "~>" | ">" | "<" | "=" | "~" | "^"
//! version     = "v"? part ("." part)? ("." part)? ("-" identifiers)? ("+" identifiers)?
//! part        = digits | "x" | "X" | "*"
//! ```

/// Longest first, so that `>=` is never read as `>` followed by `=…`.
const OPERATORS: [&str; 11] = ["!=", ">=", "=>", "<=", "=<", "~>", ">", "<", "=", "~", "^"];

/// Checks a range; the error says what is wrong and where, for the user.
pub fn check(range: &str) -> Result<(), String> {
    if range.trim().is_empty() {
        return Err("it is empty".into());
    }
    range.split("||").try_for_each(all_of)
}

/// Comparisons that must all hold: separated by spaces or commas, or one hyphen range.
fn all_of(text: &str) -> Result<(), String> {
    let mut rest = text.trim_start();
    if rest.is_empty() {
        return Err("one side of `||` is empty".into());
    }
    loop {
        let operator = OPERATORS.iter().find(|operator| rest.starts_with(**operator)).copied().unwrap_or_default();
        let (version, after) = version_token(rest[operator.len()..].trim_start());
        if version.is_empty() {
            return Err(match operator {
                "" => format!("expected a version or a comparison such as >=1.2.0 at {rest:?}"),
                operator => format!("{operator:?} must be followed by a version, not {:?}", &rest[operator.len()..]),
            });
        }
        check_version(version)?;
        rest = after;
        if operator.is_empty()
            && let Some(upper) = hyphen_range(rest)
        {
            let (version, after) = version_token(upper);
            check_version(version)?;
            rest = after;
        }
        let trimmed = rest.trim_start();
        if trimmed.is_empty() {
            return Ok(());
        }
        if let Some(after) = trimmed.strip_prefix(',') {
            rest = after.trim_start();
        } else if trimmed.len() < rest.len() {
            rest = trimmed;
        } else {
            return Err(format!("expected a space or a comma before {trimmed:?}"));
        }
    }
}

/// After the lower bound of `1.0 - 2.0`: the text of the upper bound (spaces around `-` are
/// required; `1.0-2.0` is one version with a prerelease).
fn hyphen_range(rest: &str) -> Option<&str> {
    let dash = rest.trim_start();
    let after = dash.strip_prefix('-')?;
    let upper = after.trim_start();
    (dash.len() < rest.len() && upper.len() < after.len()).then_some(upper)
}

/// The characters a version can be made of, up to the first that cannot be part of one.
fn version_token(text: &str) -> (&str, &str) {
    let end =
        text.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '*'))).unwrap_or(text.len());
    text.split_at(end)
}

fn check_version(token: &str) -> Result<(), String> {
    let refuse = |why: &str| Err(format!("{token:?} is not a version: {why}"));
    let bare = token.strip_prefix('v').unwrap_or(token);
    let (bare, build) = match bare.split_once('+') {
        Some((bare, build)) => (bare, Some(build)),
        None => (bare, None),
    };
    let (core, prerelease) = match bare.split_once('-') {
        Some((core, prerelease)) => (core, Some(prerelease)),
        None => (bare, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 {
        return refuse("at most three numbers, as in 1.2.3");
    }
    let is_part = |part: &&str| matches!(*part, "x" | "X" | "*") || (!part.is_empty() && part.parse::<u64>().is_ok());
    if !parts.iter().all(is_part) {
        return refuse("each of its parts is a number, or x or * for any, as in 1.2.3 or 1.x");
    }
    let identifiers_ok = |text: &str| {
        text.split('.').all(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    };
    if let Some(prerelease) = prerelease {
        // Masterminds refuses numeric prerelease identifiers with a leading zero (SemVer 2.0 §9).
        let leading_zero = |id: &str| id.len() > 1 && id.starts_with('0') && id.chars().all(|c| c.is_ascii_digit());
        if !identifiers_ok(prerelease) || prerelease.split('.').any(leading_zero) {
            return refuse("a prerelease is dot-separated letters, digits and '-', as in 1.2.3-rc.1");
        }
    }
    if build.is_some_and(|build| !identifiers_ok(build)) {
        return refuse("build metadata is dot-separated letters, digits and '-', as in 1.2.3+build.5");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    /// Forms from the Masterminds/semver README and Flux's docs, which Flux accepts.
    #[test]
    fn what_flux_accepts_passes() {
        let accepted = [
            "1.2.3",
            "v1.2.3",
            ">=1.0.0 <2.0.0",
            ">= 1.0.0, < 2.0.0",
            ">=1.0.0,<2.0.0",
            "1.2.3 || 2.x",
            ">1.0 <1.4 || >=2.0",
            "1.x",
            "1.2.X",
            "*",
            "~1.2",
            "~>1.2.3",
            "^1",
            "^0.2.3",
            "=1.2.3",
            "!=4.1",
            "=>1.0",
            "=<2",
            "1.2 - 1.4.5",
            "v1.0.0-rc.1 - 2",
            "1.2.3-beta.2+build.7",
            ">=1.0.0-0",
            "6.x",
            "  >=1.0.0  ",
        ];
        for range in accepted {
            assert_eq!(check(range), Ok(()), "{range:?}");
        }
    }

    #[test]
    fn garbage_is_refused_with_the_reason() {
        let refused = [
            ("~~x", r#""~" must be followed by a version, not "~x""#),
            (">>1", r#"">" must be followed by a version, not ">1""#),
            ("", "it is empty"),
            ("1.0 ||", "one side of `||` is empty"),
            (
                "latest",
                r#""latest" is not a version: each of its parts is a number, or x or * for any, as in 1.2.3 or 1.x"#,
            ),
            ("1.2.3.4", r#""1.2.3.4" is not a version: at most three numbers, as in 1.2.3"#),
            (">=1.0.0<2.0.0", r#"expected a space or a comma before "<2.0.0""#),
            ("1.0,", r#"expected a version or a comparison such as >=1.2.0 at """#),
            ("@1", r#"expected a version or a comparison such as >=1.2.0 at "@1""#),
            (
                "V1.0",
                r#""V1.0" is not a version: each of its parts is a number, or x or * for any, as in 1.2.3 or 1.x"#,
            ),
            (
                "1.0-",
                r#""1.0-" is not a version: a prerelease is dot-separated letters, digits and '-', as in 1.2.3-rc.1"#,
            ),
            (
                "1.0-rc.01",
                r#""1.0-rc.01" is not a version: a prerelease is dot-separated letters, digits and '-', as in 1.2.3-rc.1"#,
            ),
            (
                "1.0+",
                r#""1.0+" is not a version: build metadata is dot-separated letters, digits and '-', as in 1.2.3+build.5"#,
            ),
            (
                ">1.0 - 2.0",
                r#""-" is not a version: each of its parts is a number, or x or * for any, as in 1.2.3 or 1.x"#,
            ),
            (
                "1.0 -2.0",
                r#""-2.0" is not a version: each of its parts is a number, or x or * for any, as in 1.2.3 or 1.x"#,
            ),
            (
                "99999999999999999999",
                r#""99999999999999999999" is not a version: each of its parts is a number, or x or * for any, as in 1.2.3 or 1.x"#,
            ),
        ];
        for (range, reason) in refused {
            assert_eq!(check(range), Err(reason.to_string()), "{range:?}");
        }
    }
}
