//! Leaf helpers for messages: an error chain on one line, a list of names in words, a kube error
//! as a sentence with a hint. Nothing here depends on another module of the crate, so every
//! module (the error type included) may use it.

use std::fmt;

/// Flattens an error and its sources into one line: `a: b: c`.
pub fn chain_to_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

/// Formats a list of names as `"a", "b" and "c"` for messages.
pub struct QuotedList<'a>(pub &'a [String]);

impl fmt::Display for QuotedList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, item) in self.0.iter().enumerate() {
            if index > 0 {
                let separator = if index + 1 == self.0.len() { " and " } else { ", " };
                f.write_str(separator)?;
            }
            write!(f, "\"{item}\"")?;
        }
        Ok(())
    }
}

/// A kube error as one sentence for the user. An API error is the API server's own message with
/// its code and reason (`the server could not find the requested resource (404 NotFound)`):
/// kube's `Display` appends a debug dump of the whole Status, which no user should read.
pub fn describe(error: &kube::Error) -> String {
    let kube::Error::Api(status) = error else {
        return format!("the request to the Kubernetes API failed: {}", chain_to_line(error));
    };
    let mut answer = Vec::new();
    if status.code != 0 {
        answer.push(status.code.to_string());
    }
    if !status.reason.is_empty() {
        answer.push(status.reason.clone());
    }
    let answer = answer.join(" ");
    match (status.message.trim(), answer.as_str()) {
        ("", "") => "the Kubernetes API server answered with an error and no message".to_string(),
        ("", answer) => format!("the Kubernetes API server answered with an error ({answer})"),
        (message, "") => message.to_string(),
        (message, answer) => format!("{message} ({answer})"),
    }
}

/// A watch's failure as one sentence, the API server's part as [`describe`] words it (kube's
/// `Display` of a watch error ends in the same debug dump of the Status).
pub fn describe_watch(error: &kube::runtime::watcher::Error) -> String {
    use kube::runtime::watcher::Error as Watch;
    match error {
        Watch::InitialListFailed(error) => format!("the list failed: {}", describe(error)),
        Watch::WatchStartFailed(error) => format!("the watch could not start: {}", describe(error)),
        Watch::WatchFailed(error) => format!("the watch failed: {}", describe(error)),
        Watch::WatchError(status) => format!("the watch failed: {}", describe(&kube::Error::Api(status.clone()))),
        Watch::NoResourceVersion => "the API server's list has no resourceVersion to watch from".to_string(),
    }
}

/// What to try after an API error that is not a 401 or 403 (those have their own variants).
pub fn api_hint(error: &kube::Error) -> &'static str {
    let kube::Error::Api(status) = error else {
        return "if kubectl works with the same kubeconfig and context, this is a bug in kubectl-gitops; please report it";
    };
    match status.code {
        404 => {
            "check the name and namespace, and that Flux is installed and serves this kind (`kubectl gitops detect -o yaml`)"
        }
        409 => "something else changed the same object meanwhile; run the command again",
        410 => "the API server's listing expired while it was read; run the command again",
        400 | 422 => {
            "the API server refused the request as invalid; `kubectl gitops detect -o yaml` shows the Flux API versions it serves"
        }
        429 | 500..=599 => {
            "the API server is overloaded or failing; try again shortly (`kubectl get --raw '/readyz?verbose'` shows its health)"
        }
        _ => "`kubectl get --raw '/readyz?verbose'` shows the API server's health",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_list_reads_like_english() {
        let names = vec!["app".to_string(), "status".to_string(), "detect".to_string()];
        assert_eq!(QuotedList(&names).to_string(), r#""app", "status" and "detect""#);
        assert_eq!(QuotedList(&names[..1]).to_string(), r#""app""#);
    }
}
