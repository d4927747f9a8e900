//! Each Kustomization's source at the revision Flux last applied: a GitRepository cloned at the
//! commit (pinned by its full hash), an OCIRepository's artifact pulled by its digest. The
//! revision, the URL and `insecure` come from the cluster and are checked like any input: only a
//! full commit hash or a sha256 digest is taken, and the registry client's rules hold (no
//! credentials over plain HTTP, a token service only on the registry's own site).

use std::path::PathBuf;

use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;

use crate::cluster::Cluster;
use crate::error::Result;
use crate::flux::api::{GIT_REPOSITORY, OCI_REPOSITORY};
use crate::interrupt::ScratchDir;
use crate::preview::SourceRef;
use crate::preview::sources::{self, GitRef};

/// The source kinds the cluster serves, at its versions.
#[derive(Debug, Clone)]
pub(super) struct SourceKinds {
    pub git: ApiResource,
    pub oci: Option<ApiResource>,
}

/// A source at the applied revision, on this machine.
pub(super) enum Fetched {
    Git(crate::git::Workspace),
    Artifact(ScratchDir),
}

impl Fetched {
    /// Its files' root.
    pub(super) fn root(&self) -> PathBuf {
        match self {
            Fetched::Git(checkout) => checkout.files().root().to_path_buf(),
            Fetched::Artifact(dir) => dir.path().to_path_buf(),
        }
    }
}

/// What `revision` pins: a git source's commit (`BRANCH@sha1:HASH`), an OCIRepository's
/// digest (`TAG@sha256:HEX`); or why the Kustomization cannot be checked from it.
pub(super) fn applied_at(source: &SourceRef, revision: &str) -> std::result::Result<String, String> {
    if revision.is_empty() {
        return Err("Flux has not applied it yet (no lastAppliedRevision)".into());
    }
    if source.kind() == OCI_REPOSITORY.kind {
        let digest = revision.rsplit_once('@').map_or(revision, |(_, digest)| digest);
        let hex = digest.strip_prefix("sha256:").unwrap_or_default();
        return if hex.len() == 64 && hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            Ok(digest.to_ascii_lowercase())
        } else {
            Err(format!("the applied revision {revision:?} names no sha256 digest"))
        };
    }
    if source.kind() != GIT_REPOSITORY.kind {
        return Err(format!("its source is a {}; drift reads GitRepository and OCIRepository sources", source.kind()));
    }
    crate::names::full_commit(revision)
        .ok_or_else(|| format!("the applied revision {revision:?} names no full commit hash"))
}

/// `source` at `at` (what [`applied_at`] read from `revision`); `Err` says why not.
pub(super) async fn fetch(
    cluster: &Cluster,
    kinds: &SourceKinds,
    source: &SourceRef,
    (revision, at): (&str, &str),
    config: Option<&crate::git::Remote>,
) -> Result<std::result::Result<Fetched, String>> {
    let resource = match (source.kind() == OCI_REPOSITORY.kind, &kinds.oci) {
        (true, Some(oci)) => oci,
        (true, None) => return Ok(Err("this cluster serves no OCIRepository".into())),
        (false, _) => &kinds.git,
    };
    let objects: Api<DynamicObject> = Api::namespaced_with(cluster.client.clone(), source.namespace(), resource);
    let live = objects.get_opt(source.name()).await.map_err(|error| cluster.error(error))?;
    let Some(live) = live.and_then(|live| serde_json::to_value(live).ok()) else {
        return Ok(Err(format!("{source} does not exist")));
    };
    if source.kind() == OCI_REPOSITORY.kind {
        return Ok(pull_artifact(&live, at).await.map(Fetched::Artifact));
    }
    Ok(clone_at(&live, revision, at, config).await.map(Fetched::Git))
}

