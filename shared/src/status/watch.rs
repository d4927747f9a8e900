//! Waiting and watching with kube watches (no polling loop), for `app status NAME` and for
//! `status`: [`Triggers`] merges the watches and says when something changed, [`judge`] tells
//! ready from failing from still on the way, and [`wait_until`] runs a wait with its timeout and
//! grace period. The app's watches and wait are here; the listing's are in live.rs.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use futures::stream::{BoxStream, SelectAll};
use futures::{FutureExt, StreamExt};
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::time::Instant;

use super::app_reads::{Viewer, WORKLOAD_KINDS, flux_kind, workload_resource};
pub(crate) use super::app_report::WAITING_REASONS;
use super::app_report::{AppReport, Gathered, describe, references};
use super::collect::{key, resource};
use super::tree::{print, render};
use super::{AppState, AppStatus, ObjectStatus};
use crate::cli::OutputFormat;
use crate::cluster::{Cluster, is_forbidden};
use crate::duration;
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{HELM_RELEASE, KUSTOMIZATION};
use crate::flux::status::FluxObject;
use crate::output::Printer;

/// How long to let a burst of events settle before reading the app again (a reconcile changes
/// several objects within moments).
const SETTLE: Duration = Duration::from_millis(300);
/// The longest a watch call lasts before the API server ends it and it is started again from
/// where it was (kube's default); shorter when the request timeout is, so that an idle watch is
/// ended by the server, not cut by the client's read timeout.
const WATCH_CALL: Duration = Duration::from_secs(290);

/// What one watch follows: objects of a resource, in one namespace or all, all of them or by
/// name or by label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Followed {
    pub(crate) resource: ApiResource,
    /// `None`: every namespace.
    pub(crate) namespace: Option<String>,
    pub(crate) selector: Selector,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Selector {
    Every,
    Name(String),
    Labels(String),
}

/// One watch event and the index (in what [`Triggers::follow`] was given) of the watch it came from.
pub(super) type Change<K> = (usize, watcher::Result<Event<K>>);

/// What a watch can deliver: any object of a resource discovered at run time, parsed as `K`
/// (a `DynamicObject`, or a type that keeps less of it).
pub(crate) trait WatchedObject:
    kube::Resource<DynamicType = ApiResource, Scope = kube::core::DynamicResourceScope>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + 'static
{
}

impl<K> WatchedObject for K where
    K: kube::Resource<DynamicType = ApiResource, Scope = kube::core::DynamicResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static
{
}

/// Whether a watch error is a 403: that watch ends instead of retrying forever.
pub(super) fn forbidden(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(error)
        | watcher::Error::WatchStartFailed(error)
        | watcher::Error::WatchFailed(error) => is_forbidden(error),
        watcher::Error::WatchError(status) => status.code == 403,
        watcher::Error::NoResourceVersion => false,
    }
}

/// Watches merged into one stream of changes, each object parsed as `K`.
pub(crate) struct Triggers<K = DynamicObject> {
    client: kube::Client,
    /// Where watch errors are told (`-v`).
    printer: Printer,
    /// Seconds each watch call may last.
    call: u32,
    following: Vec<Followed>,
    events: SelectAll<BoxStream<'static, Change<K>>>,
    /// Changes received by a [`Triggers::burst`] that was cancelled, for the next one.
    pending: Vec<Change<K>>,
}

impl<K: WatchedObject> Triggers<K> {
    pub(crate) fn new(cluster: &Cluster, printer: Printer) -> Triggers<K> {
        let call = match cluster.request_timeout {
            Some(timeout) if timeout <= WATCH_CALL => timeout.saturating_sub(Duration::from_secs(5)),
            _ => WATCH_CALL,
        };
        let call = u32::try_from(call.as_secs()).unwrap_or(u32::MAX).max(1);
        Triggers {
            client: cluster.client.clone(),
            printer,
            call,
            following: Vec::new(),
            events: SelectAll::new(),
            pending: Vec::new(),
        }
    }

