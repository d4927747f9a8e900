//! `kubectl gitops monitoring install|status` (docs/monitoring.md): Prometheus, Grafana and
//! alerts for Flux, committed to the config repo's `platform/` directory as a platform service,
//! and read back from Prometheus.
//!
//! `install` runs like `app add` and through the same driver: flags into a request, the context
//! resolved read-only (the cluster's Flux must serve the kinds the stack is made of), the files
//! planned against a clone of the config repo ([`manifests`], [`rules`]), `--dry-run` printing
//! the plan that execution consumes, then one commit or pull request and `--wait`.

pub mod manifests;
pub mod prometheus;
pub mod rules;

/// The namespace the stack runs in.
pub const NAMESPACE: &str = "monitoring";
/// The PodMonitor that scrapes the Flux controllers; the alerts name its job (`<ns>/<name>`).
pub const POD_MONITOR: &str = "flux-system";

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use self::manifests::{NAME, NEEDED_KINDS, PLATFORM_DIR};
use self::prometheus::Endpoint;
pub use self::rules::Thresholds;
use crate::change::layout::{ClusterDir, KUSTOMIZATION_FILE};
use crate::change::plan::FileChange;
use crate::change::recorded::{self, Replanned};
use crate::change::{self, Awaits, Change, Target, clone, drive, target_clusters};
use crate::change::{DeliverySettings, RepoSettings};
use crate::cli::{DeliveryArgs, RepoArgs};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::Cluster;
use crate::duration;
use crate::error::{Error, Result};
use crate::git::Checkout;
use crate::output::Printer;
use crate::output::table::Table;
use crate::plan;

/// `monitoring install`.
#[derive(Debug, Clone, Args)]
pub struct InstallArgs {
    /// A cluster, by its name in the config repo (its directory clusters/NAME).
    ///
    /// The clusters to install it in (repeatable; default: the current cluster).
    #[arg(long = "cluster-name", alias = "cluster", value_name = "NAME", help_heading = "Monitoring")]
    pub clusters: Vec<String>,

    /// Where the stack's Prometheus scrapes this cluster's drift (HOST:PORT).
    ///
    /// The address of a `kubectl gitops metrics drift --listen` that follows this cluster, as the
    /// cluster's Prometheus reaches it: its series feed the GitOpsDriftDetected alert and the
    /// "Drifted objects" panel. Written as a ScrapeConfig in the cluster's own directory (one
    /// cluster at a time); an install without it takes it away.
    #[arg(long, value_name = "HOST:PORT", help_heading = "Monitoring")]
    pub drift_exporter: Option<String>,

    /// Alert when a Flux object has not been Ready for this long.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "10m", help_heading = "Alerts")]
    pub not_ready_for: Duration,

    /// Alert when a Flux object has been suspended for this long.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "24h", help_heading = "Alerts")]
    pub suspended_for: Duration,

    /// Alert when a Flux controller cannot be scraped for this long.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "5m", help_heading = "Alerts")]
    pub controller_down_for: Duration,

    /// Alert when a kind's reconciliation p99 is above this ...
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "1m", help_heading = "Alerts")]
    pub slow_reconcile: Duration,

    /// ... for this long.
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "15m", help_heading = "Alerts")]
    pub slow_for: Duration,

    /// Alert when objects differ from what Flux applied for this long (the series of `metrics drift`).
    #[arg(long, value_name = "DURATION", value_parser = duration::parse, default_value = "15m", help_heading = "Alerts")]
    pub drifted_for: Duration,

    /// Print the Flux YAML it would write and change nothing.
    ///
    /// The stack's objects (its source, HelmRelease, monitors, rules and dashboards) as the config
    /// repo would get them; no cluster, no repo.
    #[arg(long, conflicts_with = "dry_run", help_heading = "Delivery")]
    pub export: bool,

    #[command(flatten)]
    pub config: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// `monitoring status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Prometheus' address (default: the stack's Prometheus through the API server's service proxy).
    #[arg(long, value_name = "URL")]
    pub prometheus_url: Option<String>,

    /// How many of the slowest reconciliations to show.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
}

