//! The version rules of `upgrade`, on hand-built records: one line at a time, never down.

use super::*;
use crate::error::ExitCode;
use crate::testing::quiet;

fn cluster(version: &str) -> (ClusterDir, InstallRecord) {
    let record = InstallRecord {
        url: "ssh://git@127.0.0.1/fleet.git".into(),
        branch: "main".into(),
        path: "clusters/dev".into(),
        cluster_name: "dev".into(),
        flux_version: version.into(),
        components: crate::flux::DEFAULT_COMPONENTS.map(String::from).to_vec(),
        provider: None,
        repository: None,
        hostname: None,
        platform: None,
    };
    (ClusterDir { name: "dev".into(), path: "clusters/dev".into() }, record)
}

fn check(target: &str, allow_skip: bool, running: Option<&str>, recorded: &str) -> Result<Versions> {
    versions(target.parse().unwrap(), allow_skip, running.map(String::from), &[cluster(recorded)], &quiet())
}

#[test]
fn the_next_line_and_patches_are_allowed() {
    let next = check("v2.9.4", false, Some("v2.8.3"), "v2.8.3").unwrap();
    assert_eq!(next.recorded_text(), "v2.8.3");
    assert_eq!(next.notes(), ["clusters/dev: Flux v2.8.3 -> v2.9.4 (the next release line)"]);
    assert!(check("v2.9.4", false, Some("v2.9.3"), "v2.9.3").is_ok());
    assert!(check("v2.9.4", false, Some("v2.9.4"), "v2.9.4").is_ok(), "up to date is no error");
}

#[test]
fn a_skipped_line_needs_allow_skip() {
    let error = check("v2.9.4", false, Some("v2.7.5"), "v2.7.5").unwrap_err();
    assert_eq!(error.exit_code(), ExitCode::Usage);
    assert_eq!(
        error.to_string(),
        "v2.7.5 to v2.9.4 skips 1 release line(s); Flux supports upgrading one line at a time"
    );
    assert!(error.hint().unwrap().contains("upgrade to the latest v2.8.x first, or pass --allow-skip"));
    assert!(check("v2.9.4", true, Some("v2.7.5"), "v2.7.5").is_ok());
}

#[test]
fn a_downgrade_is_refused_whether_recorded_or_running() {
    let recorded = check("v2.8.3", false, None, "v2.9.4").unwrap_err();
    assert!(recorded.to_string().contains("downgrades are refused"), "{recorded}");
    let running = check("v2.9.3", true, Some("v2.9.4"), "v2.9.3").unwrap_err();
    assert!(running.to_string().starts_with("Flux v2.9.4 runs or is recorded, and v2.9.3 is older"), "{running}");
}

#[test]
fn a_broken_record_version_is_named() {
    let error = check("v2.9.4", false, None, "2.8").unwrap_err();
    assert_eq!(error.exit_code(), ExitCode::Usage);
    assert!(error.to_string().contains("clusters/dev names Flux \"2.8\""), "{error}");
}

#[test]
fn the_cluster_and_the_record_disagreeing_is_said() {
    let versions = check("v2.9.4", false, Some("v2.8.3"), "v2.9.4").unwrap();
    assert_eq!(
        versions.disagreement().as_deref(),
        Some("the cluster runs Flux v2.8.3, but the install record in clusters/dev says v2.9.4")
    );
    let guessed = check("v2.9.4", false, Some("v2.9"), "v2.9.3").unwrap();
    assert_eq!(guessed.disagreement(), None, "a line guessed from an image agrees with its patches");
}

#[test]
fn storage_is_migrated_first_only_where_the_target_drops_a_recorded_version() {
    let kind = |stored: &[&str], served: &[&str], stale: usize| StoredKind {
        crd: "alerts.notification.toolkit.fluxcd.io".into(),
        group: "notification.toolkit.fluxcd.io".into(),
        kind: "Alert".into(),
        plural: "alerts".into(),
        storage: "v1beta3".into(),
        served: served.iter().map(|v| v.to_string()).collect(),
        stored: stored.iter().map(|v| v.to_string()).collect(),
        stale_objects: (0..stale).map(|i| format!("flux-system/alert-{i}")).collect(),
        objects: stale,
    };
    let target: FluxVersion = "v2.9.4".parse().unwrap();
    let stale_status = kind(&["v1beta2", "v1beta3"], &["v1beta2", "v1beta3"], 0);
    let managed_at_old = kind(&["v1beta3"], &["v1beta2", "v1beta3"], 2);
    let clean = kind(&["v1beta3"], &["v1beta2", "v1beta3"], 0);
    let needed = before_upgrade(&[stale_status.clone(), managed_at_old.clone(), clean], target).unwrap();
    assert_eq!(needed, [stale_status, managed_at_old]);
    let older: FluxVersion = "v2.8.3".parse().unwrap();
    assert!(before_upgrade(&[kind(&["v1beta2", "v1beta3"], &["v1beta2", "v1beta3"], 1)], older).unwrap().is_empty());
    let stuck = StoredKind { storage: "v1beta2".into(), ..kind(&["v1beta2"], &["v1beta2"], 0) };
    assert_eq!(before_upgrade(&[stuck], target).unwrap_err().exit_code(), ExitCode::Usage);
}

#[test]
fn inventory_entries_at_dropped_versions_are_named() {
    let target: FluxVersion = "v2.9.4".parse().unwrap();
    assert_eq!(
        preflight::dropped_entry("team_on-call_notification.toolkit.fluxcd.io_Alert", "v1beta2", target).as_deref(),
        Some("Alert team/on-call at notification.toolkit.fluxcd.io/v1beta2")
    );
    assert_eq!(preflight::dropped_entry("team_on-call_notification.toolkit.fluxcd.io_Alert", "v1beta3", target), None);
    assert_eq!(preflight::dropped_entry("default_web_apps_Deployment", "v1", target), None, "not a Flux kind");
    assert_eq!(preflight::dropped_entry("broken", "v1beta2", target), None);
}

#[test]
fn a_recorded_upgrade_names_its_version_and_never_a_local_file() {
    use clap::Parser;
    #[derive(Parser)]
    struct Upgrade {
        #[command(flatten)]
        upgrade: UpgradeArgs,
    }
    let given =
        ["upgrade", "--flux-version", "v2.9.4", "--cluster-name", "dev", "--allow-skip", "--components-file", "x.yaml"];
    let request = Upgrade::try_parse_from(given).unwrap().upgrade.request().unwrap();
    let words = upgrade_words(&request);
    assert_eq!(words.join(" "), "upgrade --flux-version v2.9.4 --cluster-name dev --allow-skip");
    let parsed: UpgradeArgs = crate::change::recorded::parse_args(&words[1..], &words).unwrap();
    assert_eq!(upgrade_words(&parsed.request().unwrap()), words);
}
