//! `kubectl gitops status`: planned; its issue replaces this placeholder.

fn main() -> std::process::ExitCode {
    gitops_shared::runtime::not_implemented("status")
}
