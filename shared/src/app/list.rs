//! `app list`: the apps, from the cluster (our labelled objects, with their state) or from the
//! config repo (`--in-repo`, `--cluster-name`: every app and the clusters that list it).

use serde::Serialize;

use super::settings::ListRequest;
use super::spec::Tier;
use crate::change::Target;
use crate::change::context::{clone, context};
use crate::change::layout::{self, ClusterDir};
use crate::cli::OutputFormat;
use crate::contexts::Answer;
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;
use crate::output::table::Table;
use crate::plan;
use crate::readers::{self, AppState, AppStatus, Scope, shorten_revision};

/// One app; `-o json|yaml` prints a list of these (docs/output.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppRow {
    /// The app's name.
    pub name: String,
    /// Namespace of its Flux objects.
    pub namespace: String,
    /// kustomize, helm or oci (`type`, as in `status`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The source URL.
    pub source: Option<String>,
    /// The clusters that run it (from the cluster: the current one).
    pub clusters: Vec<String>,
    /// Ready, failing, progressing or suspended; `None` when not read from a cluster.
    pub state: Option<String>,
    /// `spec.suspend` in the cluster.
    pub suspended: Option<bool>,
    /// What is running.
    pub revision: Option<String>,
}

impl crate::output::Kind for AppRow {
    const KIND: &'static str = "App";
}

/// `app list` (and `platform list`) printed: in each context when `--context` names several.
pub async fn run_list(request: &ListRequest, target: &Target, printer: &Printer) -> Result<ExitCode> {
    let Some(contexts) = &request.contexts else {
        printer.data(&list(request, target, printer).await?)?;
        return Ok(ExitCode::Ok);
    };
    crate::contexts::in_each(contexts, &target.connection, request.format, printer, |connection, format| async move {
        let request = ListRequest { format, contexts: None, ..request.clone() };
        let target = Target { connection, namespace: target.namespace.clone() };
        Ok(Answer { text: list(&request, &target, printer).await?, code: ExitCode::Ok })
    })
    .await
}

/// `app list`: returns the text to print.
pub async fn list(args: &ListRequest, target: &Target, printer: &Printer) -> Result<String> {
    let (format, reads_repo) = (args.format, args.reads_repo);
    let context = context(target, &args.repo.for_platform(args.tier == Tier::Platform), reads_repo, printer).await?;
    let scope = match (args.all_namespaces, &target.namespace) {
        (true, _) => Scope::All,
        (false, Some(namespace)) => Scope::Namespace(namespace.clone()),
        (false, None) => Scope::Namespace(context.namespace.clone()),
    };
    let live = match (&context.cluster, &context.detection) {
        (Some(cluster), Some(detection)) => {
            let report = readers::collect_detected(cluster, &scope, args.labels.as_deref(), detection.clone()).await?;
            if args.tier == Tier::Platform { report.platform } else { report.apps }
        }
        _ => Vec::new(),
    };
    let current = context.record().map(|record| record.cluster_name.clone());
    let rows = if reads_repo {
        let checkout = clone(context.repo()?).await?;
        let clusters = layout::clusters_in(&checkout.files())?;
        if let Some(wanted) = &args.cluster
            && !clusters.iter().any(|cluster| &cluster.name == wanted)
        {
            let known = clusters.iter().map(|cluster| cluster.name.as_str()).collect::<Vec<_>>().join(", ");
            return Err(Error::usage(format!("unknown cluster {wanted:?}"), format!("clusters in the repo: {known}")));
        }
        let listed = Listed { root: args.tier.root(), only: args.cluster.as_deref(), current: current.as_deref() };
        repo_rows(&checkout.files(), &clusters, &context.namespace, &listed, &live)?
    } else {
        live.iter().map(|app| live_row(app, current.as_deref())).collect()
    };
    if rows.is_empty() && matches!(format, OutputFormat::Table | OutputFormat::Wide) {
        printer.detail(&format!("no {}s found", args.tier.noun()));
    }
    render(&rows, format, args.headers)
}

fn live_row(app: &AppStatus, cluster: Option<&str>) -> AppRow {
    AppRow {
        name: app.name.clone(),
        namespace: app.namespace.clone(),
        kind: kind_word(app),
        source: app.source_url.clone(),
        clusters: cluster.map(String::from).into_iter().collect(),
        state: Some(app.state.word().to_string()),
        suspended: Some(app.state == AppState::Suspended),
        revision: app.applied_revision.clone(),
    }
}

/// Which apps [`repo_rows`] reads: those under `root`, listed by `only` (else any) cluster, and
/// the cluster whose live state is joined in.
struct Listed<'a> {
    root: &'a str,
    only: Option<&'a str>,
    current: Option<&'a str>,
}

