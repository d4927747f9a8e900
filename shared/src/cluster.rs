//! Building the one Kubernetes client a process uses, and turning API failures into [`Error`]s.

use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::cli::GlobalArgs;
use crate::diagnostic::chain_to_line;
use crate::error::{Error, Result};

/// The namespace Flux installs itself into unless told otherwise.
pub const DEFAULT_FLUX_NAMESPACE: &str = "flux-system";

/// The field manager of everything kubectl-gitops writes: applied objects and the annotations it
/// patches (a reconcile request, a suspension).
pub const FIELD_MANAGER: &str = "kubectl-gitops";

/// The Flux namespace when neither `-n` nor the cluster names one: `FLUX_SYSTEM_NAMESPACE`, as
/// the flux CLI reads it, else flux-system (docs/cli.md, "-n").
pub fn default_flux_namespace() -> Result<String> {
    match std::env::var(crate::env::FLUX_SYSTEM_NAMESPACE) {
        Ok(value) if !value.is_empty() => crate::names::validate_name(&value, crate::env::FLUX_SYSTEM_NAMESPACE),
        _ => Ok(DEFAULT_FLUX_NAMESPACE.to_string()),
    }
}

/// A connected client plus what we know about where it points.
#[derive(Clone)]
pub struct Cluster {
    /// The API client; clone it freely, it shares one connection pool.
    pub client: Client,
    /// The API server URL, for messages.
    pub server: String,
    /// The kubeconfig context in use, when there is one.
    pub context: Option<String>,
    /// The namespace of the context (or `default`), overridden by `-n`.
    pub namespace: String,
    /// The per-request timeout in force.
    pub request_timeout: Option<Duration>,
}

/// How to reach the cluster, resolved from the command line before a command connects: the
/// kubeconfig (kubectl's rules when `None`), the context and namespace, and the request timeout.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// `--kubeconfig`; `None`: `KUBECONFIG` or ~/.kube/config, as kubectl reads them.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// `--context`; `None`: the kubeconfig's current context.
    pub context: Option<String>,
    /// `-n`; `None`: the context's namespace.
    pub namespace: Option<String>,
    /// One request's limit; `None`: none (`--request-timeout 0`).
    pub request_timeout: Option<Duration>,
    /// What the kubectl flags change of the kubeconfig's cluster and user.
    pub overrides: Overrides,
}

/// kubectl's overrides of the kubeconfig (`--user`, `--server`, `--token`,
/// `--certificate-authority`, `--insecure-skip-tls-verify`, `--as`, `--as-group`): each one
/// replaces what the context's cluster or user says.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub user: Option<String>,
    pub server: Option<String>,
    /// Redacted in `Debug`: the token never reaches a log line.
    pub token: Option<secrecy::SecretString>,
    pub certificate_authority: Option<std::path::PathBuf>,
    pub insecure_skip_tls_verify: bool,
    pub impersonate: Option<String>,
    pub impersonate_groups: Vec<String>,
}

impl Overrides {
    /// Applies the cluster overrides to the kubeconfig's cluster that `context` (the current one
    /// when `None`) points at, before kube reads it: the server, the CA file (in place of any
    /// inline CA data) and skipping the certificate check.
    fn apply_to_kubeconfig(&self, kubeconfig: &mut Kubeconfig, context: Option<&str>) -> Result<()> {
        if self.server.is_none() && self.certificate_authority.is_none() && !self.insecure_skip_tls_verify {
            return Ok(());
        }
        let context = context.or(kubeconfig.current_context.as_deref()).map(str::to_string);
        let cluster_name = kubeconfig
            .contexts
            .iter()
            .find(|named| Some(&named.name) == context.as_ref())
            .and_then(|named| named.context.as_ref())
            .map(|context| context.cluster.clone());
        let Some(named) = kubeconfig.clusters.iter_mut().find(|named| Some(&named.name) == cluster_name.as_ref())
        else {
            return Err(Error::usage(
                "--server, --certificate-authority and --insecure-skip-tls-verify change the kubeconfig context's cluster, and there is none",
                "name a context that has a cluster (--context), or fix the kubeconfig",
            ));
        };
        let cluster = named.cluster.get_or_insert_with(Default::default);
        if let Some(server) = &self.server {
            cluster.server = Some(server.clone());
        }
        if let Some(path) = &self.certificate_authority {
            cluster.certificate_authority = Some(path.to_string_lossy().into_owned());
            cluster.certificate_authority_data = None;
        }
        if self.insecure_skip_tls_verify {
            cluster.insecure_skip_tls_verify = Some(true);
        }
        Ok(())
    }

