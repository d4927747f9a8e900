use serde_json::json;

use super::dora::{self, Window};
use super::timeline::{self, Row};
use super::*;
use crate::duration::format_timestamp;
use crate::git::log::LoggedCommit;

const DAY: u64 = 86_400;
/// 2026-12-01T00:00:00Z.
const T0: u64 = 1_796_083_200;

fn at(seconds: u64) -> String {
    format_timestamp(seconds as i64)
}

fn sha(n: u64) -> String {
    format!("{n:040x}")
}

/// A Kustomization deployment of commit `n` with manifests `digest`, first reconciled at `first`.
fn deployed(n: u64, digest: &str, status: &str, first: u64) -> Deployment {
    Deployment {
        revision: format!("main@sha1:{}", sha(n)),
        digest: format!("sha256:{digest}"),
        status: status.into(),
        first: at(first),
        observed: false,
        last: at(first + 60),
        duration: Some("1s".into()),
        reconciliations: Some(1),
        release: None,
        commit: None,
    }
}

fn ok(n: u64, digest: &str, first: u64) -> Deployment {
    deployed(n, digest, "ReconciliationSucceeded", first)
}

fn commit(n: u64, time: u64, subject: &str) -> CommitInfo {
    CommitInfo {
        sha: sha(n),
        author: "Jane Doe".into(),
        email: "jane@example.invalid".into(),
        time: at(time),
        subject: subject.into(),
        reverts: None,
    }
}

fn with_commit(mut deployment: Deployment, time: u64) -> Deployment {
    let n = u64::from_str_radix(deployment.commit_sha().unwrap(), 16).unwrap();
    deployment.commit = Some(commit(n, time, "change"));
    deployment
}

fn month() -> Window {
    Window { since: T0 - 20 * DAY, until: T0 + 10 * DAY, failure_window: DAY }
}

fn metrics(deployments: &[Deployment]) -> dora::Metrics {
    dora::of_app(&timeline::build(deployments, &[], &[]), &month())
}

#[test]
fn reads_both_kinds_of_flux_history() {
    let kustomization = json!([{
        "digest": "sha256:b", "firstReconciled": "2026-12-01T10:00:00Z", "lastReconciled": "2026-12-01T10:05:00Z",
        "lastReconciledDuration": "1.2s", "lastReconciledStatus": "HealthCheckFailed", "totalReconciliations": 3,
        "metadata": {"revision": format!("main@sha1:{}", sha(2))}
    }]);
    let read = from_flux(AppKind::Kustomization, Some(&kustomization));
    assert_eq!(read.len(), 1);
    assert_eq!((read[0].status.as_str(), read[0].reconciliations), ("HealthCheckFailed", Some(3)));
    assert!(read[0].failed());
    assert_eq!(read[0].commit_sha(), Some(sha(2).as_str()));

    let release = json!([
        {"version": 2, "status": "failed", "chartVersion": "1.1.0", "configDigest": "sha256:v2",
         "firstDeployed": "2026-12-01T11:00:00Z", "lastDeployed": "2026-12-01T11:00:00Z"},
        {"version": 1, "status": "superseded", "chartVersion": "1.0.0", "configDigest": "sha256:v1",
         "firstDeployed": "2026-12-01T10:00:00Z", "lastDeployed": "2026-12-01T10:00:00Z"}
    ]);
    let read = from_flux(AppKind::HelmRelease, Some(&release));
    assert_eq!(read.iter().map(|d| (d.release, d.failed())).collect::<Vec<_>>(), [(Some(2), true), (Some(1), false)]);
    assert_eq!(read[1].digest, "1.0.0/sha256:v1");
    assert!(from_flux(AppKind::HelmRelease, None).is_empty());
}

#[test]
fn merging_keeps_what_flux_dropped_and_learns_nothing_twice() {
    // Flux's history, newest first, as two looks a while apart saw it: the second look no longer
    // has the oldest entry.
    let first_look = vec![ok(2, "b", T0 + 100), ok(1, "a", T0)];
    let second_look = vec![ok(3, "c", T0 + 200), ok(2, "b", T0 + 100)];
    let mut kept = Vec::new();
    assert!(merge(&mut kept, &first_look));
    assert!(merge(&mut kept, &second_look));
    assert_eq!(kept.iter().map(|d| d.digest.as_str()).collect::<Vec<_>>(), ["sha256:a", "sha256:b", "sha256:c"]);
    let before = kept.clone();
    assert!(!merge(&mut kept, &second_look), "the same look again learns nothing");
    assert_eq!(kept, before);

    // Only a later reconcile of the same thing: worth no write, but the newest times are kept.
    let mut later = second_look.clone();
    later[0].last = at(T0 + 900);
    later[0].reconciliations = Some(9);
    assert!(!merge(&mut kept, &later));
    assert_eq!(kept[2].reconciliations, Some(9));
}

