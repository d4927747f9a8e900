//! `app status NAME --watch|--wait` and the judging of an app's chain, on the wait engine
//! ([`crate::wait`]): [`judge`] tells ready from failing from still on the way. The listing's
//! watches and wait (`status`) are in live.rs.

use std::time::Duration;

use super::app_reads::{Viewer, WORKLOAD_KINDS, flux_kind, workload_resource};
use super::app_report::{AppReport, Gathered, describe, references};
use super::collect::{key, resource};
use super::tree::{print, render};
use super::{AppState, AppStatus, ObjectStatus};
use crate::cli::OutputFormat;
use crate::duration;
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{HELM_RELEASE, KUSTOMIZATION};
use crate::flux::status::{FluxObject, WAITING_REASONS};
pub use crate::wait::Limits;
use crate::wait::{Followed, Selector, Triggers, Verdict, Waited, revision_matches, wait_until};

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
pub(crate) async fn watch(viewer: &mut Viewer, format: OutputFormat) -> Result<ExitCode> {
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

/// `--wait` and the flags that shape it, of `status` and of `app status NAME` (each flattens it
/// next to its own `--watch`, which `--wait` conflicts with).
#[derive(Debug, Clone, clap::Args)]
pub struct WaitArgs {
    /// Wait until Flux has applied the change and it is Ready.
    ///
    /// Wait until Ready: for `app status` the app, at --revision (default: what its source offers); for `status` the config repo sync (Kustomization flux-system) at --revision (default: its branch's head, asked of the git server) and every app shown, at what its source offers, or suspended. Exit 1 when a failure lasts --grace-period, or at --timeout, naming what blocks.
    #[arg(long, conflicts_with = "watch")]
    pub wait: bool,

    /// How long to wait.
    ///
    /// How long --wait waits.
    #[arg(long, value_name = "DURATION", default_value = crate::timeouts::COMMAND_FLAG, value_parser = duration::parse)]
    pub timeout: Duration,

    /// A source revision, by Flux's convention (<branch|tag>@sha1:<commit>) or a commit hash.
    ///
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
pub(crate) async fn wait(viewer: &mut Viewer, request: &WaitRequest, format: OutputFormat) -> Result<ExitCode> {
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