    /// Applies the user overrides to the config kube made: the token (in place of the user's
    /// other credentials) and impersonation.
    fn apply_to_config(&self, config: &mut Config) {
        if let Some(token) = &self.token {
            let kept = std::mem::take(&mut config.auth_info);
            config.auth_info = kube::config::AuthInfo {
                token: Some(token.clone()),
                client_certificate: kept.client_certificate,
                client_certificate_data: kept.client_certificate_data,
                client_key: kept.client_key,
                client_key_data: kept.client_key_data,
                ..Default::default()
            };
        }
        if let Some(user) = &self.impersonate {
            config.auth_info.impersonate = Some(user.clone());
        }
        if !self.impersonate_groups.is_empty() {
            config.auth_info.impersonate_groups = Some(self.impersonate_groups.clone());
        }
    }
}

impl Connection {
    /// The connection the shared flags ask for; `default_timeout` is the command's own request
    /// timeout (`crate::timeouts`), used unless `--request-timeout` is given.
    pub fn from_args(args: &GlobalArgs, default_timeout: Duration) -> Connection {
        Connection {
            kubeconfig: args.kubeconfig.clone(),
            context: args.context.clone(),
            namespace: args.namespace.clone(),
            request_timeout: args.request_timeout_or(default_timeout),
            overrides: Overrides {
                user: args.user.clone(),
                server: args.server.clone(),
                token: args.token.clone().map(secrecy::SecretString::from),
                certificate_authority: args.certificate_authority.clone(),
                insecure_skip_tls_verify: args.insecure_skip_tls_verify,
                impersonate: args.impersonate.clone(),
                impersonate_groups: args.impersonate_groups.clone(),
            },
        }
    }
}

impl Cluster {
    /// Loads the kubeconfig the way kubectl does and builds the client.
    pub async fn connect(connection: &Connection, printer: &crate::output::Printer) -> Result<Cluster> {
        let mut kubeconfig = match &connection.kubeconfig {
            Some(path) => Kubeconfig::read_from(path),
            None => Kubeconfig::read(),
        }
        .map_err(Error::Kubeconfig)?;
        let context = connection.context.clone().or_else(|| kubeconfig.current_context.clone());
        let overrides = &connection.overrides;
        overrides.apply_to_kubeconfig(&mut kubeconfig, connection.context.as_deref())?;
        let options = KubeConfigOptions {
            context: connection.context.clone(),
            user: overrides.user.clone(),
            ..Default::default()
        };
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &options).await.map_err(Error::Kubeconfig)?;
        overrides.apply_to_config(&mut config);
        let request_timeout = connection.request_timeout;
        config.connect_timeout = request_timeout;
        config.read_timeout = request_timeout;
        config.write_timeout = request_timeout;
        config.reset_reader_on_write = true;
        config.default_retry = false;
        // Audit logs and API server metrics name us (the e2e tests find our requests by it).
        if let Ok(agent) = http::HeaderValue::from_str(&user_agent()) {
            config.headers.push((http::header::USER_AGENT, agent));
        }
        if let Some(namespace) = &connection.namespace {
            config.default_namespace = namespace.clone();
        }
        let server = config.cluster_url.to_string();
        let namespace = config.default_namespace.clone();
        let client = client(config, request_timeout).map_err(|error| classify(&server, error))?;
        printer.detail(&format!(
            "cluster: {server} (context {}, namespace {namespace}, request timeout {})",
            context.as_deref().unwrap_or("none"),
            request_timeout.map_or("none".to_string(), crate::duration::format)
        ));
        Ok(Cluster { client, server, context, namespace, request_timeout })
    }

    /// Maps a kube error from this cluster to our typed error.
    pub fn error(&self, error: kube::Error) -> Error {
        classify(&self.server, error)
    }
}

