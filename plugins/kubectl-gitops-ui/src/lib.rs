//! `kubectl gitops ui`: the web UI and JSON API on 127.0.0.1.

use gitops_shared::cli::OutputFormats;
use gitops_shared::runtime;
use gitops_shared::ui::{self, UiArgs};

gitops_shared::command_line! {
    /// Serve a live web UI and a JSON API for the apps on this cluster.
    ///
    /// Listens on 127.0.0.1 (a free port unless --port is given) and prints a URL with a one-time
    /// token; on a terminal it opens the browser too. The server acts with your kubeconfig
    /// credentials, so what you see is what RBAC lets you read. It is read-only unless
    /// --allow-writes is given. The Apps page updates itself as the cluster changes. The API is
    /// under /api/v1 (docs/api.md). With --context dev,uat it follows each of those clusters, with
    /// a cluster switcher and a Fleet page (what runs where, live, and promotion with
    /// --allow-writes). Ctrl-C stops it.
    struct Cli { ui: UiArgs }
}

/// What `-o` offers, per subcommand (the others print text).
const OUTPUT_FORMATS: OutputFormats = &[];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops ui", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        let settings = cli.ui.settings(&cli.global, &printer)?;
        ui::serve(&cli.global, &settings, gitops_shared::recorded_commands::replan, printer).await
    })
}
