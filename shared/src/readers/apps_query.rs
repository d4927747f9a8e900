//! The Apps listing's snapshots (what the UI's live listing publishes on each change), and its filters
//! and pages, the same for the API and the page: server-side, so a browser never receives 10,000
//! rows to page through itself.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::names;
use crate::readers::{AppKind, AppState, AppStatus, Report, Runtime, Scope, Summary, summarize};

/// Rows per page unless `limit` says otherwise, and the most one page may hold.
pub(crate) const DEFAULT_LIMIT: usize = 50;
pub(crate) const MAX_LIMIT: usize = 500;

/// The query string of `GET /apps` and `GET /api/v1/apps`, as sent.
#[derive(Debug, Clone, Default)]
pub(crate) struct AppsParams {
    pub(crate) namespace: Option<String>,
    pub(crate) health: Option<String>,
    pub(crate) q: Option<String>,
    pub(crate) limit: Option<String>,
    pub(crate) continue_after: Option<String>,
}

impl AppsParams {
    /// Reads a query string (`RawQuery`); other parameters are left alone, as a browser may add some.
    pub(crate) fn parse(query: Option<&str>) -> AppsParams {
        let mut params = AppsParams::default();
        for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            let field = match &*name {
                "namespace" => &mut params.namespace,
                "health" => &mut params.health,
                "q" => &mut params.q,
                "limit" => &mut params.limit,
                "continue" => &mut params.continue_after,
                _ => continue,
            };
            *field = Some(value.into_owned());
        }
        params
    }
}

/// The same, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppsQuery {
    pub(crate) namespace: Option<String>,
    pub(crate) health: Option<AppState>,
    pub(crate) q: Option<String>,
    pub(crate) limit: usize,
    /// The page starts after this row (namespace, name).
    pub(crate) after: Option<(String, String)>,
}

impl AppsParams {
    pub(crate) fn checked(&self) -> Result<AppsQuery> {
        let namespace = non_empty(&self.namespace);
        if let Some(namespace) = &namespace {
            names::validate_name(namespace, "namespace")?;
        }
        let health = match non_empty(&self.health) {
            None => None,
            Some(word) => match AppState::ALL.into_iter().find(|state| state.word() == word) {
                Some(state) => Some(state),
                None => {
                    return Err(Error::usage(
                        format!("health {word:?} is not one of ready, failing, progressing, suspended"),
                        "use health=ready, failing, progressing or suspended, or leave it out",
                    ));
                }
            },
        };
        let limit = checked_limit(&self.limit)?;
        let after = match non_empty(&self.continue_after) {
            None => None,
            Some(token) => match token.split_once('/') {
                Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() => {
                    Some((namespace.to_string(), name.to_string()))
                }
                _ => {
                    return Err(Error::usage(
                        format!("continue {token:?} is not a token this server gave"),
                        "pass the `continue` value of the previous page as it came",
                    ));
                }
            },
        };
        let q = non_empty(&self.q).map(|q| q.to_lowercase());
        Ok(AppsQuery { namespace, health, q, limit, after })
    }
}

/// A page's `limit`: from 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when not given.
pub(crate) fn checked_limit(limit: &Option<String>) -> Result<usize> {
    match non_empty(limit) {
        None => Ok(DEFAULT_LIMIT),
        Some(text) => match text.parse::<usize>() {
            Ok(limit) if (1..=MAX_LIMIT).contains(&limit) => Ok(limit),
            _ => Err(Error::usage(
                format!("limit {text:?} is not a number from 1 to {MAX_LIMIT}"),
                format!("use limit=1 to limit={MAX_LIMIT} (default {DEFAULT_LIMIT})"),
            )),
        },
    }
}

/// A parameter's value, trimmed; `None` when absent or blank.
pub(crate) fn non_empty(value: &Option<String>) -> Option<String> {
    value.as_deref().map(str::trim).filter(|value| !value.is_empty()).map(str::to_string)
}

