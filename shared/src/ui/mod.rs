//! `kubectl gitops ui`: a web UI and a JSON API on 127.0.0.1, over the same core as the CLI.
//!
//! - [`live`]: one watch per Flux kind (the watches of `status --watch`), shared by every
//!   client; each change becomes a new [`crate::readers::apps_query::Snapshot`] that pages, the API and the
//!   Server-Sent Events read.
//! - [`auth`]: the one-time token exchanged for a session cookie, the Origin check and the
//!   read-only default.
//! - [`api`]: `/api/v1`, JSON, the schemas `-o json` prints (docs/api.md).
//! - [`clusters`]: the clusters followed (`--context dev,uat`), each with its own watches, and
//!   which one a request is about (the cluster switcher).
//! - [`fleet`]: the Fleet page, the matrix of `fleet status` over those clusters, live, with the
//!   promotion button behind `--allow-writes`.
//! - [`events`]: the Events page, the cluster's Kubernetes events filtered and paged, live.
//! - [`dora`]: the Apps page's DORA panel, `metrics dora` worked out in the background.
//! - [`pages`]: server-rendered HTML that works without JavaScript; `assets/ui.js` only swaps
//!   the rows in when the events say they changed.
//!
//! The server acts with the user's kubeconfig credentials, so RBAC decides what each user sees.

mod api;
mod auth;
mod charts;
mod clusters;
mod dora;
mod drift;
mod events;
mod fleet;
mod fleet_config;
mod graph;
mod layout;
mod live;
mod logs;
mod pages;
mod theme;
mod topology;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::{get, post};
use tokio::sync::watch;

use crate::change::Target;
use crate::cli::GlobalArgs;
use crate::cli::RepoArgs;
use crate::error::{Error, ExitCode, Result};
use crate::output::Printer;

/// Request bodies larger than this are refused (413) before a handler reads them.
pub(crate) const BODY_LIMIT: usize = 1 << 20;

/// The flags of `kubectl gitops ui`.
#[derive(Debug, Clone, clap::Args)]
pub struct UiArgs {
    /// The port to listen on; a free one is picked when not given.
    #[arg(long)]
    pub port: Option<u16>,

    /// The address to listen on: by default a random one of 127.0.0.0/8, else 127.0.0.1.
    ///
    /// The address to listen on. By default a random address of 127.0.0.0/8 (where the system
    /// routes the block to loopback, as Linux and Windows do; 127.0.0.1 elsewhere), so that the
    /// session cookie, which a browser sends to every port of a host, reaches no other local
    /// service. Anything but a loopback address exposes your cluster credentials to the network,
    /// and is refused.
    #[arg(long)]
    pub address: Option<IpAddr>,

    /// Allow changes; read-only otherwise.
    ///
    /// Allow changes from the UI and the API (add, remove, suspend, resume, reconcile,
    /// promote); read-only otherwise.
    #[arg(long)]
    pub allow_writes: bool,

    /// Print the URL without opening a browser.
    #[arg(long)]
    pub no_browser: bool,

    /// Follow drift in the background: a badge per app and a panel on the App page, live.
    ///
    /// Follow every Kustomization's drift in the background, as `kubectl gitops drift -A --watch`
    /// does (each source cloned at the commit Flux applied, built, compared, then watched): a
    /// badge per app on the Apps page and a drift panel on the App page, both live.
    #[arg(long)]
    pub drift: bool,

    /// How adding an app from the UI reaches the config repo, as for `app add`.
    #[command(flatten)]
    pub repo: RepoArgs,
}

/// `kubectl gitops ui`, resolved from its flags.
#[derive(Debug, Clone)]
pub struct UiSettings {
    /// `--context dev,uat`: the clusters followed, the first shown unless the user switches;
    /// `None`: the one cluster the flags name.
    contexts: Option<Vec<String>>,
    /// `--address`, or `None` for a random loopback address of the UI's own.
    address: Option<IpAddr>,
    port: u16,
    allow_writes: bool,
    open_browser: bool,
    /// `--drift`: with the settings its clones use.
    drift: Option<crate::change::RepoSettings>,
    repo: RepoArgs,
}

