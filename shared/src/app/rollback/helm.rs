//! `app rollback` of a HelmRelease app: what `app add` wrote for it in the config repo (its
//! definition `apps/<app>/` and this cluster's overlay `<cluster path>/apps/<app>/`, docs/layout.md)
//! restored as it was at the config commit that asked for the last good Helm release. Flux keeps no
//! config commit in a HelmRelease's history: as `app history` does, a release belongs to the newest
//! commit that changed the app's files at or before the release was first deployed.

use serde_json::Value;

use crate::deployments::{self, AppKind, Deployment};
use crate::error::{Error, Result};
use crate::git::log::LoggedCommit;

/// The Helm release statuses of a release that was installed and worked.
const GOOD: [&str; 2] = ["deployed", "superseded"];

/// The config repo directories of the app `name` `app add` added, on the cluster whose
/// directory is `cluster_path`.
pub(super) fn app_dirs(name: &str, cluster_path: &str) -> Vec<String> {
    vec![format!("apps/{name}"), format!("{}/apps/{name}", cluster_path.trim_matches('/'))]
}

/// The last Helm release before the current one that was deployed and deployed something else
/// (another chart version or other values), from the HelmRelease's `status.history`.
pub(super) fn last_good_release(release: &Value) -> Result<Deployment> {
    let history = deployments::from_flux(AppKind::HelmRelease, release.pointer("/status/history"));
    let name = release["metadata"]["name"].as_str().unwrap_or_default();
    let Some(current) = history.first() else {
        return Err(Error::usage(
            format!("{name} has no Helm release yet: there is nothing to roll back"),
            "`kubectl gitops app status NAME` shows why",
        ));
    };
    history
        .iter()
        .skip(1)
        .find(|deployment| GOOD.contains(&deployment.status.as_str()) && deployment.digest != current.digest)
        .cloned()
        .ok_or_else(|| {
            Error::usage(
                format!("{name} has no earlier Helm release that deployed something else in the 5 Flux keeps"),
                "name the config commit to go back to with --to (`kubectl gitops app history NAME` lists them)",
            )
        })
}

/// The config commit that asked for `release`: the newest commit of `log` (newest first) that
/// changed the app's files at or before the release was first deployed.
pub(super) fn config_commit(log: &[LoggedCommit], release: &Deployment) -> Result<String> {
    let deployed = crate::duration::parse_timestamp(&release.first);
    log.iter()
        .filter(|commit| commit.touches_path)
        .find(|commit| {
            matches!((crate::duration::parse_timestamp(&commit.info.time), deployed), (Some(made), Some(deployed)) if made <= deployed)
        })
        .map(|commit| commit.info.sha.clone())
        .ok_or_else(|| {
            Error::usage(
                format!(
                    "no commit of the config repo changed the app's files before its release of chart {} was deployed ({})",
                    release.revision, release.first
                ),
                "name the config commit to go back to with --to (`kubectl gitops app history NAME` lists them)",
            )
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use serde_json::json;

    use super::*;
    use crate::git::log::CommitInfo;

    fn release(history: Value) -> Value {
        json!({"metadata": {"name": "greeter"}, "status": {"history": history}})
    }

    fn entry(version: i64, chart: &str, digest: &str, status: &str, deployed: &str) -> Value {
        json!({"name": "greeter", "namespace": "default", "version": version, "chartName": "hello",
               "chartVersion": chart, "configDigest": digest, "status": status,
               "firstDeployed": deployed, "lastDeployed": deployed, "digest": format!("sha256:{version}")})
    }

    fn commit(sha: &str, time: &str, touches_path: bool) -> LoggedCommit {
        let info = CommitInfo {
            sha: sha.into(),
            author: "a".into(),
            email: "a@example.com".into(),
            time: time.into(),
            subject: sha.into(),
            reverts: None,
        };
        LoggedCommit { info, parents: Vec::new(), touches_path }
    }

    #[test]
    fn the_target_is_the_last_release_that_worked_and_deployed_something_else() {
        let history = release(json!([
            entry(4, "0.2.0", "sha256:b", "deployed", "2026-12-06T10:04:00Z"),
            entry(3, "0.2.0", "sha256:b", "superseded", "2026-12-06T10:03:00Z"),
            entry(2, "0.1.0", "sha256:c", "failed", "2026-12-06T10:02:00Z"),
            entry(1, "0.1.0", "sha256:a", "superseded", "2026-12-06T10:01:00Z"),
        ]));
        let target = last_good_release(&history).unwrap();
        assert_eq!((target.revision.as_str(), target.release), ("0.1.0", Some(1)));
        let only_same = release(json!([
            entry(2, "0.2.0", "sha256:b", "deployed", "2026-12-06T10:02:00Z"),
            entry(1, "0.2.0", "sha256:b", "superseded", "2026-12-06T10:01:00Z"),
        ]));
        assert!(last_good_release(&only_same).unwrap_err().to_string().contains("no earlier Helm release"));
        assert!(last_good_release(&release(json!([]))).unwrap_err().to_string().contains("no Helm release yet"));
    }

    #[test]
    fn a_release_belongs_to_the_newest_config_commit_of_the_app_before_it() {
        let target = last_good_release(&release(json!([
            entry(2, "0.2.0", "sha256:b", "deployed", "2026-12-06T10:05:00Z"),
            entry(1, "0.1.0", "sha256:a", "superseded", "2026-12-06T10:02:00Z"),
        ])))
        .unwrap();
        let log = [
            commit("c4", "2026-12-06T10:04:00Z", true),
            commit("c3", "2026-12-06T10:02:00Z", false),
            commit("c2", "2026-12-06T10:01:30Z", true),
            commit("c1", "2026-12-06T10:00:00Z", true),
        ];
        assert_eq!(config_commit(&log, &target).unwrap(), "c2");
        assert!(config_commit(&log[..2], &target).unwrap_err().to_string().contains("chart 0.1.0"));
    }

    #[test]
    fn the_app_s_files_are_its_definition_and_this_cluster_s_overlay() {
        assert_eq!(app_dirs("greeter", "clusters/dev/"), ["apps/greeter", "clusters/dev/apps/greeter"]);
    }
}