/// `monitoring install`, resolved.
#[derive(Debug, Clone)]
pub struct InstallRequest {
    /// `--cluster-name`.
    pub clusters: Vec<String>,
    /// `--drift-exporter`, checked.
    pub drift_exporter: Option<String>,
    /// The alerts' thresholds.
    pub thresholds: Thresholds,
    /// `--export`: print the stack's Flux YAML only.
    pub export: bool,
    /// How to reach the config repo.
    pub config: RepoSettings,
    /// How the change is delivered.
    pub delivery: DeliverySettings,
}

/// `monitoring status`, resolved.
#[derive(Debug, Clone)]
pub struct StatusRequest {
    /// `--prometheus-url`, checked.
    pub prometheus_url: Option<String>,
    /// `--top`.
    pub top: usize,
    /// `-o`.
    pub format: OutputFormat,
    /// Print the header lines.
    pub headers: bool,
}

impl InstallArgs {
    /// Checks every flag.
    pub fn request(&self) -> Result<InstallRequest> {
        let thresholds = Thresholds {
            not_ready_for: self.not_ready_for,
            suspended_for: self.suspended_for,
            controller_down_for: self.controller_down_for,
            slow_reconcile: self.slow_reconcile,
            slow_for: self.slow_for,
            drifted_for: self.drifted_for,
        };
        if thresholds.slow_reconcile.is_zero() {
            return Err(Error::usage(
                "--slow-reconcile 0 would call every reconciliation slow",
                "e.g. --slow-reconcile 1m",
            ));
        }
        let drift_exporter = self.drift_exporter.as_deref().map(exporter_address).transpose()?;
        if drift_exporter.is_some() && self.clusters.len() > 1 {
            return Err(Error::usage(
                "--drift-exporter names one cluster's exporter, and more than one --cluster-name is given",
                "install it one cluster at a time: --cluster-name NAME --drift-exporter HOST:PORT",
            ));
        }
        Ok(InstallRequest {
            clusters: self.clusters.clone(),
            drift_exporter,
            thresholds,
            export: self.export,
            config: self.config.settings()?,
            delivery: self.delivery.settings()?,
        })
    }
}

/// `--drift-exporter`: a host (a name or an IP address) and a port, nothing else: Prometheus
/// scrapes `http://HOST:PORT/metrics`, and the address is written into the config repo as is.
fn exporter_address(address: &str) -> Result<String> {
    let invalid = || {
        Error::usage(
            format!("--drift-exporter {address:?} is not HOST:PORT"),
            "e.g. --drift-exporter gitops-drift.monitoring.svc:9464 (where `metrics drift --listen` serves)",
        )
    };
    let plain = !address.contains(['/', '@', '?', '#']) && !address.contains(char::is_whitespace);
    let (host, port) = address.rsplit_once(':').filter(|_| plain).ok_or_else(invalid)?;
    let port: u16 = port.parse().ok().filter(|port| *port != 0).ok_or_else(invalid)?;
    // The host as a URL's: a name or an IP address (IPv6 in brackets), nothing else.
    let parsed = url::Url::parse(&format!("http://{host}:{port}")).map_err(|_| invalid())?;
    match parsed.host_str() {
        Some(parsed_host) if !host.is_empty() && parsed_host.eq_ignore_ascii_case(host) => Ok(format!("{host}:{port}")),
        _ => Err(invalid()),
    }
}

impl StatusArgs {
    /// Checks every flag.
    pub fn request(&self, global: &GlobalArgs) -> Result<StatusRequest> {
        let format = global.output_format();
        crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
        if let Some(url) = &self.prometheus_url {
            Endpoint::url(url)?;
        }
        if self.top == 0 {
            return Err(Error::usage("--top 0 shows nothing", "e.g. --top 10"));
        }
        Ok(StatusRequest {
            prometheus_url: self.prometheus_url.clone(),
            top: self.top,
            format,
            headers: !global.no_headers,
        })
    }
}

