//! `kubectl gitops mcp`: the Model Context Protocol over stdio, for AI assistants and editors.

use gitops_shared::cli::OutputFormats;
use gitops_shared::mcp::{self, McpArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Serve kubectl-gitops to AI assistants over the Model Context Protocol (stdio).
    ///
    /// An MCP client (a desktop assistant, an editor) starts it and talks to it on stdin and
    /// stdout: tools that list the apps, say why one fails, show its history, the cluster's
    /// events, its DORA metrics, drift and the fleet's matrix across contexts, each answering what the
    /// command's -o json prints. It acts with your kubeconfig, so RBAC decides what the assistant
    /// sees; it changes nothing (docs/mcp.md). The config repo flags are those drift and fleet
    /// status read the config repo with.
    ///
    /// Example: kubectl gitops mcp --context staging
    struct Cli { mcp: McpArgs }
}

/// What `-o` offers: nothing; the protocol is the output.
const OUTPUT_FORMATS: OutputFormats = &[];

/// The command, run with the process's command line (the binary's own, or the one the
/// `kubectl-gitops` of a release runs it with in its own process).
pub fn main() -> std::process::ExitCode {
    runtime::main("kubectl gitops mcp", OUTPUT_FORMATS, |cli: Cli, printer| async move {
        mcp::serve(&cli.global, &cli.mcp, printer).await
    })
}
