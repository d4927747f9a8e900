//! The four DORA metrics over apps' timelines (docs/history.md states each definition).
//!
//! - A **deployment** is a new revision Flux applied: a Kustomization's source revision, a Helm
//!   release. Its time is its first reconcile.
//! - **Deployment frequency**: deployments that reached Ready, per day and per week of the window.
//! - **Lead time for changes**: from the deployed commit's author time to its first successful
//!   reconcile; median and p90.
//! - **Change failure rate**: deployments that failed, or that a rollback or a revert commit
//!   undid within the failure window, over all deployments.
//! - **Time to restore**: from a failed change's first reconcile to the next good deployment.
//!
//! Each figure has its sample size and says what it could not see. Pure: timelines in, numbers out.

use serde::Serialize;

use super::timeline::Row;

/// What to compute over.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Start, seconds since the epoch.
    pub since: u64,
    /// End (now), seconds since the epoch.
    pub until: u64,
    /// A rollback or revert this long after a deployment makes it a failed change.
    pub failure_window: u64,
}

/// The metrics of one app, or of all of them.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// Deployments in the window.
    pub deployments: usize,
    /// Those that reached Ready.
    pub succeeded: usize,
    pub deployment_frequency: Frequency,
    pub lead_time: Spread,
    pub change_failure_rate: Rate,
    pub time_to_restore: Spread,
    /// Deployments per week, oldest first: the window cut into weeks back from its end (the
    /// first one may be shorter).
    pub weekly: Vec<Week>,
    /// What these figures could not see.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<String>,
}

/// Deployments that reached Ready, per day and per week of the window.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Frequency {
    pub per_day: f64,
    pub per_week: f64,
    /// The deployments counted.
    pub samples: usize,
}

/// One week of the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Week {
    /// Its start, RFC 3339.
    pub start: String,
    /// Deployments that started in it.
    pub deployments: usize,
    /// Those of them that were failed changes.
    pub failed: usize,
}

/// The upper bounds of a spread's buckets, in seconds, with a short name (a chart's label) and
/// one in words: a minute, ten minutes, an hour, a day, a week, longer. Durations of changes span
/// orders of magnitude: equal-width buckets would put everything in the first.
pub const BUCKETS: [(u64, &str, &str); 6] = [
    (60, "<1m", "under a minute"),
    (600, "<10m", "under 10 minutes"),
    (3_600, "<1h", "under an hour"),
    (86_400, "<1d", "under a day"),
    (604_800, "<1w", "under a week"),
    (u64::MAX, "≥1w", "a week or more"),
];

/// A duration's median and p90 over its samples, in seconds, and how they spread.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Spread {
    pub samples: usize,
    pub median_seconds: Option<u64>,
    pub p90_seconds: Option<u64>,
    /// How many samples fall in each of [`BUCKETS`] (under a minute, ten minutes, an hour, a
    /// day, a week, longer).
    pub buckets: Vec<usize>,
}

impl Spread {
    fn of(mut values: Vec<u64>) -> Spread {
        values.sort_unstable();
        let mut buckets = vec![0; BUCKETS.len()];
        for value in &values {
            let bucket = BUCKETS.iter().position(|(bound, _, _)| value < bound).unwrap_or(BUCKETS.len() - 1);
            buckets[bucket] += 1;
        }
        Spread {
            samples: values.len(),
            median_seconds: percentile(&values, 50),
            p90_seconds: percentile(&values, 90),
            buckets,
        }
    }
}

/// Failed changes over deployments.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rate {
    pub failed: usize,
    pub deployments: usize,
    /// `failed / deployments`; `None` without deployments.
    pub rate: Option<f64>,
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], percent: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// One deployment: the rows of one revision, in a row.
struct Change<'a> {
    rows: Vec<&'a Row>,
}

impl Change<'_> {
    fn first(&self) -> u64 {
        self.rows[0].deployment.first_seconds()
    }

    /// Its first successful reconcile.
    fn ready_at(&self) -> Option<u64> {
        self.rows.iter().find(|row| !row.failed).map(|row| row.deployment.first_seconds())
    }
}

/// The deployments of one timeline: its rows grouped by revision, in order.
fn changes(rows: &[Row]) -> Vec<Change<'_>> {
    let mut changes: Vec<Change<'_>> = Vec::new();
    for row in rows {
        match changes.last_mut() {
            Some(change)
                if change.rows[0].deployment.revision == row.deployment.revision
                    && change.rows[0].deployment.release.is_none() =>
            {
                change.rows.push(row);
            }
            _ => changes.push(Change { rows: vec![row] }),
        }
    }
    changes
}

/// The metrics of one app's timeline.
pub fn of_app(rows: &[Row], window: &Window) -> Metrics {
    of_apps(std::iter::once(rows), window)
}

/// The metrics of several apps' timelines together.
pub fn of_apps<'a>(timelines: impl IntoIterator<Item = &'a [Row]>, window: &Window) -> Metrics {
    let mut tally = Tally::default();
    for rows in timelines {
        tally.add(rows, window);
    }
    tally.finish(window)
}

/// The samples of several apps, added one timeline at a time (so that no caller has to hold
/// every timeline), then turned into [`Metrics`].
#[derive(Default)]
pub struct Tally {
    deployments: usize,
    succeeded: usize,
    failed: usize,
    lead_times: Vec<u64>,
    restores: Vec<u64>,
    without_commit: usize,
    skewed: usize,
    still_failing: usize,
    earliest_seen: Option<u64>,
    approximate: usize,
    /// Each deployment in the window: when it started and whether it was a failed change.
    started: Vec<(u64, bool)>,
}