/// `monitoring install --export`: the stack's manifests as the config repo would get them (every
/// YAML file of its directories but kustomize's own lists), at the API versions this build pins,
/// with no cluster and no repo; and the drift exporter's ScrapeConfig when one is given.
pub fn export(request: &InstallRequest) -> Result<String> {
    let files = manifests::stack_files(&crate::flux::api::Versions::pinned(), &request.thresholds)?;
    let mut text: String = files
        .iter()
        .filter(|(path, _)| path.ends_with(".yaml") && !path.ends_with(KUSTOMIZATION_FILE))
        .map(|(_, text)| text.as_str())
        .collect();
    if let Some(address) = &request.drift_exporter {
        text.push_str(&crate::yaml::to_documents(&[manifests::drift_scrape_config(address)])?);
    }
    Ok(text)
}

/// `monitoring install`.
pub async fn install(request: &InstallRequest, target: &Target, printer: &Printer) -> Result<String> {
    if request.export {
        crate::change::exports_yaml(printer)?;
        return export(request);
    }
    let context = change::context(target, &request.config.in_platform_repo(), true, printer).await?;
    require_kinds(&context.versions)?;
    let checkout = clone(context.repo()?).await?;
    let clusters = target_clusters(&checkout.files(), &request.clusters, context.record())?;
    let build = |checkout: &Checkout| install_changes(request, &context, &clusters, checkout);
    let files = build(&checkout.files())?;
    let cluster_list = change::layout::paths(&clusters);
    let parts =
        ["controllers", "configs"].into_iter().chain(request.drift_exporter.as_ref().map(|_| manifests::DRIFT_PART));
    let syncs: Vec<(String, String)> =
        parts.map(|part| (context.namespace.clone(), format!("{NAME}-{part}"))).collect();
    let mut objects = vec![
        format!(
            "Kustomization {}/{NAME}-controllers: HelmRelease {}/{} (chart {})",
            context.namespace,
            NAMESPACE,
            manifests::RELEASE,
            manifests::CHART_VERSION
        ),
        format!(
            "Kustomization {}/{NAME}-configs: PodMonitor, PrometheusRule and dashboards in {NAMESPACE}",
            context.namespace
        ),
    ];
    if let Some(address) = &request.drift_exporter {
        objects.push(format!(
            "Kustomization {}/{NAME}-{}: ScrapeConfig {NAMESPACE}/{} of the drift exporter at {address}",
            context.namespace,
            manifests::DRIFT_PART,
            manifests::DRIFT_SCRAPE_CONFIG
        ));
    }
    let change = Change {
        noun: "platform service",
        verb: "install",
        done: "installed",
        app: NAME,
        message: request.delivery.message.clone().unwrap_or_else(|| {
            format!("Install monitoring ({} {}) in {cluster_list}", manifests::RELEASE, manifests::CHART_VERSION)
        }),
        files,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects,
        wait: request.delivery.wait.then(|| {
            let names: Vec<&str> = syncs.iter().map(|(_, name)| name.as_str()).collect();
            format!("wait until Kustomizations {} are Ready", names.join(", "))
        }),
        notes: Vec::new(),
        awaits: Some(Awaits { objects: syncs, ready: true, layer: Some(crate::flux::bootstrap::PLATFORM_LAYER) }),
        new_repo: None,
        request: install_words(request),
        already_there: Some(format!(
            "monitoring is already in the config repo for {cluster_list}; nothing to change\n"
        )),
    };
    drive(&context, &request.delivery, change, Some(checkout), &build).await
}