/// A GitRepository cloned at `commit`, from the URL the cluster pulls it from: its branch reset
/// to the commit, or its tag when it follows a tag (which must still point there).
async fn clone_at(
    live: &serde_json::Value,
    revision: &str,
    commit: &str,
    config: Option<&crate::git::Remote>,
) -> std::result::Result<crate::git::Workspace, String> {
    let url = live["spec"]["url"].as_str().unwrap_or_default();
    let named = revision.rsplit_once("@sha1:").map(|(name, _)| name).unwrap_or_default();
    let at = match sources::git_ref(&live["spec"]["ref"]) {
        Ok(GitRef::Branch(branch) | GitRef::Commit { branch, .. }) => {
            GitRef::Commit { branch, commit: commit.to_string() }
        }
        _ if !named.is_empty() && crate::names::validate_git_ref(named, "the applied revision", "tags").is_ok() => {
            GitRef::Tag(named.trim_start_matches("refs/tags/").to_string())
        }
        _ => return Err(format!("the applied revision {revision:?} names no branch or tag to fetch")),
    };
    match sources::fetch(url, &at, config).await {
        Ok((checkout, head)) if head == commit => Ok(checkout),
        Ok((_, head)) => Err(format!("{at} of {url} is at {head} now, not the applied {commit}")),
        Err(why) => Err(format!("{url} could not be fetched at {at}: {why}")),
    }
}

/// An OCIRepository's artifact pulled by `digest` from its registry (plain HTTP, and then
/// anonymously, only where it says `insecure` or on this machine) and unpacked under the
/// default limits into a scratch directory.
async fn pull_artifact(live: &serde_json::Value, digest: &str) -> std::result::Result<ScratchDir, String> {
    use crate::oci::registry::{Access, Registry};
    let url = live["spec"]["url"].as_str().unwrap_or_default();
    let insecure = live["spec"]["insecure"].as_bool().unwrap_or(false);
    let pulled = async {
        let pinned = crate::oci::reference::OciUrl::parse(url)?.with_digest(digest);
        let registry = Registry::connect(&pinned, &Access { creds: None, insecure }).await?;
        let dir = ScratchDir::new("kubectl-gitops-drift-")
            .map_err(|error| crate::error::Error::io("cannot make a scratch directory", error))?;
        crate::oci::pull::unpack(&pinned, &registry, &crate::oci::limits::Limits::default(), Some(dir.path())).await?;
        Ok::<_, crate::error::Error>(dir)
    };
    match tokio::time::timeout(crate::timeouts::BUILD, pulled).await {
        Ok(Ok(dir)) => Ok(dir),
        Ok(Err(error)) => Err(format!("{url}@{digest} could not be pulled: {error}")),
        Err(_) => Err(format!(
            "{url}: the registry did not answer within {}",
            crate::duration::format(crate::timeouts::BUILD)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_applied_revision_pins_a_full_commit_or_a_sha256_digest() {
        let git = SourceRef::new("GitRepository", "flux-system", "flux-system");
        let hash = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(applied_at(&git, &format!("main@sha1:{hash}")), Ok(hash.to_string()));
        assert_eq!(applied_at(&git, &format!("v1.0.0@sha1:{}", hash.to_uppercase())), Ok(hash.to_string()));
        assert!(applied_at(&git, "").unwrap_err().contains("not applied"));
        assert!(applied_at(&git, "main@sha1:0123").unwrap_err().contains("no full commit hash"));
        let oci = SourceRef::new("OCIRepository", "flux-system", "app");
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(applied_at(&oci, &format!("v1@{digest}")), Ok(digest.clone()));
        assert_eq!(applied_at(&oci, &digest.to_uppercase().replace("SHA256", "sha256")), Ok(digest));
        assert!(applied_at(&oci, "latest@sha256:abc").unwrap_err().contains("no sha256 digest"));
        let bucket = SourceRef::new("Bucket", "flux-system", "app");
        assert!(applied_at(&bucket, "sha256:abc").unwrap_err().contains("GitRepository and OCIRepository"));
    }
}
