//! Ctrl-C and SIGTERM, told to whatever is running. `runtime` catches the signal and calls
//! [`request`]; work that cannot be dropped at an await (libgit2 inside a blocking call) polls
//! [`requested`] from its callbacks, async work awaits [`until_requested`], and a plan starts no
//! step after it. A command that cannot unwind in time is stopped without unwinding; the
//! [`ScratchDir`]s it made are removed first ([`remove_scratch_dirs`]), so that no clone is left
//! behind either way.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What to do after an interrupted command, for every error that says it was interrupted.
pub const HINT: &str = "nothing was started after the interrupt; run the command again to finish";

static REQUESTED: AtomicBool = AtomicBool::new(false);
static REQUESTS: tokio::sync::Notify = tokio::sync::Notify::const_new();
/// The scratch directories alive now.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Asks everything running to stop (the first Ctrl-C or SIGTERM).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
    REQUESTS.notify_waiters();
}

/// Whether the user asked us to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Returns once the user asked us to stop (at once if they did already).
pub async fn until_requested() {
    loop {
        let mut notified = std::pin::pin!(REQUESTS.notified());
        // Registered before the flag is read, so that a request in between is not missed.
        notified.as_mut().enable();
        if requested() {
            return;
        }
        notified.await;
    }
}

/// A temporary directory (a clone, a staging area) that is removed when dropped, and also when the
/// process is stopped before it could drop it.
#[derive(Debug)]
pub struct ScratchDir {
    /// `None` once dropped.
    dir: Option<tempfile::TempDir>,
}

impl ScratchDir {
    /// A new empty directory under the system's temp dir (`TMPDIR`), named `<prefix>…`.
    pub fn new(prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        scratch().push(dir.path().to_path_buf());
        Ok(ScratchDir { dir: Some(dir) })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |dir| dir.path())
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let path = dir.path().to_path_buf();
            // Removed before it is forgotten: a stop in between still finds it.
            let _ = dir.close();
            scratch().retain(|live| *live != path);
        }
    }
}

/// Removes every scratch directory still alive: what a command stopped without unwinding, or work
/// abandoned at its timeout, left.
pub fn remove_scratch_dirs() {
    for path in scratch().drain(..) {
        let _ = std::fs::remove_dir_all(path);
    }
}

fn scratch() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic while the list was held left it whole: every change is one push, retain or drain.
    SCRATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_dir_is_listed_while_alive_and_removed_and_forgotten_when_dropped() {
        let dir = ScratchDir::new("interrupt-test-").unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        let path = dir.path().to_path_buf();
        assert!(scratch().contains(&path), "a stop now would remove it");
        drop(dir);
        assert!(!path.exists());
        assert!(!scratch().contains(&path), "forgotten once removed");
    }
}
