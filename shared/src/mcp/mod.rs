//! `kubectl gitops mcp`: the Model Context Protocol over stdio, for AI assistants and editors,
//! with the official Rust SDK (rmcp). Each tool is a thin wrapper over what a command already
//! does, answering the document its `-o json` prints (schemas from the same types); it acts with
//! the user's kubeconfig, so RBAC decides what an assistant sees (docs/mcp.md).
//!
//! - [`tools`]: the tools that read, their inputs, and the bound on a result's size.
//! - [`writes`]: the tools that change something, only with `--allow-writes`.
//! - [`resources`]: the docs and the output schemas, for an assistant to read.
//! - [`http`]: `--http`, the same server over streamable HTTP on loopback, behind a token.

mod http;
mod resources;
mod tools;
mod writes;

use rmcp::ServiceExt;

use crate::change::Target;
use crate::cli::{GlobalArgs, RepoArgs};
use crate::cluster::Cluster;
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;

/// The flags of `kubectl gitops mcp`.
#[derive(Debug, Clone, clap::Args)]
pub struct McpArgs {
    /// How the tools that read the config repo (fleet_status: its fleet file and head) reach it.
    #[command(flatten)]
    pub repo: RepoArgs,

    /// Allow changes; read-only otherwise.
    ///
    /// Also serve the tools that change something (add_app, remove_app, suspend_app, resume_app,
    /// rollback_app, promote, merge_pr, reconcile_app): each change of the config repo through a
    /// pull request unless the call asks for a push, a dry run when asked. Without it the server
    /// only reads.
    #[arg(long)]
    pub allow_writes: bool,

    /// Serve over streamable HTTP on 127.0.0.1 instead of stdio.
    ///
    /// Serve the protocol over streamable HTTP on 127.0.0.1 (at /mcp) instead of stdio: it
    /// prints the address and the `Authorization: Bearer <token>` header every request must
    /// carry (a random token, as the UI's), and answers only to loopback names and its own
    /// origin. Ctrl-C ends it.
    #[arg(long)]
    pub http: bool,

    /// The port to listen on; a free one is picked when not given.
    #[arg(long, requires = "http")]
    pub port: Option<u16>,

    /// Let merge_pr merge a pull request this server opened.
    ///
    /// Let merge_pr merge a pull request this server itself opened (with add_app, promote, …).
    /// Without it such a merge is refused: a change an assistant made is merged only after a
    /// second look, by a person or by another session.
    #[arg(long, requires = "allow_writes")]
    pub allow_self_merge: bool,
}

/// Serves the tools on stdin and stdout until the client closes stdin (or Ctrl-C). Nothing else
/// may be written to stdout: it is the protocol's; progress and warnings go to stderr. With
/// `--http`, over streamable HTTP instead ([`http`]). `replan` plans a pull request's recorded
/// request again (the binary hands in the edge's).
pub async fn serve(
    global: &GlobalArgs,
    args: &McpArgs,
    replan: crate::change::recorded::Replanner,
    printer: Printer,
) -> Result<ExitCode> {
    // `--context dev,uat`: the server's cluster is the first, and fleet_status may ask them all.
    let several = crate::contexts::several(global)?;
    let mut first = global.clone();
    if let Some(contexts) = &several {
        first.context = contexts.first().cloned();
    }
    let target = Target::from_args(&first);
    let cluster = Cluster::connect(&target.connection, &printer).await?;
    let contexts = several.unwrap_or_else(|| cluster.context.iter().cloned().collect());
    let writes = tools::Writes { allowed: args.allow_writes, self_merge: args.allow_self_merge };
    let server = tools::Tools::new(cluster, contexts, first, args.repo.clone(), replan, printer, writes);
    if args.http {
        http::serve(server, args.port.unwrap_or(0), &printer).await?;
        return Ok(ExitCode::Ok);
    }
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| Error::Internal(format!("the MCP session did not start: {error}")))?;
    tokio::select! {
        ended = running.waiting() => {
            ended.map_err(|error| Error::Internal(format!("the MCP session ended: {error}")))?;
        }
        () = crate::interrupt::until_requested() => {}
    }
    Ok(ExitCode::Ok)
}