    /// Watches exactly `wanted`, restarting the watches when it differs from what is watched.
    pub(crate) fn follow(&mut self, wanted: Vec<Followed>) {
        if wanted == self.following {
            return;
        }
        self.events = SelectAll::new();
        for (index, followed) in wanted.iter().enumerate() {
            let api: Api<K> = match &followed.namespace {
                Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &followed.resource),
                None => Api::all_with(self.client.clone(), &followed.resource),
            };
            let config = match &followed.selector {
                Selector::Every => watcher::Config::default(),
                Selector::Name(name) => watcher::Config::default().fields(&format!("metadata.name={name}")),
                Selector::Labels(labels) => watcher::Config::default().labels(labels),
            }
            .timeout(self.call);
            // A forbidden watch is passed on once and then ends: retrying cannot help.
            let retries = crate::retry::WatchRetries::default();
            let changes = watcher::watcher(api, config).backoff(retries).scan(false, move |ended, event| {
                if *ended {
                    return futures::future::ready(None);
                }
                *ended = event.as_ref().err().is_some_and(forbidden);
                futures::future::ready(Some((index, event)))
            });
            self.events.push(changes.boxed());
        }
        self.following = wanted;
    }

    /// Waits for an event, then for the burst it belongs to to settle, and returns the burst.
    /// Never returns when nothing is watched. Cancel-safe: what a cancelled call received is
    /// returned by the next one.
    pub(super) async fn burst(&mut self) -> Vec<Change<K>> {
        if self.pending.is_empty() {
            match self.events.next().await {
                Some(change) => self.pending.push(change),
                None => return std::future::pending().await,
            }
        }
        tokio::time::sleep(SETTLE).await;
        while let Some(Some(change)) = self.events.next().now_or_never() {
            self.pending.push(change);
        }
        std::mem::take(&mut self.pending)
    }

    /// Waits until something changed: an object was added, changed or deleted, or a watch
    /// (re)started, after which anything may have changed.
    pub(crate) async fn changed(&mut self) {
        loop {
            let mut changed = false;
            for (_, event) in self.burst().await {
                match event {
                    Ok(Event::Apply(_) | Event::Delete(_) | Event::InitDone) => changed = true,
                    Ok(Event::Init | Event::InitApply(_)) => {}
                    Err(error) => {
                        self.printer.detail(&format!("watch: {}", crate::diagnostic::describe_watch(&error)));
                    }
                }
            }
            if changed {
                return;
            }
        }
    }
}

/// What to watch for an app: the app itself (by name, as either kind while it does not exist),
/// its source, chart and dependencies, and the workloads its controller labels in the namespaces
/// of the workloads read (a wait reads none).
fn followed(viewer: &Viewer, gathered: Option<&Gathered>) -> Vec<Followed> {
    let by_name = |kind: &str, namespace: &str, name: &str| {
        let resource = flux_kind(kind).and_then(|kind| resource(&viewer.served, kind))?;
        Some(Followed { resource, namespace: Some(namespace.to_string()), selector: Selector::Name(name.to_string()) })
    };
    let app = &viewer.app;
    let Some(gathered) = gathered else {
        return [KUSTOMIZATION.kind, HELM_RELEASE.kind]
            .iter()
            .filter_map(|kind| by_name(kind, &app.namespace, &app.name))
            .collect();
    };
    let (kind, namespace, name) = key(&gathered.app);
    let (sources, dependencies) = references(&gathered.app);
    let mut wanted: Vec<Followed> = std::iter::once((kind.clone(), namespace.clone(), name.clone()))
        .chain(sources)
        .chain(dependencies)
        .filter_map(|(kind, namespace, name)| by_name(&kind, &namespace, &name))
        .collect();
    // kustomize-controller and helm-controller label what they apply with the owner's name.
    let controller = if gathered.is_helm() { "helm" } else { "kustomize" };
    let labels =
        format!("{controller}.toolkit.fluxcd.io/name={name},{controller}.toolkit.fluxcd.io/namespace={namespace}");
    let mut namespaces: Vec<&String> = gathered.workloads.iter().map(|w| &w.namespace).collect();
    namespaces.sort();
    namespaces.dedup();
    for workload_namespace in namespaces {
        for workload_kind in WORKLOAD_KINDS {
            wanted.push(Followed {
                resource: workload_resource(workload_kind),
                namespace: Some(workload_namespace.clone()),
                selector: Selector::Labels(labels.clone()),
            });
        }
    }
    wanted
}

/// `--watch`: shows the app again on every change until interrupted, which ends it as asked (exit
/// 0). On a terminal the screen is redrawn in place; otherwise the report is printed again only
/// when it changed.
pub(super) async fn watch(viewer: &mut Viewer, format: OutputFormat) -> Result<ExitCode> {
    let printer = viewer.printer;
    let terminal = printer.redraws();
    let mut triggers: Triggers = Triggers::new(&viewer.cluster, printer);
    let mut shown: Option<Option<AppReport>> = None;
    loop {
        let looked = viewer.look(true).await?;
        let report = looked.as_ref().map(|(_, report)| report.clone());
        if shown.as_ref() != Some(&report) {
            let text = match &report {
                Some(report) => render(report, format, printer.stdout_style())?,
                None => format!("{}\n", viewer.app.not_found()),
            };
            match (terminal, &shown) {
                (true, _) => printer.redraw(&text)?,
                (false, Some(_)) if format == OutputFormat::Table => printer.data(&format!("\n{text}"))?,
                (false, _) => printer.data(&text)?,
            }
            shown = Some(report);
        }
        triggers.follow(followed(viewer, looked.as_ref().map(|(g, _)| g)));
        tokio::select! {
            () = triggers.changed() => {}
            () = crate::interrupt::until_requested() => return Ok(ExitCode::Ok),
        }
    }
}

