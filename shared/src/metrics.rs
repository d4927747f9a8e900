//! `kubectl gitops metrics dora`: deployment frequency, lead time for changes, change failure
//! rate and time to restore, per app and overall, from the apps' ledgers and Flux's histories
//! (docs/history.md). Read-only: it writes no ledger.

use std::fmt::Write as _;

use kube::Api;
use kube::api::{DynamicObject, ListParams};
use serde::Serialize;

use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{Cluster, Connection, list_pages};
use crate::deployments::dora::{self, Metrics, Tally, Window};
use crate::deployments::timeline::{self, Row};
use crate::deployments::{self, AppKind};
use crate::error::{Error, ExitCode, Result};
use crate::flux::api::{HELM_RELEASE, KUSTOMIZATION};
use crate::output::Printer;
use crate::output::table::Table;
use crate::readers::ledger::{self, AppId};

/// How far back `metrics dora` looks unless told.
pub const DEFAULT_SINCE: &str = "30d";
/// How soon after a deployment a rollback or revert makes it a failure, unless told.
pub const DEFAULT_FAILURE_WINDOW: &str = "24h";

/// `kubectl gitops metrics dora`.
#[derive(Debug, Clone, clap::Args)]
pub struct DoraArgs {
    /// Only this app (a Kustomization or HelmRelease name).
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,

    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// Checked against the cluster the kubeconfig reaches (each cluster keeps its own ledgers;
    /// --context picks another).
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME")]
    pub cluster: Option<String>,

    /// How far back to look, e.g. 30d, 12h.
    #[arg(long, default_value = DEFAULT_SINCE, value_name = "DURATION")]
    pub since: String,

    /// A rollback or revert this soon after a deployment makes it a failed change.
    #[arg(long, default_value = DEFAULT_FAILURE_WINDOW, value_name = "DURATION")]
    pub failure_window: String,

    /// Every namespace, instead of -n's.
    ///
    /// Every namespace (default: the Flux namespace, or -n).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

impl DoraArgs {
    /// The request these flags make: durations, the name and `-o` are checked here.
    pub fn request(&self, global: &GlobalArgs) -> Result<DoraRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(
            format,
            &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Yaml, OutputFormat::Prometheus],
        )?;
        let namespace = match (self.all_namespaces, &global.namespace) {
            (true, _) => None,
            (false, Some(namespace)) => Some(namespace.clone()),
            (false, None) => Some(crate::cluster::default_flux_namespace()?),
        };
        let mut request = DoraRequest::new(namespace, self.app.clone(), &self.since, &self.failure_window)?;
        request.cluster.clone_from(&self.cluster);
        request.format = format;
        request.headers = !global.no_headers;
        Ok(request)
    }
}

/// `metrics dora`, resolved from its flags.
#[derive(Debug, Clone)]
pub struct DoraRequest {
    app: Option<String>,
    cluster: Option<String>,
    /// `None`: every namespace.
    namespace: Option<String>,
    /// Seconds.
    since: u64,
    /// Seconds.
    failure_window: u64,
    format: OutputFormat,
    headers: bool,
}

impl DoraRequest {
    /// The window ending now.
    fn window(&self) -> Window {
        let until = crate::duration::now();
        Window { since: until.saturating_sub(self.since), until, failure_window: self.failure_window }
    }

    /// The metrics of the apps in `namespace` (every namespace when `None`), or of one app, over
    /// `since` with rollbacks and reverts within `failure_window` counted as failures (both as
    /// `--since` takes them: `30d`, `12h`). For the UI and the API too.
    pub fn new(
        namespace: Option<String>,
        app: Option<String>,
        since: &str,
        failure_window: &str,
    ) -> Result<DoraRequest> {
        let since = days_or_duration(since, "--since")?;
        let failure_window = days_or_duration(failure_window, "--failure-window")?;
        if let Some(app) = &app {
            crate::names::validate_name(app, "--app")?;
        }
        if let Some(namespace) = &namespace {
            crate::names::validate_name(namespace, "namespace")?;
        }
        Ok(DoraRequest {
            app,
            cluster: None,
            namespace,
            since,
            failure_window,
            format: OutputFormat::Table,
            headers: true,
        })
    }
}

