//! A `--secret-ref` that another source already reads another server with. Flux hands a source
//! the credentials of the Secret it names, whatever server the source's URL is on, so a new
//! source (an app's, a team's) naming a Secret that serves another server would send that
//! server's credentials to its own. The check lists the sources of the namespace the new one is
//! written to, as the cluster holds them.

use kube::api::{Api, DynamicObject};

use crate::change::Context;
use crate::error::{Error, Result};
use crate::flux::api::{self, FluxKind};
use crate::repo_access::{self, parse_url};

/// The source a change writes: its kind, name and namespace, its URL and the Secret it reads it
/// with.
pub struct NewSource<'a> {
    /// GitRepository, OCIRepository or HelmRepository.
    pub kind: &'static FluxKind,
    /// Its name: the same source, which the change replaces, does not count.
    pub name: &'a str,
    /// The namespace it is written to.
    pub namespace: &'a str,
    /// The URL it reads.
    pub url: &'a str,
    /// `--secret-ref`.
    pub secret: &'a str,
    /// The flag that named the URL, for the hint (`--url`, `--repo`).
    pub url_flag: &'a str,
}

/// Refuses `source` when a GitRepository, OCIRepository, HelmRepository or Bucket of its
/// namespace reads another server with its Secret. Without a cluster there is nothing to read.
pub async fn refuse_shared_secret(source: &NewSource<'_>, context: &Context) -> Result<()> {
    let Some(cluster) = &context.cluster else { return Ok(()) };
    let server = server_of(source.url);
    for kind in [&api::GIT_REPOSITORY, &api::OCI_REPOSITORY, &api::HELM_REPOSITORY, &api::BUCKET] {
        let Some(version) = context.versions.lookup(kind) else { continue };
        let objects: Api<DynamicObject> =
            Api::namespaced_with(cluster.client.clone(), source.namespace, &kind.at(version));
        let listed = objects.list(&Default::default()).await.map_err(|error| cluster.error(error))?;
        for other in listed {
            let name = other.metadata.name.as_deref().unwrap_or_default();
            let spec = &other.data["spec"];
            if spec["secretRef"]["name"].as_str() != Some(source.secret) || (kind == source.kind && name == source.name)
            {
                continue;
            }
            let theirs = match kind.kind {
                "Bucket" => bucket_server(spec),
                _ => spec["url"].as_str().and_then(server_of),
            };
            if theirs.is_some() && theirs == server {
                continue;
            }
            return Err(refusal(source, &format!("{} {}/{name}", kind.kind, source.namespace), &theirs, &server));
        }
    }
    Ok(())
}

fn refusal(source: &NewSource<'_>, reader: &str, theirs: &Option<String>, server: &Option<String>) -> Error {
    let shown = |server: &Option<String>| server.clone().unwrap_or_else(|| "an unreadable address".into());
    let secret = source.secret;
    Error::usage(
        format!(
            "--secret-ref {secret} is the Secret {reader} reads {} with, and {} is on another server ({}): Flux \
             would send that source's credentials there",
            shown(theirs),
            repo_access::redact_userinfo(source.url),
            shown(server)
        ),
        format!(
            "create a Secret of its own for {} in namespace {}, and pass its name to --secret-ref (or give {} a URL on \
             {})",
            shown(server),
            source.namespace,
            source.url_flag,
            shown(theirs)
        ),
    )
}

/// The server a source's URL reaches, as `host:port` (the scheme's port when none is given):
/// what credentials are for, whether Flux speaks git, HTTPS or OCI to it.
pub(crate) fn server_of(url: &str) -> Option<String> {
    // scp-like git URLs (`git@host:path`) become `ssh://` first.
    let canonical = parse_url(url).map(|parsed| parsed.canonical).unwrap_or_else(|_| url.to_string());
    let parsed = url::Url::parse(&canonical).ok()?;
    let port = parsed.port_or_known_default().or(match parsed.scheme() {
        "ssh" => Some(22),
        "oci" => Some(443),
        _ => None,
    })?;
    Some(format!("{}:{port}", parsed.host_str()?.to_ascii_lowercase()))
}

/// A Bucket's server: its endpoint, over http when it is `insecure`.
fn bucket_server(spec: &serde_json::Value) -> Option<String> {
    let scheme = if spec["insecure"].as_bool() == Some(true) { "http" } else { "https" };
    server_of(&format!("{scheme}://{}/", spec["endpoint"].as_str()?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    #[test]
    fn a_source_s_server_is_its_host_and_port_whatever_flux_speaks_to_it() {
        let server = |url: &str| server_of(url);
        assert_eq!(server("git@GitHub.com:acme/web.git").as_deref(), Some("github.com:22"));
        assert_eq!(server("ssh://git@git.example.com:2222/acme/web.git").as_deref(), Some("git.example.com:2222"));
        assert_eq!(server("https://ghcr.io/acme").as_deref(), Some("ghcr.io:443"));
        assert_eq!(server("oci://ghcr.io/acme/web"), server("https://ghcr.io/charts"));
        assert_ne!(server("oci://ghcr.io/acme/web"), server("oci://evil.example/acme/web"));
        assert_eq!(server("not a url"), None);
        let bucket = |spec: serde_json::Value| bucket_server(&spec);
        assert_eq!(
            bucket(serde_json::json!({"endpoint": "minio.example:9000"})).as_deref(),
            Some("minio.example:9000")
        );
        assert_eq!(
            bucket(serde_json::json!({"endpoint": "s3.example", "insecure": true})).as_deref(),
            Some("s3.example:80")
        );
    }
}
