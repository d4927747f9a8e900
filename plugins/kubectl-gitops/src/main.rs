//! `kubectl gitops`: the dispatcher.
//!
//! `kubectl gitops <command> …` runs the command with the global flags given before it forwarded
//! to it: every command of the suite in this process (this one binary is what a release ships),
//! any other `kubectl-gitops-<command>` found next to this executable or on PATH as a program of
//! its own, as cargo runs its external subcommands. `version` and `completion` are answered here.

use std::ffi::OsString;

use clap::{Arg, ArgAction, Args, Command, FromArgMatches, Subcommand};
use gitops_shared::cli::{ALL_FORMATS, ColorChoice, GlobalArgs, OutputFormat, OutputFormats, STRUCTURED};
use gitops_shared::cluster::Connection;
use gitops_shared::completion::{self, COMPLETE_ARG, Shell};
use gitops_shared::error::ExitCode;
use gitops_shared::output::{self, Printer};
use gitops_shared::{plugin, runtime, timeouts, version};

/// A command's `main`, run with the command line [`runtime::run_as`] sets.
type CommandMain = fn() -> std::process::ExitCode;

/// The commands of the suite, each run in this process by its crate's `main`, as if it had been
/// started as `kubectl-gitops-<command>`.
const COMMAND_MAINS: [(&str, CommandMain); 20] = [
    ("app", kubectl_gitops_app::main),
    ("artifact", kubectl_gitops_artifact::main),
    ("component", kubectl_gitops_component::main),
    ("detect", kubectl_gitops_detect::main),
    ("diff", kubectl_gitops_diff::main),
    ("drift", kubectl_gitops_drift::main),
    ("fleet", kubectl_gitops_fleet::main),
    ("flux", kubectl_gitops_flux::main),
    ("install", kubectl_gitops_install::main),
    ("mcp", kubectl_gitops_mcp::main),
    ("metrics", kubectl_gitops_metrics::main),
    ("monitoring", kubectl_gitops_monitoring::main),
    ("platform", kubectl_gitops_platform::main),
    ("promote", kubectl_gitops_promote::main),
    ("pr", kubectl_gitops_pr::main),
    ("repo", kubectl_gitops_repo::main),
    ("status", kubectl_gitops_status::main),
    ("tenant", kubectl_gitops_tenant::main),
    ("ui", kubectl_gitops_ui::main),
    ("upgrade", kubectl_gitops_upgrade::main),
];

/// The `main` of a command of the suite.
fn command_main(name: &str) -> Option<CommandMain> {
    COMMAND_MAINS.iter().find(|(known, _)| *known == name).map(|(_, main)| *main)
}

/// Runs a command of the suite in this process with `args` after its binary's name.
fn run_in_process(name: &str, command_main: CommandMain, args: Vec<OsString>) -> std::process::ExitCode {
    let mut command_line = vec![OsString::from(format!("{}{name}", plugin::BINARY_PREFIX))];
    command_line.extend(args);
    runtime::run_as(command_line, command_main)
}

/// What the dispatcher answers itself.
#[derive(Debug, Subcommand)]
enum Builtin {
    /// Print the plugin version, the pinned Flux version, and the cluster's Kubernetes and Flux versions
    Version {
        /// Only this build's version and the pinned Flux version: no cluster, no flux CLI lookup.
        #[arg(long)]
        client: bool,
    },
    /// Print a shell completion script for kubectl-gitops
    Completion {
        /// The shell to write the script for.
        shell: Shell,
    },
}

/// What `-o` offers: every format before a command's name (the command judges it), and the
/// formats of `version`.
const OUTPUT_FORMATS: OutputFormats = &[("", ALL_FORMATS), ("version", STRUCTURED)];

fn command() -> Command {
    let mut command = GlobalArgs::augment_args(Command::new("kubectl-gitops"));
    for (name, about) in plugin::COMMANDS {
        command = command.subcommand(
            Command::new(name).about(about).disable_help_flag(true).arg(
                Arg::new("args")
                    .action(ArgAction::Append)
                    .num_args(0..)
                    .trailing_var_arg(true)
                    .allow_hyphen_values(true)
                    .value_parser(clap::value_parser!(OsString)),
            ),
        );
    }
    // The about text goes last: augmenting with `Builtin` would replace it with the enum's doc.
    let command = Builtin::augment_subcommands(command)
        .allow_external_subcommands(true)
        .bin_name("kubectl gitops")
        .about("GitOps for any Kubernetes cluster, on top of Flux")
        .long_about(
            "GitOps for any Kubernetes cluster, on top of Flux.\n\n\
             Global options given before a command are passed on to it: \
             `kubectl gitops --context prod status` runs `kubectl gitops status --context prod`.",
        )
        .version(version::VERSION_LINE)
        .after_help(
            "Exit codes: 0 ok, 1 not ready or failed, 2 bad input, 3 cluster unreachable or forbidden, \
             4 git or git provider failure (docs/exit-codes.md).",
        );
    gitops_shared::cli::offer_output_formats(command, OUTPUT_FORMATS)
}

/// Index of the first word that is not a global flag or a global flag's value.
fn command_position(command: &Command, words: &[OsString]) -> Option<usize> {
    let mut skip_next = false;
    for (index, word) in words.iter().enumerate() {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        let text = word.to_string_lossy();
        if text == "--" {
            return (index + 1 < words.len()).then_some(index + 1);
        }
        if text.starts_with('-') && text.len() > 1 {
            skip_next = completion::flag_needing_next_word(command, &text).is_some();
            continue;
        }
        return Some(index);
    }
    None
}

