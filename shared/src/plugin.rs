//! The commands of the suite, and how the dispatcher finds and runs other command binaries
//! (`kubectl-gitops-<command>`): the suite's own run in the dispatcher's process; any other is
//! looked for next to the dispatcher's own resolved executable first, then on PATH, like cargo's
//! external subcommands.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::diagnostic::QuotedList;
use crate::env;
use crate::error::{Error, Result};

/// The hidden argument that switches a binary into completion mode: the dispatcher hands a
/// line to a command binary's own completion with it ([`crate::completion`]).
pub const COMPLETE_ARG: &str = "__complete";

/// Prefix of every command binary.
pub const BINARY_PREFIX: &str = "kubectl-gitops-";

/// The commands kubectl-gitops ships, with the one-line description the dispatcher shows.
pub const COMMANDS: [(&str, &str); 20] = [
    ("install", "Bootstrap Flux and the GitOps repo layout into a cluster"),
    ("app", "Add, list, remove, suspend and resume apps in the config repo"),
    ("status", "What runs where, at which commit, healthy or not, and why"),
    ("upgrade", "Move Flux and the repo layout to a new version through git"),
    ("detect", "Report what the cluster holds: unreachable, unmodified, flux2 or gitops"),
    ("diff", "What a checkout of the config repo would change in the cluster, before it is merged"),
    ("drift", "What differs in the cluster from what Flux last applied, and who changed it"),
    ("fleet", "Apps × clusters: what runs where, at which version, across kubeconfig contexts"),
    ("promote", "Carry what one environment runs of an app to another, through git"),
    ("artifact", "Push, pull and compare Flux OCI artifacts, as `flux push artifact` makes them"),
    ("component", "List components shipped as OCI artifacts and upgrade them through git"),
    ("flux", "Run any flux command with the pinned, verified flux CLI"),
    ("ui", "Serve a live web UI and JSON API for the apps on this cluster"),
    ("mcp", "Serve the apps' state to AI assistants over the Model Context Protocol"),
    ("metrics", "DORA metrics from the apps' deployment history"),
    ("tenant", "Connect teams to namespaces, each with its own repo"),
    ("monitoring", "Prometheus, Grafana and alerts for Flux"),
    ("platform", "Cluster-wide services every team uses"),
    ("pr", "List, validate, approve and merge the pull requests kubectl-gitops opened"),
    ("repo", "Create app repositories from our layout, a template, a fork or any git repo"),
];

/// Directories searched for command binaries, in order: `KUBECTL_GITOPS_PLUGIN_DIR`, the
/// dispatcher's own directory (symlinks resolved, for krew), then PATH.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os(env::KUBECTL_GITOPS_PLUGIN_DIR) {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.canonicalize().ok())
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        dirs.push(dir);
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs
}

/// The binary for a command, if one is installed.
pub fn find(command: &str) -> Option<PathBuf> {
    find_executable(&format!("{BINARY_PREFIX}{command}"))
}

/// The dispatcher, `kubectl-gitops`, for helpers that hand work back to it.
pub fn dispatcher() -> Option<PathBuf> {
    find_executable("kubectl-gitops")
}

/// The first executable named `name` (plus `.exe` on Windows) in [`search_dirs`].
fn find_executable(name: &str) -> Option<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    search_dirs().into_iter().map(|dir| dir.join(&file)).find(|path| is_executable(path))
}

/// The names of every installed command binary (`status`, `app`, …), sorted.
pub fn installed() -> Vec<String> {
    let mut names = BTreeSet::new();
    for dir in search_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let file = entry.file_name();
            let Some(file) = file.to_str() else { continue };
            let Some(name) = file.strip_prefix(BINARY_PREFIX) else {
                continue;
            };
            let name = name.strip_suffix(std::env::consts::EXE_SUFFIX).unwrap_or(name);
            if !name.is_empty() && is_executable(&entry.path()) {
                names.insert(name.to_string());
            }
        }
    }
    names.into_iter().collect()
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The error for an unknown command: a "did you mean" when one is close, and the installed list.
pub fn unknown_command(typed: &str, known: &[String]) -> Error {
    let mut hint = match closest(typed, known) {
        Some(name) => format!("did you mean \"{name}\"?\n"),
        None => String::new(),
    };
    hint.push_str(&format!("installed commands: {}", QuotedList(known)));
    Error::Usage { message: format!("unknown command \"{typed}\""), hint: Some(hint) }
}

/// The known name closest to what was typed, if it is close enough to be a typo.
pub fn closest<'a>(typed: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|name| (edit_distance(typed, name), name))
        .filter(|(distance, name)| *distance <= 2.max(name.len() / 3))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name.as_str())
}

/// Levenshtein distance, counting a swap of two neighbours as one edit (as in "stauts").
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in table.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in table[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (table[i - 1][j] + 1).min(table[i][j - 1] + 1).min(table[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(table[i - 2][j - 2] + 1);
            }
            table[i][j] = best;
        }
    }
    table[a.len()][b.len()]
}

/// Runs a command binary with these arguments and returns its exit code. On Unix the
/// process is replaced (exec), so this only returns when exec itself failed.
pub fn run(binary: &Path, args: &[OsString]) -> Result<i32> {
    let mut command = std::process::Command::new(binary);
    command.args(args);
    if let Ok(dispatcher) = std::env::current_exe() {
        command.env(env::KUBECTL_GITOPS_DISPATCHER, dispatcher);
    }
    exec(command)
}

/// Runs `command` in place of this process on Unix (signals and the exit code are its own), or
/// waits for it elsewhere; returns its exit code, or the error when it could not start.
pub fn exec(mut command: std::process::Command) -> Result<i32> {
    let program = PathBuf::from(command.get_program());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let error = command.exec();
        Err(Error::io(format!("cannot run {}", program.display()), error))
    }
    #[cfg(not(unix))]
    {
        let status = command.status().map_err(|error| Error::io(format!("cannot run {}", program.display()), error))?;
        Ok(status.code().unwrap_or(crate::ExitCode::Internal.code()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<String> {
        ["app", "artifact", "detect", "flux", "install", "status", "upgrade"].map(String::from).to_vec()
    }

    #[test]
    fn typos_find_the_command() {
        assert_eq!(closest("stauts", &known()), Some("status"));
        assert_eq!(closest("instal", &known()), Some("install"));
        assert_eq!(closest("detcet", &known()), Some("detect"));
        assert_eq!(closest("kubernetes", &known()), None);
    }

    #[test]
    fn unknown_command_names_it_and_suggests() {
        let error = unknown_command("stauts", &known());
        assert_eq!(error.to_string(), r#"unknown command "stauts""#);
        insta::assert_snapshot!(error.hint().unwrap(), @r#"
        did you mean "status"?
        installed commands: "app", "artifact", "detect", "flux", "install", "status" and "upgrade"
        "#);
    }
}