#[test]
fn concurrent_writers_merge_to_the_same_ledger_in_either_order() {
    let one = vec![ok(2, "b", T0 + 100), ok(1, "a", T0)];
    let other = vec![ok(3, "c", T0 + 200), ok(2, "b", T0 + 100)];
    let (mut ab, mut ba) = (Vec::new(), Vec::new());
    merge(&mut ab, &one);
    merge(&mut ab, &other);
    merge(&mut ba, &other);
    merge(&mut ba, &one);
    let digests = |kept: &[Deployment]| kept.iter().map(|d| d.digest.clone()).collect::<Vec<_>>();
    assert_eq!(digests(&ab), digests(&ba));
    assert_eq!(ab.len(), 3);
}

#[test]
fn a_revision_moved_onto_a_known_snapshot_is_dated_when_seen() {
    // A revert commit restores manifests "a": Flux moves that snapshot to the front with the new
    // revision and keeps its old firstReconciled.
    let mut kept = Vec::new();
    merge(&mut kept, &[ok(2, "b", T0 + 100), ok(1, "a", T0)]);
    let mut moved = ok(3, "a", T0);
    moved.last = at(T0 + 500);
    assert!(merge(&mut kept, &[moved, ok(2, "b", T0 + 100)]));
    let newest = kept.last().unwrap();
    assert_eq!(
        (newest.commit_sha(), newest.first.as_str(), newest.observed),
        (Some(sha(3).as_str()), at(T0 + 500).as_str(), true)
    );
}

#[test]
fn the_fingerprint_ignores_times_and_counts() {
    let look = vec![ok(2, "b", T0 + 100), ok(1, "a", T0)];
    let mut later = look.clone();
    later[0].last = at(T0 + 999);
    later[0].reconciliations = Some(7);
    assert_eq!(fingerprint(&look), fingerprint(&later));
    let failed = vec![deployed(2, "b", "HealthCheckFailed", T0 + 100), ok(1, "a", T0)];
    assert_ne!(fingerprint(&look), fingerprint(&failed));
    assert_eq!(fingerprint(&look).len(), 16);
}

#[test]
fn commits_attach_to_their_revisions() {
    let mut kept = vec![ok(1, "a", T0), ok(2, "b", T0 + 100)];
    assert!(attach_commits(&mut kept, &[commit(2, T0 + 50, "two")]));
    assert_eq!(kept[1].commit.as_ref().map(|c| c.subject.as_str()), Some("two"));
    assert!(kept[0].commit.is_none());
    assert!(!attach_commits(&mut kept, &[commit(2, T0 + 50, "two")]), "already attached");
}

#[test]
fn five_commits_one_broken_then_fixed() {
    // What the end-to-end test does: 5 commits, the 3rd one broken (the apply fails), the 4th
    // fixes it 10 minutes later.
    let deployments = [
        with_commit(ok(1, "a", T0 + 60), T0),
        with_commit(ok(2, "b", T0 + 3660), T0 + 3600),
        with_commit(deployed(3, "c", "ReconciliationFailed", T0 + 7260), T0 + 7200),
        with_commit(ok(4, "d", T0 + 7860), T0 + 7800),
        with_commit(ok(5, "e", T0 + 11_460), T0 + 11_400),
    ];
    let rows = timeline::build(&deployments, &[], &[]);
    assert_eq!(rows.iter().map(Row::failed_change).collect::<Vec<_>>(), [false, false, true, false, false]);
    let metrics = dora::of_app(&rows, &month());
    assert_eq!((metrics.deployments, metrics.succeeded), (5, 4));
    assert_eq!((metrics.change_failure_rate.failed, metrics.change_failure_rate.deployments), (1, 5));
    assert_eq!(metrics.change_failure_rate.rate, Some(0.2));
    assert_eq!((metrics.time_to_restore.samples, metrics.time_to_restore.median_seconds), (1, Some(600)));
    assert_eq!(
        (metrics.lead_time.samples, metrics.lead_time.median_seconds, metrics.lead_time.p90_seconds),
        (4, Some(60), Some(60))
    );
    assert!((metrics.deployment_frequency.per_day - 4.0 / 30.0).abs() < 1e-9);
    assert!((metrics.deployment_frequency.per_week - 28.0 / 30.0).abs() < 1e-9);
    // What the UI draws: the lead times of a minute and the 600 s restore in their buckets; the
    // 30 days in five weeks back from the end (the first two days long), all five deployments in
    // the week of T0 (the fourth), one of them failed.
    assert_eq!(metrics.lead_time.buckets, [0, 4, 0, 0, 0, 0]);
    assert_eq!(metrics.time_to_restore.buckets, [0, 0, 1, 0, 0, 0]);
    let weeks: Vec<(usize, usize)> = metrics.weekly.iter().map(|week| (week.deployments, week.failed)).collect();
    assert_eq!(weeks, [(0, 0), (0, 0), (0, 0), (5, 1), (0, 0)]);
    assert_eq!(metrics.weekly[0].start, at(T0 - 20 * DAY));
    assert_eq!(metrics.weekly[4].start, at(T0 + 3 * DAY));
}

