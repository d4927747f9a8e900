//! Values read from a Kubernetes Secret to build or render something (a Kustomization's
//! `postBuild.substituteFrom`, a HelmRelease's `valuesFrom`), held so that nothing shown of that
//! work can carry them.
//!
//! A value is read into a [`SecretString`] (no `Display`, a redacted `Debug`, no `Serialize`) and
//! recorded in the [`SecretValues`] of the run; the one place that needs the text (the file the
//! flux CLI or helm reads) calls `expose_secret` explicitly. Whatever the run shows (a preview,
//! a drift report, an error) passes [`SecretValues::mask`] first: the value may land anywhere a
//! build puts it (a ConfigMap, an env var, an annotation, an API server's message), so it is
//! masked in every text, not only in objects of kind Secret.

use std::sync::Mutex;

use secrecy::{ExposeSecret, SecretString};

/// Values shorter than this are masked only where they are a whole YAML value (`key: abc`), not
/// inside other text: a one-character value would otherwise hide every `1` of a diff.
pub const SHORTEST_MASKED_ANYWHERE: usize = 4;

/// Every Secret value one run has read, with the Secret and key it came from.
#[derive(Default)]
pub struct SecretValues {
    read: Mutex<Vec<Read>>,
}

/// One value read, and where from.
struct Read {
    /// `Secret NAMESPACE/NAME, key KEY`: what the mask says instead of the value.
    from: String,
    value: SecretString,
}

impl SecretValues {
    /// Records `value`, read from `key` of the Secret `namespace/name`, and hands it back wrapped.
    pub fn record(&self, namespace: &str, name: &str, key: &str, value: String) -> SecretString {
        let value = SecretString::from(value);
        let from = format!("{namespace}/{name}:{key}");
        self.lock().push(Read { from, value: value.clone() });
        value
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// `text` with every value read replaced by `[secret NAMESPACE/NAME:KEY]`: the value itself,
    /// each of its lines (a multi-line value spans lines of a diff), and its JSON-escaped form.
    pub fn mask(&self, text: &str) -> String {
        let read = self.lock();
        if read.is_empty() {
            return text.to_string();
        }
        let mut fragments: Vec<(String, &str)> = Vec::new();
        let mut whole_values: Vec<(&str, &str)> = Vec::new();
        for Read { from, value } in read.iter() {
            let value = value.expose_secret();
            let escaped = serde_json::to_string(value).unwrap_or_default();
            let escaped = escaped.trim_matches('"').to_string();
            let lines = value.lines().map(str::trim).map(String::from);
            for fragment in [value.to_string(), escaped].into_iter().chain(lines) {
                if fragment.chars().count() >= SHORTEST_MASKED_ANYWHERE {
                    fragments.push((fragment, from));
                } else if !fragment.trim().is_empty() && fragment == value {
                    whole_values.push((value, from));
                }
            }
        }
        // The longest first, so that a value that contains another is masked whole.
        fragments.sort_by_key(|(fragment, _)| std::cmp::Reverse(fragment.len()));
        let mut masked = text.to_string();
        for (fragment, from) in &fragments {
            if masked.contains(fragment.as_str()) {
                masked = masked.replace(fragment.as_str(), &placeholder(from));
            }
        }
        if whole_values.is_empty() {
            return masked;
        }
        let mut lines: Vec<String> = masked.split('\n').map(String::from).collect();
        for line in &mut lines {
            for (value, from) in &whole_values {
                if let Some(kept) = without_whole_value(line, value) {
                    *line = format!("{kept}{}", placeholder(from));
                }
            }
        }
        lines.join("\n")
    }

    /// `error` as it would be shown, masked: the same error when it carries no value read, else
    /// its words with the values masked.
    pub fn masked_error(&self, error: crate::error::Error) -> crate::error::Error {
        let words = error.to_string();
        let masked = self.mask(&words);
        if masked == words {
            return error;
        }
        crate::error::Error::Negative { message: masked, hint: None }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Read>> {
        // A panic elsewhere while the lock was held leaves the values as they were: still usable.
        self.read.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn placeholder(from: &str) -> String {
    format!("[secret {from}]")
}

/// The start of `line` up to its value, when the line ends in `: VALUE`, `: "VALUE"`, `: 'VALUE'`
/// or `=VALUE` (a YAML value, an env line), with `value` exactly.
fn without_whole_value<'a>(line: &'a str, value: &str) -> Option<&'a str> {
    let trimmed = line.trim_end();
    for quote in ["", "\"", "'"] {
        let ending = format!("{quote}{value}{quote}");
        for separator in [": ", "="] {
            if let Some(kept) = trimmed.strip_suffix(&ending)
                && kept.ends_with(separator)
            {
                return Some(kept);
            }
        }
    }
    None
}

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretValues({} read, values hidden)", self.lock().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(values: &[(&str, &str)]) -> SecretValues {
        let secrets = SecretValues::default();
        for (key, value) in values {
            secrets.record("flux-system", "creds", key, (*value).to_string());
        }
        secrets
    }

    #[test]
    fn a_value_is_masked_wherever_it_lands() {
        let secrets = read(&[("password", "s3cr3t-pw")]);
        let diff = "+  pw: s3cr3t-pw\n+  url: https://u:s3cr3t-pw@host/\n+  note: unrelated\n";
        let masked = secrets.mask(diff);
        assert!(!masked.contains("s3cr3t-pw"), "{masked}");
        assert!(masked.contains("+  pw: [secret flux-system/creds:password]"), "{masked}");
        assert!(masked.contains("+  note: unrelated"), "{masked}");
    }

    #[test]
    fn a_multi_line_value_is_masked_line_by_line_and_escaped() {
        let key = "-----BEGIN KEY-----\nAAAAbbbbCCCC\n-----END KEY-----";
        let secrets = read(&[("key", key)]);
        let diff = "+  key: |\n+    -----BEGIN KEY-----\n+    AAAAbbbbCCCC\n+    -----END KEY-----\n";
        let masked = secrets.mask(diff);
        assert!(!masked.contains("AAAAbbbbCCCC") && !masked.contains("BEGIN KEY"), "{masked}");
        let json = serde_json::to_string(&serde_json::json!({"key": key})).unwrap();
        assert!(!secrets.mask(&json).contains("AAAAbbbbCCCC"), "{}", secrets.mask(&json));
    }

    #[test]
    fn a_short_value_is_masked_only_as_a_whole_value() {
        let secrets = read(&[("pin", "123")]);
        let masked = secrets.mask("+  pin: 123\n+  port: \"123\"\n+  replicas: 1234\n+  env: PIN=123\n");
        assert_eq!(
            masked,
            "+  pin: [secret flux-system/creds:pin]\n+  port: [secret flux-system/creds:pin]\n+  replicas: 1234\n+  env: PIN=[secret flux-system/creds:pin]\n"
        );
    }

    #[test]
    fn nothing_read_masks_nothing_and_debug_hides_values() {
        assert_eq!(SecretValues::default().mask("a: b"), "a: b");
        let secrets = read(&[("password", "s3cr3t-pw")]);
        assert!(!format!("{secrets:?}").contains("s3cr3t"));
    }
}
