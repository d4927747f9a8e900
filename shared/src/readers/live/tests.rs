//! The decisions of `status --wait` and `--watch` on hand-written objects in the shape Flux v2.9
//! reports them, fed to the listing as watch events; and the wait loop on scripted verdicts.

use std::collections::VecDeque;

use kube::api::DynamicObject;
use serde_json::json;

use super::*;
use crate::cli::OutputFormat;
use crate::output::style::Style;
use crate::readers::collect::{Index, key};
use crate::readers::tests::detected;
use crate::testing::quiet;
use crate::wait::Limits;

const OLD: &str = "main@sha1:1111111111111111111111111111111111111111";
const NEW: &str = "main@sha1:2222222222222222222222222222222222222222";
const NEW_SHA: &str = "2222222222222222222222222222222222222222";

fn ready(status: &str, reason: &str, message: &str) -> serde_json::Value {
    json!([{"type": "Ready", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-12-02T11:00:00Z"}])
}

fn object(kind: &str, api_version: &str, name: &str, labels: bool, rest: serde_json::Value) -> DynamicObject {
    let mut value = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "flux-system", "generation": 2},
    });
    if labels {
        value["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "kubectl-gitops"});
    }
    for (field, content) in rest.as_object().unwrap() {
        value[field] = content.clone();
    }
    serde_json::from_value(value).unwrap()
}

fn git_repository(name: &str, revision: &str) -> DynamicObject {
    object(
        "GitRepository",
        "source.toolkit.fluxcd.io/v1",
        name,
        false,
        json!({
            "spec": {"url": format!("ssh://git@git.example.com/{name}.git"), "ref": {"branch": "main"}},
            "status": {"artifact": {"revision": revision}, "observedGeneration": 2,
                       "conditions": ready("True", "Succeeded", &format!("stored artifact for revision '{revision}'"))},
        }),
    )
}

/// A Kustomization of the GitRepository `source`, applied at `applied`, last attempted `attempted`.
fn kustomization(
    name: &str,
    source: &str,
    applied: Option<&str>,
    attempted: &str,
    condition: (&str, &str, &str),
) -> DynamicObject {
    let (status, reason, message) = condition;
    object(
        "Kustomization",
        "kustomize.toolkit.fluxcd.io/v1",
        name,
        name != "flux-system",
        json!({
            "spec": {"sourceRef": {"kind": "GitRepository", "name": source}, "path": "./", "suspend": false},
            "status": {"lastAppliedRevision": applied, "lastAttemptedRevision": attempted, "observedGeneration": 2,
                       "conditions": ready(status, reason, message)},
        }),
    )
}

fn applied(revision: &str) -> (&'static str, &'static str, String) {
    ("True", "ReconciliationSucceeded", format!("Applied revision: {revision}"))
}

fn ready_at(name: &str, source: &str, revision: &str) -> DynamicObject {
    let (status, reason, message) = applied(revision);
    kustomization(name, source, Some(revision), revision, (status, reason, &message))
}

fn row(app: &DynamicObject, sources: &[&DynamicObject]) -> AppStatus {
    let index: Index = sources.iter().map(|source| (key(source), (*source).clone())).collect();
    kustomization_row(app, &index)
}

#[test]
fn the_sync_is_done_only_when_ready_at_the_target() {
    let source = git_repository("flux-system", NEW);
    let sync = ready_at("flux-system", "flux-system", NEW);
    let at_new = row(&sync, &[&source]);
    for target in [Some(NEW_SHA), Some(NEW), Some(&NEW_SHA[..8]), None] {
        assert_eq!(judge_sync(&sync, &at_new, target), Verdict::Ready, "{target:?}");
    }

    // The branch moved on and Flux has not fetched it yet: that is what is waited for.
    let old_source = git_repository("flux-system", OLD);
    let old_sync = ready_at("flux-system", "flux-system", OLD);
    let Verdict::Waiting { why, healthy: true } = judge_sync(&old_sync, &row(&old_sync, &[&old_source]), Some(NEW_SHA))
    else {
        panic!()
    };
    assert_eq!(
        why,
        format!(
            "GitRepository flux-system/flux-system has {OLD}, not yet {NEW_SHA} (it fetches at its interval; `flux reconcile source git flux-system -n flux-system` fetches now)"
        )
    );
    // Fetched, not applied yet.
    let Verdict::Waiting { why, .. } = judge_sync(&old_sync, &row(&old_sync, &[&source]), Some(NEW_SHA)) else {
        panic!()
    };
    assert_eq!(why, format!("Kustomization flux-system/flux-system is at {OLD}, waiting for {NEW_SHA}"));
    // A spec change not observed yet is not done either.
    let mut unobserved = sync.clone();
    unobserved.metadata.generation = Some(3);
    assert!(matches!(judge_sync(&unobserved, &row(&unobserved, &[&source]), None), Verdict::Waiting { .. }));
}

#[test]
fn the_sync_fails_at_the_target_and_an_older_failure_is_waited_through() {
    let source = git_repository("flux-system", NEW);
    let broken = kustomization(
        "flux-system",
        "flux-system",
        Some(OLD),
        NEW,
        ("False", "BuildFailed", "kustomize build failed: missing resource"),
    );
    assert_eq!(
        judge_sync(&broken, &row(&broken, &[&source]), Some(NEW_SHA)),
        Verdict::Failing {
            attempt: Some(NEW.into()),
            why: "Kustomization flux-system/flux-system: BuildFailed: kustomize build failed: missing resource".into()
        }
    );
    // It failed at the old revision; the new one may fix it.
    let stale = kustomization("flux-system", "flux-system", Some(OLD), OLD, ("False", "BuildFailed", "missing"));
    assert!(matches!(
        judge_sync(&stale, &row(&stale, &[&source]), Some(NEW_SHA)),
        Verdict::Waiting { healthy: false, .. }
    ));
}

#[test]
fn rows_count_suspended_as_done_and_are_judged_at_what_their_source_offers() {
    let source = git_repository("apps", NEW);
    let mut paused = ready_at("paused", "apps", OLD);
    paused.data["spec"]["suspend"] = json!(true);
    assert_eq!(judge_listed(&paused, &row(&paused, &[&source])), Verdict::Ready);
    let web = ready_at("web", "apps", NEW);
    assert_eq!(judge_listed(&web, &row(&web, &[&source])), Verdict::Ready);
    let behind = ready_at("web", "apps", OLD);
    assert!(matches!(judge_listed(&behind, &row(&behind, &[&source])), Verdict::Waiting { healthy: true, .. }));
    let broken =
        kustomization("broken", "apps", None, NEW, ("False", "ArtifactFailed", "kustomization path not found"));
    assert!(matches!(judge_listed(&broken, &row(&broken, &[&source])), Verdict::Failing { .. }));
    let mut fresh = ready_at("fresh", "apps", NEW);
    fresh.data["status"] = json!({});
    let Verdict::Waiting { why, healthy: false } = judge_listed(&fresh, &row(&fresh, &[&source])) else { panic!() };
    assert_eq!(why, "Kustomization flux-system/fresh: waiting to be reconciled");
}

fn view() -> View {
    View {
        format: OutputFormat::Table,
        all_namespaces: false,
        headers: true,
        failed_only: false,
        cluster_only: false,
        style: Style::plain(),
    }
}

/// `object` as a watch delivers it to the listing: parsed from its JSON.
fn watched(object: &DynamicObject) -> Watched {
    serde_json::from_value(serde_json::to_value(object).unwrap()).unwrap()
}

/// Feeds a complete list of `objects` to the watch of each kind, as a (re)started watch does.
fn list(live: &mut Live, objects: &[DynamicObject]) {
    for index in 0..live.stores.len() {
        let kind = live.stores[index].kind.kind;
        live.apply((index, Ok(Event::Init)));
        for object in objects.iter().filter(|object| key(object).0 == kind) {
            live.apply((index, Ok(Event::InitApply(watched(object)))));
        }
        live.apply((index, Ok(Event::InitDone)));
    }
}

fn store_of(live: &Live, kind: &str) -> usize {
    live.stores.iter().position(|store| store.kind.kind == kind).unwrap()
}

fn parts(verdicts: &[(Part, Verdict)]) -> Vec<(String, &'static str)> {
    verdicts
        .iter()
        .map(|(part, verdict)| {
            let name = match part {
                Part::Row((_, _, name)) => name.clone(),
                other => format!("{other:?}"),
            };
            let verdict = match verdict {
                Verdict::Ready => "ready",
                Verdict::Failing { .. } => "failing",
                Verdict::Waiting { .. } => "waiting",
            };
            (name, verdict)
        })
        .collect()
}

#[tokio::test]
async fn the_watches_feed_the_listing_the_verdicts_and_the_timeout_message() {
    let live = Live::start(detected().cluster(), &Scope::Namespace("flux-system".into()), None, quiet()).await.unwrap();
    assert_eq!(live.stores.len(), 6, "one watch per kind, the sync is in scope");
    let mut wait = ClusterWait { live, view: view(), revision: Some(NEW_SHA.into()), head: None };
    let verdicts = wait.look().await.unwrap();
    assert_eq!(verdicts, [(Part::Listing, Verdict::Waiting { why: "listing gitrepositories".into(), healthy: false })]);

    let mut paused = ready_at("paused", "apps", OLD);
    paused.data["spec"]["suspend"] = json!(true);
    let broken =
        kustomization("broken", "apps", None, NEW, ("False", "ArtifactFailed", "kustomization path not found"));
    list(
        &mut wait.live,
        &[
            git_repository("flux-system", NEW),
            git_repository("apps", NEW),
            ready_at("flux-system", "flux-system", NEW),
            ready_at("web", "apps", OLD),
            broken.clone(),
            paused,
        ],
    );
    let verdicts = wait.look().await.unwrap();
    assert_eq!(
        parts(&verdicts),
        [
            ("Sync".to_string(), "ready"),
            ("broken".to_string(), "failing"),
            ("paused".to_string(), "ready"),
            ("web".to_string(), "waiting")
        ]
    );
    let waiting: Vec<(&Part, &str)> = verdicts
        .iter()
        .filter_map(|(part, verdict)| match verdict {
            Verdict::Failing { why, .. } | Verdict::Waiting { why, .. } => Some((part, why.as_str())),
            Verdict::Ready => None,
        })
        .collect();
    let error = wait.timed_out(&waiting, Duration::from_secs(20));
    assert_eq!(
        error.to_string(),
        format!(
            "not everything is ready (config repo at {NEW_SHA}) after 20s; waiting on:\n  app flux-system/broken: Kustomization flux-system/broken: ArtifactFailed: kustomization path not found\n  app flux-system/web: Kustomization flux-system/web is at {OLD}, waiting for {NEW}"
        )
    );
    let error = wait.failed(waiting[0].0, waiting[0].1, Duration::from_secs(2));
    assert_eq!(
        error.to_string(),
        "app flux-system/broken failed (for 2s and more): Kustomization flux-system/broken: ArtifactFailed: kustomization path not found"
    );
    assert!(error.hint().unwrap().starts_with("`kubectl gitops app status broken -n flux-system` explains it"));

    // The watches report the fix and the deletion: everything shown is ready.
    let before = wait.view.scoped(wait.live.report());
    let kustomizations = store_of(&wait.live, "Kustomization");
    wait.live.apply((kustomizations, Ok(Event::Apply(watched(&ready_at("web", "apps", NEW))))));
    wait.live.apply((kustomizations, Ok(Event::Delete(watched(&broken)))));
    let verdicts = wait.look().await.unwrap();
    assert!(verdicts.iter().all(|(_, verdict)| *verdict == Verdict::Ready), "{verdicts:?}");

    // --watch prints those two rows only: web changed, broken deleted.
    let after = wait.view.scoped(wait.live.report());
    let changed = changed_rows(&before, &after, false);
    let lines: Vec<(&str, Option<&str>)> =
        changed.iter().map(|row| (row.name.as_str(), row.message.as_deref())).collect();
    assert_eq!(lines, [("broken", Some("deleted")), ("web", Some(format!("Applied revision: {NEW}").as_str()))]);
    let text = wait.view.render_rows(&changed).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.starts_with("broken "), "{text}");
    // With --failed-only, the failing row that went away still shows; web was never shown.
    let failed: Vec<String> = changed_rows(&before, &after, true).into_iter().map(|row| row.name).collect();
    assert_eq!(failed, ["broken"]);
}