fn known_commands() -> Vec<String> {
    let mut names: Vec<String> = plugin::COMMANDS.iter().map(|(name, _)| name.to_string()).collect();
    names.extend(["version", "completion"].map(String::from));
    names.extend(plugin::installed());
    names.sort();
    names.dedup();
    names
}

/// Runs an external command, `kubectl-gitops-<name>` next to this executable or on PATH.
fn run_plugin(name: &str, forwarded: Vec<OsString>) -> gitops_shared::error::Result<ExitCode> {
    let Some(binary) = plugin::find(name) else {
        return Err(plugin::unknown_command(name, &known_commands()));
    };
    let code = plugin::run(&binary, &forwarded)?;
    std::process::exit(code);
}

fn main() -> std::process::ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    runtime::start_process(&args);
    let command = command();
    let words = &args[1..];
    // Until the flags are parsed, the defaults decide how errors look.
    let unparsed = Printer::new(ColorChoice::Auto, 0, 0);

    if words.first().is_some_and(|word| word == COMPLETE_ARG) {
        return complete(&command, &words[1..], &unparsed);
    }
    if words.first().is_some_and(|word| word == gitops_shared::manpage::MAN_ARG) {
        return runtime::finish(runtime::print_man_page(command, &unparsed), &unparsed);
    }
    if words.first().is_some_and(|word| word == gitops_shared::manpage::FLAGS_ARG) {
        let table = gitops_shared::manpage::flag_table(command);
        return runtime::finish(unparsed.data(&table).map(|()| ExitCode::Ok), &unparsed);
    }

    // A plugin command: forward everything after its name, preceded by the global flags
    // given before it. The global flags are parsed here only to reject bad ones early.
    if let Some(position) = command_position(&command, words) {
        let name = words[position].to_string_lossy().into_owned();
        let builtin = matches!(name.as_str(), "version" | "completion" | "help");
        if !builtin {
            let globals = &words[..position];
            let parsed = command
                .clone()
                .try_get_matches_from(std::iter::once(OsString::from("kubectl-gitops")).chain(globals.iter().cloned()));
            let printer = match parsed.and_then(|matches| GlobalArgs::from_arg_matches(&matches)) {
                Ok(global) => Printer::from_args(&global),
                Err(error) => return runtime::usage_error(error, &unparsed),
            };
            let forwarded: Vec<OsString> = globals.iter().chain(&words[position + 1..]).cloned().collect();
            if let Some(command_main) = command_main(&name) {
                return run_in_process(&name, command_main, forwarded);
            }
            return runtime::finish(run_plugin(&name, forwarded), &printer);
        }
    }

    let matches = match command.clone().try_get_matches_from(&args) {
        Ok(matches) => matches,
        Err(error) => return runtime::usage_error(error, &unparsed),
    };
    let global = match GlobalArgs::from_arg_matches(&matches) {
        Ok(global) => global,
        Err(error) => return runtime::usage_error(error, &unparsed),
    };
    let printer = Printer::from_args(&global);
    let builtin = match matches.subcommand() {
        None => {
            let help = command.clone().render_long_help().to_string();
            return runtime::finish(printer.data(&help).map(|()| ExitCode::Ok), &printer);
        }
        Some(_) => match Builtin::from_arg_matches(&matches) {
            Ok(builtin) => builtin,
            Err(error) => return runtime::usage_error(error, &unparsed),
        },
    };
    runtime::finish(runtime::block_on(run_builtin(builtin, global, printer)), &printer)
}

async fn run_builtin(builtin: Builtin, global: GlobalArgs, printer: Printer) -> gitops_shared::error::Result<ExitCode> {
    match builtin {
        Builtin::Version { client } => {
            let format = global.output_format();
            output::ensure_supported(format, STRUCTURED)?;
            let report = if client {
                version::VersionReport::client_only()
            } else {
                version::report(&Connection::from_args(&global, timeouts::PROBE), &printer).await
            };
            match format {
                OutputFormat::Table => printer.data(&version::render_text(&report))?,
                _ => printer.structured(&output::document(&report), format)?,
            }
            if let Some(error) = report.server.as_ref().and_then(|server| server.error.as_ref()) {
                printer.warning(&format!("cannot reach the cluster: {error}"));
            }
            Ok(ExitCode::Ok)
        }
        Builtin::Completion { shell } => {
            printer.data(&completion::script(shell, "kubectl-gitops"))?;
            Ok(ExitCode::Ok)
        }
    }
}

/// Completes command names here; longer lines go to the command's own `__complete`.
fn complete(command: &Command, words: &[OsString], printer: &Printer) -> std::process::ExitCode {
    if let Some(position) = command_position(command, words).filter(|position| position + 1 < words.len()) {
        let name = words[position].to_string_lossy().into_owned();
        let mut forwarded = vec![OsString::from(COMPLETE_ARG)];
        forwarded.extend(words[..position].iter().cloned());
        forwarded.extend(words[position + 1..].iter().cloned());
        if let Some(command_main) = command_main(&name) {
            return run_in_process(&name, command_main, forwarded);
        }
        if let Some(binary) = plugin::find(&name) {
            return match plugin::run(&binary, &forwarded) {
                Ok(code) => std::process::exit(code),
                Err(error) => runtime::finish(Err(error), printer),
            };
        }
    }
    runtime::finish(printer.data(&completion::respond(command.clone(), words)).map(|()| ExitCode::Ok), printer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_of_the_suite_runs_in_this_binary() {
        for (name, _) in plugin::COMMANDS {
            assert!(command_main(name).is_some(), "{name} has no main in COMMAND_MAINS");
        }
        assert_eq!(COMMAND_MAINS.len(), plugin::COMMANDS.len(), "the suite's commands, nothing else");
    }
}