/// A window's duration flag, in seconds, as every duration flag takes it (`30d`, `12h`), and
/// longer than zero.
fn days_or_duration(text: &str, flag: &str) -> Result<u64> {
    match crate::duration::parse(text).map(|duration| duration.as_secs()) {
        Ok(seconds) if seconds > 0 => Ok(seconds),
        Ok(_) => Err(Error::usage(format!("{flag} must be longer than 0"), "for example 30d, 7d or 12h")),
        Err(why) => Err(Error::usage(format!("invalid {flag} {text:?}: {why}"), "for example 30d, 7d or 12h")),
    }
}

/// What `metrics dora -o json` prints.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoraReport {
    /// The window, RFC 3339.
    pub since: String,
    pub until: String,
    pub failure_window_seconds: u64,
    /// Every app with deployments kept, by namespace and name.
    pub apps: Vec<AppMetrics>,
    /// All of them together.
    pub overall: Metrics,
}

impl crate::output::Kind for DoraReport {
    const KIND: &'static str = "DoraMetrics";
}

/// One app's metrics.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppMetrics {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// Runs `kubectl gitops metrics dora`.
pub async fn run_dora(request: &DoraRequest, connection: &Connection, printer: &Printer) -> Result<ExitCode> {
    let cluster = Cluster::connect(connection, printer).await?;
    if let Some(wanted) = &request.cluster {
        check_cluster(&cluster, wanted).await?;
    }
    let report = dora_report(&cluster, request).await?;
    match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            printer.structured(&crate::output::document(&report), request.format)?
        }
        OutputFormat::Prometheus => printer.data(&prometheus(&report))?,
        _ => printer.data(&render(&report, request.headers))?,
    }
    Ok(ExitCode::Ok)
}

/// The figures: every app's timeline from its ledger merged with Flux's history now.
pub async fn dora_report(cluster: &Cluster, request: &DoraRequest) -> Result<DoraReport> {
    let window = request.window();
    let mut overall = Tally::default();
    let mut apps = Vec::new();
    let flux = FluxApps::read(cluster).await?;
    each_timeline(cluster, &flux, request.namespace.as_deref(), request.app.as_deref(), |app, rows| {
        overall.add(rows, &window);
        apps.push(AppMetrics {
            kind: app.kind.as_str().to_string(),
            namespace: app.namespace.clone(),
            name: app.name.clone(),
            metrics: dora::of_app(rows, &window),
        });
    })
    .await?;
    if let Some(app) = &request.app
        && apps.is_empty()
    {
        return Err(Error::usage(
            format!(
                "app {app:?} has no deployment history in {}",
                request.namespace.as_deref().unwrap_or("any namespace")
            ),
            "`kubectl gitops status` lists the apps; -n or -A picks the namespace; Flux 2.7 or later records histories",
        ));
    }
    apps.sort_by(|a, b| (&a.namespace, &a.name, &a.kind).cmp(&(&b.namespace, &b.name, &b.kind)));
    Ok(DoraReport {
        since: crate::duration::format_timestamp(window.since as i64),
        until: crate::duration::format_timestamp(window.until as i64),
        failure_window_seconds: window.failure_window,
        overall: overall.finish(&window),
        apps,
    })
}

/// The figures over every app of `namespaces` for the default window (its start and end, RFC
/// 3339), one namespace at a time, with the namespaces that could not be read and why: what the
/// UI's panel shows, without holding more than one namespace's ledgers.
pub(crate) async fn overall(
    cluster: &Cluster,
    namespaces: &[String],
) -> Result<((String, String), Metrics, Vec<String>)> {
    let request = DoraRequest::new(None, None, DEFAULT_SINCE, DEFAULT_FAILURE_WINDOW)?;
    let window = request.window();
    let mut overall = Tally::default();
    let mut unread = Vec::new();
    let flux = FluxApps::read(cluster).await?;
    for namespace in namespaces {
        let read = each_timeline(cluster, &flux, Some(namespace), None, |_, rows| overall.add(rows, &window)).await;
        if let Err(error) = read {
            unread.push(format!("namespace {namespace}: {error}"));
        }
    }
    let bounds = (
        crate::duration::format_timestamp(window.since as i64),
        crate::duration::format_timestamp(window.until as i64),
    );
    Ok((bounds, overall.finish(&window), unread))
}