#[tokio::test]
async fn a_missing_sync_is_waited_for_and_forbidden_kinds_are_reported() {
    let mut live = Live::start(detected().cluster(), &Scope::Namespace("team-a".into()), None, quiet()).await.unwrap();
    assert_eq!(live.stores.iter().filter(|store| store.extra).count(), 3, "the sync is watched outside the scope");
    list(&mut live, &[]);
    let charts = store_of(&live, "HelmChart");
    let status = kube::core::Status::failure("helmcharts is forbidden", "Forbidden").with_code(403);
    live.apply((charts, Err(watcher::Error::InitialListFailed(kube::Error::Api(Box::new(status))))));
    assert_eq!(live.report().forbidden, ["helmcharts: helmcharts is forbidden"]);
    let mut wait = ClusterWait { live, view: view(), revision: None, head: None };
    // The install record says there is a sync; it does not exist yet.
    assert_eq!(
        wait.look().await.unwrap(),
        [(
            Part::Sync,
            Verdict::Waiting {
                why: "Kustomization flux-system/flux-system (the config repo sync) not found".into(),
                healthy: false
            }
        )]
    );
}

/// A wait whose looks are scripted; the last look repeats.
struct Script {
    looks: VecDeque<Vec<(&'static str, Verdict)>>,
    finished: bool,
}

impl Script {
    fn new(looks: Vec<Vec<(&'static str, Verdict)>>) -> Script {
        Script { looks: looks.into(), finished: false }
    }
}

impl Waited for Script {
    type Part = &'static str;

