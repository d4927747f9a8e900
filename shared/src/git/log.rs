//! One commit's author, time and subject, fetched on its own: `app status` explains the
//! revision Flux applied without cloning the repository.
//!
//! A shallow fetch (depth 1) of the ref the revision came from usually brings the commit,
//! since Flux applies the tip. When the ref moved on, the commit is asked for by hash (servers
//! that allow it, like GitHub and GitLab), and last the ref is fetched deeper.

use git2::{AutotagOption, FetchOptions, Oid, Repository};

use super::{Endpoint, GitError, Remote, Session};

/// How far back a ref is fetched when neither its tip nor a fetch by hash gives the commit.
const DEEP_FETCH: i32 = 200;
/// Where fetched refs land in the scratch repository.
const FETCHED: &str = "refs/kubectl-gitops/fetched";

/// A commit as `git log -1` describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CommitInfo {
    /// The full hash.
    pub sha: String,
    /// The author's name.
    pub author: String,
    /// The author's e-mail address.
    pub email: String,
    /// When it was authored, RFC 3339 UTC.
    pub time: String,
    /// The first line of the message.
    pub subject: String,
}

/// Fetches commit `sha` of the remote into a scratch repository (deleted on return) and reads it.
///
/// `reference` is the full ref the commit came from (`refs/heads/main`), when known; without
/// it only a fetch by hash is tried.
pub fn show_commit(remote: &Remote, reference: Option<&str>, sha: &str) -> Result<CommitInfo, GitError> {
    let oid = Oid::from_str(sha)?;
    let endpoint = Endpoint::parse(&remote.url)?;
    let dir = tempfile::Builder::new()
        .prefix("kubectl-gitops-log-")
        .tempdir()
        .map_err(|source| GitError::Io { context: "cannot create a temp dir for the fetch".into(), source })?;
    let repo = Repository::init_bare(dir.path())?;
    let by_ref = reference.map(|name| format!("+{name}:{FETCHED}"));
    let mut attempts: Vec<(String, i32)> = by_ref.iter().map(|refspec| (refspec.clone(), 1)).collect();
    attempts.push((format!("+{sha}:{FETCHED}-sha"), 1));
    attempts.extend(by_ref.map(|refspec| (refspec, DEEP_FETCH)));
    // libgit2's local transport cannot fetch shallow; a local repository is read whole.
    let shallow = endpoint != Endpoint::Local;
    let mut last_error = None;
    for (refspec, depth) in attempts {
        let depth = if shallow { depth } else { 0 };
        let session = Session::new(remote, &endpoint);
        let mut options = FetchOptions::new();
        options.remote_callbacks(session.callbacks()).download_tags(AutotagOption::None).depth(depth);
        let mut origin = repo.remote_anonymous(&remote.url)?;
        match origin.fetch(&[refspec.as_str()], Some(&mut options), None) {
            Ok(()) => {}
            Err(error) => {
                let error = session.finish(error);
                // Credentials, host keys and the network fail every attempt alike; only a
                // refused want (a hash the server will not serve) is worth another try.
                if !matches!(error, GitError::Other(_) | GitError::NotFound { reason: Some(_), .. }) {
                    return Err(error);
                }
                last_error = Some(error);
                continue;
            }
        }
        if let Ok(commit) = repo.find_commit(oid) {
            let author = commit.author();
            return Ok(CommitInfo {
                sha: sha.to_string(),
                author: String::from_utf8_lossy(author.name_bytes()).into_owned(),
                email: String::from_utf8_lossy(author.email_bytes()).into_owned(),
                time: crate::duration::format_timestamp(author.when().seconds()),
                subject: commit
                    .summary_bytes()
                    .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                    .unwrap_or_default(),
            });
        }
    }
    Err(last_error.unwrap_or_else(|| {
        GitError::Other(git2::Error::from_str(&format!(
            "commit {sha} is not among the last {DEEP_FETCH} commits of {}",
            reference.unwrap_or("the remote")
        )))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{Auth, Checkout, Signature};

    #[test]
    fn reads_the_tip_and_an_older_commit_of_a_branch() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init_bare(dir.path()).unwrap();
        let remote = Remote { url: format!("file://{}", dir.path().display()), auth: Auth::Anonymous };
        let author = Signature { name: "Jane Doe".into(), email: "jane@example.invalid".into() };
        let mut checkout = Checkout::clone(&remote, "main").unwrap();
        checkout.write("a.yaml", b"a: 1\n").unwrap();
        let first = checkout.commit("Add a\n\nwith a body", &author).unwrap().unwrap();
        checkout.write("b.yaml", b"b: 1\n").unwrap();
        let second = checkout.commit("Add b", &author).unwrap().unwrap();
        checkout.push().unwrap();

        let tip = show_commit(&remote, Some("refs/heads/main"), &second).unwrap();
        assert_eq!(
            (tip.author.as_str(), tip.email.as_str(), tip.subject.as_str()),
            ("Jane Doe", "jane@example.invalid", "Add b")
        );
        assert!(tip.time.ends_with('Z'), "{tip:?}");
        let older = show_commit(&remote, Some("refs/heads/main"), &first).unwrap();
        assert_eq!(older.subject, "Add a");
        let missing = show_commit(&remote, Some("refs/heads/main"), &"0".repeat(40));
        assert!(missing.is_err());
    }
}
