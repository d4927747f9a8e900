//! Logs where the problem is: the App page shows the last lines of a pod of the app (the one its
//! `pod` query names, else the first that is not ready) and, with the script, follows them live
//! through an event stream of the pod's log (`kubectl logs -f` through the user's kubeconfig).
//! Only the app's own pods, as the app's report lists them, are read.

use std::convert::Infallible;

use axum::extract::Path;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use maud::{Markup, html};

use super::api::{self, ApiError};
use super::clusters::Viewed;
use crate::readers::AppReport;
use crate::readers::pod_logs::{self, TAIL_LINES};

/// A pod of the app: its namespace (its workload's) and name, whether it is ready, its phase.
pub(super) struct AppPod<'a> {
    pub(super) namespace: &'a str,
    pub(super) name: &'a str,
    pub(super) ready: bool,
    pub(super) phase: &'a str,
}

/// The app's pods, those not ready first.
fn pods(report: &AppReport) -> Vec<AppPod<'_>> {
    let mut pods: Vec<AppPod<'_>> = report
        .workloads
        .iter()
        .flat_map(|workload| {
            workload.pods.iter().map(|pod| AppPod {
                namespace: &workload.namespace,
                name: &pod.name,
                ready: pod.ready,
                phase: &pod.phase,
            })
        })
        .collect();
    pods.sort_by_key(|pod| pod.ready);
    pods
}

/// The pod whose log the App page shows: the one `asked` names when it is the app's, else the
/// first that is not ready; none when every pod is ready and none was asked for.
pub(super) fn chosen<'a>(report: &'a AppReport, asked: Option<&str>) -> Option<AppPod<'a>> {
    let mut pods = pods(report).into_iter();
    match asked {
        Some(asked) => pods.find(|pod| pod.name == asked),
        None => pods.find(|pod| !pod.ready),
    }
}

/// The App page's log section: the pod's last lines (read now), and where the script follows
/// them.
pub(super) async fn section(view: &Viewed, report: &AppReport, asked: Option<&str>) -> Markup {
    let Some(pod) = chosen(report, asked) else {
        return html! { p.hint { "Every pod is ready: choose one in the Pods table to see its log." } };
    };
    let stream = format!("/api/v1/apps/{}/{}/pods/{}/logs", report.app.namespace, report.app.name, pod.name);
    if pod.phase == "Pending" {
        return html! {
            h2 { "Log of pod " (pod.namespace) "/" (pod.name) " (not ready)" }
            p.hint { "It has not started (Pending): no log yet. Its reason is in the Pods table." }
        };
    }
    html! {
        h2 { "Log of pod " (pod.namespace) "/" (pod.name) @if !pod.ready { " (not ready)" } }
        @match pod_logs::tail(&view.cluster, pod.namespace, pod.name).await {
            Ok(lines) => {
                p.hint { "Its last " (TAIL_LINES) " lines, then each new one as it is written (with JavaScript)." }
                pre.log #log tabindex="0" data-stream=(stream) { @for line in &lines { (line) "\n" } }
            }
            Err(error) => p.warning { "Cannot read its log: " (error) },
        }
    }
}

/// `GET /api/v1/apps/{namespace}/{name}/pods/{pod}/logs`: Server-Sent Events, a `line` event for
/// each line the pod writes from now on; the stream ends with the server, or when the API server
/// ends the log (the pod went). Refused (404) for a pod that is not the app's.
pub(super) async fn follow(
    view: Viewed,
    Path((namespace, name, pod)): Path<(String, String, String)>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let report = api::app_report(&view, &namespace, &name).await?;
    let Some(found) = chosen(&report, Some(&pod)) else {
        return Err(ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            &format!("{pod} is not a pod of {namespace}/{name}"),
            Some("the app's pods are in its report: GET /api/v1/apps/{namespace}/{name}"),
        ));
    };
    let lines = pod_logs::follow(&view.cluster, found.namespace, found.name).await?;
    let mut stopping = view.server.stopping.clone();
    let stopped = async move {
        let _ = stopping.wait_for(|stop| *stop).await;
    };
    // Each line as a JSON string: an empty line is an event too.
    let events = lines
        .map(|line| Ok(Event::default().event("line").data(serde_json::to_string(&line).unwrap_or_default())))
        .take_until(stopped);
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
