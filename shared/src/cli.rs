//! The options every kubectl-gitops binary accepts, defined once.
//!
//! Each binary flattens [`GlobalArgs`] into its clap parser. The flags are `global`, so they
//! work before or after a subcommand, which is what lets the dispatcher forward
//! `kubectl gitops --context prod status` as `kubectl-gitops-status --context prod`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::duration;

/// Connection, output and verbosity options shared by every command.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalArgs {
    /// Path to one kubeconfig file. Without it, KUBECONFIG (several files are merged as
    /// kubectl merges them) or ~/.kube/config is used.
    #[arg(long, global = true, value_name = "PATH", help_heading = "Cluster options")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use instead of the current one.
    #[arg(long, global = true, value_name = "NAME", alias = "kube-context", help_heading = "Cluster options")]
    pub context: Option<String>,

    /// The namespace of the apps to act on. Defaults to the context's namespace; Flux's own
    /// objects default to flux-system.
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE", help_heading = "Cluster options")]
    pub namespace: Option<String>,

    /// How long to wait for each API request before giving up: `5s`, `1m`, or `0` for no limit.
    /// Each command has its own default (detect: 5s).
    #[arg(long, global = true, value_name = "DURATION", value_parser = duration::parse, help_heading = "Cluster options")]
    pub request_timeout: Option<Duration>,

    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, value_name = "FORMAT", help_heading = "Output options")]
    pub output: Option<OutputFormat>,

    /// Don't print column headers in table output.
    #[arg(long, global = true, alias = "no-header", help_heading = "Output options")]
    pub no_headers: bool,

    /// When to use colour and glyphs. `auto` uses them on a terminal unless NO_COLOR is set.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto, help_heading = "Output options")]
    pub color: ColorChoice,

    /// Print more about what is happening (repeat for more).
    #[arg(short = 'v', long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet", help_heading = "Output options")]
    pub verbose: u8,

    /// Print only data and errors: no progress, no warnings.
    #[arg(short = 'q', long, global = true, action = clap::ArgAction::Count, help_heading = "Output options")]
    pub quiet: u8,
}

impl GlobalArgs {
    /// The output format, `table` when none was asked for.
    pub fn output_format(&self) -> OutputFormat {
        self.output.unwrap_or(OutputFormat::Table)
    }

    /// The request timeout, falling back to the command's own default. `0` means none.
    pub fn request_timeout_or(&self, default: Duration) -> Option<Duration> {
        let timeout = self.request_timeout.unwrap_or(default);
        (!timeout.is_zero()).then_some(timeout)
    }
}

/// `-o` values. Not every command supports every format; those that don't say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns for people.
    Table,
    /// The table with more columns (full revisions, source URLs).
    Wide,
    /// JSON, for scripts. The schema is in docs/output.md.
    Json,
    /// YAML, the same data as json.
    Yaml,
    /// One `kind/name` per line.
    Name,
    /// The Prometheus text exposition format, for a textfile collector. Only `metrics dora`
    /// prints it, so the other commands' help does not offer it (that command's help says so).
    #[value(hide = true)]
    Prometheus,
}

/// `--color` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always colour, even into a pipe.
    Always,
    /// Never colour.
    Never,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Probe {
        #[command(flatten)]
        global: GlobalArgs,
    }

    #[test]
    fn timeouts_parse_and_zero_means_none() {
        let probe = Probe::parse_from(["x", "--request-timeout", "2s"]);
        assert_eq!(probe.global.request_timeout_or(Duration::from_secs(5)), Some(Duration::from_secs(2)));
        let probe = Probe::parse_from(["x", "--request-timeout", "0"]);
        assert_eq!(probe.global.request_timeout_or(Duration::from_secs(5)), None);
        let probe = Probe::parse_from(["x"]);
        assert_eq!(probe.global.request_timeout_or(Duration::from_secs(5)), Some(Duration::from_secs(5)));
    }

    #[test]
    fn kube_context_is_an_alias() {
        let probe = Probe::parse_from(["x", "--kube-context", "prod", "-o", "json"]);
        assert_eq!(probe.global.context.as_deref(), Some("prod"));
        assert_eq!(probe.global.output_format(), OutputFormat::Json);
    }
}