#[test]
fn a_health_check_that_failed_then_passed_is_one_deployment_restored() {
    let deployments = [ok(1, "a", T0), deployed(2, "b", "HealthCheckFailed", T0 + 100), ok(2, "b", T0 + 400)];
    let metrics = metrics(&deployments);
    assert_eq!((metrics.deployments, metrics.succeeded, metrics.change_failure_rate.failed), (2, 2, 1));
    assert_eq!(metrics.time_to_restore.median_seconds, Some(300));
}

#[test]
fn a_rollback_marks_what_it_undid() {
    // b and c are deployed, then a's manifests come back (a rollback to a).
    let deployments = [ok(1, "a", T0), ok(2, "b", T0 + 100), ok(3, "c", T0 + 200), ok(4, "a", T0 + 300)];
    let rows = timeline::build(&deployments, &[], &[]);
    let marks: Vec<(bool, bool)> = rows.iter().map(|row| (row.rollback, row.rolled_back)).collect();
    assert_eq!(marks, [(false, false), (false, true), (false, true), (true, false)]);
    let metrics = dora::of_app(&rows, &month());
    assert_eq!((metrics.deployments, metrics.change_failure_rate.failed), (4, 2));
    // Failing from b's deployment until the rollback.
    assert_eq!(metrics.time_to_restore.median_seconds, Some(200));

    // Undone after the failure window: not a failed change.
    let narrow = Window { failure_window: 50, ..month() };
    assert_eq!(dora::of_app(&rows, &narrow).change_failure_rate.failed, 0);
}

#[test]
fn going_back_over_a_failed_deployment_is_a_rollback() {
    // b failed (the API server refused it); a's manifests deployed again at a new commit.
    let deployments = [ok(1, "a", T0), deployed(2, "b", "ReconciliationFailed", T0 + 100), ok(3, "a", T0 + 200)];
    let rows = timeline::build(&deployments, &[], &[]);
    let marks: Vec<(bool, bool, bool)> = rows.iter().map(|row| (row.failed, row.rollback, row.rolled_back)).collect();
    assert_eq!(marks, [(false, false, false), (true, false, true), (false, true, false)]);
    // One failed change, not two.
    assert_eq!(dora::of_app(&rows, &month()).change_failure_rate.failed, 1);
}

#[test]
fn a_failed_deployment_in_between_is_not_a_rollback() {
    let deployments = [ok(1, "a", T0), deployed(2, "b", "ReconciliationFailed", T0 + 100), ok(3, "c", T0 + 200)];
    let rows = timeline::build(&deployments, &[], &[]);
    assert!(rows.iter().all(|row| !row.rollback && !row.rolled_back));
    // Redeploying the same manifests at a new commit after a success is no rollback either.
    let rows = timeline::build(&[ok(1, "a", T0), ok(2, "a", T0 + 100)], &[], &[]);
    assert!(rows.iter().all(|row| !row.rollback && !row.rolled_back));
}

#[test]
fn a_revert_commit_makes_a_failed_change() {
    let mut revert = commit(3, T0 + 250, "Revert \"two\"");
    revert.reverts = Some(sha(2));
    let mut third = ok(3, "c", T0 + 300);
    third.commit = Some(revert);
    let deployments = [with_commit(ok(1, "a", T0), T0 - 60), with_commit(ok(2, "b", T0 + 100), T0 + 40), third];
    let rows = timeline::build(&deployments, &[], &[]);
    assert_eq!(rows.iter().map(|row| row.reverted).collect::<Vec<_>>(), [false, true, false]);
    assert_eq!(rows[1].undone_at.as_deref(), Some(at(T0 + 300).as_str()));
    let metrics = dora::of_app(&rows, &month());
    assert_eq!(metrics.change_failure_rate.failed, 1);
    assert_eq!(metrics.time_to_restore.median_seconds, Some(200));
}

