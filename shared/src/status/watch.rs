//! `app status --wait` and `--watch`: the app is read again whenever one of its objects changes,
//! as kube watches report it (no polling loop).

use std::io::IsTerminal;
use std::time::Duration;

use futures::stream::{BoxStream, SelectAll};
use futures::{FutureExt, StreamExt};
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::time::Instant;

use super::AppState;
use super::collect::{key, resource, text};
use super::tree::{
    AppReport, AppStatusArgs, Gathered, Viewer, WAITING_REASONS, describe, flux_kind, print, references, render,
    workload_resource,
};
use crate::cli::OutputFormat;
use crate::duration;
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{HELM_RELEASE, KUSTOMIZATION};
use crate::output::progress::Spinner;
use crate::output::report;

/// How long to let a burst of events settle before reading the app again (a reconcile changes
/// several objects within moments).
const SETTLE: Duration = Duration::from_millis(300);

/// What one watch follows: objects of a resource in a namespace, by name or by label.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Followed {
    resource: ApiResource,
    namespace: String,
    /// `metadata.name=…` or a label selector.
    selector: Selector,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Selector {
    Name(String),
    Labels(String),
}

/// The watches of the objects an app is made of, merged into one stream of "something changed".
#[derive(Default)]
struct Triggers {
    following: Vec<Followed>,
    events: SelectAll<BoxStream<'static, ()>>,
}

impl Triggers {
    /// Watches exactly `wanted`, restarting the watches when it differs from what is watched.
    fn follow(&mut self, client: &kube::Client, wanted: Vec<Followed>) {
        if wanted == self.following {
            return;
        }
        self.events = SelectAll::new();
        for followed in &wanted {
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &followed.namespace, &followed.resource);
            let config = match &followed.selector {
                Selector::Name(name) => watcher::Config::default().fields(&format!("metadata.name={name}")),
                Selector::Labels(labels) => watcher::Config::default().labels(labels),
            };
            let changes = watcher::watcher(api, config).default_backoff().filter_map(|event| async move {
                match event {
                    // InitDone: the watch (re)started, and something may have changed meanwhile.
                    Ok(Event::Apply(_) | Event::Delete(_) | Event::InitDone) => Some(()),
                    Ok(Event::Init | Event::InitApply(_)) => None,
                    Err(error) => {
                        report::detail(&format!("watch: {error}"));
                        None
                    }
                }
            });
            self.events.push(changes.boxed());
        }
        self.following = wanted;
    }

    /// Waits for a change, then for the burst it belongs to to settle.
    async fn changed(&mut self) {
        if self.events.is_empty() {
            return std::future::pending().await;
        }
        self.events.next().await;
        tokio::time::sleep(SETTLE).await;
        while let Some(Some(())) = self.events.next().now_or_never() {}
    }
}

