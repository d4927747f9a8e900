//! `kubectl gitops flux ARGS…`: the pinned, verified flux CLI, with the arguments passed verbatim
//! and flux's exit code as ours (shared/src/flux_passthrough.rs).

use std::ffi::OsString;

use gitops_shared::cli::ColorChoice;
use gitops_shared::error::ExitCode;
use gitops_shared::flux_passthrough::{self, Request};
use gitops_shared::output::Printer;
use gitops_shared::runtime;

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    let args: Vec<OsString> = gitops_shared::env::command_line();
    runtime::start_process(&args);
    // flux owns -v, -q and the rest of the command line, so our output keeps its defaults.
    let printer = Printer::new(ColorChoice::Auto, 0, 0);
    let words: Vec<OsString> = args[1..].to_vec();
    let request = match flux_passthrough::parse(&words) {
        Ok(request) => request,
        Err(error) => return runtime::finish(Err(error), &printer),
    };
    let (cli, args) = match request {
        Request::Usage => {
            return runtime::finish(printer.data(flux_passthrough::USAGE).map(|()| ExitCode::Ok), &printer);
        }
        Request::InstallCli { version, embedded, allow_unpinned } => {
            let installed =
                runtime::block_on(flux_passthrough::install_cli(version, embedded, allow_unpinned, &printer));
            let printed = installed.and_then(|path| printer.data(&path)).map(|()| ExitCode::Ok);
            return runtime::finish(printed, &printer);
        }
        Request::Complete { flux_bin, args } => {
            return flux_exit(flux_passthrough::complete(flux_bin, &args, &printer), &printer);
        }
        Request::Run { flux_bin, allow_unpinned, args } => {
            match runtime::block_on(flux_passthrough::prepare(flux_bin, allow_unpinned, args, &printer)) {
                Ok(prepared) => prepared,
                Err(error) => return runtime::finish(Err(error), &printer),
            }
        }
    };
    // The runtime is gone by now: on Unix flux replaces this process.
    flux_exit(flux_passthrough::run(&cli, &args), &printer)
}

/// flux's exit code as ours, or our error when flux could not run.
fn flux_exit(outcome: gitops_shared::error::Result<i32>, printer: &Printer) -> std::process::ExitCode {
    match outcome {
        Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX)),
        Err(error) => runtime::finish(Err(error), printer),
    }
}
