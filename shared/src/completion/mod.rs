//! Shell completion, answered at run time by the binaries themselves.
//!
//! kubectl completes `kubectl gitops <TAB>` by running `kubectl_complete-gitops <words…>
//! <partial>` and reading cobra's line protocol: one `candidate<TAB>description` per line,
//! then `:<directive>`. Our own scripts (`kubectl gitops completion bash|zsh|fish`) speak the
//! same protocol to `kubectl-gitops __complete`. The dispatcher completes command names and
//! hands longer lines to the command binary's own `__complete`, so every binary stays the one
//! place its flags are defined. Contexts, namespaces, app names and tenants come from the
//! kubeconfig and the cluster, pull request numbers from the config repo's forge ([`dynamic`]),
//! within a short deadline.

mod dynamic;

use std::ffi::OsString;

use clap::Command;
use clap::builder::PossibleValue;

pub use crate::plugin::COMPLETE_ARG;

/// Cobra's directive: don't fall back to file names.
const NO_FILE_COMPLETION: u8 = 4;
/// Cobra's directive: the default (files allowed).
const DEFAULT_DIRECTIVE: u8 = 0;

/// The candidates for the last word, in cobra's line protocol.
pub fn respond(mut command: Command, words: &[OsString]) -> String {
    command.build();
    let words: Vec<String> = words.iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let (partial, before) = match words.split_last() {
        Some((partial, before)) => (partial.as_str(), before),
        None => ("", &[][..]),
    };
    let (candidates, directive) = candidates(&command, before, partial);
    let mut text = String::new();
    for (value, help) in candidates {
        text.push_str(&value);
        if let Some(help) = help.filter(|h| !h.is_empty()) {
            text.push('\t');
            text.push_str(&help);
        }
        text.push('\n');
    }
    text.push_str(&format!(":{directive}\n"));
    text
}

type Candidate = (String, Option<String>);

fn candidates(root: &Command, before: &[String], partial: &str) -> (Vec<Candidate>, u8) {
    let mut current = root;
    let mut pending_value_of: Option<&clap::Arg> = None;
    let mut positionals_seen = 0usize;
    for word in before {
        if pending_value_of.take().is_some() {
            continue;
        }
        if word.starts_with('-') && word.len() > 1 {
            pending_value_of = flag_needing_next_word(current, word);
        } else if let Some(sub) = current.find_subcommand(word) {
            current = sub;
            positionals_seen = 0;
        } else {
            positionals_seen += 1;
        }
    }

    let looked_up = |source: dynamic::Source| -> (Vec<Candidate>, u8) {
        let found = dynamic::values(source, &dynamic::connection_of(before))
            .into_iter()
            .filter(|(value, _)| value.starts_with(partial))
            .collect();
        (found, NO_FILE_COMPLETION)
    };
    if let Some(arg) = pending_value_of {
        if let Some(source) = flag_source(arg) {
            return looked_up(source);
        }
        return value_candidates(arg, partial);
    }
    if partial.starts_with('-') {
        let flags = current
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| a.get_long().map(|long| (format!("--{long}"), help_of(a))))
            .filter(|(flag, _)| flag.starts_with(partial))
            .collect();
        return (flags, NO_FILE_COMPLETION);
    }
    let mut found: Vec<Candidate> = current
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| (sub.get_name().to_string(), sub.get_about().map(|about| about.to_string())))
        .filter(|(name, _)| name.starts_with(partial))
        .collect();
    if let Some(positional) = current.get_positionals().nth(positionals_seen) {
        let platform = before.iter().any(|word| word == "--platform");
        if positionals_seen == 0
            && let Some(source) = name_source(root.get_name(), current.get_name(), platform)
        {
            return looked_up(source);
        }
        let (values, directive) = value_candidates(positional, partial);
        if !values.is_empty() || found.is_empty() {
            found.extend(values);
            return (found, directive);
        }
    }
    (found, NO_FILE_COMPLETION)
}

/// Where the values of a flag come from, when not from its definition: `--context` from the
/// kubeconfig, `-n` from the cluster.
fn flag_source(arg: &clap::Arg) -> Option<dynamic::Source> {
    match arg.get_id().as_str() {
        "context" => Some(dynamic::Source::Contexts),
        "namespace" => Some(dynamic::Source::Namespaces),
        _ => None,
    }
}