/// One row of the listing: a `status` row and whether kubectl-gitops manages it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppRow {
    #[serde(flatten)]
    pub(crate) app: AppStatus,
    /// Labelled as ours (`status` lists these first); the others are Flux objects we did not add.
    pub(crate) managed: bool,
}

/// One page of `GET /api/v1/apps` (docs/api.md) and of the MCP tool `list_apps` (docs/mcp.md).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppsPage {
    /// The rows of this page, by namespace then name.
    pub(crate) items: Vec<AppRow>,
    /// Pass as `continue` for the next page; absent on the last.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub(crate) continue_after: Option<String>,
    /// Rows matching the filters, on every page.
    pub(crate) matching: usize,
    /// Counts over the matching rows.
    pub(crate) summary: Summary,
    /// The namespaces that hold rows, for the filter.
    pub(crate) namespaces: Vec<String>,
    /// Namespaces or kinds the user may not read.
    pub(crate) forbidden: Vec<String>,
    /// The snapshot this page was cut from; the events carry the same number.
    pub(crate) revision: u64,
    /// The one namespace watched when RBAC does not let the user list every namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) watched_namespace: Option<String>,
}

/// A listing's rows, ours and the other Flux objects, by namespace then name (then kind: a
/// Kustomization and a HelmRelease may share a name).
pub(crate) fn sorted_rows(report: Report) -> Vec<AppRow> {
    let mut rows: Vec<AppRow> = report
        .platform
        .into_iter()
        .chain(report.apps)
        .map(|app| AppRow { app, managed: true })
        .chain(report.tenants.into_iter().map(|app| AppRow { app, managed: false }))
        .chain(report.config_repo.into_iter().map(|app| AppRow { app, managed: false }))
        .chain(report.other_flux_objects.into_iter().map(|app| AppRow { app, managed: false }))
        .collect();
    rows.sort_by(|a, b| row_key(&a.app).cmp(&row_key(&b.app)));
    rows
}

fn row_key(app: &AppStatus) -> (&str, &str, AppKind) {
    (&app.namespace, &app.name, app.kind)
}

/// The rows of `new` that differ from `old` (both sorted), in order; a row that is gone comes as
/// it was with the message `deleted`. One walk through both, copying only what changed.
pub(crate) fn changed_rows(old: &[AppRow], new: &[AppRow]) -> Vec<AppStatus> {
    let (mut old, mut new) = (old.iter().peekable(), new.iter().peekable());
    let mut changed = Vec::new();
    loop {
        let order = match (old.peek(), new.peek()) {
            (None, None) => return changed,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(was), Some(now)) => row_key(&was.app).cmp(&row_key(&now.app)),
        };
        match order {
            Ordering::Less => {
                changed.extend(old.next().map(|was| AppStatus { message: Some("deleted".into()), ..was.app.clone() }))
            }
            Ordering::Greater => changed.extend(new.next().map(|now| now.app.clone())),
            Ordering::Equal => {
                if let (Some(was), Some(now)) = (old.next(), new.next())
                    && was != now
                {
                    changed.push(now.app.clone());
                }
            }
        }
    }
}

/// Cuts one page out of a snapshot: only the page's rows are copied.
pub(crate) fn page(snapshot: &Snapshot, query: &AppsQuery) -> AppsPage {
    // The rows are sorted: each namespace is one run of them.
    let mut namespaces: Vec<String> = Vec::new();
    for row in &snapshot.rows {
        if namespaces.last() != Some(&row.app.namespace) {
            namespaces.push(row.app.namespace.clone());
        }
    }
    let matching: Vec<&AppRow> = snapshot.rows.iter().filter(|row| matches(&row.app, query)).collect();
    let summary = summarize(matching.iter().map(|row| &row.app));
    let start = match &query.after {
        None => 0,
        Some((namespace, name)) => {
            matching.partition_point(|row| (&row.app.namespace, &row.app.name) <= (namespace, name))
        }
    };
    let items: Vec<AppRow> = matching.iter().skip(start).take(query.limit).map(|row| (*row).clone()).collect();
    let continue_after = (start + items.len() < matching.len())
        .then(|| items.last().map(|row| format!("{}/{}", row.app.namespace, row.app.name)))
        .flatten();
    AppsPage {
        items,
        continue_after,
        matching: matching.len(),
        summary,
        namespaces,
        forbidden: snapshot.forbidden.clone(),
        revision: snapshot.revision,
        watched_namespace: match &snapshot.scope {
            Scope::All => None,
            Scope::Namespace(namespace) => Some(namespace.clone()),
        },
    }
}

