//! Small SVG charts drawn on the server: an app's deployments on a time axis, and the DORA
//! figures (deployments per week, the spread of lead times and of times to restore, the change
//! failure rate). Each chart's accessible name says in words what it draws; the tables beside
//! them carry the same figures.

use maud::{Markup, html};

use crate::deployments::dora::{BUCKETS, Metrics, Spread};
use crate::deployments::timeline::Row;
use crate::duration::{format_timestamp, parse_timestamp};
use crate::readers::shorten_revision;

/// The timeline's size and margins, in pixels.
const TIMELINE_WIDTH: u64 = 880;
const TIMELINE_HEIGHT: u64 = 118;
const SIDE: u64 = 40;
const AXIS_Y: u64 = 84;
/// Two revision labels closer than this would overlap: the second is left to the hover text.
const LABEL_ROOM: u64 = 90;

/// How a deployment ended, as the timeline marks it.
fn outcome(row: &Row) -> &'static str {
    if row.rollback {
        "rollback"
    } else if row.failed_change() {
        "failing"
    } else {
        "ready"
    }
}

/// What a deployment's mark says, in words.
fn described(row: &Row) -> String {
    let deployment = &row.deployment;
    let mut words = vec![shorten_revision(&deployment.revision), deployment.status.clone(), deployment.first.clone()];
    words.extend(deployment.duration.as_ref().map(|duration| format!("took {duration}")));
    words.extend(marks(row).into_iter().map(String::from));
    words.extend(deployment.commit.as_ref().map(|commit| format!("{} ({})", commit.subject, commit.author)));
    words.join(", ")
}

/// What a deployment is marked with, in words (the history table's MARKS too).
pub(crate) fn marks(row: &Row) -> Vec<&'static str> {
    [(row.failed, "failed"), (row.rollback, "rollback"), (row.rolled_back, "rolled back"), (row.reverted, "reverted")]
        .into_iter()
        .filter_map(|(marked, word)| marked.then_some(word))
        .collect()
}

/// The mark of one outcome: a circle, a cross, a triangle pointing back.
fn mark(outcome: &str, x: u64) -> Markup {
    let y = AXIS_Y;
    let shape = match outcome {
        "failing" => format!("M {} {} l 12 12 m 0 -12 l -12 12", x - 6, y - 6),
        "rollback" => format!("M {} {y} l 12 -7 l 0 14 z", x - 6),
        _ => format!("M {} {y} a 6 6 0 1 0 12 0 a 6 6 0 1 0 -12 0", x - 6),
    };
    html! { path class=(format!("mark {outcome}")) d=(shape) {} }
}

/// An app's deployments on a time axis, oldest left, up to `until` (seconds since the epoch):
/// each one a mark by outcome (ready, failed, rollback), its revision above it where there is
/// room, what it was on hover and in its accessible name.
pub(crate) fn timeline(rows: &[Row], until: u64) -> Markup {
    let times: Vec<u64> = rows.iter().map(|row| parse_timestamp(&row.deployment.first).unwrap_or(until)).collect();
    let Some(&start) = times.iter().min() else { return html! {} };
    let end = until.max(start + 1);
    let x_of = |time: u64| SIDE + (time.saturating_sub(start)) * (TIMELINE_WIDTH - 2 * SIDE) / (end - start);
    let rollbacks = rows.iter().filter(|row| row.rollback).count();
    let failed = rows.iter().filter(|row| row.failed_change()).count();
    let rollbacks = if rollbacks == 1 { "1 rollback".to_string() } else { format!("{rollbacks} rollbacks") };
    let name = format!(
        "{} deployments from {} to {}: {failed} failed, {rollbacks}",
        rows.len(),
        format_timestamp(start as i64),
        format_timestamp(end as i64)
    );
    // Where each mark goes, and whether its labels fit (left to right, each far enough from the
    // last one labelled).
    let mut last_label: Option<u64> = None;
    let placed: Vec<(u64, bool)> = times
        .iter()
        .map(|time| {
            let x = x_of(*time);
            let labelled = last_label.is_none_or(|last| x >= last + LABEL_ROOM);
            if labelled {
                last_label = Some(x);
            }
            (x, labelled)
        })
        .collect();
    html! {
        div.figure tabindex="0" role="region" aria-label="Deployments over time" {
            svg.timeline #timeline xmlns="http://www.w3.org/2000/svg" role="group" aria-label=(name)
                width=(TIMELINE_WIDTH) height=(TIMELINE_HEIGHT) viewBox=(format!("0 0 {TIMELINE_WIDTH} {TIMELINE_HEIGHT}")) {
                line.axis x1=(SIDE) y1=(AXIS_Y) x2=(TIMELINE_WIDTH - SIDE) y2=(AXIS_Y) {}
                text.muted x=(SIDE) y=(TIMELINE_HEIGHT - 8) { (format_timestamp(start as i64)) }
                text.muted x=(TIMELINE_WIDTH - SIDE) y=(TIMELINE_HEIGHT - 8) text-anchor="end" { (format_timestamp(end as i64)) }
                @for (row, &(x, label)) in rows.iter().zip(&placed) {
                    g role="img" aria-label=(described(row)) class=(format!("deployment {}", outcome(row))) {
                        title { (described(row)) }
                        (mark(outcome(row), x))
                        @if label {
                            text x=(x) y=(AXIS_Y - 30) text-anchor="middle" { (short(&row.deployment.revision)) }
                            @if row.rollback { text x=(x) y=(AXIS_Y - 14) text-anchor="middle" { "↩ rollback" } }
                            @else if row.failed_change() { text x=(x) y=(AXIS_Y - 14) text-anchor="middle" { "✗ failed" } }
                        }
                    }
                }
            }
        }
    }
}

