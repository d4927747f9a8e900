//! The `kubectl-gitops-mcp` binary: the command of lib.rs, which the one `kubectl-gitops` binary of a release
//! runs too (docs/ARCHITECTURE.md, "Layout notes").

fn main() -> std::process::ExitCode {
    kubectl_gitops_mcp::main()
}