#[test]
fn clock_skew_gaps_and_missing_commits_are_said() {
    // The commit of 2 is dated after its deployment; 3 has no commit; nothing before T0 was seen.
    let deployments = [
        with_commit(ok(1, "a", T0), T0 - 120),
        with_commit(ok(2, "b", T0 + 5 * DAY), T0 + 5 * DAY + 30),
        ok(3, "c", T0 + 9 * DAY),
    ];
    let metrics = metrics(&deployments);
    assert_eq!(metrics.lead_time.samples, 2);
    assert_eq!((metrics.lead_time.median_seconds, metrics.lead_time.p90_seconds), (Some(0), Some(120)));
    let unseen = metrics.unseen.join("\n");
    assert!(unseen.contains("1 commit(s) dated after their deployment"), "{unseen}");
    assert!(unseen.contains("the commit time of 1 deployment(s)"), "{unseen}");
    assert!(unseen.contains(&format!("deployments before {}", at(T0))), "{unseen}");
    assert_eq!(metrics.time_to_restore.samples, 0);
}

#[test]
fn a_failure_not_restored_yet_and_the_window_edges() {
    let deployments = [ok(1, "a", T0 - 40 * DAY), ok(2, "b", T0), deployed(3, "c", "HealthCheckFailed", T0 + 100)];
    let metrics = metrics(&deployments);
    // The deployment 40 days ago is outside the 30 days.
    assert_eq!((metrics.deployments, metrics.change_failure_rate.failed), (2, 1));
    assert!(metrics.unseen.iter().any(|line| line.contains("1 failure(s) not restored yet")), "{:?}", metrics.unseen);
    let empty = dora::of_app(&[], &month());
    assert_eq!((empty.deployments, empty.change_failure_rate.rate, empty.lead_time.median_seconds), (0, None, None));
}

#[test]
fn helm_releases_count_by_release_and_roll_back_by_content() {
    let release = |version: i64, chart: &str, status: &str, first: u64| Deployment {
        revision: chart.into(),
        digest: format!("{chart}/sha256:values"),
        status: status.into(),
        first: at(first),
        observed: false,
        last: at(first),
        duration: None,
        reconciliations: None,
        release: Some(version),
        commit: None,
    };
    // 1.0.0, then 1.1.0 fails and helm-controller rolls back to 1.0.0 (release 3).
    let deployments = [
        release(1, "1.0.0", "superseded", T0),
        release(2, "1.1.0", "failed", T0 + 100),
        release(3, "1.0.0", "deployed", T0 + 160),
    ];
    let rows = timeline::build(&deployments, &[], &[]);
    assert!(rows[1].failed && !rows[2].rollback, "a failed release in between is restored, not rolled back over");
    let metrics = dora::of_app(&rows, &month());
    assert_eq!((metrics.deployments, metrics.change_failure_rate.failed), (3, 1));
    assert_eq!(metrics.time_to_restore.median_seconds, Some(60));
}

#[test]
fn the_timeline_carries_the_commits_of_each_deployment() {
    let logged = |n: u64, parent: Option<u64>, touches: bool| LoggedCommit {
        info: commit(n, T0 + n * 10, &format!("commit {n}")),
        parents: parent.map(sha).into_iter().collect(),
        touches_path: touches,
    };
    // 1 ← 2 (README only) ← 3 ← 4; deployed: 1 and 4.
    let log = [logged(4, Some(3), true), logged(3, Some(2), true), logged(2, Some(1), false), logged(1, None, true)];
    // The config repo: a commit before the first deployment, one between the two, one after.
    let config = [logged(32, None, true), logged(15, None, true), logged(14, None, false), logged(5, None, true)];
    let rows = timeline::build(&[ok(1, "a", T0 + 100), ok(4, "b", T0 + 200)], &log, &config);
    let subjects = |row: &Row| row.changes.iter().map(|c| c.subject.clone()).collect::<Vec<_>>();
    assert_eq!(subjects(&rows[0]), ["commit 1"]);
    assert_eq!(subjects(&rows[1]), ["commit 4", "commit 3"]);
    let configs = |row: &Row| row.config_changes.iter().map(|c| c.subject.clone()).collect::<Vec<_>>();
    assert_eq!(configs(&rows[0]), ["commit 5"], "before the first deployment, by time");
    assert_eq!(configs(&rows[1]), ["commit 15"], "between the two; one that did not touch the app's files is left out");
    assert_eq!(rows[1].deployment.commit.as_ref().map(|c| c.subject.as_str()), Some("commit 4"));
}

#[test]
fn percentiles_are_nearest_rank() {
    let deployments: Vec<Deployment> =
        (1..=10).map(|n| with_commit(ok(n, &format!("d{n}"), T0 + n * 1000 + n * 10), T0 + n * 1000)).collect();
    let metrics = metrics(&deployments);
    assert_eq!((metrics.lead_time.median_seconds, metrics.lead_time.p90_seconds), (Some(50), Some(90)));
}
