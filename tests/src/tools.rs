//! What the tests/testenv build scripts built (cached outside the repo), the Go tools among it
//! (krew, actionlint, helm…: tests/testenv/build-tools.sh), and the npm packages the tests use as
//! clients (axe-core: tests/testenv/build-npm.sh).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

/// The directory a tests/testenv build script built into: `variable` when set (make test passes
/// it), else the last line the script prints.
pub fn built_dir(variable: &str, script: &str) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(variable) {
        return Ok(PathBuf::from(dir));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("testenv").join(script);
    let output = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        bail!("{} failed: {}", script.display(), tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(PathBuf::from(
        stdout.lines().last().with_context(|| format!("{} printed no directory", script.display()))?.trim(),
    ))
}

/// A tool tests/testenv/build-tools.sh built (`GITOPS_TOOLS_DIR` when make test built them);
/// panics, naming what failed, when it cannot be built.
pub fn path(tool: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| built_dir("GITOPS_TOOLS_DIR", "build-tools.sh").expect("the Go tools for the tests"));
    let path = dir.join("bin").join(tool);
    assert!(path.is_file(), "{} is missing: rebuild it with tests/testenv/build-tools.sh", path.display());
    path
}

/// A file of an npm package tests/testenv/build-npm.sh installed (`GITOPS_NPM_DIR` when make test
/// installed them), e.g. `axe-core/axe.min.js`; panics, naming the file, when it is missing.
pub fn npm_file(file: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| built_dir("GITOPS_NPM_DIR", "build-npm.sh").expect("the npm packages for the tests"));
    let path = dir.join("node_modules").join(file);
    assert!(path.is_file(), "{} is missing: install it with tests/testenv/build-npm.sh", path.display());
    path
}

/// The Python of the virtual environment tests/testenv/build-pypi.sh made (`GITOPS_PYPI_DIR` when
/// make test made it), with the official MCP SDK; panics, naming it, when it is missing.
pub fn pypi_python() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir =
        DIR.get_or_init(|| built_dir("GITOPS_PYPI_DIR", "build-pypi.sh").expect("the PyPI packages for the tests"));
    let path = dir.join("bin").join("python");
    assert!(path.is_file(), "{} is missing: make it with tests/testenv/build-pypi.sh", path.display());
    path
}