/// The client for `config`: kube's own HTTP stack (TLS from the kubeconfig, its timeouts, the
/// base URL, authentication, extra headers), but with TCP_NODELAY as kubectl and curl have it.
/// kube's connector leaves Nagle's algorithm on, and a request written in two parts on a reused
/// connection then waited for the API server's delayed ACK: 40 ms, more than once per command
/// (`status -A` at 1,000 apps spent 45 of its 250 ms there). Reads answered 429 or 5xx are asked
/// again within the request timeout (writes are not); the stack clones cheaply (the hyper client
/// shares one pool), so the retry layer needs no buffer of its own (kube's `Client` has one). A
/// kubeconfig `proxy-url` gets kube's own answer (this build has no proxy support).
fn client(config: Config, request_timeout: Option<Duration>) -> std::result::Result<Client, kube::Error> {
    use kube::client::ConfigExt;
    use tower::ServiceBuilder;

    if config.proxy_url.is_some() {
        return kube::client::ClientBuilder::try_from(config).map(kube::client::ClientBuilder::build);
    }
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let mut connector = hyper_timeout::TimeoutConnector::new(config.rustls_https_connector_with_connector(http)?);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let http_client: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
    let retries = crate::retry::KubeReads::within(request_timeout.unwrap_or(crate::timeouts::REQUEST));
    let service = ServiceBuilder::new()
        .layer(retries)
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(http_client);
    Ok(Client::new(service, config.default_namespace))
}

/// `kubectl-gitops/<version> (<binary>)`, like kubectl's `kubectl/v1.32 (linux/amd64)`.
pub fn user_agent() -> String {
    let binary = crate::env::command_line()
        .into_iter()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "kubectl-gitops".to_string());
    format!("kubectl-gitops/{} ({binary})", env!("CARGO_PKG_VERSION"))
}

/// Sorts a kube error into unreachable / unauthorized / forbidden / other.
pub fn classify(server: &str, error: kube::Error) -> Error {
    match error {
        kube::Error::Api(status) if status.code == 401 => Error::Unauthorized { server: server.to_string() },
        kube::Error::Api(status) if status.code == 403 => Error::Forbidden { message: status.message.clone() },
        kube::Error::Api(status) => Error::Api(kube::Error::Api(status)),
        kube::Error::HyperError(_)
        | kube::Error::Service(_)
        | kube::Error::RustlsTls(_)
        | kube::Error::Auth(_)
        | kube::Error::TlsRequired => {
            let reason = chain_to_line(&error);
            Error::Unreachable { server: server.to_string(), reason: tidy_transport_reason(&reason) }
        }
        other => Error::Api(other),
    }
}

/// Whether a kube error is an API 404.
pub fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// Whether a kube error is an API 403.
pub fn is_forbidden(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403)
}

/// Every item of a paginated LIST, page by page (`params` sets the page size and selectors):
/// `page` asks for one page, `each` takes its items. Only a page is held at a time.
pub async fn list_pages<T, Fut>(
    params: kube::api::ListParams,
    mut page: impl FnMut(kube::api::ListParams) -> Fut,
    mut each: impl FnMut(T),
) -> Result<(), kube::Error>
where
    T: Clone,
    Fut: Future<Output = Result<kube::api::ObjectList<T>, kube::Error>>,
{
    let mut params = params;
    loop {
        let list = page(params.clone()).await?;
        let next = list.metadata.continue_.clone().filter(|token| !token.is_empty());
        list.items.into_iter().for_each(&mut each);
        match next {
            Some(token) => {
                // The token carries the resourceVersion; the API server refuses both at once.
                params.resource_version = None;
                params.version_match = None;
                params = params.continue_token(&token);
            }
            None => return Ok(()),
        }
    }
}

/// Runs an API read again while the API server answers 429: the storage of a CRD created a moment
/// ago is still initializing (or the server sheds load), which passes within seconds. Gives up
/// after `patience` with the last answer.
pub async fn retry_busy<T, Fut>(patience: std::time::Duration, mut call: impl FnMut() -> Fut) -> Result<T, kube::Error>
where
    Fut: Future<Output = Result<T, kube::Error>>,
{
    use std::time::{Duration, Instant};
    let mut backoff =
        crate::retry::Backoff::between(Duration::from_millis(100), Duration::from_secs(1), Instant::now() + patience);
    loop {
        match call().await {
            Err(kube::Error::Api(status)) if status.code == 429 && backoff.wait().await => {}
            other => return other,
        }
    }
}