/// A revision short enough for a label: `main@sha1:696f056d` → `696f056d`, a chart version as is.
fn short(revision: &str) -> String {
    let short = shorten_revision(revision);
    short.rsplit(':').next().unwrap_or(&short).to_string()
}

/// The bars of a small chart: a label and a value (and a failed part of it) each.
struct Bars<'a> {
    /// The chart's accessible name, which says every value.
    name: String,
    bars: Vec<(&'a str, usize, usize)>,
}

const CHART_WIDTH: usize = 300;
/// Room above the bars for the tallest one's value, the bars, room below for their labels.
const CHART_TOP: usize = 16;
const BAR_AREA: usize = 80;
const CHART_HEIGHT: usize = CHART_TOP + BAR_AREA + 24;

fn bar_chart(chart: &Bars<'_>, title: &str) -> Markup {
    let most = chart.bars.iter().map(|(_, value, _)| *value).max().unwrap_or(0).max(1);
    let slot = CHART_WIDTH / chart.bars.len().max(1);
    html! {
        figure.chart {
            svg.chart xmlns="http://www.w3.org/2000/svg" role="img" aria-label=(chart.name)
                width=(CHART_WIDTH) height=(CHART_HEIGHT) viewBox=(format!("0 0 {CHART_WIDTH} {CHART_HEIGHT}")) {
                @for (index, (label, value, failed)) in chart.bars.iter().enumerate() {
                    @let height = value * BAR_AREA / most;
                    @let failed_height = failed * BAR_AREA / most;
                    @let x = index * slot + 2;
                    rect.bar x=(x) y=(CHART_TOP + BAR_AREA - height) width=(slot.saturating_sub(4)) height=(height) {}
                    @if failed_height > 0 {
                        rect.mark.failing x=(x) y=(CHART_TOP + BAR_AREA - failed_height) width=(slot.saturating_sub(4)) height=(failed_height) {}
                    }
                    @if *value > 0 { text x=(x + slot / 2 - 2) y=(CHART_TOP + BAR_AREA - height - 3) text-anchor="middle" { (value) } }
                    @if !label.is_empty() { text.muted x=(x + slot / 2 - 2) y=(CHART_HEIGHT - 6) text-anchor="middle" { (label) } }
                }
            }
            figcaption { (title) }
        }
    }
}

fn spread_bars(spread: &Spread, what: &str) -> Bars<'static> {
    let counts = spread.buckets.iter().copied().chain(std::iter::repeat(0)).take(BUCKETS.len());
    let counts: Vec<usize> = counts.collect();
    let bars = BUCKETS.iter().zip(&counts).map(|((_, label, _), count)| (*label, *count, 0)).collect();
    let said: Vec<String> =
        BUCKETS.iter().zip(&counts).map(|((_, _, words), count)| format!("{words}: {count}")).collect();
    Bars { name: format!("{what}, {} samples: {}", spread.samples, said.join("; ")), bars }
}

