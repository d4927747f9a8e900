//! Talking to an OCI registry through `oci-client`: chunked blob uploads, the OCI manifest Accept
//! header, token auth. Plain HTTP only for a registry on this machine or with `--insecure`.
//! Every failure becomes an error naming the registry and what to do; credentials never appear.
//!
//! What a registry sends is read under a limit ([`crate::oci::limits`]): a manifest up to its
//! size limit (oci-client reads a manifest whole, so that one request is ours, with the token
//! oci-client obtained), a layer streamed to a file, no larger than the manifest declares.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use url::Url;

use crate::error::{Error, Result};
use crate::http::{Credential, Gate, Origin};
use crate::oci::artifact::{self, Artifact};
use crate::oci::challenge;
use crate::oci::credentials::Credentials;
use crate::oci::limits::size_text;
use crate::oci::reference::OciUrl;

/// How to reach a registry: the credentials flag and whether plain HTTP is allowed.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// `--creds user:password`; else the docker config file.
    pub creds: Option<String>,
    /// `--insecure`: plain HTTP to a registry that is not on this machine.
    pub insecure: bool,
}

/// A client for one registry.
pub struct Registry {
    client: Client,
    auth: RegistryAuth,
    registry: String,
    /// `http` for a registry on this machine or with `--insecure`, else `https`.
    scheme: &'static str,
}

/// An artifact's manifest as the registry holds it.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest's digest.
    pub digest: String,
    /// The parsed manifest.
    pub manifest: OciImageManifest,
}

impl Manifest {
    /// The manifest's annotations (empty when it has none).
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.manifest.annotations.clone().unwrap_or_default().into_iter().collect()
    }

    /// The one Flux content layer, refusing manifests that are not Flux artifacts.
    pub fn content_layer(&self, url: &OciUrl) -> Result<&OciDescriptor> {
        match self.manifest.layers.as_slice() {
            [layer] if layer.media_type == artifact::CONTENT_MEDIA_TYPE || layer.media_type.ends_with("tar+gzip") => {
                Ok(layer)
            }
            layers => Err(Error::usage(
                format!(
                    "{url} is not a Flux artifact: it has {} layer(s) of type {}",
                    layers.len(),
                    layers.iter().map(|layer| layer.media_type.as_str()).collect::<Vec<_>>().join(", ")
                ),
                "name an artifact pushed by `flux push artifact` or `kubectl gitops artifact push`",
            )),
        }
    }
}

impl Registry {
    /// A client for `url`'s registry with the credentials `access` resolves to. Credentials
    /// never cross a network in plain HTTP (with `--insecure` to another machine the docker
    /// config's are not read, and `--creds` is refused), and go to a token service only on the
    /// registry's own origin or site ([`challenge`]).
    pub async fn connect(url: &OciUrl, access: &Access) -> Result<Registry> {
        let plain = url.is_loopback() || access.insecure;
        let credentials = if plain && !url.is_loopback() {
            if access.creds.is_some() {
                return Err(Error::usage(
                    format!(
                        "--creds are not sent over plain HTTP: the registry {} is not on this machine",
                        url.registry
                    ),
                    "serve the registry over HTTPS and leave out --insecure, or leave out --creds to go anonymously",
                ));
            }
            Credentials::Anonymous
        } else {
            Credentials::resolve(access.creds.as_deref(), &url.registry)?
        };
        let protocol =
            if plain { ClientProtocol::HttpsExcept(vec![url.registry.clone()]) } else { ClientProtocol::Https };
        let client = Client::new(ClientConfig {
            protocol,
            connect_timeout: Some(crate::timeouts::REGISTRY_CONNECT),
            read_timeout: Some(crate::timeouts::REGISTRY_READ),
            user_agent: concat!("kubectl-gitops/", env!("CARGO_PKG_VERSION")),
            // Nothing here pulls multi-platform images.
            platform_resolver: None,
            ..ClientConfig::default()
        });
        let auth = match credentials {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => RegistryAuth::Basic(username, password),
        };
        let registry =
            Registry { client, auth, registry: url.registry.clone(), scheme: if plain { "http" } else { "https" } };
        if matches!(registry.auth, RegistryAuth::Basic(..)) {
            registry.check_token_service(url).await?;
        }
        Ok(registry)
    }