/// kube's transport errors repeat themselves ("ServiceError: client error (Connect): …");
/// keep the most specific part, which is the last one.
fn tidy_transport_reason(reason: &str) -> String {
    let last = reason.rsplit(": ").next().unwrap_or(reason).trim();
    if last.is_empty() { reason.to_string() } else { last.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::describe_watch;

    #[test]
    fn transport_reasons_keep_the_specific_part() {
        assert_eq!(
            tidy_transport_reason(
                "ServiceError: client error (Connect): tcp connect error: Connection refused (os error 111)"
            ),
            "Connection refused (os error 111)"
        );
    }

    #[test]
    fn api_statuses_are_sorted_by_code() {
        let status = |code| kube::Error::Api(kube::core::Status::failure("nope", "Reason").with_code(code).boxed());
        assert!(matches!(classify("https://x", status(401)), Error::Unauthorized { .. }));
        assert!(matches!(classify("https://x", status(403)), Error::Forbidden { .. }));
        assert!(matches!(classify("https://x", status(500)), Error::Api(_)));
        assert!(is_not_found(&status(404)));
        assert!(is_forbidden(&status(403)));
    }

    /// What the user reads for an error, as `runtime::finish` prints it.
    fn printed(error: &Error) -> (String, Option<String>) {
        (chain_to_line(error), error.hint())
    }

    fn assert_no_debug_dump(text: &str) {
        for dump in ["ApiError", "Status {", "Some(", "Failure"] {
            assert!(!text.contains(dump), "{dump:?} in {text:?}");
        }
    }

    /// A real 404 answer, through kube's client and our conversion, reads as a sentence with a hint.
    #[tokio::test]
    async fn an_api_error_reads_as_the_servers_sentence_with_a_hint() {
        let fake = crate::testing::FakeApi::new();
        let cluster = fake.cluster();
        let releases: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(cluster.client.clone(), "flux-system");
        let error = cluster.error(releases.get("web").await.unwrap_err());
        let (line, hint) = printed(&error);
        assert_eq!(line, "\"web\" not found (404 NotFound)");
        assert_no_debug_dump(&line);
        assert!(hint.is_some_and(|hint| hint.contains("check the name and namespace")));
        let step = Error::Step { number: 2, total: 3, step: "read the app".into(), source: Box::new(error) };
        let (line, hint) = printed(&step);
        assert_eq!(line, "step 2/3 (read the app) failed: \"web\" not found (404 NotFound)");
        assert!(hint.is_some());
    }

    #[test]
    fn api_errors_without_a_message_or_from_the_client_still_read_as_sentences() {
        let bare = kube::core::Status { code: 500, reason: "InternalError".into(), ..Default::default() };
        let error = classify("https://x", kube::Error::Api(Box::new(bare)));
        let (line, hint) = printed(&error);
        assert_eq!(line, "the Kubernetes API server answered with an error (500 InternalError)");
        assert!(hint.is_some_and(|hint| hint.contains("try again")));
        let missing_route = kube::core::Status::failure("the server could not find the requested resource", "NotFound")
            .with_code(404)
            .boxed();
        let (line, _) = printed(&classify("https://x", kube::Error::Api(missing_route)));
        assert_eq!(line, "the server could not find the requested resource (404 NotFound)");
        let garbled = serde_json::from_str::<u8>("x").unwrap_err();
        let (line, hint) = printed(&classify("https://x", kube::Error::SerdeError(garbled)));
        assert!(line.starts_with("the request to the Kubernetes API failed: Error deserializing response: "), "{line}");
        assert_no_debug_dump(&line);
        assert!(hint.is_some());
    }

    #[test]
    fn watch_errors_read_as_sentences() {
        use kube::runtime::watcher::Error as Watch;
        let gone = || kube::core::Status::failure("too old resource version: 1 (5)", "Expired").with_code(410).boxed();
        let cases = [
            (Watch::InitialListFailed(kube::Error::Api(gone())), "the list failed: "),
            (Watch::WatchStartFailed(kube::Error::Api(gone())), "the watch could not start: "),
            (Watch::WatchFailed(kube::Error::Api(gone())), "the watch failed: "),
            (Watch::WatchError(gone()), "the watch failed: "),
        ];
        for (error, start) in cases {
            assert_eq!(describe_watch(&error), format!("{start}too old resource version: 1 (5) (410 Expired)"));
        }
    }
}