/// Where the NAME of subcommand `sub` of command `command` (`kubectl gitops app`) comes from: the
/// cluster's apps, platform apps or tenants, or the forge's pull requests (of the platform repo
/// with `pr --platform`).
fn name_source(command: &str, sub: &str, platform: bool) -> Option<dynamic::Source> {
    match (command.rsplit(' ').next()?, sub) {
        ("app", "remove" | "suspend" | "resume" | "status" | "history") => Some(dynamic::Source::Apps),
        ("platform", "remove") => Some(dynamic::Source::PlatformApps),
        ("tenant", "remove") => Some(dynamic::Source::Tenants),
        ("pr", "show" | "approve" | "merge") => Some(dynamic::Source::PullRequests { platform }),
        _ => None,
    }
}

fn value_candidates(arg: &clap::Arg, partial: &str) -> (Vec<Candidate>, u8) {
    let values: Vec<PossibleValue> = arg.get_possible_values();
    if values.is_empty() {
        let directive =
            if arg.get_value_hint() == clap::ValueHint::AnyPath || arg.get_value_hint() == clap::ValueHint::FilePath {
                DEFAULT_DIRECTIVE
            } else {
                NO_FILE_COMPLETION
            };
        return (Vec::new(), directive);
    }
    let found = values
        .iter()
        .filter(|v| !v.is_hide_set() && v.get_name().starts_with(partial))
        .map(|v| (v.get_name().to_string(), v.get_help().map(|h| h.to_string())))
        .collect();
    (found, NO_FILE_COMPLETION)
}

/// When `word` is a flag of `command` whose value is the next word (`--context prod`,
/// `-n dev`), that flag; `None` for switches, `--flag=value` and unknown flags.
pub fn flag_needing_next_word<'a>(command: &'a Command, word: &str) -> Option<&'a clap::Arg> {
    let arg = if let Some(long) = word.strip_prefix("--") {
        if long.contains('=') {
            return None;
        }
        command.get_arguments().find(|a| a.get_long() == Some(long) || has_alias(a, long))
    } else {
        let shorts = word.strip_prefix('-')?;
        if shorts.chars().count() != 1 {
            return None;
        }
        command.get_arguments().find(|a| a.get_short() == shorts.chars().next())
    };
    arg.filter(|a| takes_value(a))
}

fn takes_value(arg: &clap::Arg) -> bool {
    // `num_args` is only filled in once the command is built; the action is always known.
    arg.get_num_args().map_or_else(|| arg.get_action().takes_values(), |range| range.takes_values())
}

fn has_alias(arg: &clap::Arg, name: &str) -> bool {
    arg.get_all_aliases().is_some_and(|aliases| aliases.contains(&name))
}

fn help_of(arg: &clap::Arg) -> Option<String> {
    arg.get_help().map(|help| help.to_string().lines().next().unwrap_or_default().to_string())
}

/// A completion script for a shell, completing `program` through `program __complete`.
pub fn script(shell: Shell, program: &str) -> String {
    let function = format!("_{}", program.replace('-', "_"));
    let template = match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
    };
    template.replace("{program}", program).replace("{function}", &function)
}

/// Shells we write completion scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    /// `source <(kubectl gitops completion bash)`
    Bash,
    /// `source <(kubectl gitops completion zsh)`
    Zsh,
    /// `kubectl gitops completion fish | source`
    Fish,
}