    /// Asks the registry, without credentials, where it would have them sent, and refuses a
    /// token service that may not have them.
    async fn check_token_service(&self, url: &OciUrl) -> Result<()> {
        let host = self.reference(url).resolve_registry().to_string();
        let origin = Url::parse(&format!("{}://{host}", self.scheme))
            .map_err(|error| Error::usage(format!("{url}: not a registry address ({error})"), "check the URL"))?;
        let client = crate::http::builder(crate::timeouts::REGISTRY_READ, crate::http::Carries::Nothing)
            .build()
            .map_err(|error| Error::Internal(format!("cannot build an HTTP client: {error}")))?;
        let answer = client
            .get(format!("{origin}v2/"))
            .send()
            .await
            .map_err(|error| self.failed("sign in to", url, OciDistributionError::RequestError(error)))?;
        let header = answer.headers().get(http::header::WWW_AUTHENTICATE).and_then(|value| value.to_str().ok());
        let Some(realm) = header.and_then(challenge::bearer_realm) else { return Ok(()) };
        let registry = Origin::of_url(&origin).map_err(|error| Error::usage(error.to_string(), error.hint()))?;
        match Url::parse(&realm) {
            Ok(realm) if crate::http::admit_token_service(&registry, &realm).is_ok() => Ok(()),
            parsed => Err(Error::Untrusted {
                message: format!(
                    "the registry {} asks for our credentials to be sent to {}, not its own origin or site over HTTPS; they were not sent",
                    self.registry,
                    parsed.map_or_else(|_| "an address that is not a URL".to_string(), |realm| realm.origin().ascii_serialization())
                ),
                hint: "use the registry's own address (not a mirror or proxy that names another token service), or leave out --creds and the docker config entry to go anonymously".into(),
            }),
        }
    }

    fn reference(&self, url: &OciUrl) -> Reference {
        match (&url.tag, &url.digest) {
            (_, Some(digest)) => Reference::with_digest(url.registry.clone(), url.repository.clone(), digest.clone()),
            (Some(tag), None) => Reference::with_tag(url.registry.clone(), url.repository.clone(), tag.clone()),
            (None, None) => Reference::with_tag(url.registry.clone(), url.repository.clone(), "latest".into()),
        }
    }

    /// Uploads the blobs the registry does not hold yet (chunked), then the manifest under
    /// `url`'s tag: the tag appears only once every blob is there. Returns the manifest's digest.
    pub async fn push(&self, url: &OciUrl, artifact: &Artifact) -> Result<String> {
        let reference = self.reference(url);
        let layer = ImageLayer::new(artifact.layer.clone(), artifact::CONTENT_MEDIA_TYPE.to_string(), None);
        let config =
            Config::new(artifact::CONFIG_JSON.as_bytes().to_vec(), artifact::CONFIG_MEDIA_TYPE.to_string(), None);
        let mut manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
        manifest.media_type = Some(artifact::MANIFEST_MEDIA_TYPE.to_string());
        manifest.annotations = Some(artifact.annotations.clone().into_iter().collect());
        self.client
            .auth(&reference, &self.auth, oci_client::RegistryOperation::Push)
            .await
            .map_err(|error| self.failed("push to", url, error))?;
        // Like crane (flux's pusher), a blob the repository already holds is not sent again:
        // the config is the same for every Flux artifact, and an unchanged directory's layer too.
        for (data, digest) in [(&layer.data, &manifest.layers[0].digest), (&config.data, &manifest.config.digest)] {
            let held = self
                .client
                .blob_exists(&reference, digest)
                .await
                .map_err(|error| self.failed("push to", url, error))?;
            if !held {
                self.client
                    .push_blob(&reference, data.clone(), digest)
                    .await
                    .map_err(|error| self.failed("push to", url, error))?;
            }
        }
        self.client
            .push_manifest(&reference, &manifest.into())
            .await
            .map_err(|error| self.failed("push to", url, error))?;
        self.digest(url).await
    }

