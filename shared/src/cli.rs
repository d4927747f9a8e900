//! The options every kubectl-gitops binary accepts, defined once.
//!
//! Each binary flattens [`GlobalArgs`] into its clap parser. The flags are `global`, so they
//! work before or after a subcommand, which is what lets the dispatcher forward
//! `kubectl gitops --context prod status` as `kubectl-gitops-status --context prod`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::duration;

/// Spellings kept one release as hidden aliases, each with the one that replaces it and why:
/// using one prints a warning (`runtime`). `--version` is an alias only where a command takes a
/// Flux release (`install`, `upgrade`); every other command refuses it ([`crate::runtime`]).
pub const DEPRECATED_FLAGS: [(&str, &str, &str); 2] = [
    (
        "--cluster",
        "--cluster-name",
        "from the next release --cluster names the kubeconfig cluster, as in kubectl and flux",
    ),
    (
        "--version",
        "--flux-version",
        "it names the Flux release, as `flux install --version` does; `kubectl gitops version` prints ours",
    ),
];

/// The deprecated spellings among `args` (up to `--`), with their replacements and reasons.
pub fn deprecated_flags_in(args: &[std::ffi::OsString]) -> Vec<(&'static str, &'static str, &'static str)> {
    let words: Vec<String> =
        args.iter().skip(1).map(|arg| arg.to_string_lossy().into_owned()).take_while(|word| word != "--").collect();
    DEPRECATED_FLAGS
        .into_iter()
        .filter(|(old, _, _)| words.iter().any(|word| word == old || word.starts_with(&format!("{old}="))))
        .collect()
}

/// Connection, output and verbosity options shared by every command.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalArgs {
    /// Path to one kubeconfig file. Without it, KUBECONFIG (several files are merged as
    /// kubectl merges them) or ~/.kube/config is used.
    #[arg(long, global = true, value_name = "PATH", help_heading = "Cluster options")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use instead of the current one.
    ///
    /// `status`, `app status`, `app list`, `platform list` and `fleet status` take a list
    /// (`--context dev,uat`) and answer for each context (docs/fleet.md).
    #[arg(long, global = true, value_name = "NAME", alias = "kube-context", help_heading = "Cluster options")]
    pub context: Option<String>,

    /// The namespace of the Flux objects to act on or show.
    ///
    /// Default: FLUX_SYSTEM_NAMESPACE, else flux-system; a command that changes the config repo
    /// takes the cluster's Flux namespace and refuses another (docs/cli.md).
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE", help_heading = "Cluster options")]
    pub namespace: Option<String>,

    /// How long to wait for each API request before giving up: `5s`, `1m`, or `0` for no limit.
    /// Each command has its own default (detect: 5s).
    #[arg(long, global = true, value_name = "DURATION", value_parser = duration::parse, help_heading = "Cluster options")]
    pub request_timeout: Option<Duration>,

    /// The kubeconfig user to act as, instead of the context's.
    #[arg(long, global = true, value_name = "NAME", help_heading = "Cluster options")]
    pub user: Option<String>,

    /// The API server's address, instead of the kubeconfig cluster's.
    #[arg(long, global = true, value_name = "URL", help_heading = "Cluster options")]
    pub server: Option<String>,

    /// A bearer token for the API server, instead of the kubeconfig user's credentials.
    #[arg(long, global = true, value_name = "TOKEN", help_heading = "Cluster options")]
    pub token: Option<String>,

    /// A PEM file of the CA certificates the API server's certificate must chain to, instead of
    /// the kubeconfig cluster's.
    #[arg(long, global = true, value_name = "PATH", help_heading = "Cluster options")]
    pub certificate_authority: Option<PathBuf>,

    /// Don't check the API server's certificate: the connection is then not secure.
    #[arg(long, global = true, help_heading = "Cluster options")]
    pub insecure_skip_tls_verify: bool,

    /// The user to impersonate for every request (as kubectl --as).
    #[arg(long = "as", global = true, value_name = "USER", help_heading = "Cluster options")]
    pub impersonate: Option<String>,

    /// A group to impersonate for every request; repeat it for more (as kubectl --as-group).
    #[arg(long = "as-group", global = true, value_name = "GROUP", help_heading = "Cluster options")]
    pub impersonate_groups: Vec<String>,

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