impl UiArgs {
    /// Checks the flags: only a loopback address is served.
    pub fn settings(&self, global: &GlobalArgs, printer: &Printer) -> Result<UiSettings> {
        if let Some(address) = self.address.filter(|address| !address.is_loopback()) {
            return Err(Error::usage(
                format!("--address {address} is not a loopback address"),
                "the UI acts with your kubeconfig credentials; serve it on 127.0.0.1 (or ::1) and reach it through `ssh -L` if needed",
            ));
        }
        Ok(UiSettings {
            contexts: crate::contexts::several(global)?,
            address: self.address,
            port: self.port.unwrap_or(0),
            allow_writes: self.allow_writes,
            // On a terminal a person is there to look; under a script, the URL alone.
            open_browser: !self.no_browser && printer.redraws(),
            drift: self.drift.then(|| self.repo.settings()).transpose()?,
            repo: self.repo.clone(),
        })
    }
}

/// What every handler shares.
pub(crate) struct Server {
    /// The clusters followed, in `--context`'s order (one unless it names several).
    views: Vec<clusters::ClusterView>,
    /// The config repo flags the server was started with.
    repo: RepoArgs,
    allow_writes: bool,
    auth: crate::local_server::auth::Auth,
    /// The Fleet page's revision, followed once the first page asks for its events.
    fleet_revisions: std::sync::OnceLock<watch::Receiver<String>>,
    /// The config repo's head and fleet file, followed once the Fleet page or its API is asked.
    fleet_config: std::sync::OnceLock<watch::Receiver<Option<fleet_config::FleetConfig>>>,
    /// Flips to true on Ctrl-C: the event streams end, so the server can stop.
    stopping: watch::Receiver<bool>,
    /// Plans a pull request's recorded request again (the pull request page's validation).
    replan: crate::change::recorded::Replanner,
    printer: Printer,
}

/// A listener on `address`, or on a random loopback address of the UI's own
/// ([`crate::local_server::auth::random_loopback`]), or on 127.0.0.1 where the system has no such address (macOS
/// configures 127.0.0.1 alone).
async fn listen(address: Option<IpAddr>, port: u16) -> Result<tokio::net::TcpListener> {
    let bind = |ip: IpAddr| async move {
        let at = SocketAddr::new(ip, port);
        tokio::net::TcpListener::bind(at).await.map_err(|error| (at, error))
    };
    let tried = match address {
        Some(address) => bind(address).await,
        None => match bind(IpAddr::V4(crate::local_server::auth::random_loopback()?)).await {
            Err((_, error)) if error.kind() == std::io::ErrorKind::AddrNotAvailable => {
                bind(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)).await
            }
            tried => tried,
        },
    };
    tried.map_err(|(at, error)| Error::io(format!("cannot listen on {at}"), error))
}

