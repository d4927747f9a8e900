//! The `main` of every binary: parse, run on tokio, and turn the outcome into an exit code.

use std::ffi::OsString;
use std::future::Future;

use clap::{CommandFactory, FromArgMatches};

use crate::cli::{ColorChoice, GlobalArgs};
use crate::completion::{self, COMPLETE_ARG};
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;

/// A binary's parsed command line: it exposes the shared options.
pub trait CommandLine: CommandFactory + FromArgMatches {
    /// The shared options inside the parsed arguments.
    fn global_args(&self) -> &GlobalArgs;
}

/// Implements [`CommandLine`] for a clap struct that flattens the shared options into its
/// `global` field: `gitops_shared::command_line!(Cli);`.
#[macro_export]
macro_rules! command_line {
    ($cli:ty) => {
        impl $crate::runtime::CommandLine for $cli {
            fn global_args(&self) -> &$crate::cli::GlobalArgs {
                &self.global
            }
        }
    };
}

/// Runs a binary. `display_name` is how usage lines name it (`kubectl gitops status`).
///
/// Handles `__complete` before parsing, makes the [`Printer`] the body prints with, installs
/// the TLS provider, and maps errors to `error:`/`hint:` lines and the documented exit codes.
/// A closed stdout pipe exits 0.
pub fn main<C, F, Fut>(display_name: &'static str, body: F) -> std::process::ExitCode
where
    C: CommandLine,
    F: FnOnce(C, Printer) -> Fut,
    Fut: Future<Output = Result<ExitCode>>,
{
    main_with(C::command().bin_name(display_name).name(display_name), body)
}

/// [`main`] with a clap command the caller adjusted (for example its about text).
pub fn main_with<C, F, Fut>(command: clap::Command, body: F) -> std::process::ExitCode
where
    C: CommandLine,
    F: FnOnce(C, Printer) -> Fut,
    Fut: Future<Output = Result<ExitCode>>,
{
    let args: Vec<OsString> = std::env::args_os().collect();
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
    let parsed = match command.try_get_matches_from(args).and_then(|matches| C::from_arg_matches(&matches)) {
        Ok(parsed) => parsed,
        Err(error) => return usage_error(error, &unparsed),
    };
    let printer = Printer::from_args(parsed.global_args());
    finish(block_on(body(parsed, printer)), &printer)
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
    let binary = std::env::args_os()
        .next()
        .map(|arg0| std::path::Path::new(&arg0).file_name().unwrap_or_default().to_string_lossy().into_owned())
        .unwrap_or_default();
    let page = crate::manpage::render(command, &binary).map_err(|error| Error::io("rendering the man page", error))?;
    printer.data(&page).map(|()| ExitCode::Ok)
}

/// Runs a future on a multi-threaded tokio runtime, with rustls' ring provider installed.
pub fn block_on<T>(future: impl Future<Output = Result<T>>) -> Result<T> {
    // Only ring is compiled in; installing it explicitly avoids rustls' run-time panic when
    // it cannot pick a provider by itself.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| Error::io("cannot start the async runtime", error))?;
    runtime.block_on(future)
}

/// clap's answer to arguments it cannot parse, as our `error:`/`hint:` pair (exit 2); help and
/// version requests print as clap prints them.
fn usage_error(error: clap::Error, printer: &Printer) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        error.exit()
    }
    let text = error.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let message = lines.next().unwrap_or_default().trim_start_matches("error: ").to_string();
    let mut hints: Vec<String> = Vec::new();
    for line in lines {
        if let Some(tip) = line.strip_prefix("tip: ") {
            hints.push(tip.to_string());
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