/// The formats `-o` offers, per command of one binary: the command's path below the binary
/// (`""` for the binary's own, `"list"`, `"app history"`) and what it prints. A command not
/// listed prints text: its `-o` is hidden and takes `table` alone.
pub type OutputFormats = &'static [(&'static str, &'static [OutputFormat])];

/// `-o table|json|yaml`.
pub const STRUCTURED: &[OutputFormat] = &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml];

/// Every format: what the dispatcher accepts before a command's name, for the command to judge.
pub const ALL_FORMATS: &[OutputFormat] = &[
    OutputFormat::Table,
    OutputFormat::Wide,
    OutputFormat::Json,
    OutputFormat::Yaml,
    OutputFormat::Name,
    OutputFormat::Prometheus,
];

/// `command` with each command's `-o` offering the formats `formats` gives it and refusing the
/// others, in its help, its completion and its parsing alike. Every command gets an `-o` of its
/// own, a copy of the global one with its formats (clap then propagates the global one to none of
/// them, and a value given to any of them reaches [`GlobalArgs`]). Done before clap builds the
/// command: a built command keeps an index of its flags that changing one would leave stale.
pub fn offer_output_formats(command: clap::Command, formats: OutputFormats) -> clap::Command {
    let global = command.get_arguments().find(|arg| arg.get_id() == "output").cloned();
    offer(command, global.as_ref(), "", formats)
}

fn offer(command: clap::Command, global: Option<&clap::Arg>, path: &str, formats: OutputFormats) -> clap::Command {
    let taken = takes(&command, path, formats);
    let restrict = |arg: clap::Arg| {
        let hidden = taken.len() < 2;
        arg.value_parser(FormatParser(taken.clone())).hide(hidden).hide_possible_values(false)
    };
    let has_own = command.get_arguments().any(|arg| arg.get_id() == "output");
    let mut command = match (has_own, global) {
        (true, _) => command.mut_arg("output", restrict),
        (false, Some(global)) => command.arg(restrict(global.clone())),
        (false, None) => command,
    };
    for subcommand in command.get_subcommands_mut() {
        let inner = below(path, subcommand.get_name());
        let taken = std::mem::take(subcommand);
        *subcommand = offer(taken, global, &inner, formats);
    }
    command
}

/// The path of subcommand `name` of the command at `path`.
fn below(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_string() } else { format!("{path} {name}") }
}

/// The formats the command at `path` prints ([`OutputFormats`]); one not listed prints text.
fn offered(formats: OutputFormats, path: &str) -> &'static [OutputFormat] {
    formats.iter().find(|(at, _)| *at == path).map_or(&[OutputFormat::Table], |(_, offered)| *offered)
}

/// What `-o` takes at `command` (at `path`): what it prints, and for a command of subcommands
/// what any of them prints, since `-o` may stand before the subcommand (`-o json app list` is
/// `app list -o json`): the subcommand that runs judges it ([`check_output_format`]).
fn takes(command: &clap::Command, path: &str, formats: OutputFormats) -> Vec<OutputFormat> {
    let mut taken = offered(formats, path).to_vec();
    for subcommand in command.get_subcommands() {
        for format in takes(subcommand, &below(path, subcommand.get_name()), formats) {
            if !taken.contains(&format) {
                taken.push(format);
            }
        }
    }
    taken
}

/// The format `-o` asked for (`asked`), judged by the command that runs, the innermost
/// subcommand `matches` holds, wherever on the command line `-o` stood.
pub fn check_output_format(
    matches: &clap::ArgMatches,
    formats: OutputFormats,
    asked: Option<OutputFormat>,
) -> crate::error::Result<()> {
    let Some(asked) = asked else { return Ok(()) };
    let (mut path, mut level) = (String::new(), matches);
    while let Some((name, inner)) = level.subcommand() {
        path = below(&path, name);
        level = inner;
    }
    let prints = offered(formats, &path);
    if prints.contains(&asked) {
        return Ok(());
    }
    let name = |format: &OutputFormat| format.to_possible_value().map(|value| value.get_name().to_string());
    let names: Vec<String> = prints.iter().filter_map(name).collect();
    Err(crate::error::Error::usage(
        format!("invalid value '{}' for '--output <FORMAT>'", name(&asked).unwrap_or_default()),
        format!("possible values: {}", names.join(", ")),
    ))
}

/// `-o`'s parser for one command: its formats, by their names.
#[derive(Clone)]
struct FormatParser(Vec<OutputFormat>);