pub(crate) fn matches(app: &AppStatus, query: &AppsQuery) -> bool {
    query.namespace.as_ref().is_none_or(|namespace| *namespace == app.namespace)
        && query.health.is_none_or(|health| health == app.state)
        && query.q.as_ref().is_none_or(|q| app.name.to_lowercase().contains(q.as_str()))
}

/// How many past changes a snapshot keeps for streams that fell behind, and how many changed rows
/// in all at most.
const KEPT_CHANGES: usize = 8;
const KEPT_ROWS: usize = 1_000;

/// The listing at one moment.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// Goes up by one on every change; pages carry it so that a reload can tell it is current.
    pub(crate) revision: u64,
    /// Every watch listed once; until then the rows are incomplete.
    pub(crate) listed: bool,
    /// The rows of `status`, sorted by namespace and name once per snapshot: every page, filter
    /// and live refresh cuts from these instead of sorting the listing again. The snapshot holds
    /// them and nothing else of the listing: at 10,000 apps a second copy costs megabytes.
    pub(crate) rows: Vec<AppRow>,
    /// The last changes that led here, oldest first: the revision each one made and the rows it
    /// changed (a deleted row with the message `deleted`). Worked out once here, not once per
    /// event stream; a stream that missed a snapshot or two sends what they changed too.
    pub(crate) changes: Vec<(u64, Arc<Vec<AppStatus>>)>,
    /// What the user may not read, as `status` reports it.
    pub(crate) forbidden: Vec<String>,
    /// Where the watches look: every namespace, or the user's own when that is all RBAC allows.
    pub(crate) scope: Scope,
    /// Why the watches could not start, when they could not.
    pub(crate) error: Option<String>,
    /// The Flux runtime and install record, as `status` reports them: what the Fleet page says of
    /// the cluster (its name, its config repo revision, its Flux version).
    pub(crate) runtime: Option<Runtime>,
    /// Until the first listing is complete: how far the watches' lists are, for the pages shown
    /// meanwhile.
    pub(crate) progress: Option<String>,
}

impl Snapshot {
    pub(crate) fn starting() -> Snapshot {
        Snapshot {
            revision: 0,
            listed: false,
            rows: Vec::new(),
            changes: Vec::new(),
            forbidden: Vec::new(),
            scope: Scope::All,
            error: None,
            runtime: None,
            progress: None,
        }
    }

    /// The snapshot of a complete listing after `last`; `None` when nothing changed since it.
    pub(crate) fn next(last: &Snapshot, revision: u64, report: Report, scope: Scope) -> Option<Snapshot> {
        let forbidden = report.forbidden.clone();
        let runtime = Some(report.flux.clone());
        let rows = sorted_rows(report);
        // After a failed or unlisted snapshot there is nothing to compare with: streams resync.
        let mut changes = Vec::new();
        if last.listed {
            let changed = changed_rows(&last.rows, &rows);
            if changed.is_empty() && forbidden == last.forbidden && scope == last.scope && runtime == last.runtime {
                return None;
            }
            changes.clone_from(&last.changes);
            changes.push((revision, Arc::new(changed)));
            // Bounded by count and by rows, so that a change of every row is not kept eight times.
            while changes.len() > KEPT_CHANGES
                || changes.len() > 1 && changes.iter().map(|(_, rows)| rows.len()).sum::<usize>() > KEPT_ROWS
            {
                changes.remove(0);
            }
        }
        Some(Snapshot { revision, listed: true, rows, changes, forbidden, scope, error: None, runtime, progress: None })
    }