    /// The manifest digest `url` resolves to.
    pub async fn digest(&self, url: &OciUrl) -> Result<String> {
        self.client
            .fetch_manifest_digest(&self.reference(url), &self.auth)
            .await
            .map_err(|error| self.failed("read", url, error))
    }

    /// The manifest at `url` (a tag or a digest), at most `max_size` bytes of it.
    pub async fn manifest(&self, url: &OciUrl, max_size: u64) -> Result<Manifest> {
        let (bytes, digest) = self.manifest_bytes(url, max_size).await?;
        let manifest: OciImageManifest = serde_json::from_slice(&bytes).map_err(|error| {
            Error::usage(
                format!("{url} is not a Flux artifact: its manifest is not an OCI image manifest ({error})"),
                "name an artifact pushed by `flux push artifact` or `kubectl gitops artifact push`",
            )
        })?;
        Ok(Manifest { digest, manifest })
    }

    /// The manifest's bytes as the registry holds them, and their digest, checked against the
    /// digest asked for and the one the registry names. Refused past `max_size` bytes, before
    /// they are read when the registry says its length.
    async fn manifest_bytes(&self, url: &OciUrl, max_size: u64) -> Result<(Vec<u8>, String)> {
        let reference = self.reference(url);
        let token = self
            .client
            .auth(&reference, &self.auth, oci_client::RegistryOperation::Pull)
            .await
            .map_err(|error| self.failed("read", url, error))?;
        let address = format!(
            "{}://{}/v2/{}/manifests/{}",
            self.scheme,
            self.registry,
            url.repository,
            reference.digest().or(reference.tag()).unwrap_or("latest")
        );
        let request = self.manifest_request(url, &address, token.as_deref())?;
        let transport = |error: reqwest::Error| self.failed("read", url, OciDistributionError::RequestError(error));
        let mut response = request.send().await.map_err(transport)?;
        let status = response.status();
        if !status.is_success() {
            let failure =
                OciDistributionError::ServerError { code: status.as_u16(), url: address, message: String::new() };
            return Err(self.failed("read", url, failure));
        }
        let over = || {
            Error::Untrusted {
            message: format!("{url}: the manifest is larger than {} (--max-manifest-size); nothing was written", size_text(max_size)),
            hint: "a Flux artifact's manifest is a few hundred bytes: do not use this one; if you trust it, raise --max-manifest-size".into(),
        }
        };
        let bytes = match crate::http::body_within(&mut response, max_size, |_| {}).await {
            Ok(bytes) => bytes,
            Err(crate::http::BodyError::TooLarge) => return Err(over()),
            Err(crate::http::BodyError::Transport(error)) => return Err(transport(error)),
        };
        let digest = artifact::digest_of(&bytes);
        let named = response.headers().get("docker-content-digest").and_then(|value| value.to_str().ok());
        for expected in [url.digest.as_deref(), named].into_iter().flatten() {
            if expected != digest {
                return Err(Error::Untrusted {
                    message: format!("{url} answered with manifest {digest}, not {expected}"),
                    hint: "the registry or something between us and it changed the manifest: do not use it".into(),
                });
            }
        }
        Ok((bytes, digest))
    }

