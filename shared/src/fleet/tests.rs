//! The fleet's matrix from reports built by hand, its screen, and the flags.

use clap::Parser;

use super::matrix::{CellState, Reached, build};
use crate::cli::GlobalArgs;
use crate::readers::{AppKind, AppState, AppStatus, Report};

const HEAD: &str = "1111111111111111111111111111111111111111";
const OLD: &str = "2222222222222222222222222222222222222222";

fn app(name: &str, state: AppState, version: &str) -> AppStatus {
    AppStatus {
        applied_revision: Some(version.into()),
        message: (state != AppState::Ready).then(|| "install retries exhausted".to_string()),
        ..AppStatus::bare("flux-system", name, AppKind::Helm, state)
    }
}

fn report(cluster: &str, config_commit: &str, apps: Vec<AppStatus>) -> Report {
    let record = crate::record::InstallRecord::of_cluster(cluster);
    let mut sync = app(crate::flux::bootstrap::SYNC_NAME, AppState::Ready, &format!("main@sha1:{config_commit}"));
    sync.kind = AppKind::Kustomize;
    let mut report = Report::of(apps, vec![sync], Some(record));
    report.flux.version = Some("v2.9.0".into());
    report
}

fn reached(context: &str, report: Result<Report, &str>) -> Reached {
    Reached { column: super::Column::of_context(context), report: report.map_err(String::from) }
}

#[test]
fn each_app_gets_a_cell_per_cluster_and_a_version_that_differs_is_marked() {
    let fleet = build(
        &[
            reached(
                "kind-dev",
                Ok(report(
                    "dev",
                    HEAD,
                    vec![app("db", AppState::Ready, "0.2.0"), app("web", AppState::Ready, "1.0.0")],
                )),
            ),
            reached(
                "kind-uat",
                Ok(report(
                    "uat",
                    OLD,
                    vec![app("db", AppState::Failing, "0.1.0"), app("web", AppState::Ready, "1.0.0")],
                )),
            ),
            reached("kind-prod", Err("no answer within 15s")),
        ],
        Some(HEAD),
    );
    let names: Vec<Option<&str>> = fleet.clusters.iter().map(|cluster| cluster.name.as_deref()).collect();
    assert_eq!(names, [Some("dev"), Some("uat"), None]);
    assert!(!fleet.clusters[0].behind && fleet.clusters[1].behind && !fleet.clusters[2].reachable);
    assert_eq!(fleet.clusters[2].error.as_deref(), Some("no answer within 15s"));
    let rows: Vec<(&str, bool)> = fleet.apps.iter().map(|app| (app.name.as_str(), app.differs)).collect();
    assert_eq!(rows, [("db", true), ("web", false)]);
    let db: Vec<CellState> = fleet.apps[0].cells.iter().map(|cell| cell.state).collect();
    assert_eq!(db, [CellState::Ready, CellState::Failing, CellState::Unknown]);
    assert_eq!(fleet.apps[0].cells[1].message.as_deref(), Some("install retries exhausted"));
    let summary = fleet.summary;
    assert_eq!(
        (summary.apps, summary.differing, summary.not_ready, summary.unreachable, summary.behind),
        (2, 1, 1, 1, 1)
    );

    let text = super::render::table(&fleet, true, crate::output::style::Style::plain());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), ["APP", "DEV", "UAT", "KIND-PROD", "VERSIONS"]);
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["flux-system/db", "ready", "0.2.0", "failing", "0.1.0", "unknown", "differ"]
    );
    assert!(
        text.contains("uat (context kind-uat): config main@sha1:22222222 (behind the config repo's head)\n"),
        "{text}"
    );
    assert!(text.contains("kind-prod (context kind-prod): unreachable: no answer within 15s\n"), "{text}");
    assert!(
        text.ends_with("2 apps on 3 clusters: 1 differ, 1 not ready; 1 clusters unreachable, 1 behind\n"),
        "{text}"
    );
}

#[test]
fn an_app_in_one_cluster_only_is_absent_elsewhere_and_does_not_differ() {
    let fleet = build(
        &[
            reached("dev", Ok(report("dev", HEAD, vec![app("web", AppState::Ready, "1.0.0")]))),
            reached("uat", Ok(report("uat", HEAD, Vec::new()))),
        ],
        None,
    );
    let cells: Vec<CellState> = fleet.apps[0].cells.iter().map(|cell| cell.state).collect();
    assert_eq!(cells, [CellState::Ready, CellState::Absent]);
    assert!(!fleet.apps[0].differs);
    assert!(fleet.clusters.iter().all(|cluster| !cluster.behind), "no head read, nobody is behind");
}

#[derive(Parser)]
struct Probe {
    #[command(flatten)]
    status: super::StatusArgs,
    #[command(flatten)]
    global: GlobalArgs,
}

fn request(args: &[&str]) -> crate::error::Result<super::StatusRequest> {
    let probe = Probe::try_parse_from([&["status"][..], args].concat()).unwrap();
    probe.status.request(&probe.global)
}

#[test]
fn context_takes_a_list_and_the_flags_are_checked() {
    let asked = request(&["--context", "dev, uat,prod", "--no-config-repo"]).unwrap();
    assert_eq!(asked.contexts.unwrap(), ["dev", "uat", "prod"]);
    assert_eq!(asked.connection.context, None, "each cluster gets its own context");
    assert!(asked.config.is_none());
    assert!(request(&[]).unwrap().contexts.is_none(), "the fleet file's clusters");
    for (args, said) in [
        (&["--context", "dev", "--all-contexts"][..], "--context and --all-contexts"),
        (&["--context", ","][..], "names no context"),
        (&["--context", "dev,uat", "--server", "https://127.0.0.1:6443"][..], "several"),
        (&["--token", "t"][..], "several"),
        (&["--context", "dev", "--concurrency", "0"][..], "--concurrency 0"),
        (&["--context", "dev", "--timeout", "0s"][..], "--timeout 0"),
    ] {
        let error = request(args).unwrap_err();
        assert!(error.to_string().contains(said), "{args:?}: {error}");
    }
}