/// What the cluster serves of Flux, read once for every namespace a report reads: the APIs, and
/// the Flux namespace, where the Kustomizations that apply the config repo are.
struct FluxApps {
    served: crate::flux::api::ServedApis,
    namespace: Option<String>,
}

impl FluxApps {
    async fn read(cluster: &Cluster) -> Result<FluxApps> {
        let detection = crate::detect::detect(cluster).await?;
        if let Some(error) = detection.unreachable_error() {
            return Err(error);
        }
        Ok(FluxApps { served: detection.api_versions, namespace: detection.flux.map(|flux| flux.namespace) })
    }
}

/// Calls `each` with every app's timeline in `namespace` (every namespace when `None`; only
/// `app` when given): its ledger merged in memory with what Flux shows now. One page of apps
/// and the ledgers are held at a time, never every timeline. The Kustomizations that apply the
/// config repo (the sync and the layers) are no apps: a commit they apply is each app's change,
/// counted where the app is.
async fn each_timeline(
    cluster: &Cluster,
    flux: &FluxApps,
    namespace: Option<&str>,
    app: Option<&str>,
    mut each: impl FnMut(&AppId, &[Row]),
) -> Result<()> {
    let mut ledgers = ledger::list(cluster, namespace).await?;
    for (kind, flux_kind) in [(AppKind::Kustomization, &KUSTOMIZATION), (AppKind::HelmRelease, &HELM_RELEASE)] {
        let Some(resource) = crate::readers::resource(&flux.served, flux_kind) else { continue };
        let api: Api<DynamicObject> = match namespace {
            Some(namespace) => Api::namespaced_with(cluster.client.clone(), namespace, &resource),
            None => Api::all_with(cluster.client.clone(), &resource),
        };
        let one = |object: DynamicObject| {
            if crate::readers::applies_the_config_repo(&object, flux.namespace.as_deref()) {
                return;
            }
            let id = AppId {
                kind,
                namespace: object.metadata.namespace.clone().unwrap_or_default(),
                name: object.metadata.name.clone().unwrap_or_default(),
            };
            if app.is_some_and(|wanted| wanted != id.name) {
                return;
            }
            let mut kept = ledgers.remove(&id).unwrap_or_default();
            deployments::merge(&mut kept, &deployments::from_flux(kind, object.data.pointer("/status/history")));
            if !kept.is_empty() {
                each(&id, &timeline::build(&kept, &[], &[]));
            }
        };
        let page = |params: ListParams| {
            let api = api.clone();
            async move { api.list(&params).await }
        };
        list_pages(ListParams::default().limit(500), page, one).await.map_err(|error| cluster.error(error))?;
    }
    Ok(())
}

/// `--cluster-name`: the cluster reached must be the one of that name in the config repo.
async fn check_cluster(cluster: &Cluster, wanted: &str) -> Result<()> {
    let detection = crate::detect::detect(cluster).await?;
    match detection.gitops.as_ref().map(|record| record.cluster_name.as_str()) {
        Some(name) if name == wanted => Ok(()),
        Some(name) => Err(Error::usage(
            format!("--cluster-name {wanted}: the kubeconfig reaches cluster {name}"),
            format!("each cluster keeps its own history; --context picks the context of {wanted}"),
        )),
        None => Err(Error::usage(
            format!("--cluster-name {wanted}: this cluster was not installed by kubectl-gitops, so it has no name"),
            "leave out --cluster-name to measure the cluster the kubeconfig reaches",
        )),
    }
}

fn seconds_text(seconds: Option<u64>) -> String {
    seconds.map_or_else(|| "-".into(), |seconds| crate::duration::format(std::time::Duration::from_secs(seconds)))
}