/// The DORA figures as four small charts.
pub(crate) fn dora_charts(figures: &Metrics) -> Markup {
    let weeks: Vec<(&str, usize, usize)> = figures
        .weekly
        .iter()
        .enumerate()
        .map(|(index, week)| {
            // The first and last weeks are labelled with their dates; the others are counted.
            let label = if index == 0 || index + 1 == figures.weekly.len() { &week.start[5..10] } else { "" };
            (label, week.deployments, week.failed)
        })
        .collect();
    let said: Vec<String> = figures
        .weekly
        .iter()
        .map(|week| format!("week of {}: {} ({} failed)", &week.start[..10], week.deployments, week.failed))
        .collect();
    let weekly = Bars { name: format!("Deployments per week: {}", said.join("; ")), bars: weeks };
    let rate = &figures.change_failure_rate;
    let failure = Bars {
        name: format!("Change failure rate: {} failed of {} deployments", rate.failed, rate.deployments),
        bars: vec![("deployed", rate.deployments, rate.failed), ("failed", rate.failed, rate.failed)],
    };
    html! {
        div.charts #dora-charts {
            (bar_chart(&weekly, "Deployments per week (failed in red)"))
            (bar_chart(&spread_bars(&figures.lead_time, "Lead time"), "Lead time"))
            (bar_chart(&spread_bars(&figures.time_to_restore, "Time to restore"), "Time to restore"))
            (bar_chart(&failure, "Change failure rate"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployments::dora::{Frequency, Rate, Week};
    use crate::deployments::{Deployment, timeline};

    fn deployed(n: u64, digest: &str, status: &str, first: &str) -> Deployment {
        Deployment {
            revision: format!("main@sha1:{}", n.to_string().repeat(40)),
            digest: digest.into(),
            status: status.into(),
            first: first.into(),
            observed: false,
            last: first.into(),
            duration: Some("2s".into()),
            reconciliations: Some(1),
            release: None,
            commit: None,
        }
    }

    #[test]
    fn the_timeline_marks_each_deployment_by_outcome_and_names_a_rollback() {
        let rows = timeline::build(
            &[
                deployed(1, "a", "ReconciliationSucceeded", "2026-12-01T00:00:00Z"),
                deployed(2, "b", "HealthCheckFailed", "2026-12-02T00:00:00Z"),
                deployed(3, "a", "ReconciliationSucceeded", "2026-12-03T00:00:00Z"),
            ],
            &[],
            &[],
        );
        let until = parse_timestamp("2026-12-04T00:00:00Z").unwrap_or_default();
        let drawn = timeline(&rows, until).into_string();
        assert!(
            drawn.contains(
                r#"aria-label="3 deployments from 2026-12-01T00:00:00Z to 2026-12-04T00:00:00Z: 1 failed, 1 rollback""#
            ),
            "{drawn}"
        );
        assert!(drawn.contains("↩ rollback") && drawn.contains("✗ failed"), "{drawn}");
        assert!(drawn.contains(r#"class="mark rollback""#) && drawn.contains(r#"class="mark failing""#), "{drawn}");
        assert!(
            drawn.contains("main@sha1:33333333, ReconciliationSucceeded, 2026-12-03T00:00:00Z, took 2s, rollback"),
            "{drawn}"
        );
        assert!(drawn.contains(">22222222</text>"), "the labels are the short hashes: {drawn}");
        // A quarter of the way along, then two quarters: 40 + 800 / 3.
        assert!(drawn.contains(r#"<text x="306" y="54""#), "{drawn}");
        assert_eq!(timeline(&[], until).into_string(), "");
    }

    #[test]
    fn the_dora_charts_say_their_values_in_words() {
        let spread = |buckets: Vec<usize>| Spread {
            samples: buckets.iter().sum(),
            median_seconds: None,
            p90_seconds: None,
            buckets,
        };
        let figures = Metrics {
            deployments: 5,
            succeeded: 4,
            deployment_frequency: Frequency { per_day: 1.0, per_week: 7.0, samples: 4 },
            lead_time: spread(vec![0, 4, 0, 0, 0, 0]),
            change_failure_rate: Rate { failed: 1, deployments: 5, rate: Some(0.2) },
            time_to_restore: spread(vec![0, 0, 1, 0, 0, 0]),
            weekly: vec![
                Week { start: "2026-11-24T00:00:00Z".into(), deployments: 0, failed: 0 },
                Week { start: "2026-12-01T00:00:00Z".into(), deployments: 5, failed: 1 },
            ],
            unseen: Vec::new(),
        };
        let drawn = dora_charts(&figures).into_string();
        for said in [
            "Deployments per week: week of 2026-11-24: 0 (0 failed); week of 2026-12-01: 5 (1 failed)",
            "Lead time, 4 samples: under a minute: 0; under 10 minutes: 4; under an hour: 0",
            "Time to restore, 1 samples:",
            "Change failure rate: 1 failed of 5 deployments",
        ] {
            assert!(drawn.contains(said), "{said} in {drawn}");
        }
    }
}
