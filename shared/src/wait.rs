//! The one wait engine, on kube watches (no polling loop): [`Triggers`] merges the watches and
//! says when something changed; [`wait_until`] looks again on every change until every part of
//! what is waited for ([`Waited`]) is Ready, a failure outlasts its grace period, or the timeout
//! passes. `status`, `app status`, `install` and every change's `--wait` run their waits here.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::time::Instant;

use crate::cluster::{Cluster, is_forbidden};
use crate::duration;
use crate::error::{Error, ExitCode, Result};
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
pub(crate) type Change<K> = (usize, watcher::Result<Event<K>>);

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
pub(crate) fn forbidden(error: &watcher::Error) -> bool {
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
    pub(crate) async fn burst(&mut self) -> Vec<Change<K>> {
        if self.pending.is_empty() {
            match self.events.next().await {
                Some(change) => self.pending.push(change),
                None => return std::future::pending().await,
            }
        }
        // The watches are read all through the settling time, not only after it: a watch's first
        // list comes in pages, and it asks for the next page only once the last one is read. Left
        // alone while settling, each page waited 300 ms: at 10,000 apps (20 pages a kind) the UI's
        // watches took 14 s to list what `status -A` lists in 2.
        let settled = tokio::time::Instant::now() + SETTLE;
        while let Ok(Some(change)) = tokio::time::timeout_at(settled, self.events.next()).await {
            self.pending.push(change);
        }
        std::mem::take(&mut self.pending)
    }

    /// The next change as it comes, without waiting for its burst to settle: for a reader that
    /// acts at once on the end of a first list. Never returns when nothing is watched;
    /// cancel-safe, as [`Triggers::burst`] is.
    pub(crate) async fn next(&mut self) -> Change<K> {
        if !self.pending.is_empty() {
            return self.pending.remove(0);
        }
        match self.events.next().await {
            Some(change) => change,
            None => std::future::pending().await,
        }
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
pub(crate) fn revision_matches(revision: &str, wanted: &str) -> bool {
    let digest = revision.rsplit(':').next().unwrap_or(revision);
    revision == wanted
        || revision.strip_prefix(wanted).is_some_and(|rest| rest.starts_with('@') || rest.starts_with('+'))
        || (wanted.len() >= 7 && wanted.chars().all(|c| c.is_ascii_hexdigit()) && digest.starts_with(wanted))
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
