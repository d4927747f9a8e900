//! A push that races ours, made deterministic: a `post-receive` hook in a bare repository on the
//! git server that, whenever a branch whose name starts with a given prefix receives a commit,
//! at once puts a commit of its own on top, adding one file. What a second writer pushing to a
//! pull request branch right after us looks like to everything that reads the branch next.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The hook, in place until dropped.
pub struct RacingPush {
    hook: PathBuf,
    log: PathBuf,
}

impl RacingPush {
    /// Installs the hook into the bare repository `bare`: every push to a branch starting with
    /// `branch_prefix` is followed by a commit adding `path`. A Gitea repository runs the hooks
    /// in `hooks/post-receive.d/` after its own; a plain one runs `hooks/post-receive`.
    pub fn install(bare: &Path, branch_prefix: &str, path: &str) -> Result<RacingPush> {
        let hooks = bare.join("hooks");
        let gitea_hooks = hooks.join("post-receive.d");
        let hook = if gitea_hooks.is_dir() { gitea_hooks.join("racing-push") } else { hooks.join("post-receive") };
        let log = bare.join("racing-push.log");
        let script = format!(
            r#"#!/bin/sh
# A commit of someone else's on top of each one pushed to {branch_prefix}*.
cd "${{GIT_DIR:-.}}" || exit 1
while read -r old new ref; do
    case "$ref" in refs/heads/{branch_prefix}*) ;; *) continue ;; esac
    [ "$new" = 0000000000000000000000000000000000000000 ] && continue
    export GIT_INDEX_FILE="$PWD/racing-push.index"
    git read-tree "$new" || exit 1
    blob=$(printf 'pushed meanwhile\n' | git hash-object -w --stdin) || exit 1
    git update-index --add --cacheinfo "100644,$blob,{path}" || exit 1
    tree=$(git write-tree) || exit 1
    commit=$(git -c user.name=racer -c user.email=racer@example.invalid commit-tree "$tree" -p "$new" -m "Pushed meanwhile") || exit 1
    git update-ref "$ref" "$commit" "$new" || exit 1
    rm -f "$GIT_INDEX_FILE"
    echo "$new $commit" >>"{log}"
done
"#,
            log = log.display()
        );
        std::fs::write(&hook, script).with_context(|| format!("writing {}", hook.display()))?;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))?;
        Ok(RacingPush { hook, log })
    }

    /// Each push the hook raced: the commit pushed, and the one it put on top.
    pub fn raced(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.split_once(' ').map(|(ours, theirs)| (ours.to_string(), theirs.to_string())))
            .collect()
    }
}

impl Drop for RacingPush {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.hook);
    }
}