/// Where a wait stands after one look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Ready at the wanted revision.
    Ready,
    /// Failed at the wanted revision; `attempt` is the revision that failed (a new attempt
    /// restarts the grace period).
    Failing { attempt: Option<String>, why: String },
    /// Not there yet; `healthy` when the app itself is Ready (which ends any failure).
    Waiting { why: String, healthy: bool },
}

/// Whether a revision is the one asked for: the same string, a version with a digest after it
/// (`0.1.0@sha256:…`), or a commit hash or its start (`3f2c9a1b` for `main@sha1:3f2c9a1b…`).
pub(super) fn revision_matches(revision: &str, wanted: &str) -> bool {
    let digest = revision.rsplit(':').next().unwrap_or(revision);
    revision == wanted
        || revision.strip_prefix(wanted).is_some_and(|rest| rest.starts_with('@') || rest.starts_with('+'))
        || (wanted.len() >= 7 && wanted.chars().all(|c| c.is_ascii_hexdigit()) && digest.starts_with(wanted))
}

/// Judges one look at an app for `app status --wait`: ready at `wanted` (default: the revision
/// its source offers now), failing at it, or still on the way.
pub(super) fn judge(gathered: &Gathered, report: &AppReport, wanted: Option<&str>) -> Verdict {
    let explanation = report.waiting_on.first().or(report.last_error.as_ref());
    judge_row(&gathered.app, &report.app, wanted, explanation)
}

/// Judges a Kustomization or HelmRelease (`object`) from its row: Ready, its spec observed, at
/// `wanted` (default: the revision its source, or a HelmRelease's chart, offers now); failing at
/// that revision (or its source failing); or still on the way, because of `explanation` when
/// given, else the first object of its chain that is not ready.
pub(super) fn judge_row(
    object: &impl FluxObject,
    app: &AppStatus,
    wanted: Option<&str>,
    explanation: Option<&ObjectStatus>,
) -> Verdict {
    let Some(own) = app.objects.last() else {
        return Verdict::Waiting { why: "no status yet".into(), healthy: false };
    };
    let is_helm = object.kind() == HELM_RELEASE.kind;
    // What the source offers: a Kustomization applies the source's artifact; a HelmRelease
    // installs its chart's (the object before it in the chain).
    let offered = app.objects.len().checked_sub(2).and_then(|index| app.objects[index].revision.as_deref());
    let at_target = |revision: &str| match (wanted, offered) {
        (Some(wanted), _) => revision_matches(revision, wanted),
        (None, Some(offered)) if is_helm => revision_matches(offered, revision),
        (None, Some(offered)) => revision == offered,
        (None, None) => false,
    };
    let current = object.is_current();
    let healthy = own.ready == "True";
    if healthy && current && app.applied_revision.as_deref().is_some_and(at_target) {
        return Verdict::Ready;
    }
    if app.state == AppState::Suspended {
        return Verdict::Failing {
            attempt: None,
            why: format!("{} {}/{} is suspended", own.kind, own.namespace, own.name),
        };
    }
    let target = wanted.or(offered).unwrap_or("its source's revision");
    if let Some(blocker) = app.objects.iter().find(|object| object.ready == "False") {
        let is_app = std::ptr::eq(blocker, own);
        let waiting = WAITING_REASONS.contains(&blocker.reason.as_deref().unwrap_or(""));
        // Without a recorded attempt (a build that failed before applying), it tried what its
        // source offers.
        let attempt = object.last_attempted_revision().or(offered).map(String::from);
        // The app failing at an older revision is not the answer: the new one may fix it.
        let at_wanted = attempt.as_deref().is_none_or(at_target);
        if !is_app || (!waiting && at_wanted) {
            return Verdict::Failing { attempt, why: describe(blocker) };
        }
    }
    let why = match explanation {
        Some(blocking) => describe(blocking),
        None => match app.objects.iter().find(|object| object.ready != "True") {
            Some(blocking) => describe(blocking),
            None => format!(
                "{} {}/{} is at {}, waiting for {}",
                own.kind,
                own.namespace,
                own.name,
                app.applied_revision.as_deref().unwrap_or("nothing yet"),
                target
            ),
        },
    };
    Verdict::Waiting { why, healthy }
}

