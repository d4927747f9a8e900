//! The `main` of every binary: parse, run on tokio, and turn the outcome into an exit code.

use std::ffi::OsString;
use std::future::Future;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{ColorChoice, GlobalArgs, OutputFormats};
use crate::completion::{self, COMPLETE_ARG};
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;

/// A binary's parsed command line: it exposes the shared options.
pub trait CommandLine: CommandFactory + FromArgMatches {
    /// The shared options inside the parsed arguments.
    fn global_args(&self) -> &GlobalArgs;
}

/// A plugin's command line: the clap struct, with the shared options flattened into its `global`
/// field, and its [`CommandLine`]. Three forms (the doc comment is the command's help, as clap
/// reads it):
/// - `command_line! { /// … struct Cli { subcommand: Command } }`: a command of subcommands,
///   in field `command`;
/// - `command_line! { /// … struct Cli { install: InstallArgs } }`: one struct of flags,
///   flattened into the named field;
/// - `command_line!(Cli);`: only the [`CommandLine`] of a struct written out by hand.
#[macro_export]
macro_rules! command_line {
    ($(#[$doc:meta])* struct $cli:ident { subcommand: $command:ty $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, clap::Parser)]
        #[command(disable_version_flag = true, subcommand_required = true, arg_required_else_help = true)]
        struct $cli {
            #[command(subcommand)]
            command: $command,
            #[command(flatten)]
            global: $crate::cli::GlobalArgs,
        }
        $crate::command_line!($cli);
    };
    ($(#[$doc:meta])* struct $cli:ident { $field:ident: $args:ty $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, clap::Parser)]
        #[command(disable_version_flag = true)]
        struct $cli {
            #[command(flatten)]
            $field: $args,
            #[command(flatten)]
            global: $crate::cli::GlobalArgs,
        }
        $crate::command_line!($cli);
    };
    ($cli:ty) => {
        impl $crate::runtime::CommandLine for $cli {
            fn global_args(&self) -> &$crate::cli::GlobalArgs {
                &self.global
            }
        }
    };
}

/// Runs the command whose `main` is `command_main` in this process, as if it had been started
/// with `args` (its binary's name first): how the one `kubectl-gitops` binary of a release runs
/// every command (docs/ARCHITECTURE.md, "Layout notes"). Once per process.
pub fn run_as(args: Vec<OsString>, command_main: fn() -> std::process::ExitCode) -> std::process::ExitCode {
    crate::env::set_command_line(args);
    command_main()
}

/// Runs a binary. `display_name` is how usage lines name it (`kubectl gitops status`).
///
/// Handles `__complete` before parsing, makes the [`Printer`] the body prints with, installs
/// the TLS provider, and maps errors to `error:`/`hint:` lines and the documented exit codes.
/// A closed stdout pipe exits 0.
pub fn main<C, F, Fut>(display_name: &'static str, formats: OutputFormats, body: F) -> std::process::ExitCode
where
    C: CommandLine,
    F: FnOnce(C, Printer) -> Fut,
    Fut: Future<Output = Result<ExitCode>>,
{
    main_with(C::command().bin_name(display_name).name(display_name), formats, body)
}

/// [`main`] with a clap command the caller adjusted (for example its about text). `formats`: what
/// each of its commands offers with `-o` ([`crate::cli::offer_output_formats`]).
pub fn main_with<C, F, Fut>(command: clap::Command, formats: OutputFormats, body: F) -> std::process::ExitCode
where
    C: CommandLine,
    F: FnOnce(C, Printer) -> Fut,
    Fut: Future<Output = Result<ExitCode>>,
{
    let command = crate::cli::offer_output_formats(command, formats);
    let args = crate::env::command_line();
    start_process(&args);
    // Until the flags are parsed, the defaults decide how errors look.
    let unparsed = Printer::new(ColorChoice::Auto, 0, 0);
    if args.get(1).is_some_and(|arg| arg == COMPLETE_ARG) {
        let text = completion::respond(command, &args[2..]);
        return finish(unparsed.data(&text).map(|()| ExitCode::Ok), &unparsed);
    }
    if args.get(1).is_some_and(|arg| arg == crate::manpage::MAN_ARG) {
        return finish(print_man_page(command, &unparsed), &unparsed);
    }
    if args.get(1).is_some_and(|arg| arg == crate::manpage::FLAGS_ARG) {
        return finish(unparsed.data(&crate::manpage::flag_table(command)).map(|()| ExitCode::Ok), &unparsed);
    }
    let matches = match command.try_get_matches_from(args.clone()) {
        Ok(matches) => matches,
        Err(error) => return usage_error(error, &unparsed),
    };
    let parsed = match C::from_arg_matches(&matches) {
        Ok(parsed) => parsed,
        Err(error) => return usage_error(error, &unparsed),
    };
    if let Err(error) = crate::cli::check_output_format(&matches, formats, parsed.global_args().output) {
        return finish(Err(error), &unparsed);
    }
    let printer = Printer::from_args(parsed.global_args());
    for (old, new, why) in crate::cli::deprecated_flags_in(&args) {
        printer.warning(&format!("{old} is deprecated: use {new} ({why})"));
    }
    let outcome = run(body(parsed, printer), printer, command_timeout(&matches));
    // The process ends here: remove what work abandoned at its timeout (a git read left running on
    // a blocking thread) still holds.
    crate::interrupt::remove_scratch_dirs();
    finish(outcome, &printer)
}

/// The command's own `--timeout` (`install`, `app add` …), from the innermost subcommand that has
/// one: it bounds each of the command's network operations too.
fn command_timeout(matches: &clap::ArgMatches) -> Option<Duration> {
    let mut found = None;
    let mut level = Some(matches);
    while let Some(current) = level {
        if let Ok(Some(timeout)) = current.try_get_one::<Duration>("timeout") {
            found = Some(*timeout);
        }
        level = current.subcommand().map(|(_, inner)| inner);
    }
    found
}

/// The hidden argument that makes a binary panic, so that a test can see what a user sees on a bug.
pub const PANIC_ARG: &str = "__panic";

/// What every binary's `main` does first, with its arguments: installs the panic hook, and
/// answers [`PANIC_ARG`].
pub fn start_process(args: &[OsString]) {
    install_panic_hook();
    if args.get(1).is_some_and(|arg| arg == PANIC_ARG) {
        panic!("{PANIC_ARG} asked for a panic");
    }
}

/// What a bug looks like to a user: one `error:` line naming it, a `hint:` to report it, and exit
/// code 5 (docs/exit-codes.md), instead of Rust's panic message and an abort (the release profile
/// has `panic = "abort"`, so nothing would run after this hook).
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|text| (*text).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string());
        let place = info.location().map(|at| format!(" at {}:{}", at.file(), at.line())).unwrap_or_default();
        let printer = Printer::new(ColorChoice::Auto, 0, 0);
        printer.error(&panic_line(&message, &place), Some(&panic_hint()));
        std::process::exit(ExitCode::Internal.code());
    }));
}

