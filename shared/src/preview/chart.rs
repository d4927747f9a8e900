//! A chart from a HelmRepository, at the highest version the HelmRelease's constraint allows, as
//! source-controller picks it: of the HTTP kind from its `index.yaml` (the archive checked
//! against the digest the index gives), of the OCI kind from the registry's tags (the layer
//! checked against the manifest's digest). Read with no credentials of the cluster's (a
//! repository that needs them is said, not guessed), each file size-capped and within a
//! deadline.

use std::path::{Path, PathBuf};

use serde_json::Value;
use url::Url;

use crate::http::{BodyError, Carries};

/// The largest `index.yaml` read, as source-controller's default (`--helm-index-max-size`).
const MAX_INDEX_BYTES: u64 = 50 << 20;
/// The largest chart archive read, as source-controller's default (`--helm-chart-max-size`).
const MAX_CHART_BYTES: u64 = 10 << 20;

/// A chart archive on disk and the version it is.
#[derive(Debug)]
pub(super) struct Chart {
    pub path: PathBuf,
    pub version: String,
}

/// The chart `name` whose version `constraint` allows, highest first, from `repository` (a
/// HelmRepository object), saved into `dir`; the reason in words when it cannot be.
pub(super) async fn fetch(repository: &Value, name: &str, constraint: &str, dir: &Path) -> Result<Chart, String> {
    let spec = &repository["spec"];
    let label = format!(
        "HelmRepository {}/{}",
        repository["metadata"]["namespace"].as_str().unwrap_or_default(),
        repository["metadata"]["name"].as_str().unwrap_or_default()
    );
    if !spec["secretRef"].is_null() || !spec["certSecretRef"].is_null() {
        return Err(format!("{label} needs credentials, which diff does not read from the cluster"));
    }
    if spec["type"] == "oci" {
        let fetched = tokio::time::timeout(crate::timeouts::BUILD, fetch_oci(spec, name, constraint, dir)).await;
        return fetched.unwrap_or_else(|_| {
            Err(format!(
                "{label}: the registry did not answer within {}",
                crate::duration::format(crate::timeouts::BUILD)
            ))
        });
    }
    let base = spec["url"].as_str().unwrap_or_default();
    let base = Url::parse(&format!("{}/", base.trim_end_matches('/')))
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .ok_or_else(|| format!("{label} has no http(s) URL: {base:?}"))?;
    let client = crate::http::builder(crate::timeouts::PROVIDER_REQUEST, Carries::Nothing)
        .build()
        .map_err(|error| format!("cannot build an HTTP client: {error}"))?;
    let index_url = base.join("index.yaml").map_err(|error| error.to_string())?;
    let index = get(&client, &index_url, MAX_INDEX_BYTES).await?;
    let index: Value = crate::yaml::from_str(&String::from_utf8_lossy(&index))
        .map_err(|error| format!("{index_url} is not a chart index: {error}"))?;
    let entries = index["entries"][name].as_array().cloned().unwrap_or_default();
    let wanted = requirement(constraint)?;
    let best = entries
        .iter()
        .filter_map(|entry| {
            let text = entry["version"].as_str()?;
            let version = semver::Version::parse(text.trim_start_matches('v')).ok()?;
            wanted.iter().any(|req| req.matches(&version)).then_some((version, entry))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .ok_or_else(|| format!("{label} has no chart {name} at a version {constraint:?} allows"))?;
    let (version, entry) = best;
    let location = entry["urls"][0].as_str().unwrap_or_default();
    let url = base.join(location).map_err(|error| format!("the index names the chart at {location:?}: {error}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("the index names the chart at {url}, which is not http(s)"));
    }
    let archive = get(&client, &url, MAX_CHART_BYTES).await?;
    if let Some(digest) = entry["digest"].as_str().filter(|digest| !digest.is_empty()) {
        let actual = crate::flux_cli::sha256_hex(&archive);
        if actual != digest.trim_start_matches("sha256:") {
            return Err(format!("{url} does not match the digest its index gives ({digest}): sha256 {actual}"));
        }
    }
    let path = dir.join(format!("{name}-{version}.tgz"));
    std::fs::write(&path, archive).map_err(|error| format!("writing {}: {error}", path.display()))?;
    Ok(Chart { path, version: version.to_string() })
}

/// The media type of a Helm chart's layer in an OCI registry.
const HELM_CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// The largest chart manifest read: Helm's are under 1 KiB.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// Which of an OCI repository's manifests holds the chart.
enum Select<'a> {
    /// The highest tag whose version the constraint allows (Helm writes a version's `+` as `_`).
    Constraint(&'a str),
    Tag(&'a str),
    Digest(&'a str),
}

/// The chart `name` from the OCI registry `spec.url` names (a HelmRepository of `type: oci`).
async fn fetch_oci(spec: &Value, name: &str, constraint: &str, dir: &Path) -> Result<Chart, String> {
    let base = spec["url"].as_str().unwrap_or_default().trim_end_matches('/');
    let insecure = spec["insecure"].as_bool().unwrap_or(false);
    oci_chart(&format!("{base}/{name}"), insecure, Select::Constraint(constraint), dir).await
}

/// The chart an OCIRepository (a HelmRelease's `chartRef`) names: its URL at `ref.digest`, else
/// the highest tag `ref.semver` allows, else `ref.tag` (`latest` without a ref), as
/// source-controller resolves it, within the same deadline as a chart from a HelmRepository.
pub(super) async fn fetch_oci_repository(repository: &Value, dir: &Path) -> Result<Chart, String> {
    let spec = &repository["spec"];
    if !spec["secretRef"].is_null() || !spec["certSecretRef"].is_null() {
        return Err("its OCIRepository needs credentials, which diff does not read from the cluster".into());
    }
    let reference = &spec["ref"];
    let text = |key: &str| reference[key].as_str().filter(|value| !value.is_empty());
    let select = match (text("digest"), text("semver"), text("tag")) {
        (Some(digest), ..) => Select::Digest(digest),
        (_, Some(semver), _) => Select::Constraint(semver),
        (_, _, Some(tag)) => Select::Tag(tag),
        _ => Select::Tag("latest"),
    };
    let url = spec["url"].as_str().unwrap_or_default();
    let fetched = oci_chart(url, spec["insecure"].as_bool().unwrap_or(false), select, dir);
    tokio::time::timeout(crate::timeouts::BUILD, fetched).await.unwrap_or_else(|_| {
        Err(format!("{url}: the registry did not answer within {}", crate::duration::format(crate::timeouts::BUILD)))
    })
}

/// The chart at `url` (`oci://REGISTRY/REPOSITORY`), at the manifest `select` picks: its chart
/// layer, checked against the manifest's digest, saved into `dir`.
async fn oci_chart(url: &str, insecure: bool, select: Select<'_>, dir: &Path) -> Result<Chart, String> {
    use crate::oci::reference::OciUrl;
    use crate::oci::registry::{Access, Registry};
    let url = OciUrl::parse(url).map_err(|error| error.to_string())?;
    // Plain HTTP to a registry on this machine, or where the source says `insecure` (and then
    // without the docker config's credentials).
    let registry =
        Registry::connect(&url, &Access { creds: None, insecure }).await.map_err(|error| error.to_string())?;
    let (tagged, version) = match select {
        Select::Digest(digest) => (url.with_digest(digest), digest.get(..19).unwrap_or(digest).to_string()),
        Select::Tag(tag) => (url.with_tag(tag), tag.to_string()),
        Select::Constraint(constraint) => {
            let wanted = requirement(constraint)?;
            let (version, tag) = registry
                .tags(&url)
                .await
                .map_err(|error| error.to_string())?
                .into_iter()
                .filter_map(|tag| {
                    let version = semver::Version::parse(&tag.replace('_', "+")).ok()?;
                    wanted.iter().any(|req| req.matches(&version)).then_some((version, tag))
                })
                .max_by(|a, b| a.0.cmp(&b.0))
                .ok_or_else(|| format!("{url} has no tag of a version {constraint:?} allows"))?;
            (url.with_tag(&tag), version.to_string())
        }
    };
    let manifest = registry.manifest(&tagged, MAX_MANIFEST_BYTES).await.map_err(|error| error.to_string())?;
    let layer = manifest
        .manifest
        .layers
        .iter()
        .find(|layer| layer.media_type == HELM_CHART_LAYER)
        .ok_or_else(|| format!("{tagged} holds no Helm chart (no layer of type {HELM_CHART_LAYER})"))?;
    if u64::try_from(layer.size).unwrap_or(u64::MAX) > MAX_CHART_BYTES {
        return Err(format!("{tagged}: the chart is larger than {} MiB", MAX_CHART_BYTES >> 20));
    }
    let path = dir.join("chart.tgz");
    let file = std::fs::File::create(&path).map_err(|error| format!("writing {}: {error}", path.display()))?;
    registry.blob_to(&tagged, layer, MAX_CHART_BYTES, file).await.map_err(|error| error.to_string())?;
    Ok(Chart { path, version })
}

/// The chart as source-controller packages it for a HelmRelease with `valuesFiles`: its values
/// replaced by those files, each relative to the chart's root, merged in order (maps key by key,
/// the later winning; `values.yaml` only when listed); a missing file is an error unless
/// `ignoreMissingValuesFiles`. The archive is unpacked into `scratch` (size-capped) for it; a
/// chart without `valuesFiles` is used as it is.
pub(super) fn with_values_files(chart_spec: &Value, chart: PathBuf, scratch: &Path) -> Result<PathBuf, String> {
    let files: Vec<&str> =
        chart_spec["valuesFiles"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if files.is_empty() {
        return Ok(chart);
    }
    if chart.is_dir() {
        return Err("its chart, in a git source, has valuesFiles, which diff does not read from a source yet".into());
    }
    let unpacked = scratch.join("chart");
    let archive = std::fs::File::open(&chart).map_err(|error| format!("reading {}: {error}", chart.display()))?;
    let limits = crate::oci::limits::Limits {
        unpacked: MAX_UNPACKED_BYTES,
        entries: MAX_ENTRIES,
        ..crate::oci::limits::Limits::NONE
    };
    crate::oci::extract::unpack(flate2::read::GzDecoder::new(archive), &unpacked, &limits)
        .map_err(|error| format!("the chart archive: {error}"))?;
    // A chart archive holds one directory, the chart's.
    let root = std::fs::read_dir(&unpacked)
        .map_err(|error| error.to_string())?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.join("Chart.yaml").is_file())
        .ok_or("the chart archive holds no Chart.yaml")?;
    let ignore_missing = chart_spec["ignoreMissingValuesFiles"].as_bool().unwrap_or(false);
    let mut merged = serde_json::Map::new();
    for file in files {
        if file.split('/').any(|part| part == "..") || file.starts_with('/') {
            return Err(format!("valuesFiles names {file:?}, which is not inside the chart"));
        }
        let text = match std::fs::read_to_string(root.join(file.trim_start_matches("./"))) {
            Ok(text) => text,
            Err(_) if ignore_missing => continue,
            Err(_) => return Err(format!("valuesFiles names {file}, which the chart does not hold")),
        };
        let values: Value =
            crate::yaml::from_str(&text).map_err(|error| format!("valuesFiles {file} is not YAML: {error}"))?;
        match values {
            Value::Object(values) => merged = super::values::merge_maps(&merged, &values),
            Value::Null => {}
            _ => return Err(format!("valuesFiles {file} is not a map of values")),
        }
    }
    std::fs::write(root.join("values.yaml"), Value::Object(merged).to_string())
        .map_err(|error| format!("writing the chart's values: {error}"))?;
    Ok(root)
}

/// The most a chart unpacks to, and the most entries it holds, when its values are replaced.
const MAX_UNPACKED_BYTES: u64 = 100 << 20;
const MAX_ENTRIES: u64 = 10_000;

async fn get(client: &reqwest::Client, url: &Url, limit: u64) -> Result<Vec<u8>, String> {
    // No path or query in messages: a repository URL may carry anything.
    let shown = format!("{}{}", url.origin().ascii_serialization(), url.path());
    let failed = |reason: String| format!("cannot read {shown}: {reason}");
    let mut response =
        client.get(url.clone()).send().await.map_err(|error| failed(crate::diagnostic::chain_to_line(&error)))?;
    if !response.status().is_success() {
        return Err(failed(format!("the server answered {}", response.status())));
    }
    crate::http::body_within(&mut response, limit, |_| {}).await.map_err(|error| match error {
        BodyError::TooLarge => failed(format!("it is larger than {} MiB", limit >> 20)),
        BodyError::Transport(error) => failed(crate::diagnostic::chain_to_line(&error)),
    })
}

/// A Helm version constraint (Masterminds semver: `1.2.3` exactly, `1.x`, `~1.2`, `^1`,
/// `>=1.0 <2.0`, alternatives joined by `||`, empty or `*` for the latest) as requirements, any
/// of which a version must meet.
fn requirement(constraint: &str) -> Result<Vec<semver::VersionReq>, String> {
    let constraint = constraint.trim();
    let constraint = if constraint.is_empty() { "*" } else { constraint };
    constraint
        .split("||")
        .map(|alternative| {
            let mut comparators: Vec<String> = Vec::new();
            let mut pending = String::new();
            for token in alternative.split(|c: char| c.is_whitespace() || c == ',').filter(|token| !token.is_empty()) {
                if token == "-" {
                    return Err(format!("the version range {constraint:?} (a hyphen range) is not read by diff"));
                }
                pending.push_str(token);
                if token.chars().all(|c| "<>=~^!".contains(c)) {
                    continue;
                }
                let operator_len = pending.find(|c: char| !"<>=~^!".contains(c)).unwrap_or(pending.len());
                let (operator, version) = pending.split_at(operator_len);
                let version = version.trim_start_matches('v');
                let wildcard = version.contains(['x', 'X', '*']);
                // A bare version means that version exactly, where Cargo's reading is a caret.
                let operator = if operator.is_empty() && !wildcard { "=" } else { operator };
                comparators.push(format!("{operator}{version}"));
                pending.clear();
            }
            semver::VersionReq::parse(&comparators.join(", "))
                .map_err(|error| format!("the chart version {constraint:?} is not a version constraint: {error}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(constraint: &str, version: &str) -> bool {
        let version = semver::Version::parse(version).unwrap();
        requirement(constraint).unwrap().iter().any(|req| req.matches(&version))
    }

    #[test]
    fn constraints_read_as_helm_reads_them() {
        assert!(allows("0.1.0", "0.1.0") && !allows("0.1.0", "0.1.1"), "a bare version is exact");
        assert!(allows("v0.1.0", "0.1.0"));
        assert!(allows("1.x", "1.9.0") && !allows("1.x", "2.0.0"));
        assert!(allows("", "3.1.4") && allows("*", "3.1.4") && !allows("*", "3.1.4-rc.1"));
        assert!(allows(">=1.0.0 <2.0.0", "1.5.0") && !allows(">= 1.0.0, < 2.0.0", "2.0.0"));
        assert!(allows("~1.2", "1.2.9") && !allows("~1.2", "1.3.0"));
        assert!(allows("^1.2", "1.9.0") && allows("1.0.0 || 2.x", "2.1.0") && !allows("1.0.0 || 2.x", "1.1.0"));
        assert!(requirement("1.0 - 2.0").unwrap_err().contains("hyphen range"));
        assert!(requirement("latest").unwrap_err().contains("not a version constraint"));
    }
}
