//! The plan every changing command builds first: the repo files to change, how the change
//! is delivered, the objects patched in the cluster. `--dry-run` prints it; execution
//! ([`super::deliver`]) consumes the same value, so the two cannot drift apart.

pub use crate::plan::{FileChange, blob_id, diff, differences, files_under, read};

use super::layout::SuspendPatch;

/// One thing an `app` command does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Make the app's repository, or its deploy key (`app add --create-repo`): before anything
    /// else, undone when a later step fails before the config repo changed.
    NewRepo(super::new_repo::AppStep),
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
    /// the branch, whose head is the commit pushed and whose whole change is exactly the plan.
    CheckPullRequest {
        /// The branch of the pull request.
        branch: String,
    },
    /// Merge the pull request (`--merge`), guarded by the branch's head as checked.
    MergePullRequest {
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
        /// `--merge`: merge it once it is opened and read back.
        merge: bool,
    },
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
    /// `app add --create-repo`: the app's repository, made first.
    pub new_repo: Option<super::new_repo::ForApp>,
    /// The words that plan this change again, for the pull request body (empty: none).
    pub request: Vec<String>,
}

impl Plan {
    /// Whether there is nothing to do.
    pub fn is_noop(&self) -> bool {
        self.files.is_empty() && self.patches.is_empty() && self.migrations.is_empty() && self.new_repo.is_none()
    }