impl Tally {
    /// Adds one app's timeline.
    pub fn add(&mut self, rows: &[Row], window: &Window) {
        if let Some(first) = rows.first() {
            let first = first.deployment.first_seconds();
            self.earliest_seen = Some(self.earliest_seen.map_or(first, |earliest| earliest.min(first)));
        }
        let changes = changes(rows);
        let in_window = |time: u64| time >= window.since && time <= window.until;
        for change in &changes {
            if !in_window(change.first()) {
                continue;
            }
            self.deployments += 1;
            self.approximate += usize::from(change.rows.iter().any(|row| row.deployment.observed));
            let failed = Self::undone(change, window) || change.rows.iter().any(|row| row.failed);
            self.failed += usize::from(failed);
            self.started.push((change.first(), failed));
            let Some(ready_at) = change.ready_at() else { continue };
            self.succeeded += 1;
            match change.rows[0]
                .deployment
                .commit
                .as_ref()
                .and_then(|commit| crate::duration::parse_timestamp(&commit.time))
            {
                Some(committed) if committed > ready_at => {
                    // The commit is dated after its own deployment: the committer's clock ran ahead.
                    self.skewed += 1;
                    self.lead_times.push(0);
                }
                Some(committed) => self.lead_times.push(ready_at - committed),
                None => self.without_commit += 1,
            }
        }
        self.restores_of(&changes, window);
    }

    /// Whether it was rolled back or reverted within the failure window.
    fn undone(change: &Change<'_>, window: &Window) -> bool {
        let limit = change.first().saturating_add(window.failure_window);
        change.rows.iter().any(|row| {
            row.undone_at.as_deref().and_then(crate::duration::parse_timestamp).is_some_and(|undone| undone <= limit)
        })
    }

    /// Failure to the next good deployment: a failed reconcile, or a change later rolled back or
    /// reverted, starts a failure; the next successful row of a good change ends it.
    fn restores_of(&mut self, changes: &[Change<'_>], window: &Window) {
        let mut failing_since: Option<u64> = None;
        for change in changes {
            let bad_change = Self::undone(change, window);
            for row in &change.rows {
                let time = row.deployment.first_seconds();
                match (failing_since, row.failed || bad_change) {
                    (None, true) => failing_since = Some(time),
                    (Some(since), false) => {
                        if time >= window.since && time <= window.until {
                            self.restores.push(time.saturating_sub(since));
                        }
                        failing_since = None;
                    }
                    _ => {}
                }
            }
        }
        self.still_failing += usize::from(failing_since.is_some());
    }

    /// The figures of everything added.
    pub fn finish(self, window: &Window) -> Metrics {
        let days = (window.until.saturating_sub(window.since) as f64 / 86_400.0).max(1.0 / 24.0);
        let mut unseen = Vec::new();
        if let Some(earliest) = self.earliest_seen.filter(|earliest| *earliest > window.since) {
            unseen.push(format!(
                "deployments before {} (Flux keeps 5 per app; the ledger keeps what was seen since)",
                crate::duration::format_timestamp(earliest as i64)
            ));
        }
        if self.without_commit > 0 {
            unseen.push(format!(
                "the commit time of {} deployment(s): lead time leaves them out (run app history to look them up)",
                self.without_commit
            ));
        }
        if self.skewed > 0 {
            unseen.push(format!("{} commit(s) dated after their deployment (clock skew): counted as 0 s", self.skewed));
        }
        if self.approximate > 0 {
            unseen.push(format!(
                "the exact time of {} deployment(s) of manifests Flux already had: dated when first seen",
                self.approximate
            ));
        }
        if self.still_failing > 0 {
            unseen.push(format!("{} failure(s) not restored yet: not in time to restore", self.still_failing));
        }
        Metrics {
            deployments: self.deployments,
            succeeded: self.succeeded,
            deployment_frequency: Frequency {
                per_day: self.succeeded as f64 / days,
                per_week: self.succeeded as f64 * 7.0 / days,
                samples: self.succeeded,
            },
            lead_time: Spread::of(self.lead_times),
            change_failure_rate: Rate {
                failed: self.failed,
                deployments: self.deployments,
                rate: (self.deployments > 0).then(|| self.failed as f64 / self.deployments as f64),
            },
            time_to_restore: Spread::of(self.restores),
            weekly: weeks(&self.started, window),
            unseen,
        }
    }
}

/// The most weeks counted: a year.
const MOST_WEEKS: u64 = 53;

/// The window in weeks back from its end, each with the deployments that started in it.
fn weeks(started: &[(u64, bool)], window: &Window) -> Vec<Week> {
    const WEEK: u64 = 7 * 86_400;
    let span = window.until.saturating_sub(window.since);
    let count = span.div_ceil(WEEK).clamp(1, MOST_WEEKS);
    (0..count)
        .rev()
        .map(|back| {
            let end = window.until.saturating_sub(back * WEEK);
            let start = end.saturating_sub(WEEK).max(window.since);
            let inside =
                started.iter().filter(|(time, _)| *time >= start && (*time < end || (back == 0 && *time == end)));
            let (deployments, failed) =
                inside.fold((0, 0), |(all, failed), (_, bad)| (all + 1, failed + usize::from(*bad)));
            Week { start: crate::duration::format_timestamp(start as i64), deployments, failed }
        })
        .collect()
}