/// The table: one row per app and one for all, then what could not be seen.
fn render(report: &DoraReport, headers: bool) -> String {
    let mut table = Table::new([
        "app",
        "deployments",
        "per day",
        "per week",
        "lead time p50 / p90",
        "change failure rate",
        "time to restore p50",
    ]);
    let row = |name: String, metrics: &Metrics| {
        [
            name,
            format!("{} ({} ready)", metrics.deployments, metrics.succeeded),
            format!("{:.2}", metrics.deployment_frequency.per_day),
            format!("{:.2}", metrics.deployment_frequency.per_week),
            format!(
                "{} / {}",
                seconds_text(metrics.lead_time.median_seconds),
                seconds_text(metrics.lead_time.p90_seconds)
            ),
            match metrics.change_failure_rate.rate {
                Some(rate) => format!(
                    "{:.0}% ({}/{})",
                    rate * 100.0,
                    metrics.change_failure_rate.failed,
                    metrics.change_failure_rate.deployments
                ),
                None => "-".into(),
            },
            format!("{} (n={})", seconds_text(metrics.time_to_restore.median_seconds), metrics.time_to_restore.samples),
        ]
    };
    for app in &report.apps {
        table.push(row(format!("{}/{}", app.namespace, app.name), &app.metrics));
    }
    table.push(row("(all)".into(), &report.overall));
    let mut text = format!("Since {} (until {})\n", report.since, report.until);
    text.push_str(&table.render(headers));
    if !report.overall.unseen.is_empty() {
        text.push_str("\nNot seen:\n");
        for line in &report.overall.unseen {
            let _ = writeln!(text, "  - {line}");
        }
    }
    text
}

