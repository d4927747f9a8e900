//! Whether a Helm chart exists where an app says it is, asked before a platform app is committed
//! (a commit naming a chart that is not there would only fail later, in the cluster): the Helm
//! repository's `index.yaml`, or the OCI repository's tags. `platform add` calls it before
//! `app::add`, so that the UI (which adds apps, not platform apps) does not link the OCI client.

use serde_json::Value;

use super::spec::{AppSpec, Deploy, Source};
use crate::error::{Error, Result};
use crate::oci::reference::OciUrl;
use crate::oci::registry::{Access, Registry};

/// Checks the chart of a Helm app; other apps have nothing to check.
pub async fn check_exists(spec: &AppSpec) -> Result<()> {
    let (Source::HelmRepository { url }, Deploy::Helm { chart, version }) = (&spec.source, &spec.deploy) else {
        return Ok(());
    };
    let versions = if url.starts_with("oci://") {
        oci_versions(url, chart, spec.insecure).await?
    } else {
        index_versions(url, chart).await?
    };
    let Some(versions) = versions else {
        return Err(Error::usage(
            format!("chart {chart} is not in the Helm repository {url}"),
            "check --chart and --url (`helm search repo` lists a repository's charts); nothing was committed",
        ));
    };
    // A range (">=1.0.0 <2.0.0", "1.x") is Flux's to resolve; an exact version must be there.
    if let Some(wanted) = version.as_deref().filter(|wanted| is_exact(wanted))
        && !versions.iter().any(|have| have.trim_start_matches('v') == wanted.trim_start_matches('v'))
    {
        let mut shown: Vec<&str> = versions.iter().map(String::as_str).collect();
        shown.truncate(10);
        return Err(Error::usage(
            format!("chart {chart} has no version {wanted} in {url}"),
            format!("versions there: {}; nothing was committed", shown.join(", ")),
        ));
    }
    Ok(())
}

fn is_exact(version: &str) -> bool {
    version.trim_start_matches('v').chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        && !version.contains(['x', 'X', '*'])
}

/// The versions of `chart` in an https Helm repository's index; `None` when it is not there.
async fn index_versions(url: &str, chart: &str) -> Result<Option<Vec<String>>> {
    let index_url = format!("{}/index.yaml", url.trim_end_matches('/'));
    let unreadable = |why: String| Error::Remote {
        message: format!("cannot read the Helm repository's index {index_url}: {why}"),
        hint: Some("check --url: a Helm repository serves index.yaml at its root".into()),
    };
    let client = crate::http::client().map_err(|error| unreadable(crate::diagnostic::chain_to_line(&error)))?;
    let response =
        client.get(&index_url).send().await.map_err(|error| unreadable(crate::diagnostic::chain_to_line(&error)))?;
    if !response.status().is_success() {
        return Err(unreadable(format!("the server answered {}", response.status())));
    }
    let text = response.text().await.map_err(|error| unreadable(crate::diagnostic::chain_to_line(&error)))?;
    let index: Value = crate::yaml::from_str(&text).map_err(|error| unreadable(format!("not YAML: {error}")))?;
    Ok(index["entries"][chart]
        .as_array()
        .map(|entries| entries.iter().filter_map(|entry| entry["version"].as_str().map(String::from)).collect()))
}

/// The tags of `<url>/<chart>` in an OCI registry; `None` when the repository does not exist.
async fn oci_versions(url: &str, chart: &str, insecure: bool) -> Result<Option<Vec<String>>> {
    let repository = OciUrl::parse(&format!("{}/{chart}", url.trim_end_matches('/')))?;
    let registry = Registry::connect(&repository, &Access { creds: None, insecure }).await?;
    match registry.tags(&repository).await {
        Ok(tags) if tags.is_empty() => Ok(None),
        Ok(tags) => Ok(Some(tags)),
        Err(Error::Remote { message, .. }) if message.ends_with("does not exist") => Ok(None),
        Err(error) => Err(error),
    }
}