/// Something a wait follows: one app, or the config sync and the rows of the listing. Each look
/// judges its parts; the wait is over when every part is Ready.
pub(crate) trait Waited {
    /// Names a part (an app, the sync).
    type Part: Clone + Eq + Hash;
    /// Reads (or rebuilds) what is waited for and judges each part.
    async fn look(&mut self) -> Result<Vec<(Self::Part, Verdict)>>;
    /// Returns once a watch reports a change.
    async fn changed(&mut self);
    /// Prints what is waited for, as it is at the end of the wait (by default, nothing).
    async fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    /// What to try when the wait ends in an error (by default, nothing).
    fn hint(&self) -> Option<String> {
        None
    }
    /// The error for a part that has failed for the grace period.
    fn failed(&self, _part: &Self::Part, why: &str, grace_period: Duration) -> Error {
        Error::Negative {
            message: format!("{why} (failing for {} and more)", duration::format(grace_period)),
            hint: self.hint(),
        }
    }
    /// The error at the timeout: the parts not ready and why.
    fn timed_out(&self, waiting: &[(&Self::Part, &str)], timeout: Duration) -> Error;
}

/// `--wait` and the flags that shape it, of `status` and of `app status NAME` (each flattens it
/// next to its own `--watch`, which `--wait` conflicts with).
#[derive(Debug, Clone, clap::Args)]
pub struct WaitArgs {
    /// Wait until Ready: for `app status` the app, at --revision (default: what its source offers); for `status` the config repo sync (Kustomization flux-system) at --revision (default: its branch's head, asked of the git server) and every app shown, at what its source offers, or suspended. Exit 1 when a failure lasts --grace-period, or at --timeout, naming what blocks.
    #[arg(long, conflicts_with = "watch")]
    pub wait: bool,

    /// How long --wait waits.
    #[arg(long, value_name = "DURATION", default_value = crate::timeouts::COMMAND_FLAG, value_parser = duration::parse)]
    pub timeout: Duration,

    /// The revision --wait waits for (`status`: the config repo's): a commit hash or its start, a Flux revision (main@sha1:…), or a chart version.
    #[arg(long, value_name = "REVISION", requires = "wait")]
    pub revision: Option<String>,

    /// How long a failure must last before --wait gives up, so that a failure that heals by itself is not one.
    #[arg(long, value_name = "DURATION", default_value = crate::timeouts::GRACE_PERIOD_FLAG, value_parser = duration::parse)]
    pub grace_period: Duration,
}

impl WaitArgs {
    /// The wait these flags ask for; `None` without `--wait`.
    pub fn request(&self) -> Option<WaitRequest> {
        self.wait.then(|| WaitRequest {
            limits: Limits { timeout: self.timeout, grace_period: self.grace_period },
            revision: self.revision.clone(),
        })
    }
}

/// A wait as `status --wait` and `app status --wait` run it, resolved from [`WaitArgs`].
#[derive(Debug, Clone)]
pub struct WaitRequest {
    /// `--timeout` and `--grace-period`.
    pub limits: Limits,
    /// `--revision`.
    pub revision: Option<String>,
}

/// How long a wait waits, and how long a failure must last to end it.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The whole wait.
    pub timeout: Duration,
    /// How long a failure must last.
    pub grace_period: Duration,
}