/// Serves until Ctrl-C. Prints the URL (with its one-time token) on stdout. `replan` plans a
/// pull request's recorded request again (the binary hands in the edge's).
pub async fn serve(
    global: &GlobalArgs,
    settings: &UiSettings,
    replan: crate::change::recorded::Replanner,
    printer: Printer,
) -> Result<ExitCode> {
    let base = Target::from_args(global);
    let contexts = match &settings.contexts {
        Some(contexts) => contexts.iter().cloned().map(Some).collect(),
        None => vec![global.context.clone()],
    };
    let mut views = Vec::new();
    for context in contexts {
        views.push(clusters::ClusterView::start(&base, context, settings.drift.clone(), printer).await?);
    }
    let listener = listen(settings.address, settings.port).await?;
    let address = listener.local_addr().map_err(|error| Error::io("cannot read the listening address", error))?;
    let (auth, token) = crate::local_server::auth::Auth::new(address)?;
    let url = format!("{}/?token={token}", auth.origin());
    let (stop, stopping) = watch::channel(false);
    let server = Arc::new(Server {
        views,
        repo: settings.repo.clone(),
        allow_writes: settings.allow_writes,
        auth,
        fleet_revisions: std::sync::OnceLock::new(),
        fleet_config: std::sync::OnceLock::new(),
        stopping,
        replan,
        printer,
    });

    printer.data(&format!("{url}\n"))?;
    let followed = match &settings.contexts {
        Some(contexts) => format!(", following contexts {}", contexts.join(", ")),
        None => String::new(),
    };
    printer.progress(&format!(
        "serving the UI on {address} ({}{followed}); Ctrl-C stops it",
        if settings.allow_writes { "writes allowed" } else { "read-only" }
    ));
    if settings.open_browser {
        open_browser(&url, &printer);
    }
    // The runtime catches Ctrl-C and SIGTERM (`crate::interrupt`), and gives us a moment to stop.
    let shutdown = async move {
        crate::interrupt::until_requested().await;
        let _ = stop.send(true);
    };
    crate::local_server::serve::serve(listener, router(server), shutdown).await;
    printer.progress("stopped");
    Ok(ExitCode::Ok)
}

fn router(server: Arc<Server>) -> Router {
    let api = Router::new()
        .route("/apps", get(api::apps).post(api::add))
        .route("/apps/{namespace}/{name}", get(api::app).delete(api::remove))
        .route("/apps/{namespace}/{name}/history", get(api::history))
        .route("/apps/{namespace}/{name}/pods/{pod}/logs", get(logs::follow))
        .route("/apps/{namespace}/{name}/{action}", post(pages::act))
        .route("/cluster", get(api::cluster))
        .route("/cluster/events", get(events::api))
        .route("/cluster/events/stream", get(events::stream))
        .route("/fleet", get(fleet::api))
        .route("/fleet/events", get(fleet::events))
        .route("/metrics/dora", get(api::dora))
        .route("/events", get(api::events))
        .route("/openapi.json", get(api::openapi))
        .route("/schemas/{file}", get(api::schema))
        .fallback(api::not_found);
    Router::new()
        .route("/", get(layout::root))
        .route("/apps", get(pages::apps))
        .route("/apps/new", get(pages::new_app).post(pages::add))
        .route("/apps/{namespace}/{name}", get(pages::app))
        .route("/apps/{namespace}/{name}/remove", post(pages::remove))
        .route("/apps/{namespace}/{name}/history", get(pages::history))
        .route("/cluster", get(pages::cluster))
        .route("/events", get(events::page))
        .route("/fleet", get(fleet::page))
        .route("/graph", get(topology::page))
        .route("/fleet/promote", post(fleet::promote))
        .route("/pulls/{number}", get(pages::pull))
        .route("/assets/{file}", get(layout::asset))
        .route("/theme", get(theme::choose))
        .nest("/api/v1", api)
        .layer(axum::middleware::from_fn_with_state(server.clone(), clusters::remember))
        .layer(axum::middleware::from_fn_with_state(server.clone(), auth::guard))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::map_response(protect))
        .with_state(server)
}

/// The headers every answer carries: no script, style or frame from elsewhere, and, because the
/// first URL carries the token, no referrer sent on to another site. Not `no-referrer`: under it
/// browsers send `Origin: null` with a form's POST, and the origin check refuses the UI's own
/// buttons (the browser tests found it).
async fn protect(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'"),
    );
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// Opens the URL in the user's browser; a failure is a warning, the URL is printed anyway.
fn open_browser(url: &str, printer: &Printer) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(error) = spawned {
        printer.warning(&format!("cannot open a browser ({opener}: {error}); open the URL above yourself"));
    }
}