    /// The GET of the manifest at `address`, carrying the registry's `token` (or the login)
    /// through the gate, which keeps it on the registry's origin. Plain HTTP to another machine
    /// (`--insecure`, anonymous only) carries nothing: a token an anonymous registry handed out
    /// is not sent back over it.
    fn manifest_request(&self, url: &OciUrl, address: &str, token: Option<&str>) -> Result<reqwest::RequestBuilder> {
        let refused = |message: String| Error::Untrusted {
            message: format!("{url}: {message}"),
            hint: "use the registry's own address over HTTPS".into(),
        };
        let parsed = Url::parse(address).map_err(|error| refused(format!("not a registry address ({error})")))?;
        let origin = Origin::of_url(&parsed).map_err(|error| refused(error.to_string()))?;
        let credential = match (token, &self.auth) {
            (Some(token), _) => Some(Credential::Bearer(token)),
            (None, RegistryAuth::Basic(username, password)) => Some(Credential::Basic { username, password }),
            (None, _) => None,
        };
        let mut accept = reqwest::header::HeaderMap::new();
        accept.insert(http::header::ACCEPT, http::HeaderValue::from_static(artifact::MANIFEST_MEDIA_TYPE));
        let timeout = crate::timeouts::REGISTRY_READ;
        match credential {
            Some(credential) if origin.carries_credentials() => {
                let gate =
                    Gate::new(origin, &credential, timeout, accept).map_err(|error| refused(error.to_string()))?;
                gate.request(reqwest::Method::GET, parsed).map_err(|error| refused(error.to_string()))
            }
            _ => {
                let client = crate::http::builder(timeout, crate::http::Carries::Nothing)
                    .default_headers(accept)
                    .build()
                    .map_err(|error| Error::Internal(format!("cannot build an HTTP client: {error}")))?;
                Ok(client.get(parsed))
            }
        }
    }

    /// Streams the layer into `file`, checked against its digest: refused when the manifest
    /// declares more than `max_size` bytes (before any is read), or the registry sends more than
    /// it declares.
    pub async fn blob_to(&self, url: &OciUrl, layer: &OciDescriptor, max_size: u64, file: std::fs::File) -> Result<()> {
        let declared = u64::try_from(layer.size).unwrap_or(u64::MAX);
        let refuse = |what: String| Error::Untrusted {
            message: format!("{url}: {what}; nothing was written"),
            hint: "a Flux artifact of manifests is small: do not use this one; if you trust it, raise --max-layer-size"
                .into(),
        };
        if declared > max_size {
            return Err(refuse(format!(
                "the manifest declares a layer of {declared} bytes, more than {} (--max-layer-size)",
                size_text(max_size)
            )));
        }
        let mut capped =
            Capped { inner: tokio::fs::File::from_std(file), written: 0, limit: declared, exceeded: false };
        let pulled = self.client.pull_blob(&self.reference(url), layer, &mut capped).await;
        if capped.exceeded {
            return Err(refuse(format!("the registry sent more than the {declared} bytes the manifest declares")));
        }
        pulled.map_err(|error| self.failed("read", url, error))
    }

    /// Every tag of `url`'s repository, sorted.
    pub async fn tags(&self, url: &OciUrl) -> Result<Vec<String>> {
        let mut tags = self
            .client
            .list_tags(&self.reference(url), &self.auth, None, None)
            .await
            .map_err(|error| self.failed("list the tags of", url, error))?
            .tags;
        tags.sort();
        Ok(tags)
    }

    /// Points `tag` at the manifest `url` names, copying the manifest's bytes as they are so the
    /// digest stays the same. Returns that digest.
    pub async fn tag(&self, url: &OciUrl, tag: &str, max_manifest_size: u64) -> Result<String> {
        let (bytes, digest) = self.manifest_bytes(url, max_manifest_size).await?;
        let target = url.with_tag(tag);
        let content_type = http::HeaderValue::from_static(artifact::MANIFEST_MEDIA_TYPE);
        self.client
            .push_manifest_raw(&self.reference(&target), bytes, content_type)
            .await
            .map_err(|error| self.failed("tag", &target, error))?;
        Ok(digest)
    }