/// The words that record a `monitoring install` in its pull request: the clusters as given and
/// every threshold.
fn install_words(request: &InstallRequest) -> Vec<String> {
    let mut words = vec!["monitoring".to_string(), "install".to_string()];
    words.extend(recorded::cluster_words(&request.clusters));
    let thresholds = &request.thresholds;
    for (flag, value) in [
        ("--not-ready-for", thresholds.not_ready_for),
        ("--suspended-for", thresholds.suspended_for),
        ("--controller-down-for", thresholds.controller_down_for),
        ("--slow-reconcile", thresholds.slow_reconcile),
        ("--slow-for", thresholds.slow_for),
        ("--drifted-for", thresholds.drifted_for),
    ] {
        words.extend([flag.to_string(), duration::format(value)]);
    }
    if let Some(address) = &request.drift_exporter {
        words.extend(["--drift-exporter".to_string(), address.clone()]);
    }
    words
}

/// A recorded `monitoring install` (`args`: its words after the verb; `words`: all of them),
/// planned again on `base`.
pub(crate) fn replan(
    args: &[String],
    words: &[String],
    context: &change::Context,
    base: &Checkout,
) -> Result<Replanned> {
    let request = recorded::parse_args::<InstallArgs>(args, words)?.request()?;
    require_kinds(&context.versions)?;
    let clusters = target_clusters(base, &request.clusters, context.record())?;
    Ok(Replanned::of("install", NAME, install_changes(&request, context, &clusters, base)?))
}

/// Refuses a cluster whose Flux does not serve every kind the stack is made of: nothing would
/// deploy it.
fn require_kinds(versions: &crate::flux::api::Versions) -> Result<()> {
    let missing: Vec<String> = NEEDED_KINDS
        .iter()
        .filter(|kind| versions.lookup(kind).is_none())
        .map(|kind| format!("{} ({})", kind.kind, kind.group))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Negative {
        message: format!("this cluster's Flux does not serve {}, which the monitoring stack is made of", missing.join(", ")),
        hint: Some(
            "install or upgrade Flux with source-controller, helm-controller and kustomize-controller (`kubectl gitops upgrade`)"
                .into(),
        ),
    })
}

/// The file changes: `platform/monitoring/`, and each cluster's overlay and platform list.
fn install_changes(
    request: &InstallRequest,
    context: &change::Context,
    clusters: &[ClusterDir],
    checkout: &Checkout,
) -> Result<Vec<FileChange>> {
    let mut wanted = manifests::stack_files(&context.versions, &request.thresholds)?;
    let mut dirs = vec![format!("{PLATFORM_DIR}/{NAME}")];
    let exporter = request.drift_exporter.as_deref();
    for cluster in clusters {
        wanted.extend(manifests::cluster_files(cluster, &context.namespace, &context.versions, exporter)?);
        dirs.push(cluster.entry_dir(PLATFORM_DIR, NAME));
        let list_path = cluster.list_file(PLATFORM_DIR);
        let list = change::layout::app_list(plan::read(checkout, &list_path)?.as_deref(), NAME, true)?;
        wanted.insert(list_path, list);
    }
    plan::diff(checkout, &wanted, &dirs)
}

/// What `monitoring status` prints; `-o json|yaml` prints exactly this (docs/output.md).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringStatus {
    /// Every alerting rule: its name, state (`inactive`, `pending`, `firing`), severity, `for` in
    /// seconds, and its active alerts.
    pub alerts: Vec<AlertRow>,
    /// The slowest reconciliations: mean seconds over 5 minutes, slowest first.
    pub slowest: Vec<SlowRow>,
}

impl crate::output::Kind for MonitoringStatus {
    const KIND: &'static str = "MonitoringStatus";
}

/// One alerting rule.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlertRow {
    pub name: String,
    pub state: String,
    pub severity: Option<String>,
    pub for_seconds: f64,
    /// The active alerts' summaries (or labels), with their state.
    pub active: Vec<String>,
}

/// One object's reconciliation time.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlowRow {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub mean_seconds: f64,
}

