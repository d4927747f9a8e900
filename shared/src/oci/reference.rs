//! `oci://REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]`, the artifact URLs of Flux's OCIRepository
//! and `flux push artifact`, checked before anything is read or sent.

use std::fmt;

use crate::error::{Error, Result};

/// A parsed `oci://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciUrl {
    /// `host[:port]`.
    pub registry: String,
    /// The repository path inside the registry, e.g. `manifests/pipeline-controller`.
    pub repository: String,
    /// The tag, when the URL names one.
    pub tag: Option<String>,
    /// The manifest digest (`sha256:…`), when the URL names one.
    pub digest: Option<String>,
}

const TAG_RULE: &str = "a tag is up to 128 letters, digits, '.', '_' and '-', not starting with '.' or '-'";

/// Whether `tag` is a valid OCI tag (`[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`).
fn is_tag(tag: &str) -> bool {
    tag.len() <= 128
        && tag.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && tag.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// Checks a tag given on its own (`--tag`).
pub fn validate_tag(tag: &str) -> Result<()> {
    if is_tag(tag) {
        Ok(())
    } else {
        Err(Error::usage(format!("--tag {tag:?} is not an OCI tag: {TAG_RULE}"), "e.g. --tag v1.2.0"))
    }
}

const HINT: &str = "write it as oci://REGISTRY/REPOSITORY:TAG, e.g. oci://ghcr.io/org/manifests/app:v1.0.0";

impl OciUrl {
    /// Parses `text`, which may name a tag or a digest or neither.
    pub fn parse(text: &str) -> Result<OciUrl> {
        let bad = |why: &str| Error::usage(format!("{text:?} is not an oci:// URL: {why}"), HINT);
        let rest = text.strip_prefix("oci://").ok_or_else(|| bad("it must start with oci://"))?;
        let (registry, path) = rest.split_once('/').ok_or_else(|| bad("it names no repository"))?;
        if registry.is_empty() || !registry.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c)) {
            return Err(bad("the registry must be a host name with an optional port"));
        }
        let (path, digest) = match path.split_once('@') {
            Some((path, digest)) => (path, Some(digest.to_string())),
            None => (path, None),
        };
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag.to_string())),
            _ => (path, None),
        };
        let component_ok = |c: &str| {
            !c.is_empty()
                && c.chars().all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch))
                && c.starts_with(|ch: char| ch.is_ascii_alphanumeric())
        };
        if !repository.split('/').all(component_ok) {
            return Err(bad("the repository must be lowercase letters, digits, '.', '_', '-' and '/'"));
        }
        if let Some(tag) = &tag
            && !is_tag(tag)
        {
            return Err(bad(TAG_RULE));
        }
        if let Some(digest) = &digest {
            let hex = digest.strip_prefix("sha256:").unwrap_or_default();
            if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)) {
                return Err(bad("a digest is sha256: and 64 lowercase hex digits"));
            }
        }
        Ok(OciUrl { registry: registry.to_string(), repository: repository.to_string(), tag, digest })
    }

    /// Parses a URL that must name a tag (push, tag): a push without one would be untraceable.
    pub fn parse_tagged(text: &str) -> Result<OciUrl> {
        let url = OciUrl::parse(text)?;
        if url.tag.is_none() || url.digest.is_some() {
            return Err(Error::usage(
                format!("{text} names no tag: an artifact is pushed under a tag"),
                "add one, e.g. oci://REGISTRY/REPOSITORY:v1.0.0 (flux uses `latest` when told to, we make it explicit)",
            ));
        }
        Ok(url)
    }

    /// Parses a URL that names a tag or a digest (pull, diff).
    pub fn parse_pinned(text: &str) -> Result<OciUrl> {
        let url = OciUrl::parse(text)?;
        if url.tag.is_none() && url.digest.is_none() {
            return Err(Error::usage(
                format!("{text} names neither a tag nor a digest"),
                "add :TAG or @sha256:DIGEST, e.g. oci://REGISTRY/REPOSITORY:v1.0.0; `kubectl gitops artifact list` shows the tags",
            ));
        }
        Ok(url)
    }

    /// The same repository at another tag.
    pub fn with_tag(&self, tag: &str) -> OciUrl {
        OciUrl { tag: Some(tag.to_string()), digest: None, ..self.clone() }
    }

    /// The same repository at a digest.
    pub fn with_digest(&self, digest: &str) -> OciUrl {
        OciUrl { tag: None, digest: Some(digest.to_string()), ..self.clone() }
    }

    /// `oci://registry/repository` without tag or digest.
    pub fn repository_url(&self) -> String {
        format!("oci://{}/{}", self.registry, self.repository)
    }

    /// The host without its port.
    pub fn host(&self) -> &str {
        if let Some(rest) = self.registry.strip_prefix('[') {
            return rest.split(']').next().unwrap_or_default();
        }
        self.registry.split(':').next().unwrap_or_default()
    }

    /// Whether the registry is on this machine, where plain HTTP is allowed without --insecure
    /// (as docker and flux treat localhost).
    pub fn is_loopback(&self) -> bool {
        let host = self.host();
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for OciUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.repository_url())?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_digests_and_ports() {
        let url = OciUrl::parse("oci://127.0.0.1:5000/manifests/app:v0.0.1").unwrap();
        assert_eq!(
            (url.registry.as_str(), url.repository.as_str(), url.tag.as_deref()),
            ("127.0.0.1:5000", "manifests/app", Some("v0.0.1"))
        );
        assert!(url.is_loopback());
        assert_eq!(url.to_string(), "oci://127.0.0.1:5000/manifests/app:v0.0.1");
        let digest = format!("sha256:{}", "a".repeat(64));
        let url = OciUrl::parse(&format!("oci://ghcr.io/org/app@{digest}")).unwrap();
        assert_eq!((url.tag, url.digest.as_deref()), (None, Some(digest.as_str())));
        let url = OciUrl::parse("oci://localhost:5000/app").unwrap();
        assert_eq!((url.tag.as_deref(), url.host()), (None, "localhost"));
        assert!(!OciUrl::parse("oci://ghcr.io/app:v1").unwrap().is_loopback());
    }

    #[test]
    fn refuses_what_is_not_an_artifact_url() {
        for text in [
            "ghcr.io/app:v1",
            "oci://ghcr.io",
            "oci://ghcr.io/App:v1",
            "oci://ghcr.io/app:-v1",
            "oci://ghcr.io/app@sha256:abc",
            "oci:///app:v1",
        ] {
            let error = OciUrl::parse(text).unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{text}: {error}");
        }
        let error = OciUrl::parse_tagged("oci://ghcr.io/app").unwrap_err();
        assert!(error.to_string().contains("names no tag"), "{error}");
        assert!(OciUrl::parse_pinned("oci://ghcr.io/app").is_err());
    }
}