    /// The steps in order, each with its words.
    pub fn steps(&self) -> Vec<(Step, String)> {
        let mut steps: Vec<(Step, String)> = self
            .new_repo
            .iter()
            .flat_map(|new_repo| new_repo.steps())
            .map(|(step, words)| (Step::NewRepo(step), words))
            .collect();
        steps.extend(self.patches.iter().map(|patch| {
            let words = format!(
                "patch {} {}/{}: spec.suspend = {}",
                patch.kind.kind, patch.namespace, patch.name, patch.suspend
            );
            (Step::Patch(patch.clone()), words)
        }));
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
                Delivery::PullRequest { branch, noun, merge } => {
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
                            "check that the {noun} is open and its branch holds exactly the {count} planned file change(s)"
                        ),
                    ));
                    if *merge {
                        steps.push((
                            Step::MergePullRequest { branch: branch.clone() },
                            format!(
                                "merge the {noun} into {} (a merge commit, guarded by the head of {branch} checked)",
                                self.branch
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(wait) = &self.wait {
            let words = match &self.delivery {
                Delivery::PullRequest { noun, .. } if !self.files.is_empty() => {
                    format!("wait until the {noun} is merged, then {}", wait.replace("the pushed commit", "the merge"))
                }
                _ => wait.clone(),
            };
            steps.push((Step::Wait, words));
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

    /// The pull request body: the files and objects the change touches. Each file it writes
    /// names its planned contents' blob id, so that `pr show` can name a file edited by hand.
    pub fn pull_request_body(&self) -> String {
        let mut body = format!("{PULL_REQUEST_MARK}\n\n{FILES_HEADING}\n");
        for file in &self.files {
            match &file.after {
                Some(after) => {
                    body.push_str(&format!("- {} `{}` (blob {})\n", file.verb(), file.path, blob_id(after.as_bytes())))
                }
                None => body.push_str(&format!("- {} `{}`\n", file.verb(), file.path)),
            }
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
        if !self.request.is_empty()
            && let Some(section) = body_section(&self.request)
        {
            body.push_str(&section);
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

/// The first line of every pull request body we write: how `pr` knows its own.
pub const PULL_REQUEST_MARK: &str = "Opened by `kubectl gitops`.";
/// The body's list of the planned files.
const FILES_HEADING: &str = "### Files";
/// Every pull request branch we push starts with this.
pub const PULL_REQUEST_BRANCH_PREFIX: &str = "gitops/";

/// The branch of a change's pull request, `gitops/<verb>-<app>-<change hash>`: the same change
/// gives the same branch, so a re-run updates its pull request instead of failing.
pub fn pull_request_branch(verb: &str, app: &str, files: &[FileChange]) -> String {
    format!("{PULL_REQUEST_BRANCH_PREFIX}{verb}-{app}-{}", change_hash(files))
}

/// How many hex digits an older kubectl-gitops put in a pull request branch's name: 7 digits
/// of SHA-1, which a forger can grind to in about 2^28 tries.
const OLDER_HASH_DIGITS: usize = 7;
/// The hex digits of [`change_hash`]: a whole SHA-256.
const HASH_DIGITS: usize = 64;

/// What a pull request branch's name says: `gitops/<verb>-<name>-<hash>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchName {
    /// `add`, `remove`, `upgrade`, …
    pub verb: String,
    /// The app, tenant or component changed.
    pub name: String,
    /// [`change_hash`] of the planned file changes.
    pub hash: String,
}

impl BranchName {
    /// `None` for a branch we did not name. An older kubectl-gitops' branch (7 hex digits) is
    /// parsed too, so that it can be listed and told apart ([`BranchName::is_older`]).
    pub fn parse(branch: &str) -> Option<BranchName> {
        let rest = branch.strip_prefix(PULL_REQUEST_BRANCH_PREFIX)?;
        let (verb, rest) = rest.split_once('-')?;
        let (name, hash) = rest.rsplit_once('-')?;
        let hex = [OLDER_HASH_DIGITS, HASH_DIGITS].contains(&hash.len())
            && hash.chars().all(|c| c.is_ascii_digit() || matches!(c, 'a'..='f'));
        (hex && !verb.is_empty() && !name.is_empty()).then(|| BranchName {
            verb: verb.to_string(),
            name: name.to_string(),
            hash: hash.to_string(),
        })
    }

    /// Named by an older kubectl-gitops, with 7 digits of SHA-1: too short to rely on, so such a
    /// pull request is listed but never validates.
    pub fn is_older(&self) -> bool {
        self.hash.len() == OLDER_HASH_DIGITS
    }
}

/// One line of a pull request body's file list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedFile {
    /// `add`, `update` or `delete`.
    pub verb: String,
    /// The path.
    pub path: String,
    /// The planned contents' [`blob_id`]; `None` for a deletion (or a body written before
    /// bodies carried them).
    pub blob: Option<String>,
}

/// The file list of a pull request body we wrote ([`Plan::pull_request_body`]).
pub fn listed_files(body: &str) -> Vec<ListedFile> {
    let Some((_, list)) = body.split_once(FILES_HEADING) else { return Vec::new() };
    list.lines()
        .skip_while(|line| line.trim().is_empty())
        .map_while(|line| line.strip_prefix("- "))
        .filter_map(|line| {
            let (verb, rest) = line.split_once(" `")?;
            let (path, rest) = rest.split_once('`')?;
            let blob = rest.trim().strip_prefix("(blob ").and_then(|blob| blob.strip_suffix(')')).map(String::from);
            Some(ListedFile { verb: verb.to_string(), path: path.to_string(), blob })
        })
        .collect()
}

/// The Flux objects (`Kind name`) the files write, in file order: what a pull request's check
/// names.
pub fn flux_objects(files: &[FileChange]) -> Vec<String> {
    let mut objects = Vec::new();
    for text in files.iter().filter_map(|file| file.after.as_deref()) {
        for document in crate::yaml::documents_from_str(text).unwrap_or_default() {
            if let (Some(kind), Some(name)) = (document["kind"].as_str(), document["metadata"]["name"].as_str())
                && document["apiVersion"].as_str().is_some_and(|version| version.contains("fluxcd.io"))
            {
                objects.push(format!("{kind} {name}"));
            }
        }
    }
    objects
}

/// The hash naming a pull request branch: the SHA-256 of the change's paths and contents, in
/// path order (so the branch's own change, read back in any order, hashes the same), in full.
/// Each path is followed by a NUL, then the contents' length, a colon and the contents, or `-`
/// for a deletion: no two changes give the same bytes.
pub fn change_hash(files: &[FileChange]) -> String {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<&FileChange> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut hasher = Sha256::new();
    for file in sorted {
        hasher.update(file.path.as_bytes());
        hasher.update([0]);
        match &file.after {
            Some(contents) => {
                hasher.update(format!("{}:", contents.len()).as_bytes());
                hasher.update(contents.as_bytes());
            }
            None => hasher.update(b"-"),
        }
    }
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The body's heading above the recorded request.
pub const REQUEST_HEADING: &str = "### Request";

/// What every recorded request starts with.
pub(super) const PREFIX: &str = "kubectl gitops ";

/// The body's section for `words`: the heading, then the command line in backticks. `None`
/// when a word cannot be quoted for a shell (a NUL byte).
pub fn body_section(words: &[String]) -> Option<String> {
    let line = shlex::try_join(words.iter().map(String::as_str)).ok()?;
    Some(format!("\n{REQUEST_HEADING}\n`{PREFIX}{line}`\n"))
}

/// The recorded words of a body, without `kubectl gitops`; `None` when it records none.
pub fn parse(body: &str) -> Option<Vec<String>> {
    let mut lines = body.lines().skip_while(|line| line.trim() != REQUEST_HEADING).skip(1);
    let line = lines.find(|line| !line.trim().is_empty())?.trim();
    let command = line.strip_prefix('`')?.strip_suffix('`')?.strip_prefix(PREFIX)?;
    shlex::split(command)
}