/// `monitoring status`: the text to print, and whether an alert is firing (exit 1).
pub async fn status(request: &StatusRequest, target: &Target, printer: &Printer) -> Result<(String, bool)> {
    let endpoint = match &request.prometheus_url {
        Some(url) => Endpoint::url(url)?,
        None => Endpoint::Proxy(Cluster::connect(&target.connection, printer).await?),
    };
    let rules = endpoint.alert_rules().await?;
    let ours: Vec<&str> = rules::alerts(&Thresholds::default()).iter().map(|(name, ..)| *name).collect();
    let missing: Vec<&str> =
        ours.iter().filter(|name| !rules.iter().any(|rule| rule.name == **name)).copied().collect();
    if !missing.is_empty() {
        printer.warning(&format!("Prometheus has no rule {}: is monitoring installed?", missing.join(", ")));
    }
    let alerts: Vec<AlertRow> = rules
        .into_iter()
        .map(|rule| AlertRow {
            // Firing first: what a reader acts on before what may still clear.
            active: rule
                .alerts
                .iter()
                .filter(|alert| alert.state == "firing")
                .chain(rule.alerts.iter().filter(|alert| alert.state != "firing"))
                .map(|alert| {
                    let summary = alert.annotations.get("summary").and_then(|v| v.as_str()).map(String::from);
                    let what = summary.unwrap_or_else(|| {
                        alert
                            .labels
                            .iter()
                            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                            .collect::<Vec<_>>()
                            .join(",")
                    });
                    format!("{}: {what}", alert.state)
                })
                .collect(),
            severity: rule.labels.get("severity").and_then(|v| v.as_str()).map(String::from),
            for_seconds: rule.duration,
            state: rule.state,
            name: rule.name,
        })
        .collect();
    let slowest = endpoint
        .query(&rules::slowest(request.top))
        .await?
        .into_iter()
        .filter(|(_, value)| value.is_finite())
        .map(|(labels, mean_seconds)| {
            let label = |name: &str| labels.get(name).and_then(|v| v.as_str()).unwrap_or_default().to_string();
            SlowRow { kind: label("kind"), namespace: label("exported_namespace"), name: label("name"), mean_seconds }
        })
        .collect::<Vec<_>>();
    let mut slowest = slowest;
    slowest.sort_by(|a, b| b.mean_seconds.total_cmp(&a.mean_seconds));
    let firing = alerts.iter().any(|alert| alert.state == "firing");
    let report = MonitoringStatus { alerts, slowest };
    let text = match request.format {
        OutputFormat::Json | OutputFormat::Yaml => {
            crate::output::render_structured(&crate::output::document(&report), request.format)?
        }
        _ => render(&report, request.headers),
    };
    Ok((text, firing))
}

/// The alerts, then the slowest reconciliations, as two tables.
fn render(report: &MonitoringStatus, headers: bool) -> String {
    let mut alerts = Table::new(["ALERT", "STATE", "SEVERITY", "FOR", "ACTIVE"]);
    for alert in &report.alerts {
        alerts.push([
            alert.name.clone(),
            alert.state.clone(),
            alert.severity.clone().unwrap_or_else(|| "-".into()),
            duration::format(Duration::from_secs_f64(alert.for_seconds.max(0.0))),
            if alert.active.is_empty() { "-".to_string() } else { alert.active.join("; ") },
        ]);
    }
    let mut slowest = Table::new(["KIND", "NAMESPACE", "NAME", "MEAN"]);
    for row in &report.slowest {
        slowest.push([
            row.kind.clone(),
            row.namespace.clone(),
            row.name.clone(),
            duration::format(Duration::from_secs_f64(row.mean_seconds.max(0.0))),
        ]);
    }
    let mut text = alerts.render(headers);
    text.push_str("\nSlowest reconciliations (mean over 5m):\n");
    if report.slowest.is_empty() {
        text.push_str("none recorded in the last 5 minutes\n");
    } else {
        text.push_str(&slowest.render(headers));
    }
    text
}

#[cfg(test)]
mod tests;