/// The `error:` line of a panic: one line, control characters escaped.
fn panic_line(message: &str, place: &str) -> String {
    format!("internal error: {}{place}", message.escape_debug())
}

fn panic_hint() -> String {
    format!(
        "this is a bug in kubectl-gitops {}; please report it with the command you ran at {}/issues",
        crate::version::VERSION_LINE,
        env!("CARGO_PKG_REPOSITORY")
    )
}

/// `BINARY __man`: the binary's man page, titled with the binary's own file name.
pub fn print_man_page(command: clap::Command, printer: &Printer) -> Result<ExitCode> {
    let binary = crate::env::command_line()
        .into_iter()
        .next()
        .map(|arg0| std::path::Path::new(&arg0).file_name().unwrap_or_default().to_string_lossy().into_owned())
        .unwrap_or_default();
    let page = crate::manpage::render(command, &binary).map_err(|error| Error::io("rendering the man page", error))?;
    printer.data(&page).map(|()| ExitCode::Ok)
}

/// Runs a future on a multi-threaded tokio runtime, with rustls' ring provider installed, until
/// it ends or Ctrl-C or SIGTERM stops it ([`Error::Interrupted`], exit 130).
pub fn block_on<T>(future: impl Future<Output = Result<T>>) -> Result<T> {
    run(future, Printer::new(ColorChoice::Auto, 0, 0), None)
}

/// [`block_on`], with the printer a stop without unwinding prints its error with, and the
/// command's `--timeout`.
fn run<T>(future: impl Future<Output = Result<T>>, printer: Printer, command_timeout: Option<Duration>) -> Result<T> {
    crate::http::install_crypto_provider();
    // The limits every git network operation of this command keeps to.
    crate::git::limit_network(command_timeout);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| Error::io("cannot start the async runtime", error))?;
    let outcome = runtime.block_on(interruptible(future, printer));
    // Work abandoned at its timeout (a git read on a blocking thread) must not hold the exit.
    runtime.shutdown_background();
    outcome
}

/// Runs `body` until it ends; after the first Ctrl-C or SIGTERM it has
/// [`crate::timeouts::INTERRUPT_GRACE`] to end by itself (it sees [`crate::interrupt::requested`]),
/// then it is dropped, which removes its clones. A body stuck in a blocking call cannot be
/// dropped: [`stop_on_signal`] ends the process then.
async fn interruptible<T>(body: impl Future<Output = Result<T>>, printer: Printer) -> Result<T> {
    if let Some(signals) = StopSignals::listen() {
        tokio::spawn(stop_on_signal(signals, printer));
    }
    let mut body = std::pin::pin!(body);
    tokio::select! {
        outcome = &mut body => outcome,
        () = crate::interrupt::until_requested() => {
            tokio::time::timeout(crate::timeouts::INTERRUPT_GRACE, body).await.unwrap_or(Err(Error::Interrupted))
        }
    }
}