    async fn look(&mut self) -> Result<Vec<(&'static str, Verdict)>> {
        let look = if self.looks.len() > 1 { self.looks.pop_front() } else { self.looks.front().cloned() };
        Ok(look.unwrap_or_default())
    }

    async fn changed(&mut self) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    async fn finish(&mut self) -> Result<()> {
        self.finished = true;
        Ok(())
    }

    fn failed(&self, part: &&'static str, why: &str, _: Duration) -> Error {
        Error::Negative { message: format!("{part} failed: {why}"), hint: None }
    }

    fn timed_out(&self, waiting: &[(&&'static str, &str)], _: Duration) -> Error {
        let named: Vec<String> = waiting.iter().map(|(part, why)| format!("{part}: {why}")).collect();
        Error::Negative { message: named.join("; "), hint: None }
    }
}

fn failing(attempt: &str) -> Verdict {
    Verdict::Failing { attempt: Some(attempt.into()), why: format!("broken at {attempt}") }
}

fn waiting(healthy: bool) -> Verdict {
    Verdict::Waiting { why: "on the way".into(), healthy }
}

fn limits(timeout_ms: u64, grace_ms: u64) -> Limits {
    Limits { timeout: Duration::from_millis(timeout_ms), grace_period: Duration::from_millis(grace_ms) }
}

#[tokio::test]
async fn a_failure_that_lasts_the_grace_period_ends_the_wait_early() {
    let mut script = Script::new(vec![vec![("a", Verdict::Ready), ("b", failing("r1"))]]);
    let started = std::time::Instant::now();
    let error = wait_until(&mut script, "test", limits(10_000, 100), &quiet()).await.unwrap_err();
    assert_eq!(error.to_string(), "b failed: broken at r1");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert!(script.finished, "what is waited for is printed at the end");
}

#[tokio::test]
async fn a_failure_that_heals_is_not_one() {
    let mut script = Script::new(vec![
        vec![("a", failing("r1"))],
        vec![("a", failing("r1"))],
        vec![("a", waiting(false))],
        vec![("a", Verdict::Ready)],
    ]);
    assert_eq!(wait_until(&mut script, "test", limits(10_000, 10_000), &quiet()).await.unwrap(), ExitCode::Ok);
    assert!(script.finished);
}

#[tokio::test]
async fn a_healthy_moment_or_another_attempt_restarts_the_grace_period() {
    // Never failing for 150ms in a row: the wait ends at its timeout, not as a failure.
    let flapping = (0..20).flat_map(|_| {
        [
            vec![("a", failing("r1"))],
            vec![("a", failing("r1"))],
            vec![("a", waiting(true))],
            vec![("a", failing("r2"))],
            vec![("a", failing("r3"))],
        ]
    });
    let mut script = Script::new(flapping.chain([vec![("a", waiting(false)), ("b", waiting(false))]]).collect());
    let error = wait_until(&mut script, "test", limits(400, 150), &quiet()).await.unwrap_err();
    assert!(error.to_string().starts_with("a: "), "{error}");
    // The timeout names every part that is not ready.
    let mut script = Script::new(vec![vec![("a", Verdict::Ready), ("b", waiting(false)), ("c", waiting(true))]]);
    let error = wait_until(&mut script, "test", limits(100, 50), &quiet()).await.unwrap_err();
    assert_eq!(error.to_string(), "b: on the way; c: on the way");
}

#[tokio::test]
async fn nothing_to_wait_for_is_done_at_once() {
    let mut script = Script::new(vec![vec![]]);
    assert_eq!(wait_until(&mut script, "test", limits(10_000, 100), &quiet()).await.unwrap(), ExitCode::Ok);
}
