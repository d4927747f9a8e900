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

/// How to reach the config repo. By default: the repo, branch and cluster directory recorded
/// when this cluster was installed.
#[derive(Debug, Clone, Default, Args)]
pub struct RepoArgs {
    /// The config repo URL (default: the one the current cluster was installed from).
    #[arg(long, value_name = "URL", help_heading = "Config repo")]
    pub config_repo: Option<String>,

    /// The config repo's branch (default: the one the current cluster follows, else main).
    #[arg(long, value_name = "BRANCH", help_heading = "Config repo")]
    pub config_branch: Option<String>,

    /// The SSH private key to push with (default ~/.ssh/id_ed25519, id_ecdsa or id_rsa).
    #[arg(long, value_name = "FILE", help_heading = "Config repo")]
    pub private_key_file: Option<PathBuf>,

    /// known_hosts for the git host (default: the host keys pinned in the cluster's Flux Secret,
    /// else ~/.ssh/known_hosts).
    #[arg(long, value_name = "FILE", help_heading = "Config repo")]
    pub known_hosts_file: Option<PathBuf>,

    #[command(flatten)]
    pub trust: TrustArgs,
}

/// Which hosts the cluster's install record may send credentials to, besides the ones it is
/// bound to in the config file (docs/layout.md, "Where credentials go").
#[derive(Debug, Clone, Default, Args)]
pub struct TrustArgs {
    /// Accept HOST as the new config repo or provider API host of this cluster, when its install
    /// record names another than the one it is bound to (repeatable).
    #[arg(long = "accept-host", value_name = "HOST", help_heading = "Config repo")]
    pub accept_hosts: Vec<String>,
}

/// How a change reaches the config repo, and what happens after.
#[derive(Debug, Clone, Args)]
pub struct DeliveryArgs {
    /// Push the commit to the config branch (the default unless the provider says the branch is protected).
    #[arg(long, help_heading = "Delivery")]
    pub auto_merge: bool,

    /// Push to a new branch and open a pull request (GitLab: merge request) instead.
    #[arg(long, conflicts_with = "auto_merge", help_heading = "Delivery")]
    pub pr: bool,

    /// The commit message (default: what changed, e.g. "Add app podinfo (kustomize) to clusters/dev").
    #[arg(long, short = 'm', value_name = "TEXT", help_heading = "Delivery")]
    pub message: Option<String>,

    /// The commit author as "Name <email>" (default: $GIT_AUTHOR_NAME <$GIT_AUTHOR_EMAIL>, else kubectl-gitops).
    #[arg(long, value_name = "NAME <EMAIL>", help_heading = "Delivery")]
    pub author: Option<String>,

    /// Print the numbered plan and a unified diff of the repo; change nothing anywhere.
    #[arg(long, help_heading = "Delivery")]
    pub dry_run: bool,

    /// With a pull request: merge it once it is opened and read back (a merge commit, guarded by
    /// the branch's head; the token must be allowed to merge).
    #[arg(long, conflicts_with = "auto_merge", help_heading = "Delivery")]
    pub merge: bool,

    /// After pushing, wait until Flux has applied the commit and the app is Ready (or gone); with a
    /// pull request, first until it is merged (a request closed unmerged: exit 1).
    #[arg(long, help_heading = "Delivery")]
    pub wait: bool,

    /// How long --wait waits, and how long a push refused because others pushed first is retried.
    #[arg(long, value_parser = duration::parse, default_value = crate::timeouts::COMMAND_FLAG, help_heading = "Delivery")]
    pub timeout: Duration,
}

/// Where a new repository's first files come from: `repo create`'s and `app add --create-repo`'s flags.
#[derive(Debug, Clone, Default, Args)]
pub struct SourceArgs {
    /// Generate it from this template repository of the same provider (`OWNER/REPO`).
    #[arg(long, value_name = "OWNER/REPO", conflicts_with = "from_url", help_heading = "New repository")]
    pub from_template: Option<String>,

    /// Copy the files of this git repository (any server) into it as its first commit.
    #[arg(long, value_name = "URL", help_heading = "New repository")]
    pub from_url: Option<String>,

    /// The branch of --from-url to copy.
    #[arg(long, value_name = "BRANCH", default_value = "main", requires = "from_url", help_heading = "New repository")]
    pub from_branch: String,

    /// Fork --from-template instead of generating from it (it need not be a template).
    #[arg(long, requires = "from_template", help_heading = "New repository")]
    pub fork: bool,

    /// Make it public (default: private).
    #[arg(long, help_heading = "New repository")]
    pub public: bool,
}

impl SourceArgs {
    /// Whether any of these flags was given.
    pub fn given(&self) -> bool {
        self.given_source() || self.fork || self.public
    }

    /// Whether the files come from elsewhere than our app layout.
    pub fn given_source(&self) -> bool {
        self.from_template.is_some() || self.from_url.is_some()
    }
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
