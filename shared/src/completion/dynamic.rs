//! Completion values that come from the kubeconfig, the cluster or the config repo's forge:
//! contexts, namespaces, app names, tenants, pull request numbers. Each lookup has a short
//! deadline and fails silently: a slow or unreachable cluster or forge gives no candidates, never
//! an error on the terminal.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};

use crate::change::Target;
use crate::cluster::{Cluster, Connection};
use crate::output::Printer;
use crate::readers::Scope;

/// How long one completion may wait for the cluster.
const DEADLINE: Duration = Duration::from_secs(2);

/// Where a value's candidates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// The kubeconfig's contexts (`--context`).
    Contexts,
    /// The cluster's namespaces (`-n`).
    Namespaces,
    /// The apps kubectl-gitops manages in the Flux namespace (`app remove NAME`, …).
    Apps,
    /// The platform apps (`platform remove NAME`).
    PlatformApps,
    /// The tenants (`tenant remove NAME`).
    Tenants,
    /// The open pull requests we opened on the config repo (`pr show NUMBER`), or on the
    /// platform repo (`pr --platform show NUMBER`), with their titles.
    PullRequests { platform: bool },
}

/// The connection flags typed so far (`--kubeconfig`, `--context`, `-n`), as a connection whose
/// every request ends within the deadline.
pub(super) fn connection_of(words: &[String]) -> Connection {
    let mut connection = Connection {
        kubeconfig: None,
        context: None,
        namespace: None,
        request_timeout: Some(DEADLINE),
        overrides: Default::default(),
    };
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (word.as_str(), None),
        };
        if !matches!(flag, "--kubeconfig" | "--context" | "-n" | "--namespace") {
            continue;
        }
        let Some(value) = inline.or_else(|| words.next().cloned()) else { break };
        match flag {
            "--kubeconfig" => connection.kubeconfig = Some(value.into()),
            "--context" => connection.context = Some(value),
            _ => connection.namespace = Some(value),
        }
    }
    connection
}

/// The candidates of `source` with their descriptions, empty when they cannot be had within the
/// deadline.
pub(super) fn values(source: Source, connection: &Connection) -> Vec<(String, Option<String>)> {
    if source == Source::Contexts {
        return contexts(connection).into_iter().map(|context| (context, None)).collect();
    }
    crate::http::install_crypto_provider();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return Vec::new() };
    runtime
        .block_on(async { tokio::time::timeout(DEADLINE, from_cluster(source, connection)).await })
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The kubeconfig's contexts: `--kubeconfig`'s file, else KUBECONFIG's files merged as kubectl
/// merges them, else ~/.kube/config.
fn contexts(connection: &Connection) -> Vec<String> {
    let config = match &connection.kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path),
        None => kube::config::Kubeconfig::read(),
    };
    let mut names: Vec<String> =
        config.map(|config| config.contexts.into_iter().map(|context| context.name).collect()).unwrap_or_default();
    names.sort();
    names
}

async fn from_cluster(source: Source, connection: &Connection) -> Option<Vec<(String, Option<String>)>> {
    // Quiet: completion prints candidates and nothing else.
    let printer = Printer::new(crate::cli::ColorChoice::Never, 0, 8);
    if let Source::PullRequests { platform } = source {
        // The install record names the forge; its token goes to it alone, as for `pr list`.
        let target = Target { connection: connection.clone(), namespace: connection.namespace.clone() };
        let open = crate::pr::open_numbers(&target, platform, &printer).await.ok()?;
        return Some(open.into_iter().map(|(number, title)| (number.to_string(), Some(title))).collect());
    }
    let cluster = Cluster::connect(connection, &printer).await.ok()?;
    let mut names: Vec<String> = match source {
        Source::Contexts => return None,
        Source::Namespaces => {
            let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
            let listed = namespaces.list_metadata(&ListParams::default()).await.ok()?;
            listed.items.into_iter().filter_map(|namespace| namespace.metadata.name).collect()
        }
        Source::Apps | Source::PlatformApps => {
            let namespace = match &connection.namespace {
                Some(namespace) => namespace.clone(),
                None => crate::cluster::default_flux_namespace().ok()?,
            };
            let ours = format!("{}={}", crate::record::MANAGED_BY_LABEL, crate::record::MANAGED_BY_VALUE);
            let report =
                crate::readers::collect_labelled(&cluster, &Scope::Namespace(namespace), Some(&ours)).await.ok()?;
            let rows = if source == Source::PlatformApps { report.platform } else { report.apps };
            rows.into_iter().map(|row| row.name).collect()
        }
        Source::Tenants => {
            let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
            let listed =
                namespaces.list_metadata(&ListParams::default().labels(crate::flux::TENANT_LABEL)).await.ok()?;
            listed
                .items
                .into_iter()
                .filter_map(|namespace| namespace.metadata.labels?.remove(crate::flux::TENANT_LABEL))
                .collect()
        }
        Source::PullRequests { .. } => return None,
    };
    names.sort();
    names.dedup();
    Some(names.into_iter().map(|name| (name, None)).collect())
}
