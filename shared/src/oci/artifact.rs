//! A Flux OCI artifact as `flux push artifact` makes it: an OCI image manifest whose config has
//! the media type `application/vnd.cncf.flux.config.v1+json` and whose one layer is the
//! directory's tarball (`application/vnd.cncf.flux.content.v1.tar+gzip`), annotated with when it
//! was made, the source it came from and the source revision.

use std::collections::BTreeMap;
use std::path::Path;

use crate::duration;
use crate::error::{Error, Result};
use crate::oci::tarball;

/// The config media type of every Flux artifact.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.flux.config.v1+json";
/// The layer media type of a Flux artifact holding a directory's tarball.
pub const CONTENT_MEDIA_TYPE: &str = "application/vnd.cncf.flux.content.v1.tar+gzip";
/// The OCI image manifest media type (the registry must be asked for it by name).
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// When the artifact was built, RFC 3339.
pub const CREATED: &str = "org.opencontainers.image.created";
/// The URL of the source the files came from.
pub const SOURCE: &str = "org.opencontainers.image.source";
/// The source revision, `<branch|tag>@sha1:<commit>` by Flux's convention.
pub const REVISION: &str = "org.opencontainers.image.revision";
/// What `--reproducible` writes as the creation time (flux v2.3+), so the same files and flags
/// give the same manifest digest.
pub const REPRODUCIBLE_CREATED: &str = "1970-01-01T00:00:00Z";

/// What the user asked to push, before anything is read.
#[derive(Debug, Clone)]
pub struct BuildRequest<'a> {
    /// The directory whose files become the layer.
    pub path: &'a Path,
    /// Extra gitignore patterns, relative to `path`.
    pub ignore_paths: &'a [String],
    /// `--source`.
    pub source: &'a str,
    /// `--revision`.
    pub revision: &'a str,
    /// `-a key=value` annotations (they may override the three above, as flux allows).
    pub annotations: &'a [(String, String)],
    /// Pin the creation time to the epoch.
    pub reproducible: bool,
}

/// A built artifact, ready to push: its blobs and the manifest's annotations.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The gzipped tarball.
    pub layer: Vec<u8>,
    /// The manifest's annotations.
    pub annotations: BTreeMap<String, String>,
}

/// The config blob flux v2.9 pushes, byte for byte (read back from a registry it pushed to): the
/// empty go-containerregistry image config. It is the same for every artifact, so the config
/// digest matches flux's.
pub const CONFIG_JSON: &str = r#"{"architecture":"","created":"0001-01-01T00:00:00Z","os":"","rootfs":{"type":"layers","diff_ids":null},"config":{}}"#;

/// `sha256:<hex>` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", crate::flux_cli::sha256_hex(bytes))
}

/// Parses `-a key=value` flags.
pub fn parse_annotations(flags: &[String]) -> Result<Vec<(String, String)>> {
    flags
        .iter()
        .map(|flag| match flag.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
            _ => Err(Error::usage(
                format!("annotation {flag:?} is not KEY=VALUE"),
                "write it as -a org.opencontainers.image.description='my manifests'",
            )),
        })
        .collect()
}

impl Artifact {
    /// Builds the artifact for `request`: reads the directory, nothing else.
    pub fn build(request: &BuildRequest<'_>) -> Result<Artifact> {
        let layer = tarball::tar_gz(request.path, request.ignore_paths)?;
        let created = if request.reproducible {
            REPRODUCIBLE_CREATED.to_string()
        } else {
            duration::format_timestamp(i64::try_from(duration::now()).unwrap_or_default())
        };
        let mut annotations = BTreeMap::from([
            (CREATED.to_string(), created),
            (SOURCE.to_string(), request.source.to_string()),
            (REVISION.to_string(), request.revision.to_string()),
        ]);
        annotations.extend(request.annotations.iter().cloned());
        Ok(Artifact { layer, annotations })
    }

    /// The layer's digest.
    pub fn layer_digest(&self) -> String {
        digest_of(&self.layer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_builds_are_identical_and_carry_the_epoch() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), "kind: ConfigMap\n").unwrap();
        let annotations = parse_annotations(&["team=platform".to_string()]).unwrap();
        let request = BuildRequest {
            path: dir.path(),
            ignore_paths: &[],
            source: "https://github.com/org/repo",
            revision: "main@sha1:abc",
            annotations: &annotations,
            reproducible: true,
        };
        let (one, two) = (Artifact::build(&request).unwrap(), Artifact::build(&request).unwrap());
        assert_eq!(one.layer_digest(), two.layer_digest());
        assert_eq!(one.annotations[CREATED], REPRODUCIBLE_CREATED);
        assert_eq!(one.annotations["team"], "platform");
    }

    #[test]
    fn annotations_must_be_key_value() {
        assert!(parse_annotations(&["novalue".to_string()]).is_err());
        assert!(parse_annotations(&["=v".to_string()]).is_err());
        assert_eq!(parse_annotations(&["k=a=b".to_string()]).unwrap(), [("k".to_string(), "a=b".to_string())]);
    }
}
