//! `kubectl_complete-gitops`: what kubectl runs to complete `kubectl gitops <TAB>`.
//!
//! kubectl passes the words after `gitops` plus the one being completed; the dispatcher's
//! `__complete` answers in the cobra protocol kubectl reads.
//!
//! Where every command binary is on PATH (`make install`), kubectl runs `kubectl gitops app …` as
//! the plugin `kubectl-gitops-app` and asks `kubectl_complete-gitops-app` to complete it: that name
//! is a link to this binary (make install makes one per command), and the command it names is put
//! back in front of the words.

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
        let invoked = std::env::args_os().next().unwrap_or_default();
        let name = std::path::Path::new(&invoked).file_name().unwrap_or_default().to_string_lossy().into_owned();
        if let Some(command) = name.trim_end_matches(".exe").strip_prefix("kubectl_complete-gitops-") {
            args.push(OsString::from(command));
        }
        args.extend(std::env::args_os().skip(1));
        std::process::exit(plugin::run(&dispatcher, &args)?);
    })();
    // No flags of ours reach this binary: errors look the default way.
    runtime::finish(outcome, &Printer::new(ColorChoice::Auto, 0, 0))
}
