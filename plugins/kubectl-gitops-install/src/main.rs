//! `kubectl gitops install`: planned; its issue replaces this placeholder.

fn main() -> std::process::ExitCode {
    gitops_shared::runtime::not_implemented("install")
}