impl clap::builder::TypedValueParser for FormatParser {
    type Value = OutputFormat;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<OutputFormat, clap::Error> {
        use clap::error::{ContextKind, ContextValue, ErrorKind};
        let text = value.to_string_lossy();
        let found = self
            .0
            .iter()
            .copied()
            .find(|format| format.to_possible_value().is_some_and(|possible| possible.matches(&text, false)));
        found.ok_or_else(|| {
            let mut error = clap::Error::new(ErrorKind::InvalidValue).with_cmd(command);
            let names = self.0.iter().filter_map(|format| format.to_possible_value()).map(|v| v.get_name().to_string());
            error.insert(
                ContextKind::InvalidArg,
                ContextValue::String(arg.map(ToString::to_string).unwrap_or_default()),
            );
            error.insert(ContextKind::InvalidValue, ContextValue::String(text.into_owned()));
            error.insert(ContextKind::ValidValue, ContextValue::Strings(names.collect()));
            error
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().filter_map(ValueEnum::to_possible_value)))
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
/// `-l`: the label selector of the listing commands.
#[derive(Debug, Clone, Default, Args)]
pub struct SelectorArgs {
    /// Only the objects whose labels match, as kubectl's -l.
    ///
    /// Only the objects whose labels match, as kubectl's -l: key=value, key!=value, 'key in (a,b)',
    /// 'key notin (a,b)', key, '!key'; commas join requirements that must all hold. The objects are
    /// the Kustomizations and HelmReleases (status, app list, platform list), the tenants'
    /// namespaces (tenant list) or the components' OCIRepositories (component list); the API
    /// server filters them.
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
}

impl SelectorArgs {
    /// The selector, checked as kubectl checks `-l`.
    pub fn labels(&self) -> crate::error::Result<Option<String>> {
        let Some(selector) = &self.selector else { return Ok(None) };
        crate::label_selector::parse(selector).map(|_| Some(selector.clone())).map_err(|why| {
            crate::error::Error::usage(
                format!("-l {selector:?} is not a label selector: {why}"),
                "e.g. -l team=a, -l 'tier in (web,api)', -l '!legacy' (comma-separated, all must hold)",
            )
        })
    }
}

#[derive(Debug, Clone, Default, Args)]
pub struct RepoArgs {
    /// The config repo URL (default: the one the current cluster was installed from).
    #[arg(long, value_name = "URL", help_heading = "Config repo")]
    pub config_repo: Option<String>,

    /// The config repo's branch (default: the one the current cluster follows, else main).
    #[arg(long, value_name = "BRANCH", help_heading = "Config repo")]
    pub config_branch: Option<String>,

    /// The SSH private key for git.
    ///
    /// The SSH private key to push with (default ~/.ssh/id_ed25519, id_ecdsa or id_rsa).
    #[arg(long, value_name = "FILE", help_heading = "Config repo")]
    pub private_key_file: Option<PathBuf>,

    /// known_hosts for the git host.
    ///
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
    /// Push the commit to the config branch.
    ///
    /// The default unless the provider says the branch is protected.
    #[arg(long, help_heading = "Delivery")]
    pub auto_merge: bool,

    /// Push to a new branch and open a pull request (GitLab: merge request).
    ///
    /// Instead of pushing to the config branch.
    #[arg(long, conflicts_with = "auto_merge", help_heading = "Delivery")]
    pub pr: bool,

    /// The commit message (default: what changed, e.g. "Add app podinfo (kustomize) to clusters/dev").
    #[arg(long, short = 'm', value_name = "TEXT", help_heading = "Delivery")]
    pub message: Option<String>,

    /// The commit author as "Name <email>" (default: $GIT_AUTHOR_NAME <$GIT_AUTHOR_EMAIL>, else kubectl-gitops).
    #[arg(long, value_name = "NAME <EMAIL>", help_heading = "Delivery")]
    pub author: Option<String>,

    /// Print the plan and change nothing.
    ///
    /// Print the numbered plan and a unified diff of the repo; change nothing anywhere.
    #[arg(long, help_heading = "Delivery")]
    pub dry_run: bool,

    /// Also show what it would change in the cluster, as `kubectl gitops diff` does.
    ///
    /// With --dry-run: also what the plan would change in the live cluster, as `kubectl gitops
    /// diff` shows it (the plan written into the scratch clone, built by the pinned flux CLI,
    /// compared by the API server's dry run, HelmReleases rendered); nothing is written anywhere.
    #[arg(long, requires = "dry_run", help_heading = "Delivery")]
    pub preview: bool,

    /// With a pull request: merge it once it is opened and read back (a merge commit, guarded by
    /// the branch's head; the token must be allowed to merge).
    #[arg(long, conflicts_with = "auto_merge", help_heading = "Delivery")]
    pub merge: bool,

    /// Wait until Flux has applied the change and it is Ready.
    ///
    /// After pushing, wait until Flux has applied the commit and the app is Ready (or gone); with a
    /// pull request, first until it is merged (a request closed unmerged: exit 1).
    #[arg(long, help_heading = "Delivery")]
    pub wait: bool,

    /// How long to wait.
    ///
    /// How long --wait waits, and how long a push refused because others pushed first is retried.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = crate::timeouts::COMMAND_FLAG, help_heading = "Delivery")]
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

    /// Make a new repository public (default: private).
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

    #[test]
    fn label_selectors_are_checked_as_kubectl_checks_them() {
        let labels = |selector: &str| SelectorArgs { selector: Some(selector.to_string()) }.labels();
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
            assert_eq!(labels(good).unwrap().as_deref(), Some(good));
        }
        for bad in ["", "team=a b", "Team/x=y", "-team=a", "tier in web", "team=a,", "a=b=c"] {
            let error = labels(bad).unwrap_err();
            assert!(error.to_string().starts_with("-l "), "{bad}: {error}");
            assert!(error.hint().is_some(), "{bad}");
        }
        assert_eq!(SelectorArgs { selector: None }.labels().unwrap(), None);
    }
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

    #[test]
    fn a_deprecated_spelling_is_found_before_a_double_dash_only() {
        let args = |words: &[&str]| words.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        let found = deprecated_flags_in(&args(&["kubectl-gitops-app", "list", "--cluster", "dev"]));
        assert_eq!(
            found.iter().map(|(old, new, _)| (*old, *new)).collect::<Vec<_>>(),
            [("--cluster", "--cluster-name")]
        );
        assert_eq!(deprecated_flags_in(&args(&["x", "list", "--cluster=dev"])).len(), 1);
        assert!(deprecated_flags_in(&args(&["x", "list", "--cluster-name", "dev"])).is_empty());
        assert!(deprecated_flags_in(&args(&["x", "--", "--cluster"])).is_empty());
        assert!(deprecated_flags_in(&args(&["--cluster"])).is_empty(), "the binary's name is not a flag");
    }

    #[derive(Parser)]
    struct Nested {
        #[command(subcommand)]
        command: NestedCommand,
        #[command(flatten)]
        global: GlobalArgs,
    }

    #[derive(clap::Subcommand)]
    enum NestedCommand {
        List,
        Add,
    }

    #[test]
    fn each_command_offers_its_own_output_formats_and_refuses_the_others() {
        use clap::{CommandFactory, FromArgMatches};
        let command = offer_output_formats(Nested::command(), &[("list", STRUCTURED)]);
        let parse = |words: &[&str]| {
            command.clone().try_get_matches_from(words).and_then(|matches| Nested::from_arg_matches(&matches))
        };
        let listed = parse(&["x", "list", "-o", "yaml"]).unwrap();
        assert!(matches!(listed.command, NestedCommand::List));
        assert_eq!(listed.global.output_format(), OutputFormat::Yaml);
        let refused = parse(&["x", "list", "-o", "wide"]).err().unwrap();
        assert_eq!(refused.kind(), clap::error::ErrorKind::InvalidValue);
        assert!(refused.render().to_string().contains("[possible values: table, json, yaml]"), "{}", refused.render());
        assert!(parse(&["x", "add", "-o", "json"]).is_err(), "add prints text");
        assert_eq!(parse(&["x", "add", "-o", "table"]).unwrap().global.output_format(), OutputFormat::Table);
        let list = command.get_subcommands().find(|sub| sub.get_name() == "list").unwrap();
        let output = list.get_arguments().find(|arg| arg.get_id() == "output").unwrap();
        assert!(!output.is_hide_set());
        let names: Vec<String> = output.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
        assert_eq!(names, ["table", "json", "yaml"]);
        let add = command.get_subcommands().find(|sub| sub.get_name() == "add").unwrap();
        assert!(add.get_arguments().find(|arg| arg.get_id() == "output").unwrap().is_hide_set());
    }
}
