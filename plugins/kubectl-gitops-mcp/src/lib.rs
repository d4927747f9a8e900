//! `kubectl gitops mcp`: the Model Context Protocol over stdio (or HTTP), for AI assistants and
//! editors.

use gitops_shared::cli::OutputFormats;
use gitops_shared::mcp::{self, McpArgs};
use gitops_shared::runtime;

gitops_shared::command_line! {
    /// Serve kubectl-gitops to AI assistants over the Model Context Protocol (stdio, or --http).
    ///
    /// An MCP client (a desktop assistant, an editor) starts it and talks to it on stdin and
    /// stdout (or, with --http, connects to it on 127.0.0.1 with the token it prints): tools that
    /// list the apps, say why one fails, show its history, the cluster's events, its DORA
    /// metrics, drift, the fleet's matrix across contexts, the pull requests kubectl-gitops
    /// opened, what a branch or pull request would change and Flux's upgrade check, each
    /// answering what the command's -o json prints; the docs and the output schemas as
    /// resources. It acts with your kubeconfig, so RBAC decides what the assistant sees. It
    /// only reads unless --allow-writes: then every change goes through the config repo, a pull
    /// request by default (docs/mcp.md). The config repo flags are those the tools reach the
    /// config repo with.
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
        mcp::serve(&cli.global, &cli.mcp, gitops_shared::recorded_commands::replan, printer).await
    })
}