    /// What `fleet status` reads of a cluster, from this snapshot: its runtime, the apps we manage
    /// (not the platform's) and the config repo's sync; or why there is nothing to read yet.
    pub(crate) fn fleet_report(&self) -> std::result::Result<Report, String> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let (true, Some(runtime)) = (self.listed, &self.runtime) else {
            return Err("still listing its Flux objects".to_string());
        };
        let apps: Vec<AppStatus> =
            self.rows.iter().filter(|row| row.managed && !row.app.platform).map(|row| row.app.clone()).collect();
        let config_repo: Vec<AppStatus> = self.syncs(runtime).map(|row| row.app.clone()).collect();
        let summary = summarize(apps.iter().chain(&config_repo));
        Ok(Report {
            flux: runtime.clone(),
            platform: Vec::new(),
            apps,
            tenants: Vec::new(),
            config_repo,
            other_flux_objects: Vec::new(),
            forbidden: self.forbidden.clone(),
            summary,
        })
    }

    /// The rows of the config repo's sync (the Kustomization `flux-system` in Flux's namespace).
    fn syncs<'a>(&'a self, runtime: &'a Runtime) -> impl Iterator<Item = &'a AppRow> {
        self.rows.iter().filter(|row| {
            !row.managed
                && row.app.kind == AppKind::Kustomize
                && row.app.name == crate::flux::bootstrap::SYNC_NAME
                && runtime.namespace.as_deref() == Some(row.app.namespace.as_str())
        })
    }

    /// The config repo commit the cluster applied, as its sync reports it (`main@sha1:…`).
    pub(crate) fn config_revision(&self) -> Option<&str> {
        self.syncs(self.runtime.as_ref()?).find_map(|row| row.app.applied_revision.as_deref())
    }

    /// The rows changed since the snapshot `revision`, each once as it is now; `None` when this
    /// snapshot no longer knows (the stream fell too far behind, or the watches restarted).
    pub(crate) fn changed_since(&self, revision: u64) -> Option<Vec<AppStatus>> {
        if revision == self.revision {
            return Some(Vec::new());
        }
        let start = self.changes.iter().position(|(made, _)| *made == revision + 1)?;
        let mut changed = BTreeMap::new();
        for (_, rows) in &self.changes[start..] {
            for row in rows.iter() {
                changed.insert((row.namespace.clone(), row.name.clone(), row.kind), row.clone());
            }
        }
        Some(changed.into_values().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(namespace: &str, name: &str, state: AppState) -> AppStatus {
        AppStatus::bare(namespace, name, AppKind::Kustomize, state)
    }

    fn listing(apps: Vec<AppStatus>) -> Report {
        Report::of(apps, Vec::new(), None)
    }

    fn report(rows: Vec<AppStatus>) -> Snapshot {
        Snapshot::next(&Snapshot::starting(), 1, listing(rows), Scope::All).unwrap()
    }

    #[test]
    fn a_snapshot_carries_what_changed_since_the_one_before_worked_out_once() {
        let first = report(vec![
            row("team", "a", AppState::Ready),
            row("team", "b", AppState::Ready),
            row("team", "c", AppState::Ready),
        ]);
        assert_eq!(first.changed_since(0), None, "the first listing has nothing to compare with");
        let second = Snapshot::next(
            &first,
            2,
            listing(vec![
                row("team", "d", AppState::Ready),
                row("team", "b", AppState::Suspended),
                row("team", "a", AppState::Ready),
            ]),
            Scope::All,
        )
        .unwrap();
        let summary = |changed: Vec<AppStatus>| -> Vec<(String, AppState, Option<String>)> {
            changed.into_iter().map(|app| (app.name, app.state, app.message)).collect()
        };
        let b_suspended = ("b".to_string(), AppState::Suspended, None);
        let c_deleted = ("c".to_string(), AppState::Ready, Some("deleted".to_string()));
        let d_added = ("d".to_string(), AppState::Ready, None);
        assert_eq!(summary(second.changed_since(1).unwrap()), [b_suspended.clone(), c_deleted.clone(), d_added]);
        let rows: Vec<_> = second.rows.iter().map(|row| row.app.name.as_str()).collect();
        assert_eq!(rows, ["a", "b", "d"]);

        // A stream two snapshots behind gets both changes, each row once as it is now.
        let third = Snapshot::next(
            &second,
            3,
            listing(vec![row("team", "a", AppState::Ready), row("team", "b", AppState::Suspended)]),
            Scope::All,
        )
        .unwrap();
        let d_deleted = ("d".to_string(), AppState::Ready, Some("deleted".to_string()));
        assert_eq!(summary(third.changed_since(2).unwrap()), std::slice::from_ref(&d_deleted));
        assert_eq!(summary(third.changed_since(1).unwrap()), [b_suspended, c_deleted, d_deleted]);
        assert_eq!(third.changed_since(3), Some(Vec::new()));
        // The same listing again is no new snapshot.
        let same = listing(vec![row("team", "a", AppState::Ready), row("team", "b", AppState::Suspended)]);
        assert!(Snapshot::next(&third, 4, same, Scope::All).is_none());
        // One it does not know of (before the first listing, or from before a restart): resync.
        assert_eq!(third.changed_since(0), None);
    }

    #[test]
    fn the_fleet_page_reads_of_a_snapshot_what_fleet_status_reads_of_a_cluster() {
        assert_eq!(Snapshot::starting().fleet_report().err().as_deref(), Some("still listing its Flux objects"));
        let failed = Snapshot { error: Some("connection refused".into()), ..Snapshot::starting() };
        assert_eq!(failed.fleet_report().err().as_deref(), Some("connection refused"));

        let mut mccp = AppStatus::bare("flux-system", "mccp", AppKind::Helm, AppState::Ready);
        mccp.applied_revision = Some("0.2.0".into());
        let mut sync = row("flux-system", "flux-system", AppState::Ready);
        sync.applied_revision = Some(format!("main@sha1:{}", "a".repeat(40)));
        let mut listed = Report::of(vec![mccp], vec![sync], Some(crate::record::InstallRecord::of_cluster("dev")));
        listed.flux.namespace = Some("flux-system".into());
        listed.platform.push(AppStatus { platform: true, ..row("flux-system", "ingress", AppState::Failing) });
        // A tenant's Kustomization of the same name is not the sync.
        listed.other_flux_objects.push(row("team", "flux-system", AppState::Failing));
        let snapshot = Snapshot::next(&Snapshot::starting(), 1, listed, Scope::All).unwrap();

        let read = snapshot.fleet_report().unwrap();
        let names =
            |rows: &[AppStatus]| rows.iter().map(|row| format!("{}/{}", row.namespace, row.name)).collect::<Vec<_>>();
        assert_eq!(names(&read.apps), ["flux-system/mccp"], "the apps, not the platform's");
        assert_eq!(names(&read.config_repo), ["flux-system/flux-system"]);
        let reached =
            [crate::fleet::Reached { column: crate::fleet::Column::of_context("kind-dev"), report: Ok(read) }];
        let fleet = crate::fleet::matrix::build(&reached, None);
        let cluster = &fleet.clusters[0];
        assert_eq!((cluster.name.as_deref(), cluster.path.as_deref()), (Some("dev"), Some("clusters/dev")));
        assert_eq!(cluster.config_revision, Some(format!("main@sha1:{}", "a".repeat(40))));
        assert_eq!(fleet.apps[0].cells[0].version.as_deref(), Some("0.2.0"));
        assert_eq!(fleet.summary.not_ready, 0, "the failing platform app and tenant are not in the matrix");

        // A new Flux version alone is a new snapshot: the Fleet page says which one runs.
        let mut upgraded = Report::of(Vec::new(), Vec::new(), None);
        upgraded.flux.version = Some("v2.9.0".into());
        let before = Snapshot::next(&Snapshot::starting(), 1, Report::of(Vec::new(), Vec::new(), None), Scope::All);
        assert!(Snapshot::next(&before.unwrap(), 2, upgraded, Scope::All).is_some());
    }

    impl Snapshot {
        fn revised(&self, revision: u64) -> Snapshot {
            Snapshot { revision, ..self.clone() }
        }
    }

    fn query(text: &str) -> Result<AppsQuery> {
        AppsParams::parse(Some(text)).checked()
    }

    #[test]
    fn pages_follow_each_other_without_gaps_or_repeats() {
        let rows: Vec<AppStatus> =
            (0..25).map(|i| row(&format!("team-{}", i % 3), &format!("app-{i:02}"), AppState::Ready)).collect();
        let report = report(rows);
        let mut seen = Vec::new();
        let mut next = String::new();
        loop {
            let page = page(&report.revised(7), &query(&format!("limit=10&continue={next}")).unwrap());
            assert_eq!(page.matching, 25);
            assert_eq!(page.revision, 7);
            seen.extend(page.items.iter().map(|row| format!("{}/{}", row.app.namespace, row.app.name)));
            match page.continue_after {
                Some(token) => next = token,
                None => break,
            }
        }
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(seen, sorted);
        assert_eq!(seen.len(), 25);
    }

    #[test]
    fn a_deleted_row_does_not_shift_the_next_page() {
        let rows: Vec<AppStatus> = (0..6).map(|i| row("team", &format!("app-{i}"), AppState::Ready)).collect();
        let first = page(&report(rows.clone()), &query("limit=3").unwrap());
        assert_eq!(first.continue_after.as_deref(), Some("team/app-2"));
        let without_app_1: Vec<AppStatus> = rows.into_iter().filter(|row| row.name != "app-1").collect();
        let second = page(&report(without_app_1), &query("limit=3&continue=team/app-2").unwrap());
        let names: Vec<&str> = second.items.iter().map(|row| row.app.name.as_str()).collect();
        assert_eq!(names, ["app-3", "app-4", "app-5"]);
        assert_eq!(second.continue_after, None);
    }

    #[test]
    fn filters_combine() {
        let report = report(vec![
            row("team-a", "web", AppState::Ready),
            row("team-a", "Web-admin", AppState::Failing),
            row("team-b", "web", AppState::Failing),
            row("team-b", "db", AppState::Failing),
        ]);
        let names = |text: &str| -> Vec<String> {
            page(&report, &query(text).unwrap())
                .items
                .iter()
                .map(|row| format!("{}/{}", row.app.namespace, row.app.name))
                .collect()
        };
        assert_eq!(names("health=failing&q=WEB"), ["team-a/Web-admin", "team-b/web"]);
        assert_eq!(names("namespace=team-b&health=failing"), ["team-b/db", "team-b/web"]);
        assert_eq!(names("namespace=team-a&health=&q="), ["team-a/Web-admin", "team-a/web"]);
        let filtered = page(&report, &query("health=failing").unwrap());
        assert_eq!((filtered.summary.objects, filtered.summary.failing), (3, 3));
        assert_eq!(filtered.namespaces, ["team-a", "team-b"]);
    }

    #[test]
    fn bad_parameters_are_refused_with_a_hint() {
        for (text, said) in [
            ("health=sick", "health \"sick\""),
            ("limit=0", "limit \"0\""),
            ("limit=501", "limit \"501\""),
            ("limit=ten", "limit \"ten\""),
            ("continue=nonsense", "continue \"nonsense\""),
            ("namespace=Not_A_Namespace", "Not_A_Namespace"),
        ] {
            let error = query(text).unwrap_err();
            assert!(error.to_string().contains(said), "{text}: {error}");
            assert!(error.hint().is_some(), "{text}");
        }
    }
}