/// The text exposition format, for node-exporter's textfile collector: one gauge family per
/// figure, an app's series labelled with its kind, namespace and name, the overall series
/// without labels.
fn prometheus(report: &DoraReport) -> String {
    type Figure = (&'static str, &'static str, fn(&Metrics) -> Vec<(Option<&'static str>, f64)>);
    let figures: [Figure; 7] = [
        ("deployments", "Deployments (new revisions Flux applied) in the window.", |m| {
            vec![(None, m.deployments as f64)]
        }),
        ("deployment_frequency_per_day", "Deployments that reached Ready, per day of the window.", |m| {
            vec![(None, m.deployment_frequency.per_day)]
        }),
        ("lead_time_seconds", "From the deployed commit's time to its first successful reconcile.", |m| {
            quantiles(m.lead_time.median_seconds, m.lead_time.p90_seconds)
        }),
        ("lead_time_samples", "Deployments whose lead time is known.", |m| vec![(None, m.lead_time.samples as f64)]),
        ("change_failure_rate", "Failed, rolled back or reverted deployments over all deployments.", |m| {
            m.change_failure_rate.rate.map(|rate| vec![(None, rate)]).unwrap_or_default()
        }),
        ("time_to_restore_seconds", "From a failed change to the next good deployment.", |m| {
            quantiles(m.time_to_restore.median_seconds, m.time_to_restore.p90_seconds)
        }),
        ("time_to_restore_samples", "Failures restored in the window.", |m| {
            vec![(None, m.time_to_restore.samples as f64)]
        }),
    ];
    let mut text = String::new();
    for (name, help, values) in figures {
        let _ = writeln!(text, "# HELP kubectl_gitops_dora_{name} {help}\n# TYPE kubectl_gitops_dora_{name} gauge");
        let series = report
            .apps
            .iter()
            .map(|app| {
                let labels = format!(
                    "kind=\"{}\",namespace=\"{}\",name=\"{}\"",
                    app.kind,
                    crate::output::exposition_label(&app.namespace),
                    crate::output::exposition_label(&app.name)
                );
                (Some(labels), &app.metrics)
            })
            .chain(std::iter::once((None, &report.overall)));
        for (labels, metrics) in series {
            for (quantile, value) in values(metrics) {
                let labels: Vec<String> =
                    labels.iter().cloned().chain(quantile.map(|q| format!("quantile=\"{q}\""))).collect();
                let labels = if labels.is_empty() { String::new() } else { format!("{{{}}}", labels.join(",")) };
                let _ = writeln!(text, "kubectl_gitops_dora_{name}{labels} {value}");
            }
        }
    }
    text
}

fn quantiles(median: Option<u64>, p90: Option<u64>) -> Vec<(Option<&'static str>, f64)> {
    [("0.5", median), ("0.9", p90)]
        .into_iter()
        .filter_map(|(quantile, value)| value.map(|value| (Some(quantile), value as f64)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployments::dora::{Frequency, Rate, Spread};

    fn figures(deployments: usize, restore: Option<u64>) -> Metrics {
        let spread = |median: Option<u64>| Spread {
            samples: usize::from(median.is_some()),
            median_seconds: median,
            p90_seconds: median,
            buckets: vec![0, usize::from(median.is_some()), 0, 0, 0, 0],
        };
        Metrics {
            deployments,
            succeeded: deployments - 1,
            deployment_frequency: Frequency { per_day: 0.5, per_week: 3.5, samples: deployments - 1 },
            lead_time: spread(Some(60)),
            change_failure_rate: Rate { failed: 1, deployments, rate: Some(1.0 / deployments as f64) },
            time_to_restore: spread(restore),
            weekly: Vec::new(),
            unseen: vec!["the commit time of 1 deployment(s)".into()],
        }
    }

    fn report() -> DoraReport {
        DoraReport {
            since: "2026-11-04T00:00:00Z".into(),
            until: "2026-12-04T00:00:00Z".into(),
            failure_window_seconds: 86_400,
            apps: vec![AppMetrics {
                kind: "Kustomization".into(),
                namespace: "team-a".into(),
                name: "web\"1".into(),
                metrics: figures(5, Some(600)),
            }],
            overall: figures(5, None),
        }
    }

    #[test]
    fn the_exposition_has_one_family_per_figure_and_an_unlabelled_overall_series() {
        let text = prometheus(&report());
        let families = text.lines().filter(|line| line.starts_with("# TYPE ")).count();
        assert_eq!(families, 7, "{text}");
        assert_eq!(text.lines().filter(|line| line.starts_with("# HELP ")).count(), 7);
        let app = r#"kind="Kustomization",namespace="team-a",name="web\"1""#;
        assert!(text.contains(&format!("kubectl_gitops_dora_deployments{{{app}}} 5\n")), "{text}");
        assert!(text.contains("\nkubectl_gitops_dora_deployments 5\n"), "{text}");
        assert!(text.contains(&format!("kubectl_gitops_dora_time_to_restore_seconds{{{app},quantile=\"0.5\"}} 600\n")));
        // No restore overall: no sample line, only the count.
        assert!(!text.contains("kubectl_gitops_dora_time_to_restore_seconds{quantile"), "{text}");
        assert!(text.contains("\nkubectl_gitops_dora_time_to_restore_samples 0\n"), "{text}");
        assert!(text.contains("\nkubectl_gitops_dora_change_failure_rate 0.2\n"), "{text}");
        // Every sample line is `name{labels} value` or `name value`.
        for line in text.lines().filter(|line| !line.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok() && series.starts_with("kubectl_gitops_dora_"), "{line}");
        }
    }

    #[test]
    fn the_table_has_a_row_per_app_and_one_for_all_then_what_was_not_seen() {
        let text = render(&report(), true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Since 2026-11-04T00:00:00Z (until 2026-12-04T00:00:00Z)");
        assert!(lines[2].starts_with("team-a/web\"1") && lines[2].contains("20% (1/5)"), "{text}");
        assert!(lines[3].starts_with("(all)") && lines[3].contains("- (n=0)"), "{text}");
        assert!(text.ends_with("Not seen:\n  - the commit time of 1 deployment(s)\n"), "{text}");
    }

    #[test]
    fn windows_take_days_and_go_durations() {
        assert_eq!(days_or_duration("30d", "--since").unwrap(), 30 * 86_400);
        assert_eq!(days_or_duration("12h", "--since").unwrap(), 12 * 3_600);
        assert_eq!(days_or_duration("1h30m", "--since").unwrap(), 5_400);
        assert!(days_or_duration("0s", "--since").is_err());
        assert!(days_or_duration("30x", "--since").is_err());
    }
}