/// What to watch for an app: the app itself (by name, as either kind while it does not exist),
/// its source, chart and dependencies, and with `workloads` the workloads its controller labels.
fn followed(viewer: &Viewer, gathered: Option<&Gathered>, workloads: bool) -> Vec<Followed> {
    let by_name = |kind: &str, namespace: &str, name: &str| {
        let resource = flux_kind(kind).and_then(|kind| resource(&viewer.served, kind))?;
        Some(Followed { resource, namespace: namespace.to_string(), selector: Selector::Name(name.to_string()) })
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
    if workloads {
        // kustomize-controller and helm-controller label what they apply with the owner's name.
        let controller = if gathered.is_helm() { "helm" } else { "kustomize" };
        let labels =
            format!("{controller}.toolkit.fluxcd.io/name={name},{controller}.toolkit.fluxcd.io/namespace={namespace}");
        let mut namespaces: Vec<&String> = gathered.workloads.iter().map(|w| &w.namespace).collect();
        namespaces.sort();
        namespaces.dedup();
        for workload_namespace in namespaces {
            for workload_kind in ["Deployment", "StatefulSet", "DaemonSet"] {
                wanted.push(Followed {
                    resource: workload_resource(workload_kind),
                    namespace: workload_namespace.clone(),
                    selector: Selector::Labels(labels.clone()),
                });
            }
        }
    }
    wanted
}

/// `--watch`: shows the app again on every change until interrupted. On a terminal the screen is
/// redrawn in place; otherwise the report is printed again only when it changed.
pub(super) async fn watch(viewer: &mut Viewer, format: OutputFormat) -> Result<ExitCode> {
    let terminal = std::io::stdout().is_terminal();
    let mut triggers = Triggers::default();
    let mut shown: Option<Option<AppReport>> = None;
    loop {
        let looked = viewer.look(true).await?;
        let report = looked.as_ref().map(|(_, report)| report.clone());
        if shown.as_ref() != Some(&report) {
            let text = match &report {
                Some(report) => render(report, format)?,
                None => format!("{}\n", viewer.app.not_found()),
            };
            let text = match (terminal, &shown) {
                // Home, clear the screen, draw.
                (true, _) => format!("\x1b[H\x1b[2J{text}"),
                (false, Some(_)) if format == OutputFormat::Table => format!("\n{text}"),
                (false, _) => text,
            };
            crate::output::write_stdout(&text)?;
            shown = Some(report);
        }
        triggers.follow(&viewer.cluster.client, followed(viewer, looked.as_ref().map(|(g, _)| g), true));
        triggers.changed().await;
    }
}

/// Where a wait stands after one look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
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

/// Judges one look for `--wait`: ready at `wanted` (default: the revision its source offers now),
/// failing at it, or still on the way.
pub(super) fn judge(gathered: &Gathered, report: &AppReport, wanted: Option<&str>) -> Verdict {
    let app = &report.app;
    let Some(own) = app.objects.last() else {
        return Verdict::Waiting { why: "no status yet".into(), healthy: false };
    };
    // What the source offers: a Kustomization applies the source's artifact; a HelmRelease
    // installs its chart's (the object before it in the chain).
    let offered = app.objects.len().checked_sub(2).and_then(|index| app.objects[index].revision.as_deref());
    let at_target = |revision: &str| match (wanted, offered) {
        (Some(wanted), _) => revision_matches(revision, wanted),
        (None, Some(offered)) if gathered.is_helm() => revision_matches(offered, revision),
        (None, Some(offered)) => revision == offered,
        (None, None) => false,
    };
    let observed = gathered.app.data.pointer("/status/observedGeneration").and_then(|g| g.as_i64());
    let current = observed.is_some() && observed == gathered.app.metadata.generation;
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
        let attempt = text(&gathered.app, "/status/lastAttemptedRevision").or_else(|| offered.map(String::from));
        // The app failing at an older revision is not the answer: the new one may fix it.
        let at_wanted = attempt.as_deref().is_none_or(at_target);
        if !is_app || (!waiting && at_wanted) {
            return Verdict::Failing { attempt, why: describe(blocker) };
        }
    }
    let why = match report.waiting_on.first().or(report.last_error.as_ref()) {
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

/// `--wait`: reads the app on every change until it is Ready at the wanted revision (exit 0),
/// has failed for the grace period (exit 1), or the timeout passes (exit 1, naming what blocks).
/// The last report is printed either way.
pub(super) async fn wait(viewer: &mut Viewer, args: &AppStatusArgs, format: OutputFormat) -> Result<ExitCode> {
    let started = Instant::now();
    let deadline = started + args.timeout;
    let app = viewer.app.clone();
    let mut spinner = Spinner::new(format!("waiting for app {}/{}", app.namespace, app.name));
    let mut triggers = Triggers::default();
    let mut failing: Option<(Instant, Option<String>)> = None;
    let mut last_why = String::new();
    loop {
        let looked = viewer.look(false).await?;
        triggers.follow(&viewer.cluster.client, followed(viewer, looked.as_ref().map(|(g, _)| g), false));
        let verdict = match &looked {
            Some((gathered, report)) => judge(gathered, report, args.revision.as_deref()),
            None => Verdict::Waiting { why: app.not_found().to_string(), healthy: false },
        };
        let now = Instant::now();
        let why = match verdict {
            Verdict::Ready => {
                spinner.finish();
                finish(viewer, format).await?;
                return Ok(ExitCode::Ok);
            }
            Verdict::Failing { attempt, why } => {
                let since = match failing.take() {
                    Some((since, seen)) if seen == attempt => since,
                    _ => now,
                };
                failing = Some((since, attempt));
                if now.duration_since(since) >= args.grace_period {
                    spinner.finish();
                    finish(viewer, format).await?;
                    return Err(Error::Negative {
                        message: format!(
                            "app {}/{} failed (for {} and more): {why}",
                            app.namespace,
                            app.name,
                            duration::format(args.grace_period)
                        ),
                        hint: Some(hint(&app.namespace)),
                    });
                }
                why
            }
            Verdict::Waiting { why, healthy } => {
                if healthy {
                    failing = None;
                }
                why
            }
        };
        if now >= deadline {
            spinner.finish();
            if looked.is_some() {
                finish(viewer, format).await?;
            }
            let target = args.revision.as_deref().map(|r| format!(" at {r}")).unwrap_or_default();
            return Err(Error::Negative {
                message: format!(
                    "app {}/{} is not Ready{target} after {}: {why}",
                    app.namespace,
                    app.name,
                    duration::format(args.timeout)
                ),
                hint: Some(hint(&app.namespace)),
            });
        }
        if why != last_why {
            report::detail(&format!("waiting: {why}"));
            last_why.clone_from(&why);
        }
        spinner.tick(&why);
        let wake = match &failing {
            Some((since, _)) => deadline.min(*since + args.grace_period),
            None => deadline,
        };
        tokio::select! {
            () = triggers.changed() => {}
            () = tokio::time::sleep_until(wake) => {}
        }
    }
}

fn hint(namespace: &str) -> String {
    format!("`kubectl -n {namespace} get events --sort-by=.lastTimestamp` shows what Flux reported")
}

/// Prints the app as it is at the end of a wait, commit included.
async fn finish(viewer: &mut Viewer, format: OutputFormat) -> Result<()> {
    match viewer.look(true).await? {
        Some((_, report)) => print(&report, format),
        None => Ok(()),
    }
}