/// The apps defined under `apps/` (or `platform/`), with the clusters listing each; the current
/// cluster's live state is joined in when it runs the app.
fn repo_rows(
    checkout: &crate::git::Checkout,
    clusters: &[ClusterDir],
    namespace: &str,
    wanted: &Listed<'_>,
    live: &[AppStatus],
) -> Result<Vec<AppRow>> {
    let Listed { root, only, current } = *wanted;
    let mut listed: Vec<(String, Vec<String>)> = Vec::new();
    for cluster in clusters {
        let list_path = cluster.list_file(root);
        let apps = plan::read(checkout, &list_path)?.map(|text| layout::listed_apps(&text)).unwrap_or_default();
        for app in apps {
            match listed.iter_mut().find(|(name, _)| *name == app) {
                Some((_, names)) => names.push(cluster.name.clone()),
                None => listed.push((app, vec![cluster.name.clone()])),
            }
        }
    }
    let prefix = format!("{root}/");
    let mut definitions: Vec<String> = plan::files_under(checkout, root)?
        .iter()
        .filter_map(|path| {
            path.strip_prefix(&prefix).and_then(|rest| rest.split_once('/')).map(|(app, _)| app.to_string())
        })
        .collect();
    definitions.dedup();
    let mut rows = Vec::new();
    for app in definitions {
        let clusters = listed.iter().find(|(name, _)| *name == app).map(|(_, names)| names.clone()).unwrap_or_default();
        if only.is_some_and(|only| !clusters.iter().any(|cluster| cluster == only)) {
            continue;
        }
        let definition = |file: &str| -> Result<Option<serde_json::Value>> {
            let text = plan::read(checkout, &format!("{root}/{app}/{file}"))?;
            Ok(text
                .and_then(|text| crate::yaml::documents_from_str(&text).ok())
                .and_then(|docs| docs.into_iter().next()))
        };
        let (source, release) = (definition("source.yaml")?, definition("release.yaml")?);
        let running =
            live.iter().find(|row| row.name == app && current.is_some_and(|c| clusters.iter().any(|x| x == c)));
        let kind =
            match (release.as_ref().and_then(|r| r["kind"].as_str()), source.as_ref().and_then(|s| s["kind"].as_str()))
            {
                (Some("HelmRelease"), _) => "helm",
                (_, Some("OCIRepository")) => "oci",
                _ => "kustomize",
            };
        rows.push(AppRow {
            name: app.clone(),
            namespace: namespace.to_string(),
            kind: kind.to_string(),
            source: source.as_ref().and_then(|s| s["spec"]["url"].as_str()).map(String::from),
            clusters,
            state: running.map(|row| row.state.word().to_string()),
            suspended: running.map(|row| row.state == AppState::Suspended),
            revision: running.and_then(|row| row.applied_revision.clone()),
        });
    }
    Ok(rows)
}

fn kind_word(app: &AppStatus) -> String {
    match app.kind {
        readers::AppKind::Kustomize => "kustomize",
        readers::AppKind::Helm => "helm",
        readers::AppKind::Oci => "oci",
    }
    .to_string()
}

/// The resource an app is, as `kubectl get` takes it (`kustomization.kustomize.toolkit.fluxcd.io`):
/// a HelmRelease for a helm app, a Kustomization for the others.
fn resource_of(row: &AppRow) -> String {
    let kind = if row.kind == "helm" { &crate::flux::api::HELM_RELEASE } else { &crate::flux::api::KUSTOMIZATION };
    format!("{}.{}", kind.kind.to_lowercase(), kind.group)
}

/// The rows as a table (`NAME KIND SOURCE CLUSTERS READY SUSPENDED REVISION`), names or data.
pub fn render(rows: &[AppRow], format: OutputFormat, headers: bool) -> Result<String> {
    match format {
        OutputFormat::Json | OutputFormat::Yaml => crate::output::render_structured(&crate::output::list(rows), format),
        OutputFormat::Name => Ok(rows.iter().map(|row| format!("{}/{}\n", resource_of(row), row.name)).collect()),
        _ => {
            let wide = format == OutputFormat::Wide;
            let mut table = Table::new(["NAME", "KIND", "SOURCE", "CLUSTERS", "READY", "SUSPENDED", "REVISION"]);
            for row in rows {
                let ready = match row.state.as_deref() {
                    Some("ready") => "True",
                    Some("suspended") | Some("progressing") => "Unknown",
                    Some(_) => "False",
                    None => "-",
                };
                let revision = row.revision.as_deref().unwrap_or("-");
                table.push([
                    row.name.clone(),
                    row.kind.clone(),
                    row.source.clone().unwrap_or_else(|| "-".into()),
                    if row.clusters.is_empty() { "-".to_string() } else { row.clusters.join(",") },
                    ready.to_string(),
                    row.suspended.map_or("-".to_string(), |suspended| suspended.to_string()),
                    if wide { revision.to_string() } else { shorten_revision(revision) },
                ]);
            }
            Ok(table.render(headers))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_kubectl_get_takes() {
        let row = |name: &str, kind: &str| AppRow {
            name: name.to_string(),
            namespace: "flux-system".to_string(),
            kind: kind.to_string(),
            source: None,
            clusters: Vec::new(),
            state: None,
            suspended: None,
            revision: None,
        };
        let rows = [row("web", "kustomize"), row("ingress", "helm"), row("shop", "oci")];
        assert_eq!(
            render(&rows, OutputFormat::Name, true).unwrap(),
            "kustomization.kustomize.toolkit.fluxcd.io/web\nhelmrelease.helm.toolkit.fluxcd.io/ingress\n\
             kustomization.kustomize.toolkit.fluxcd.io/shop\n"
        );
    }
}
