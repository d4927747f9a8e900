//! What `upgrade` reports: the versions in play, and `--check`'s answer.

use serde::Serialize;

use super::preflight::{OtherRepo, RepoScan, describe_other_repo};
use crate::flux::release::{FluxVersion, Move, classify};
use crate::flux::storage::StoredKind;

/// The versions in play: what the cluster runs, what each cluster's install record says, and the
/// target.
#[derive(Debug, Clone)]
pub(super) struct Versions {
    pub target: FluxVersion,
    /// The current cluster's Flux (namespace label, or `v2.9` guessed from an image).
    pub running: Option<String>,
    /// Each upgraded cluster's directory and the version its install record names.
    pub recorded: Vec<(String, FluxVersion)>,
}

impl Versions {
    pub fn new(target: FluxVersion, running: Option<String>) -> Versions {
        Versions { target, running, recorded: Vec::new() }
    }

    /// The running version, when known exactly.
    fn running_exact(&self) -> Option<FluxVersion> {
        self.running.as_deref().and_then(|text| text.parse().ok())
    }

    /// Every version the move starts from: each record, and the running one.
    pub fn sources(&self) -> Vec<FluxVersion> {
        let mut sources: Vec<FluxVersion> = self.recorded.iter().map(|(_, version)| *version).collect();
        sources.extend(self.running_exact());
        sources.sort();
        sources.dedup();
        sources
    }

    /// `v2.8.3` (or `v2.8.3, v2.9.0` when the clusters differ).
    pub fn recorded_text(&self) -> String {
        let recorded: Vec<String> = {
            let mut versions: Vec<FluxVersion> = self.recorded.iter().map(|(_, version)| *version).collect();
            versions.sort();
            versions.dedup();
            versions.iter().map(FluxVersion::to_string).collect()
        };
        recorded.join(", ")
    }

    /// When the cluster runs another version than the repo records.
    pub fn disagreement(&self) -> Option<String> {
        let running = self.running.as_deref()?;
        let (path, recorded) = self.recorded.first()?;
        let agrees = match self.running_exact() {
            Some(exact) => exact == *recorded,
            None => recorded.to_string().starts_with(&format!("{running}.")),
        };
        (!agrees).then(|| format!("the cluster runs Flux {running}, but the install record in {path} says {recorded}"))
    }

    /// Lines for the plan.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .recorded
            .iter()
            .map(|(path, version)| {
                format!("{path}: Flux {version} -> {} ({})", self.target, describe(classify(*version, self.target)))
            })
            .collect();
        notes.extend(self.disagreement());
        notes
    }
}

fn describe(movement: Move) -> &'static str {
    match movement {
        Move::UpToDate => "up to date",
        Move::Patch => "a patch release",
        Move::NextMinor => "the next release line",
        Move::Skip { .. } => "skips a release line",
        Move::Downgrade => "a downgrade",
    }
}

/// `--check`: the versions, and what an upgrade would change. `-o json|yaml` prints it as is.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// What the current cluster runs (namespace label).
    pub(super) running: Option<String>,
    /// What each cluster's install record says.
    pub(super) recorded: Vec<RecordedVersion>,
    /// The release this kubectl-gitops pins.
    pub(super) pinned: String,
    /// The newest release this kubectl-gitops knows (the pinned one: it reads no release feed).
    pub(super) latest_known: String,
    /// The release asked for.
    pub(super) target: String,
    /// Nothing to change in the repo or the cluster.
    pub(super) up_to_date: bool,
    /// The files an upgrade changes, with why.
    pub(super) files: Vec<String>,
    /// Manifests that must change, where.
    pub(super) findings: Vec<String>,
    /// Flux kinds whose stored objects need migrating before or after the upgrade.
    pub(super) storage: Vec<StoredKind>,
    /// The CRDs of those migrated before the upgrade (the target drops a version they record).
    pub(super) before_upgrade: Vec<String>,
    /// Repos other than the config repo to change first, in order.
    pub(super) other_repos: Vec<OtherRepo>,
}

impl crate::output::Kind for Check {
    const KIND: &'static str = "UpgradeCheck";
}

/// One cluster's recorded version.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct RecordedVersion {
    pub cluster: String,
    pub version: String,
}

impl Check {
    pub(super) fn new(
        versions: &Versions,
        repo: &RepoScan,
        migrations: &[StoredKind],
        stored: &[StoredKind],
        others: &[OtherRepo],
        target: FluxVersion,
    ) -> Check {
        let mut findings: Vec<String> = repo
            .rewrites
            .iter()
            .map(|(path, rewrite)| format!("{path}:{}: {} {}", rewrite.line, rewrite.object, rewrite.what))
            .collect();
        findings.extend(repo.not_ours.iter().map(|(path, rewrite)| {
            format!(
                "{path}:{}: {} {} (not generated by kubectl-gitops: --all-manifests)",
                rewrite.line, rewrite.object, rewrite.what
            )
        }));
        findings.extend(
            repo.blockers
                .iter()
                .map(|(path, blocker)| format!("{path}:{}: {}: {}", blocker.line, blocker.object, blocker.why)),
        );
        let running_current = versions.running.as_deref().is_none_or(|running| running == target.to_string());
        Check {
            running: versions.running.clone(),
            recorded: versions
                .recorded
                .iter()
                .map(|(cluster, version)| RecordedVersion { cluster: cluster.clone(), version: version.to_string() })
                .collect(),
            pinned: crate::flux::PINNED_VERSION.to_string(),
            latest_known: crate::flux::PINNED_VERSION.to_string(),
            target: target.to_string(),
            up_to_date: repo.files.is_empty() && migrations.is_empty() && running_current && others.is_empty(),
            files: repo.notes(),
            findings,
            storage: stored.iter().filter(|kind| kind.needs_migration()).cloned().collect(),
            before_upgrade: migrations.iter().map(|kind| kind.crd.clone()).collect(),
            other_repos: others.to_vec(),
        }
    }

    /// The text `--check` prints.
    pub fn render(&self) -> String {
        let mut text = String::new();
        text.push_str(&format!("running:      {}\n", self.running.as_deref().unwrap_or("unknown")));
        for recorded in &self.recorded {
            text.push_str(&format!("recorded:     {} ({})\n", recorded.version, recorded.cluster));
        }
        text.push_str(&format!("pinned:       {}\n", self.pinned));
        text.push_str(&format!("latest known: {}\n", self.latest_known));
        text.push_str(&format!("target:       {}\n", self.target));
        if self.up_to_date {
            text.push_str("\nUp to date.\n");
            return text;
        }
        text.push_str("\nAn upgrade would change:\n");
        for file in &self.files {
            text.push_str(&format!("  {file}\n"));
        }
        if !self.findings.is_empty() {
            text.push_str("\nPreflight:\n");
            for finding in &self.findings {
                text.push_str(&format!("  {finding}\n"));
            }
        }
        if !self.other_repos.is_empty() {
            text.push_str("\nOther repos to change first, in order (then this change):\n");
            for (index, other) in self.other_repos.iter().enumerate() {
                text.push_str(&format!("  {}. {}\n", index + 1, describe_other_repo(other)));
            }
        }
        if !self.storage.is_empty() {
            text.push_str("\nStored objects to migrate:\n");
            for kind in &self.storage {
                let when = if self.before_upgrade.contains(&kind.crd) {
                    "before the upgrade: the target drops a version it records"
                } else {
                    "after the rollout (--wait)"
                };
                text.push_str(&format!("  {} ({when})\n", kind.describe()));
            }
        }
        text
    }
}
