//! The plan every changing `app` command builds first: the repo files to change, how the change
//! is delivered, the objects patched in the cluster. `--dry-run` prints it; execution
//! ([`super::deliver`]) consumes the same value, so the two cannot drift apart.

pub use crate::plan::{FileChange, diff, files_under, read};

/// One thing an `app` command does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Suspend or resume one object in the cluster.
    Patch(SuspendPatch),
    /// Rewrite a Flux kind's stored objects at its storage version and trim the CRD's
    /// `status.storedVersions` (`upgrade`): before the commit, so that Flux can apply new CRDs.
    MigrateStorage(crate::flux::storage::StoredKind),
    /// Commit the files and push them to the config branch (`publish`).
    Push,
    /// Commit the files and push them to a branch of their own, for a pull request.
    PushBranch {
        /// `gitops/<verb>-<app>-<hash>`.
        branch: String,
    },
    /// Open the pull or merge request from that branch, or update the open one.
    OpenPullRequest {
        /// The branch pushed by the step before.
        branch: String,
    },
    /// Read the pull request back before saying it is there: the provider lists it open from
    /// the branch, and the branch, cloned again, holds exactly the planned files.
    CheckPullRequest {
        /// The branch of the pull request.
        branch: String,
    },
    /// Wait for Flux to apply the commit (`--wait`); the command does it once delivered.
    Wait,
}

/// How the commit reaches the config repo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Push to the config branch.
    Push,
    /// Push to a new branch and open (or update) a pull request into the config branch.
    PullRequest {
        /// The branch, `gitops/<verb>-<app>-<short hash of the change>`: the same change gives
        /// the same branch, so a re-run updates its pull request instead of failing.
        branch: String,
        /// `pull request` or `merge request`.
        noun: &'static str,
    },
}

/// A merge patch of `spec.suspend` on one object in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuspendPatch {
    /// The Flux kind.
    pub kind: &'static crate::flux::api::FluxKind,
    /// The API version the cluster serves.
    pub version: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The value written.
    pub suspend: bool,
}

/// What a changing `app` command will do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The commit message (and pull request title).
    pub message: String,
    /// The config repo URL and branch.
    pub repo: String,
    /// The config branch.
    pub branch: String,
    /// The repo files that change (empty: nothing to commit).
    pub files: Vec<FileChange>,
    /// How the commit is delivered.
    pub delivery: Delivery,
    /// Objects patched in the cluster (suspend, resume).
    pub patches: Vec<SuspendPatch>,
    /// Flux kinds whose storage is migrated before the commit (upgrade).
    pub migrations: Vec<crate::flux::storage::StoredKind>,
    /// The Flux objects the change adds or removes, for the pull request body.
    pub objects: Vec<String>,
    /// What `--wait` waits for, when asked.
    pub wait: Option<String>,
    /// What the user should know (e.g. that Flux prunes a removed app).
    pub notes: Vec<String>,
}

impl Plan {
    /// Whether there is nothing to do.
    pub fn is_noop(&self) -> bool {
        self.files.is_empty() && self.patches.is_empty() && self.migrations.is_empty()
    }

    /// The steps in order, each with its words.
    pub fn steps(&self) -> Vec<(Step, String)> {
        let mut steps: Vec<(Step, String)> = self
            .patches
            .iter()
            .map(|patch| {
                let words = format!(
                    "patch {} {}/{}: spec.suspend = {}",
                    patch.kind.kind, patch.namespace, patch.name, patch.suspend
                );
                (Step::Patch(patch.clone()), words)
            })
            .collect();
        steps.extend(self.migrations.iter().map(|kind| (Step::MigrateStorage(kind.clone()), kind.describe())));
        if !self.files.is_empty() {
            let count = self.files.len();
            match &self.delivery {
                Delivery::Push => steps.push((
                    Step::Push,
                    format!(
                        "commit {count} file change(s) ({:?}) and push to {} of {}",
                        self.message, self.branch, self.repo
                    ),
                )),
                Delivery::PullRequest { branch, noun } => {
                    steps.push((
                        Step::PushBranch { branch: branch.clone() },
                        format!("commit {count} file change(s) ({:?}) and push branch {branch}", self.message),
                    ));
                    steps.push((
                        Step::OpenPullRequest { branch: branch.clone() },
                        format!("open a {noun} from {branch} into {} (or update the open one)", self.branch),
                    ));
                    steps.push((
                        Step::CheckPullRequest { branch: branch.clone() },
                        format!(
                            "check that the {noun} is open and its branch holds the {count} planned file change(s)"
                        ),
                    ));
                }
            }
        }
        if let Some(wait) = &self.wait {
            steps.push((Step::Wait, wait.clone()));
        }
        steps
    }

    /// The `--dry-run` text: numbered steps, then a unified diff of the repo.
    pub fn render(&self) -> String {
        let mut text = String::new();
        if self.is_noop() {
            text.push_str("Nothing to change: the config repo already holds this.\n");
            return text;
        }
        text.push_str(&crate::plan::render_steps(self.steps().iter().map(|(_, words)| words.as_str())));
        for note in &self.notes {
            text.push_str(&format!("Note: {note}\n"));
        }
        if !self.files.is_empty() {
            text.push('\n');
        }
        for file in &self.files {
            // Flux's own manifests are thousands of generated lines: named, not shown.
            if file.path.ends_with("flux-system/gotk-components.yaml") {
                let header = |text: &Option<String>| {
                    text.as_deref().and_then(|text| crate::flux::bootstrap::parse_components_header(text).0)
                };
                text.push_str(&format!(
                    "# {}: {} -> {} (generated by flux, not shown)\n",
                    file.path,
                    header(&file.before).unwrap_or_else(|| "none".into()),
                    header(&file.after).unwrap_or_else(|| "none".into())
                ));
                continue;
            }
            text.push_str(&crate::plan::unified_diff(file));
        }
        text
    }

    /// The pull request body: the files and objects the change touches.
    pub fn pull_request_body(&self) -> String {
        let mut body = String::from("Opened by `kubectl gitops`.\n\n### Files\n");
        for file in &self.files {
            body.push_str(&format!("- {} `{}`\n", file.verb(), file.path));
        }
        if !self.objects.is_empty() {
            body.push_str("\n### Flux objects\n");
            for object in &self.objects {
                body.push_str(&format!("- {object}\n"));
            }
        }
        if !self.migrations.is_empty() {
            body.push_str("\n### Done in the cluster before this change\n");
            for kind in &self.migrations {
                body.push_str(&format!("- {}\n", kind.describe()));
            }
        }
        if !self.notes.is_empty() {
            body.push_str("\n### Notes\n");
            for note in &self.notes {
                body.push_str(&format!("- {note}\n"));
            }
        }
        body
    }
}

/// The short hash naming a pull request branch: the git hash of the change's paths and contents.
pub fn change_hash(files: &[FileChange]) -> String {
    let mut material = String::new();
    for file in files {
        material.push_str(&file.path);
        material.push('\0');
        material.push_str(file.after.as_deref().unwrap_or("<deleted>"));
        material.push('\0');
    }
    let oid = git2::Oid::hash_object(git2::ObjectType::Blob, material.as_bytes())
        .map_or_else(|_| String::from("0000000"), |oid| oid.to_string());
    oid[..7].to_string()
}
