//! Where cargo put the binaries under test, and a PATH directory holding them.

use std::path::{Path, PathBuf};

/// Every binary the workspace builds.
pub const ALL: [&str; 22] = [
    "kubectl-gitops",
    "kubectl-gitops-install",
    "kubectl-gitops-app",
    "kubectl-gitops-status",
    "kubectl-gitops-upgrade",
    "kubectl-gitops-detect",
    "kubectl-gitops-diff",
    "kubectl-gitops-drift",
    "kubectl-gitops-fleet",
    "kubectl-gitops-promote",
    "kubectl-gitops-mcp",
    "kubectl-gitops-artifact",
    "kubectl-gitops-component",
    "kubectl-gitops-flux",
    "kubectl-gitops-ui",
    "kubectl-gitops-metrics",
    "kubectl-gitops-pr",
    "kubectl-gitops-repo",
    "kubectl-gitops-tenant",
    "kubectl-gitops-monitoring",
    "kubectl-gitops-platform",
    "kubectl_complete-gitops",
];

/// What a release ships (Makefile's BINARIES): the one binary that runs every command, and
/// kubectl's completion shim.
pub const RELEASE: [&str; 2] = ["kubectl-gitops", "kubectl_complete-gitops"];

/// The machine's kubectl (a prerequisite: `make deps` checks for it).
pub fn kubectl() -> PathBuf {
    ["/usr/bin/kubectl", "/usr/local/bin/kubectl"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("no kubectl in /usr/bin or /usr/local/bin; `make deps` says how to get it")
}

/// Every file under `dir`, by path relative to it, with its contents.
pub fn files_in(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut found = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("a readable directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("under dir").to_string_lossy().into_owned();
                found.insert(relative, std::fs::read(&path).expect("a readable file"));
            }
        }
    }
    found
}

/// `target/<profile>`: test executables live in its `deps/` folder.
pub fn target_dir() -> PathBuf {
    let test_exe = std::env::current_exe().expect("the test knows its own path");
    let deps = test_exe.parent().expect("test binaries live in target/<profile>/deps");
    deps.parent().expect("deps has a parent").to_path_buf()
}

/// The path of one built binary.
pub fn path(name: &str) -> PathBuf {
    let path = target_dir().join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(path.exists(), "{} is not built; run `cargo build --workspace` first", path.display());
    path
}

/// A fresh directory holding links to all our binaries, to put first on PATH, the way
/// `make install` or krew lays them out.
pub fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    for name in ALL {
        link(&path(name), &dir.path().join(name));
    }
    dir
}

fn link(from: &Path, to: &Path) {
    #[cfg(unix)]
    std::os::unix::fs::symlink(from, to).expect("symlink a binary");
    #[cfg(not(unix))]
    std::fs::copy(from, to).map(drop).expect("copy a binary");
}

/// A kubeconfig pointing at a 127.0.0.1 port nothing listens on.
pub fn unreachable_kubeconfig(dir: &Path) -> PathBuf {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        listener.local_addr().expect("local address").port()
    };
    let path = dir.join("unreachable.kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: closed\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: closed\n  context:\n    cluster: closed\n    user: nobody\ncurrent-context: closed\nusers:\n- name: nobody\n  user:\n    token: not-a-real-token\n"
    );
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

/// Gives a command that did not choose where its config file is (`XDG_CONFIG_HOME` or
/// `KUBECTL_GITOPS_CONFIG`; a `HOME` of its own does not count) one beside its kubeconfig
/// (`KUBECONFIG`, or `--kubeconfig`): one per test environment. The hosts commands bind a cluster
/// to are written there (shared/src/config/hosts.rs), so they never reach the real home, an
/// environment whose API server later gets the same port starts clean, and every command of one
/// environment sees the hosts its `install` bound, as an operator's commands do: without a
/// terminal (as here) a record binds nothing on first use (#56).
pub fn isolate_config(command: &mut std::process::Command) -> &mut std::process::Command {
    let chosen = command
        .get_envs()
        .any(|(name, _)| ["XDG_CONFIG_HOME", "KUBECTL_GITOPS_CONFIG"].iter().any(|chosen| name == *chosen));
    let from_env = command.get_envs().find(|(name, _)| *name == "KUBECONFIG").and_then(|(_, value)| value);
    let mut args = command.get_args();
    let from_flag = args.by_ref().find(|arg| *arg == "--kubeconfig").and_then(|_| args.next());
    let beside = from_env.or(from_flag).map(Path::new).and_then(Path::parent).map(Path::to_path_buf);
    match beside {
        Some(dir) if !chosen => command.env("KUBECTL_GITOPS_CONFIG", dir.join("kubectl-gitops-config.yaml")),
        _ => command,
    }
}
