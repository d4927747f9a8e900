//! `kubectl_complete-gitops`: what kubectl runs to complete `kubectl gitops <TAB>`.
//!
//! kubectl passes the words after `gitops` plus the one being completed; the dispatcher's
//! `__complete` answers in the cobra protocol kubectl reads.

use std::ffi::OsString;

use gitops_shared::cli::ColorChoice;
use gitops_shared::completion::COMPLETE_ARG;
use gitops_shared::error::Error;
use gitops_shared::output::Printer;
use gitops_shared::{plugin, runtime};

fn main() -> std::process::ExitCode {
    let outcome = (|| -> gitops_shared::error::Result<gitops_shared::ExitCode> {
        let dispatcher = plugin::dispatcher().ok_or_else(|| {
            Error::usage(
                "kubectl-gitops is not installed next to kubectl_complete-gitops or on PATH",
                "reinstall the plugin",
            )
        })?;
        let mut args = vec![OsString::from(COMPLETE_ARG)];
        args.extend(std::env::args_os().skip(1));
        std::process::exit(plugin::run(&dispatcher, &args)?);
    })();
    // No flags of ours reach this binary: errors look the default way.
    runtime::finish(outcome, &Printer::new(ColorChoice::Auto, 0, 0))
}
