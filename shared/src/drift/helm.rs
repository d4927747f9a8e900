//! A HelmRelease's objects as its last Helm release applied them: the manifest Helm keeps in the
//! release's storage Secret (`sh.helm.release.v1.NAME.vVERSION`, named by the HelmRelease's
//! `status.history`), compared with the cluster as helm-controller's drift detection compares
//! them. The Secret is input like any object: it is read under a size limit, and a manifest that
//! is not YAML is an answer, not an error.

use std::io::Read;

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::Value;

use crate::apply::Applier;
use crate::error::Result;

/// The field manager helm-controller applies and corrects drift with.
pub(super) const FIELD_MANAGER: &str = "helm-controller";

/// The most a release's manifest may inflate to: a release is a few hundred KiB at most.
const MAX_RELEASE_BYTES: u64 = 32 << 20;

/// Whether a built document is a Flux HelmRelease.
pub(super) fn is_helm_release(document: &Value) -> bool {
    document["kind"] == "HelmRelease"
        && document["apiVersion"].as_str().is_some_and(|version| version.starts_with("helm.toolkit.fluxcd.io/"))
}

/// The objects of `release`'s last Helm release, each with its namespace, or why they cannot be
/// read (not installed yet, the Secret not readable or not a Helm release).
pub(super) async fn release_objects(
    applier: &mut Applier<'_>,
    release: &Value,
) -> Result<std::result::Result<Vec<Value>, String>> {
    let Some(live) = applier.get(release).await? else {
        return Ok(Err("the HelmRelease is not in the cluster".into()));
    };
    let last = &live["status"]["history"][0];
    let (Some(name), Some(namespace), Some(version)) =
        (last["name"].as_str(), last["namespace"].as_str(), last["version"].as_i64())
    else {
        return Ok(Err("Helm has not installed it yet (no status.history)".into()));
    };
    let secret_name = format!("sh.helm.release.v1.{name}.v{version}");
    // Helm keeps the release where the HelmRelease says (its own namespace by default), not
    // necessarily where the release installs.
    let storage = live["status"]["storageNamespace"]
        .as_str()
        .or_else(|| live["metadata"]["namespace"].as_str())
        .unwrap_or(namespace)
        .to_string();
    let secrets: Api<Secret> = Api::namespaced(applier.cluster().client.clone(), &storage);
    let secret = match secrets.get_opt(&secret_name).await {
        Ok(Some(secret)) => secret,
        Ok(None) => return Ok(Err(format!("its release Secret {storage}/{secret_name} is gone"))),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            return Ok(Err(format!("this identity may not read its release Secret {storage}/{secret_name}")));
        }
        Err(error) => return Err(applier.cluster().error(error)),
    };
    let stored = secret.data.as_ref().and_then(|data| data.get("release")).map(|bytes| bytes.0.as_slice());
    let manifest = match stored.map(manifest_of) {
        Some(Ok(manifest)) => manifest,
        Some(Err(why)) => return Ok(Err(format!("{storage}/{secret_name}: {why}"))),
        None => return Ok(Err(format!("{storage}/{secret_name} holds no release"))),
    };
    let mut documents = match crate::yaml::documents_from_str(&manifest) {
        Ok(documents) => documents,
        Err(why) => return Ok(Err(format!("the manifest of {storage}/{secret_name} is not YAML: {why}"))),
    };
    // Helm puts a namespaced object without a namespace into the release's, and marks each
    // object as the release's when it applies it (its ownership metadata, not in the manifest).
    for document in &mut documents {
        if document["metadata"]["namespace"].is_null() && applier.is_namespaced(document).await? {
            document["metadata"]["namespace"] = Value::from(namespace);
        }
        document["metadata"]["labels"]["app.kubernetes.io/managed-by"] = Value::from("Helm");
        document["metadata"]["annotations"]["meta.helm.sh/release-name"] = Value::from(name);
        document["metadata"]["annotations"]["meta.helm.sh/release-namespace"] = Value::from(namespace);
    }
    Ok(Ok(documents))
}

/// The manifest of a stored release: base64 of (gzip of) the release as JSON.
fn manifest_of(stored: &[u8]) -> std::result::Result<String, String> {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(stored.trim_ascii())
        .map_err(|error| format!("not base64: {error}"))?;
    let mut json = Vec::new();
    let reader: Box<dyn Read> = if decoded.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(decoded.as_slice()))
    } else {
        Box::new(decoded.as_slice())
    };
    reader.take(MAX_RELEASE_BYTES + 1).read_to_end(&mut json).map_err(|error| format!("not gzip: {error}"))?;
    if json.len() as u64 > MAX_RELEASE_BYTES {
        return Err(format!("the release is larger than {} MiB", MAX_RELEASE_BYTES >> 20));
    }
    let release: Value = serde_json::from_slice(&json).map_err(|error| format!("not a Helm release: {error}"))?;
    release["manifest"].as_str().map(String::from).ok_or_else(|| "the release has no manifest".to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use std::io::Write;

    use super::*;

    fn stored(release: &str, gzip: bool) -> Vec<u8> {
        let bytes = if gzip {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(release.as_bytes()).unwrap();
            encoder.finish().unwrap()
        } else {
            release.as_bytes().to_vec()
        };
        base64::engine::general_purpose::STANDARD.encode(bytes).into_bytes()
    }

    #[test]
    fn the_manifest_is_read_from_a_stored_release_gzipped_or_not() {
        let release = r#"{"name": "hello", "version": 2, "manifest": "---\nkind: ConfigMap\n"}"#;
        assert_eq!(manifest_of(&stored(release, true)).unwrap(), "---\nkind: ConfigMap\n");
        assert_eq!(manifest_of(&stored(release, false)).unwrap(), "---\nkind: ConfigMap\n");
        assert!(manifest_of(b"%%%").unwrap_err().starts_with("not base64"));
        assert!(manifest_of(&stored("{}", true)).unwrap_err().contains("no manifest"));
        assert!(manifest_of(&stored("[", true)).unwrap_err().starts_with("not a Helm release"));
    }

    #[test]
    fn a_release_that_inflates_past_the_limit_is_refused() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..=(MAX_RELEASE_BYTES >> 20) {
            encoder.write_all(&zeros).unwrap();
        }
        let bomb = base64::engine::general_purpose::STANDARD.encode(encoder.finish().unwrap()).into_bytes();
        assert!(manifest_of(&bomb).unwrap_err().contains("larger than 32 MiB"));
    }
}
