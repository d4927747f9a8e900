//! Every environment variable kubectl-gitops reads, declared once, with what it does.
//!
//! Code reads variables only through these constants, so this file is the complete list
//! (docs/ARCHITECTURE.md points here).

/// Colon-separated kubeconfig files, merged the way kubectl merges them.
pub const KUBECONFIG: &str = "KUBECONFIG";
/// When set to anything non-empty, no colour and no glyphs are printed (<https://no-color.org>).
pub const NO_COLOR: &str = "NO_COLOR";
/// Forces colour on even when stdout is not a terminal (like `--color always`).
pub const FORCE_COLOR: &str = "FORCE_COLOR";
/// Set by kubectl when it runs a plugin: the kubectl that started us.
pub const KUBECTL_PATH: &str = "KUBECTL_PATH";
/// Overrides the directory the dispatcher searches first for `kubectl-gitops-<command>` binaries.
pub const KUBECTL_GITOPS_PLUGIN_DIR: &str = "KUBECTL_GITOPS_PLUGIN_DIR";
/// Set by the dispatcher for the command it runs: the dispatcher's own path.
pub const KUBECTL_GITOPS_DISPATCHER: &str = "KUBECTL_GITOPS_DISPATCHER";
