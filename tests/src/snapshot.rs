//! Runs a command and renders its exit code, stdout and stderr as one text for insta.

use std::process::Command;

/// What a command did, rendered for a snapshot.
pub struct Run {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Runs the command to completion with colour off, whatever the test's environment, and its
    /// config file beside its kubeconfig unless it chose one ([`crate::binaries::isolate_config`]).
    pub fn of(command: &mut Command) -> Run {
        let command = crate::binaries::isolate_config(command);
        let output = command.env("NO_COLOR", "1").env_remove("FORCE_COLOR").output().expect("run the command");
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The text snapshot tests compare: exit code, stdout, stderr, with run-specific values
    /// (versions, commits, ports, temp paths) replaced by placeholders.
    pub fn render(&self) -> String {
        let text = format!(
            "exit_code: {}\n----- stdout -----\n{}----- stderr -----\n{}",
            self.code.map_or("signal".to_string(), |c| c.to_string()),
            self.stdout,
            self.stderr
        );
        redact(&text)
    }
}

/// Replaces values that change between runs and machines.
pub fn redact(text: &str) -> String {
    let mut out = text.replace(env!("CARGO_PKG_VERSION"), "[VERSION]");
    out = replace_after(&out, "commit ", |c| c.is_ascii_alphanumeric(), "[COMMIT]");
    out = replace_after(&out, "\"commit\": \"", |c| c != '"', "[COMMIT]");
    out = replace_after(&out, "127.0.0.1:", |c| c.is_ascii_digit(), "[PORT]");
    let temp = std::env::temp_dir().to_string_lossy().into_owned();
    out = replace_after(&out, &temp, |c| !c.is_whitespace() && c != '\'' && c != '"', "/[TEMP]");
    out
}

fn replace_after(text: &str, marker: &str, keep: impl Fn(char) -> bool, placeholder: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find(marker) {
        out.push_str(&rest[..found + marker.len()]);
        rest = &rest[found + marker.len()..];
        let end = rest.find(|c: char| !keep(c)).unwrap_or(rest.len());
        if end > 0 {
            out.push_str(placeholder);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