    /// A registry failure as a sentence with a hint.
    fn failed(&self, doing: &str, url: &OciUrl, error: OciDistributionError) -> Error {
        let registry = &self.registry;
        let remote = |message: String, hint: &str| Error::Remote { message, hint: Some(hint.to_string()) };
        match Failure::of(&error) {
            Failure::Refused => remote(
                format!("the registry {registry} refused our credentials to {doing} {url}"),
                "check --creds user:password, or log in with `docker login`; the credentials come from --creds, else the docker config file",
            ),
            Failure::Missing => remote(
                format!("{url} does not exist"),
                "`kubectl gitops artifact list` shows the tags of the repository",
            ),
            Failure::Tampered => Error::Untrusted {
                message: format!(
                    "{url}: what the registry sent does not match its digest ({}); nothing was written",
                    innermost(&error)
                ),
                hint: "the registry or something between us and it changed the data: do not use it".into(),
            },
            Failure::Unreachable => remote(
                format!("cannot reach the registry {registry} to {doing} {url}: {}", innermost(&error)),
                "check the address and that the registry runs; plain HTTP is used only for localhost or with --insecure",
            ),
            Failure::Other => remote(
                format!("cannot {doing} {url}: {}", innermost(&error)),
                "check the URL and the registry; run again with -v for details",
            ),
        }
    }
}

/// A writer that fails once more than `limit` bytes come, and remembers that it did.
struct Capped<W> {
    inner: W,
    written: u64,
    limit: u64,
    exceeded: bool,
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Capped<W> {
    fn poll_write(mut self: Pin<&mut Self>, context: &mut Context<'_>, buffer: &[u8]) -> Poll<std::io::Result<usize>> {
        if self.written.saturating_add(buffer.len() as u64) > self.limit {
            self.exceeded = true;
            return Poll::Ready(Err(std::io::Error::other("more bytes than the manifest declares")));
        }
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write(context, buffer);
        if let Poll::Ready(Ok(count)) = written {
            this.written += count as u64;
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(context)
    }
}

/// What a registry failure means to the user, whichever of oci-client's shapes it came in (an
/// error envelope, a bare status, a reqwest status, or oci-client's own variants).
enum Failure {
    Refused,
    Missing,
    Tampered,
    Unreachable,
    Other,
}

impl Failure {
    fn of(error: &OciDistributionError) -> Failure {
        use oci_client::errors::OciErrorCode;
        let by_status = |status: u16| match status {
            401 | 403 => Failure::Refused,
            404 => Failure::Missing,
            _ => Failure::Other,
        };
        match error {
            OciDistributionError::AuthenticationFailure(_) | OciDistributionError::UnauthorizedError { .. } => {
                Failure::Refused
            }
            OciDistributionError::ImageManifestNotFoundError(_) => Failure::Missing,
            OciDistributionError::DigestError(_) => Failure::Tampered,
            OciDistributionError::ServerError { code, .. } => by_status(*code),
            OciDistributionError::RequestError(error) if error.is_connect() || error.is_timeout() => {
                Failure::Unreachable
            }
            OciDistributionError::RequestError(error) => {
                error.status().map_or(Failure::Other, |s| by_status(s.as_u16()))
            }
            OciDistributionError::RegistryError { envelope, .. } => {
                let has = |codes: &[OciErrorCode]| envelope.errors.iter().any(|e| codes.contains(&e.code));
                if has(&[OciErrorCode::Unauthorized, OciErrorCode::Denied]) {
                    Failure::Refused
                } else if has(&[OciErrorCode::ManifestUnknown, OciErrorCode::NameUnknown, OciErrorCode::NotFound]) {
                    Failure::Missing
                } else {
                    Failure::Other
                }
            }
            _ => Failure::Other,
        }
    }
}

/// The deepest cause of an error: reqwest's own message says only "error sending request".
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}