const BASH: &str = r#"# bash completion for {program}; load with: source <({program} completion bash)
{function}() {
    local out directive line
    out=$("{program}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
    directive=${out##*:}
    COMPREPLY=()
    while IFS= read -r line; do
        [[ -z $line || $line == :* ]] && continue
        COMPREPLY+=("${line%%$'\t'*}")
    done <<<"$out"
    if [[ ${#COMPREPLY[@]} -eq 0 && $((directive & 4)) -eq 0 ]]; then
        COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
    fi
}
complete -F {function} {program}
"#;

const ZSH: &str = r#"#compdef {program}
# zsh completion for {program}; load with: source <({program} completion zsh)
{function}() {
    local -a lines candidates
    local line directive
    lines=("${(@f)$("{program}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    directive=${lines[-1]#:}
    for line in "${(@)lines[1,-2]}"; do
        [[ -n $line ]] && candidates+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
    done
    if (( ${#candidates} )); then
        _describe 'values' candidates
    elif (( (directive & 4) == 0 )); then
        _files
    fi
}
compdef {function} {program}
"#;

const FISH: &str = r#"# fish completion for {program}; load with: {program} completion fish | source
function {function}
    set -l words (commandline -opc) (commandline -ct)
    "{program}" __complete $words[2..-1] 2>/dev/null | string match -v -r '^:'
end
complete -c {program} -f -a '({function})'
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn command() -> Command {
        Command::new("kubectl-gitops-app")
            .arg(Arg::new("output").short('o').long("output").global(true).value_parser(["table", "json", "yaml"]))
            .arg(Arg::new("quiet").short('q').long("quiet").global(true).action(ArgAction::SetTrue))
            .subcommand(Command::new("add").about("Add an app").arg(Arg::new("name")).arg(Arg::new("url").long("url")))
            .subcommand(Command::new("list").about("List apps"))
    }

    fn complete(words: &[&str]) -> String {
        let words: Vec<OsString> = words.iter().map(OsString::from).collect();
        respond(command(), &words)
    }

    #[test]
    fn subcommands_with_descriptions() {
        assert_eq!(
            complete(&[""]),
            "add\tAdd an app\nlist\tList apps\nhelp\tPrint this message or the help of the given subcommand(s)\n:4\n"
        );
        assert_eq!(complete(&["l"]), "list\tList apps\n:4\n");
    }

    #[test]
    fn flags_of_the_current_subcommand_including_globals() {
        assert_eq!(complete(&["add", "--u"]), "--url\n:4\n");
        let all = complete(&["add", "--"]);
        assert!(all.contains("--output\n") && all.contains("--quiet\n"), "{all}");
    }

    #[test]
    fn values_of_the_flag_being_completed() {
        assert_eq!(complete(&["list", "-o", "j"]), "json\n:4\n");
        assert_eq!(complete(&["--output", "y"]), "yaml\n:4\n");
        assert_eq!(complete(&["add", "--url", ""]), ":4\n");
    }

    #[test]
    fn scripts_name_the_program() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = script(shell, "kubectl-gitops");
            assert!(text.contains("\"kubectl-gitops\" __complete"), "{text}");
            assert!(!text.contains("{program}") && !text.contains("{function}"));
        }
    }

    #[test]
    fn names_come_from_the_cluster_for_the_subcommands_that_take_an_existing_one() {
        assert_eq!(name_source("kubectl gitops app", "remove", false), Some(dynamic::Source::Apps));
        assert_eq!(name_source("kubectl gitops app", "history", false), Some(dynamic::Source::Apps));
        assert_eq!(name_source("kubectl gitops app", "add", false), None, "a new app has no name yet");
        assert_eq!(name_source("kubectl gitops platform", "remove", false), Some(dynamic::Source::PlatformApps));
        assert_eq!(name_source("kubectl gitops tenant", "remove", false), Some(dynamic::Source::Tenants));
        assert_eq!(name_source("kubectl gitops tenant", "add", false), None);
        let platform_requests = Some(dynamic::Source::PullRequests { platform: true });
        assert_eq!(name_source("kubectl gitops pr", "merge", true), platform_requests);
        assert_eq!(name_source("kubectl gitops pr", "list", false), None);
    }

    #[test]
    fn the_connection_flags_typed_so_far_are_the_lookups() {
        let words: Vec<String> =
            ["--kubeconfig", "/k", "app", "--context=prod", "-n", "team", "remove"].map(String::from).to_vec();
        let connection = dynamic::connection_of(&words);
        assert_eq!(connection.kubeconfig.as_deref(), Some(std::path::Path::new("/k")));
        assert_eq!((connection.context.as_deref(), connection.namespace.as_deref()), (Some("prod"), Some("team")));
        assert!(connection.request_timeout.is_some_and(|timeout| timeout.as_secs() <= 2));
    }

    #[test]
    fn contexts_come_from_the_kubeconfig_named_on_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts:\n- name: prod\n  context: {cluster: a, user: b}\n- name: dev\n  context: {cluster: a, user: b}\n",
        )
        .unwrap();
        let words = ["--kubeconfig".to_string(), path.display().to_string(), "--context".to_string()];
        let command = Command::new("kubectl gitops status")
            .arg(clap::Arg::new("context").long("context"))
            .arg(clap::Arg::new("kubeconfig").long("kubeconfig"));
        let text =
            respond(command, &[&words[..], &["p".to_string()]].concat().iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(text, "prod\n:4\n");
    }
}