/// Looks again on every change until every part is Ready (exit 0), a part has failed for the
/// grace period (exit 1), or the timeout passes (exit 1, naming what blocks). What is waited
/// for is printed at the end either way. A failure that heals (the part becomes Ready or at
/// least healthy) or is retried at another revision restarts its grace period.
pub(crate) async fn wait_until<W: Waited>(
    waited: &mut W,
    title: &str,
    limits: Limits,
    printer: &Printer,
) -> Result<ExitCode> {
    let deadline = Instant::now() + limits.timeout;
    let mut spinner = printer.spinner(title);
    // Since when each part fails, and at which revision.
    let mut failing: HashMap<W::Part, (Instant, Option<String>)> = HashMap::new();
    let mut last_why = String::new();
    loop {
        let verdicts = waited.look().await?;
        let now = Instant::now();
        let mut still_failing = HashMap::new();
        let mut waiting: Vec<(&W::Part, &str)> = Vec::new();
        let mut expired: Option<(&W::Part, &str)> = None;
        let mut wake = deadline;
        for (part, verdict) in &verdicts {
            match verdict {
                Verdict::Ready => {}
                Verdict::Failing { attempt, why } => {
                    let since = match failing.remove(part) {
                        Some((since, seen)) if seen == *attempt => since,
                        _ => now,
                    };
                    if now.duration_since(since) >= limits.grace_period {
                        expired = expired.or(Some((part, why)));
                    }
                    wake = wake.min(since + limits.grace_period);
                    still_failing.insert(part.clone(), (since, attempt.clone()));
                    waiting.push((part, why));
                }
                Verdict::Waiting { why, healthy } => {
                    // Waiting while unhealthy (a dependency, a retry) does not end a failure.
                    if let Some(failure) = failing.remove(part).filter(|_| !healthy) {
                        still_failing.insert(part.clone(), failure);
                    }
                    waiting.push((part, why));
                }
            }
        }
        failing = still_failing;
        if waiting.is_empty() {
            spinner.finish();
            waited.finish().await?;
            return Ok(ExitCode::Ok);
        }
        if let Some((part, why)) = expired {
            spinner.finish();
            waited.finish().await?;
            return Err(waited.failed(part, why, limits.grace_period));
        }
        if now >= deadline {
            spinner.finish();
            waited.finish().await?;
            return Err(waited.timed_out(&waiting, limits.timeout));
        }
        let why = match waiting.len() {
            1 => waiting[0].1.to_string(),
            more => format!("{} (and {} more)", waiting[0].1, more - 1),
        };
        if why != last_why {
            printer.detail(&format!("waiting: {why}"));
            last_why.clone_from(&why);
        }
        spinner.tick(&why);
        tokio::select! {
            () = waited.changed() => {}
            () = tokio::time::sleep_until(wake) => {}
        }
    }
}

/// `app status NAME --wait`: the app, read again whenever one of its objects changes.
struct AppWait<'a> {
    viewer: &'a mut Viewer,
    triggers: Triggers,
    revision: Option<String>,
    format: OutputFormat,
}

impl Waited for AppWait<'_> {
    type Part = ();

    async fn look(&mut self) -> Result<Vec<((), Verdict)>> {
        let looked = self.viewer.look(false).await?;
        self.triggers.follow(followed(self.viewer, looked.as_ref().map(|(g, _)| g)));
        let verdict = match &looked {
            Some((gathered, report)) => judge(gathered, report, self.revision.as_deref()),
            None => Verdict::Waiting { why: self.viewer.app.not_found().to_string(), healthy: false },
        };
        Ok(vec![((), verdict)])
    }

    async fn changed(&mut self) {
        self.triggers.changed().await;
    }

    /// Prints the app as it is at the end of a wait, commit included.
    async fn finish(&mut self) -> Result<()> {
        match self.viewer.look(true).await? {
            Some((_, report)) => print(&report, self.format, &self.viewer.printer),
            None => Ok(()),
        }
    }

    fn failed(&self, (): &(), why: &str, grace_period: Duration) -> Error {
        let app = &self.viewer.app;
        Error::Negative {
            message: format!(
                "app {}/{} failed (for {} and more): {why}",
                app.namespace,
                app.name,
                duration::format(grace_period)
            ),
            hint: Some(events_hint(&app.namespace)),
        }
    }

    fn timed_out(&self, waiting: &[(&(), &str)], timeout: Duration) -> Error {
        let app = &self.viewer.app;
        let why = waiting.first().map_or("", |(_, why)| why);
        let target = self.revision.as_deref().map(|r| format!(" at {r}")).unwrap_or_default();
        Error::Negative {
            message: format!(
                "app {}/{} is not Ready{target} after {}: {why}",
                app.namespace,
                app.name,
                duration::format(timeout)
            ),
            hint: Some(events_hint(&app.namespace)),
        }
    }
}

/// `app status NAME --wait`: until the app is Ready at the wanted revision (exit 0), has failed
/// for the grace period (exit 1), or the timeout passes (exit 1, naming what blocks).
pub(super) async fn wait(viewer: &mut Viewer, request: &WaitRequest, format: OutputFormat) -> Result<ExitCode> {
    let title = format!("waiting for app {}/{}", viewer.app.namespace, viewer.app.name);
    let printer = viewer.printer;
    let triggers = Triggers::new(&viewer.cluster, printer);
    let mut waited = AppWait { viewer, triggers, revision: request.revision.clone(), format };
    wait_until(&mut waited, &title, request.limits, &printer).await
}

/// Where to look next when something in `namespace` does not become ready.
pub(super) fn events_hint(namespace: &str) -> String {
    format!("`kubectl -n {namespace} get events --sort-by=.lastTimestamp` shows what Flux reported")
}