/// Tells everything to stop at the first signal; at a second one, or when the process is still
/// there shortly after the grace (the main thread stuck in a blocking call, such as a read from a
/// git server that only its socket timeout would end), removes the scratch dirs and exits 130 with
/// the interrupted error, without unwinding.
async fn stop_on_signal(mut signals: StopSignals, printer: Printer) {
    /// After the grace: time for a body that ended to be dropped and its error printed.
    const UNWIND: Duration = Duration::from_millis(300);
    signals.next().await;
    crate::interrupt::request();
    tokio::select! {
        () = tokio::time::sleep(crate::timeouts::INTERRUPT_GRACE + UNWIND) => {}
        () = signals.next() => {}
    }
    crate::interrupt::remove_scratch_dirs();
    let interrupted = Error::Interrupted;
    printer.error(&interrupted.to_string(), interrupted.hint().as_deref());
    std::process::exit(ExitCode::Interrupted.code());
}

/// The signals that stop a command: SIGINT (Ctrl-C) and SIGTERM.
#[cfg(unix)]
struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl StopSignals {
    /// Takes the signals over from their default action (ending the process at once); `None` when
    /// they cannot be, and the defaults stay.
    fn listen() -> Option<StopSignals> {
        use tokio::signal::unix::{SignalKind, signal};
        Some(StopSignals {
            interrupt: signal(SignalKind::interrupt()).ok()?,
            terminate: signal(SignalKind::terminate()).ok()?,
        })
    }

    async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// Ctrl-C where there are no Unix signals.
#[cfg(not(unix))]
struct StopSignals;

#[cfg(not(unix))]
impl StopSignals {
    fn listen() -> Option<StopSignals> {
        Some(StopSignals)
    }

    async fn next(&mut self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// How a version is asked for on a command line; only the dispatcher answers them
/// (`kubectl gitops --version`, `-V`, `kubectl gitops version`).
const VERSION_FLAGS: [&str; 2] = ["--version", "-V"];

/// clap's answer to arguments it cannot parse, as our `error:`/`hint:` pair (exit 2); help
/// requests print as clap prints them. A version asked of a command is refused by name: it
/// printed ours and did nothing before (`upgrade --version v2.7.0`).
pub fn usage_error(error: clap::Error, printer: &Printer) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        error.exit()
    }
    if error.kind() == ErrorKind::UnknownArgument
        && let Some(clap::error::ContextValue::String(given)) = error.get(clap::error::ContextKind::InvalidArg)
        && VERSION_FLAGS.iter().any(|flag| given == flag || given.starts_with(&format!("{flag}=")))
    {
        printer.error(
            &format!("{given} is not a flag of this command: it would have done nothing"),
            Some("`kubectl gitops version` prints kubectl-gitops' version; `install` and `upgrade` take the Flux release as --flux-version"),
        );
        return std::process::ExitCode::from(ExitCode::Usage.code() as u8);
    }
    let text = error.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let message = lines.next().unwrap_or_default().trim_start_matches("error: ").to_string();
    let mut hints: Vec<String> = Vec::new();
    for line in lines {
        if let Some(tip) = line.strip_prefix("tip: ") {
            hints.push(tip.to_string());
        } else if let Some(values) = line.strip_prefix("[possible values: ").and_then(|rest| rest.strip_suffix(']')) {
            hints.push(format!("possible values: {values}"));
        } else if let Some(usage) = line.strip_prefix("Usage: ") {
            hints.push(format!("usage: {usage} (see --help)"));
        }
    }
    let hint = if hints.is_empty() { "see --help".to_string() } else { hints.join("; ") };
    printer.error(&message, Some(&hint));
    std::process::ExitCode::from(ExitCode::Usage.code() as u8)
}

/// Prints the error, if any, and returns the process exit code.
pub fn finish(outcome: Result<ExitCode>, printer: &Printer) -> std::process::ExitCode {
    let code = match outcome {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => ExitCode::Ok,
        Err(error) => {
            printer.error(&crate::diagnostic::chain_to_line(&error), error.hint().as_deref());
            error.exit_code()
        }
    };
    std::process::ExitCode::from(code.code() as u8)
}

/// A reader of our stdout went away (`| head`): not an error of ours.
fn is_broken_pipe(error: &Error) -> bool {
    matches!(error, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_one_error_line_with_a_hint_to_report_it() {
        assert_eq!(
            panic_line("index out of bounds\n\u{1b}[2J", " at shared/src/x.rs:3"),
            "internal error: index out of bounds\\n\\u{1b}[2J at shared/src/x.rs:3"
        );
        assert!(panic_hint().starts_with("this is a bug in kubectl-gitops "), "{}", panic_hint());
        assert!(panic_hint().ends_with("/issues"));
    }
}
