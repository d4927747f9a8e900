//! `kubectl gitops app`: add, list, remove, suspend and resume apps in the config repo.
//!
//! Every changing subcommand runs the same way:
//! 1. resolve the flags into a request ([`settings`], the app with [`spec::AppSpec::from_args`]):
//!    bad input stops here;
//! 2. resolve the context ([`context`]): the cluster, its install record, the config repo and
//!    the provider in front of it; read-only checks (the repo exists, we may push);
//! 3. clone the config branch into a temp dir and build a [`plan::Plan`];
//! 4. `--dry-run` prints the plan; otherwise [`deliver::execute`] carries out the same plan.

pub mod args;
pub mod chart;
pub mod component;
pub(crate) mod deliver;
mod drive;
pub mod layout;
mod list;
pub mod new_repo;
pub mod plan;
pub mod recorded;
pub mod settings;
pub mod spec;

use kube::api::Api;

pub use self::args::{AddArgs, ComponentUpgradeArgs, DeliveryArgs, ListArgs, RemoveArgs, RepoArgs, SuspendArgs};
pub use self::deliver::{ConfigRepo, HostedRepo};
pub(crate) use self::drive::{Awaits, Change, drive, drive_change};
use self::layout::ClusterDir;
use self::layout::SuspendPatch;
pub use self::list::list;
use self::plan::{Delivery, FileChange};
use self::settings::{AddRequest, DeliveryMode, DeliverySettings, RemoveRequest, RepoSettings, SuspendRequest};
pub use self::settings::{ListRequest, Target};
use self::spec::{AppSpec, Versions};
use crate::cluster::{Cluster, DEFAULT_FLUX_NAMESPACE};
use crate::config::hosts;
use crate::detect::{self, ClusterState, Detection};
use crate::error::{Error, Result};
use crate::flux::api;
use crate::flux::bootstrap::SYNC_NAME;
use crate::git::{Auth, Checkout, Remote, Workspace};
use crate::output::Printer;
use crate::provider::{Kind, Provider, ProviderConfig, RepoRef};
use crate::record::{InstallRecord, PlatformRepo};
use crate::repo_access::{self, parse_url};

/// Everything an app command works against, resolved once.
pub struct Context {
    /// The current cluster; `None` when it is not needed and not reachable (`--config-repo`).
    pub cluster: Option<Cluster>,
    /// The Flux namespace, where the app's Flux objects live.
    pub namespace: String,
    /// The API versions to write.
    pub versions: Versions,
    /// What the current cluster holds (its install record among it); `None` without a cluster.
    pub detection: Option<Detection>,
    /// The config repo, with our credentials; resolved only for commands that read or write it.
    pub repo: Option<ConfigRepo>,
    /// Where progress and warnings go.
    pub printer: Printer,
}

impl Context {
    /// The current cluster, for commands that act on it.
    fn cluster(&self) -> Result<&Cluster> {
        self.cluster.as_ref().ok_or_else(|| {
            Error::usage("this needs the cluster, and none is reachable", "check --kubeconfig and --context")
        })
    }

    /// The current cluster's install record.
    pub(crate) fn record(&self) -> Option<&InstallRecord> {
        self.detection.as_ref()?.gitops.as_ref()
    }

    /// The config repo, for commands that read or write it.
    pub(crate) fn repo(&self) -> Result<&ConfigRepo> {
        self.repo.as_ref().ok_or_else(|| Error::Internal("the config repo was not resolved".into()))
    }
}

/// Resolves the cluster and, with `needs_repo`, the config repo and how to reach it. Read-only.
pub async fn context(
    target: &Target,
    repo_args: &RepoSettings,
    needs_repo: bool,
    printer: &Printer,
) -> Result<Context> {
    let connected = Cluster::connect(&target.connection, printer).await;
    let (cluster, detection) = match connected {
        Ok(cluster) => {
            let detection = detect::detect(&cluster).await?;
            if detection.state == ClusterState::Unreachable && repo_args.config_repo.is_none() {
                return Err(Error::Unreachable {
                    server: cluster.server.clone(),
                    reason: detection.error.clone().unwrap_or_default(),
                });
            }
            let reachable = detection.state != ClusterState::Unreachable;
            (reachable.then_some(cluster), reachable.then_some(detection))
        }
        Err(error) if repo_args.config_repo.is_none() => return Err(error),
        Err(_) => (None, None),
    };
    let namespace = detection
        .as_ref()
        .and_then(|detection| detection.flux.as_ref().map(|flux| flux.namespace.clone()))
        .or_else(|| target.namespace.clone())
        .unwrap_or_else(|| DEFAULT_FLUX_NAMESPACE.to_string());
    let versions = match &detection {
        Some(detection) if !detection.api_versions.is_empty() => Versions::served(detection.api_versions.clone()),
        Some(_) if repo_args.config_repo.is_none() => {
            return Err(Error::Negative {
                message: "this cluster has no Flux (no Flux API is served)".into(),
                hint: Some("run `kubectl gitops install` first".into()),
            });
        }
        _ => Versions::pinned(),
    };
    let mut context = Context { cluster, namespace, versions, detection, repo: None, printer: *printer };
    if needs_repo {
        context.attach_repo(repo_args).await?;
    }
    Ok(context)
}

impl Context {
    /// Resolves the config repo and our credentials for it (the repo flags, else the install
    /// record): for a command that found out first, without a key, whether it has work to do.
    pub(crate) async fn attach_repo(&mut self, repo_args: &RepoSettings) -> Result<()> {
        let record = self.trusted_record(repo_args)?;
        let platform = platform_repo(record, repo_args);
        let url = repo_args.config_repo.clone();
        let url = url.or_else(|| platform.map(|platform| platform.url.clone()));
        let url = url.or_else(|| record.map(|r| r.url.clone())).ok_or_else(|| {
            Error::usage(
                "this cluster has no kubectl-gitops layout, so there is no config repo to write to",
                "run `kubectl gitops install`, or pass --config-repo URL",
            )
        })?;
        let branch = repo_args
            .config_branch
            .clone()
            .or_else(|| platform.map(|platform| platform.branch.clone()))
            .or_else(|| record.map(|r| r.branch.clone()))
            .unwrap_or_else(|| "main".to_string());
        let hosted = provider_repo(record, repo_args)?;
        let pinned_hosts = match &self.cluster {
            Some(cluster) => crate::deploy_key::pinned_known_hosts(cluster, &self.namespace).await?,
            None => None,
        };
        let remote = push_remote(&url, repo_args, hosted.as_ref(), pinned_hosts.as_deref())?;
        self.repo = Some(ConfigRepo { remote, branch, hosted, platform: platform.is_some() });
        Ok(())
    }

    /// The provider in front of the repository `repo_args` ask for (the config repo, or the
    /// platform repo beside it), with our token; `None` for a plain git server.
    pub(crate) fn hosted_repo(&self, repo_args: &RepoSettings) -> Result<Option<HostedRepo>> {
        provider_repo(self.trusted_record(repo_args)?, repo_args)
    }

    /// The install record, once the hosts it sends our credentials to for `repo_args` are those
    /// this cluster is bound to in the user's config file (bound now on first use, with a line
    /// saying so; another host only with `--accept-host`, [`crate::config::hosts`]). Every use of
    /// the record's repository or provider goes through here.
    fn trusted_record(&self, repo_args: &RepoSettings) -> Result<Option<&InstallRecord>> {
        let (Some(record), Some(cluster)) = (self.record(), &self.cluster) else { return Ok(self.record()) };
        let repo_url = match platform_repo(Some(record), repo_args) {
            Some(platform) => Some(platform.url.as_str()),
            None => repo_args.config_repo.is_none().then_some(record.url.as_str()),
        };
        let wanted = hosts::Wanted::of_record(record, repo_url)?;
        if let Some(line) = hosts::bind(&cluster.server, &wanted, hosts::Accept::Named(&repo_args.accepted_hosts))? {
            self.printer.progress(&line);
        }
        Ok(Some(record))
    }
}

/// The recorded platform repo, when `repo_args` ask for the platform services' repository and
/// name no other (`--config-repo`).
fn platform_repo<'a>(record: Option<&'a InstallRecord>, repo_args: &RepoSettings) -> Option<&'a PlatformRepo> {
    record.and_then(|record| record.platform.as_ref()).filter(|_| repo_args.platform && repo_args.config_repo.is_none())
}

/// The provider in front of the repository `repo_args` ask for: the config repo, or the platform
/// repo beside it (the same provider, another repository).
fn provider_repo(record: Option<&InstallRecord>, repo_args: &RepoSettings) -> Result<Option<HostedRepo>> {
    let mut hosted = config_repo_provider(record)?;
    if let (Some(platform), Some(hosted)) = (platform_repo(record, repo_args), hosted.as_mut()) {
        let path = repo_access::path_of(&platform.url)?;
        hosted.repo = RepoRef::parse(path.trim_start_matches('/').trim_end_matches(".git"))?;
    }
    Ok(hosted)
}

/// The provider in front of the config repo, from the install record.
fn config_repo_provider(record: Option<&InstallRecord>) -> Result<Option<HostedRepo>> {
    let Some(record) = record else { return Ok(None) };
    let (Some(kind), Some(repository)) = (record.provider.as_deref().and_then(Kind::from_id), &record.repository)
    else {
        return Ok(None);
    };
    let host = kind.host(record.hostname.as_deref());
    let token = crate::config::provider_token(kind, &host).ok_or_else(|| {
        Error::usage(
            format!("the config repo {repository} is on {host}, and there is no token for it"),
            crate::config::token_hint(kind, &host),
        )
    })?;
    let config = ProviderConfig {
        kind,
        hostname: record.hostname.clone(),
        api_base: std::env::var(kind.api_url_env()).ok().filter(|value| !value.is_empty()),
        token: token.clone(),
    };
    Ok(Some(HostedRepo { provider: Provider::new(config)?, repo: RepoRef::parse(repository)?, token }))
}

/// How we push: over SSH with the user's key (host keys checked, never trusted blindly), over
/// HTTPS with the provider token or `GITOPS_GIT_PASSWORD`.
fn push_remote(url: &str, args: &RepoSettings, hosted: Option<&HostedRepo>, pinned: Option<&str>) -> Result<Remote> {
    let parsed = parse_url(url)?;
    if parsed.scheme == "ssh" {
        let private_key = match &args.private_key_file {
            Some(path) => repo_access::read_private_key(path)?,
            None => repo_access::default_ssh_key()?,
        };
        let refuse_scan = |_: &str| -> Result<bool> {
            Err(Error::usage(
                format!("the SSH host keys of {} are not known", parsed.host),
                "pass --known-hosts-file with the host's known_hosts lines (`ssh-keyscan HOST`)",
            ))
        };
        let known_hosts = repo_access::known_hosts(args.known_hosts_file.as_deref(), pinned, &parsed, &refuse_scan)?;
        let auth = Auth::Ssh { user: parsed.user.clone(), private_key, known_hosts };
        return Ok(Remote { url: parsed.canonical, auth });
    }
    let (username, password) = match hosted {
        Some(hosted) => (hosted.provider.kind().token_user().to_string(), hosted.token.expose().to_string()),
        None => repo_access::https_credentials()?,
    };
    Ok(Remote { url: parsed.canonical, auth: Auth::Basic { username, password } })
}

/// Checks what the provider can tell before anything is written: the repo exists, and which
/// delivery applies (`--pr`, `--auto-merge`, or a pull request when the branch is protected).
async fn delivery(
    repo: &ConfigRepo,
    args: &DeliverySettings,
    verb: &str,
    app: &str,
    files: &[FileChange],
    printer: &Printer,
) -> Result<Delivery> {
    let Some(hosted) = &repo.hosted else {
        if args.mode == DeliveryMode::PullRequest {
            return Err(Error::usage(
                "--pr needs a config repo on GitHub or GitLab",
                "install with --provider github|gitlab to get pull requests, or push directly (--auto-merge)",
            ));
        }
        return Ok(Delivery::Push);
    };
    let info = hosted.provider.get_repository(&hosted.repo).await?.ok_or_else(|| Error::Remote {
        message: format!("the config repo {} does not exist on {}", hosted.repo, hosted.provider.kind()),
        hint: Some("check the install record (kubectl gitops detect -o yaml) and the token's access".into()),
    })?;
    if info.can_push == Some(false) {
        return Err(Error::Remote {
            message: format!("the {} token may not push to {}", hosted.provider.kind(), hosted.repo),
            hint: Some(format!(
                "use a token with write access ({})",
                crate::config::token_hint(hosted.provider.kind(), hosted.provider.host())
            )),
        });
    }
    let pull_request = Delivery::PullRequest {
        branch: plan::pull_request_branch(verb, app, files),
        noun: hosted.provider.kind().pull_request_noun(),
        merge: args.merge,
    };
    match args.mode {
        DeliveryMode::PullRequest => return Ok(pull_request),
        DeliveryMode::Push => return Ok(Delivery::Push),
        DeliveryMode::Auto => {}
    }
    if hosted.provider.is_branch_protected(&hosted.repo, &repo.branch).await? {
        let noun = hosted.provider.kind().pull_request_noun();
        printer.progress(&format!("{} is protected: opening a {noun} instead of pushing to it", repo.branch));
        return Ok(pull_request);
    }
    Ok(Delivery::Push)
}

/// Clones the config branch into a temp dir (deleted when dropped). A branch that does not
/// exist is refused: apps go into a repo that `install` set up.
pub(crate) async fn clone(repo: &ConfigRepo) -> Result<Workspace> {
    let checkout = Workspace::clone(&repo.remote, &repo.branch).await?;
    if checkout.files().head().is_none() {
        return Err(Error::usage(
            format!("branch {} of {} is empty or does not exist", repo.branch, repo.remote.url),
            "run `kubectl gitops install` to set up the config repo, or pass --config-branch",
        ));
    }
    Ok(checkout)
}

/// The clusters to change: those named with `--cluster`, else the current cluster.
pub(crate) fn target_clusters(
    checkout: &Checkout,
    names: &[String],
    record: Option<&InstallRecord>,
) -> Result<Vec<ClusterDir>> {
    let known = layout::clusters_in(checkout)?;
    let known_names = || known.iter().map(|cluster| cluster.name.as_str()).collect::<Vec<_>>().join(", ");
    let wanted: Vec<String> = if names.is_empty() {
        let record = record.ok_or_else(|| {
            Error::usage("no cluster given and the current cluster has no install record", "pass --cluster NAME")
        })?;
        vec![record.cluster_name.clone()]
    } else {
        names.to_vec()
    };
    wanted
        .iter()
        .map(|name| {
            known.iter().find(|cluster| &cluster.name == name).cloned().ok_or_else(|| {
                Error::usage(
                    format!("unknown cluster {name:?}: the config repo has no install record for it"),
                    if known.is_empty() {
                        "install a cluster into this repo first (`kubectl gitops install`)".to_string()
                    } else {
                        format!("clusters in the repo: {}", known_names())
                    },
                )
            })
        })
        .collect()
}

/// `app add`.
pub async fn add(request: &AddRequest, target: &Target, printer: &Printer) -> Result<String> {
    let args = request;
    if args.export {
        let namespace = target.namespace.clone().unwrap_or_else(|| DEFAULT_FLUX_NAMESPACE.to_string());
        return request.spec.export(&namespace);
    }
    let context = context(target, &args.repo.for_tier(args.spec.tier), true, printer).await?;
    check_secret_ref(&request.spec, &context)?;
    let checkout = clone(context.repo()?).await?;
    let clusters = target_clusters(&checkout.files(), &args.clusters, context.record())?;
    let (spec, new_repo) = match &args.new_repo {
        Some(new) => {
            let (spec, planned) = new_repo::for_app(&context, new, &request.spec, &clusters).await?;
            (spec, Some(planned))
        }
        None => (request.spec.clone(), None),
    };
    let spec = &spec;
    let per_cluster_values = !args.clusters.is_empty();
    let build = |checkout: &Checkout| {
        add_changes(spec, &clusters, per_cluster_values, &context.namespace, &context.versions, args.update, checkout)
    };
    let files = build(&checkout.files())?;
    let cluster_list = layout::paths(&clusters);
    let message = args.delivery.message.clone().unwrap_or_else(|| {
        let verb = if files.iter().any(|file| file.path.starts_with(&spec.definition_dir()) && file.before.is_some()) {
            "Update"
        } else {
            "Add"
        };
        format!("{verb} {} {} ({}) to {cluster_list}", spec.tier.noun(), spec.name, spec.kind().word())
    });
    let (source, release) = (spec.source_kind().kind, spec.release_kind().kind);
    let change = Change {
        noun: spec.tier.noun(),
        verb: "add",
        done: "added",
        app: &spec.name,
        message,
        files,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects: vec![
            format!("{source} {}/{}", context.namespace, spec.name),
            format!("{release} {}/{}", context.namespace, spec.name),
        ],
        wait: args
            .delivery
            .wait
            .then(|| format!("wait until {release} {}/{} is Ready at the pushed commit", context.namespace, spec.name)),
        notes: Vec::new(),
        awaits: Awaits::one(&context.namespace, &spec.name, true, Some(spec.tier.layer())),
        new_repo,
        request: recorded::add_words(spec, &args.clusters, args.update),
        already_there: Some(format!(
            "{} {} is already in the config repo for {cluster_list}; nothing to change\n",
            spec.tier.noun(),
            spec.name
        )),
    };
    // A platform app is every team's: reviewed, like an upgrade.
    let delivery = match spec.tier {
        spec::Tier::Platform => reviewed(&args.delivery, &context),
        spec::Tier::App => args.delivery.clone(),
    };
    drive(&context, &delivery, change, Some(checkout), &build).await
}

/// Refuses a source read with the sync Secret (`--secret-ref flux-system`) unless it is on the
/// config repo's server (the same scheme, user, host and port): Flux hands that Secret's
/// credentials, the config repo's deploy key or token, to whatever URL the source names.
pub(crate) fn check_secret_ref(spec: &AppSpec, context: &Context) -> Result<()> {
    if spec.secret_ref.as_deref() != Some(SYNC_NAME) {
        return Ok(());
    }
    let config_url = match (context.record(), &context.repo) {
        (Some(record), _) => record.url.as_str(),
        (None, Some(repo)) => repo.remote.url.as_str(),
        (None, None) => return Err(Error::Internal("the config repo was not resolved".into())),
    };
    let source = spec.source_url();
    let on_config_server = parse_url(source)
        .and_then(|source| Ok(repo_access::same_server(&source, &parse_url(config_url)?)))
        .unwrap_or(false);
    if on_config_server {
        return Ok(());
    }
    Err(Error::usage(
        format!(
            "--secret-ref {SYNC_NAME} is the Secret Flux reads the config repo with, and {} is not on the config \
             repo's server ({}): Flux would send the config repo's credentials there",
            repo_access::redact_userinfo(source),
            repo_access::redact_userinfo(config_url)
        ),
        "create a Secret in the Flux namespace with credentials for that source, and pass its name to --secret-ref",
    ))
}

/// The delivery of a change that is reviewed (an upgrade, a platform app): without `--pr` or
/// `--auto-merge`, a pull request where the config repo has them (GitHub, GitLab); a plain git
/// server takes the commit, as `--auto-merge` does.
pub(crate) fn reviewed(delivery: &DeliverySettings, context: &Context) -> DeliverySettings {
    let mut delivery = delivery.clone();
    if delivery.mode == DeliveryMode::Auto && context.repo.as_ref().is_some_and(|repo| repo.hosted.is_some()) {
        delivery.mode = DeliveryMode::PullRequest;
    }
    delivery
}

/// The file changes of an add: the shared definition, each cluster's overlay and app list.
fn add_changes(
    spec: &AppSpec,
    clusters: &[ClusterDir],
    per_cluster_values: bool,
    namespace: &str,
    versions: &Versions,
    update: bool,
    checkout: &Checkout,
) -> Result<Vec<FileChange>> {
    let shared = if per_cluster_values { AppSpec { values: Vec::new(), ..spec.clone() } } else { spec.clone() };
    let definition_dir = spec.definition_dir();
    let mut wanted = layout::app_files(&shared, namespace, versions)?;
    let mut dirs = vec![definition_dir.clone()];
    let refuse_different = |what: &str, changes: &[FileChange]| {
        let paths = changes.iter().map(|file| file.path.as_str()).collect::<Vec<_>>().join(", ");
        Error::usage(
            format!("app {} already exists in the config repo with a different {what} ({paths})", spec.name),
            "pass --update to replace it, or use `kubectl gitops app remove` first",
        )
    };
    let existing = !plan::files_under(checkout, &definition_dir)?.is_empty();
    let definition_changes = plan::diff(checkout, &wanted, &dirs)?;
    if existing && !definition_changes.is_empty() && !update {
        return Err(refuse_different("definition", &definition_changes));
    }
    for cluster in clusters {
        let values = if per_cluster_values { spec.values.as_slice() } else { &[] };
        let overlay = layout::cluster_files(spec, cluster, namespace, values)?;
        let overlay_dir = cluster.entry_dir(spec.tier.root(), &spec.name);
        let overlay_changes = plan::diff(checkout, &overlay, std::slice::from_ref(&overlay_dir))?;
        if !update && !overlay_changes.is_empty() && !plan::files_under(checkout, &overlay_dir)?.is_empty() {
            return Err(refuse_different(&format!("setup in {}", cluster.path), &overlay_changes));
        }
        wanted.extend(overlay);
        dirs.push(overlay_dir);
        let list_path = cluster.list_file(spec.tier.root());
        let list = layout::app_list(plan::read(checkout, &list_path)?.as_deref(), &spec.name, true)?;
        wanted.insert(list_path, list);
    }
    plan::diff(checkout, &wanted, &dirs)
}

/// `app remove` (and `platform remove`: `args.tier`).
pub async fn remove(args: &RemoveRequest, target: &Target, printer: &Printer) -> Result<String> {
    let context = context(target, &args.repo.for_tier(args.tier), true, printer).await?;
    let checkout = clone(context.repo()?).await?;
    let clusters = target_clusters(&checkout.files(), &args.clusters, context.record())?;
    let root = args.tier.root();
    let build = |checkout: &Checkout| remove_listed(root, &args.name, &clusters, checkout);
    let files = build(&checkout.files())?;
    let cluster_list = layout::paths(&clusters);
    let noun = args.tier.noun();
    if files.is_empty() {
        return Err(Error::usage(
            format!("{noun} {} is not in the config repo for {cluster_list}", args.name),
            format!("`kubectl gitops {} list --repo` lists them and their clusters", args.tier.command()),
        ));
    }
    let definition_dir = format!("{root}/{}", args.name);
    let definition_goes = files.iter().any(|file| file.after.is_none() && file.path.starts_with(&definition_dir));
    let mut notes =
        vec![format!("Flux prunes the {noun}'s objects and workloads from {cluster_list} once it applies the commit")];
    if !definition_goes {
        notes.push(format!("other clusters still list {}, so its definition stays in {definition_dir}", args.name));
    }
    let change = Change {
        noun,
        verb: "remove",
        done: "removed",
        app: &args.name,
        message: args
            .delivery
            .message
            .clone()
            .unwrap_or_else(|| format!("Remove {noun} {} from {cluster_list}", args.name)),
        files,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects: vec![format!("everything labelled {}={}", spec::APP_LABEL, args.name)],
        wait: args.delivery.wait.then(|| format!("wait until Flux has pruned {}", args.name)),
        notes,
        awaits: Awaits::one(&context.namespace, &args.name, false, Some(args.tier.layer())),
        new_repo: None,
        request: recorded::remove_words(args.tier, &args.name, &args.clusters),
        already_there: None,
    };
    drive(&context, &args.delivery, change, Some(checkout), &build).await
}

/// The file changes that take `name` off the clusters' lists under `root` (`apps`, `tenants`):
/// each cluster's overlay and list entry, and the shared definition `<root>/<name>` once no
/// cluster in the repo lists it.
pub(crate) fn remove_listed(
    root: &str,
    name: &str,
    clusters: &[ClusterDir],
    checkout: &Checkout,
) -> Result<Vec<FileChange>> {
    let mut wanted = std::collections::BTreeMap::new();
    let mut dirs = Vec::new();
    for cluster in clusters {
        let list_path = cluster.list_file(root);
        if let Some(list) = plan::read(checkout, &list_path)? {
            wanted.insert(list_path, layout::app_list(Some(&list), name, false)?);
        }
        dirs.push(cluster.entry_dir(root, name));
    }
    let still_listed =
        layout::clusters_in(checkout)?.iter().filter(|cluster| !clusters.contains(cluster)).any(|cluster| {
            plan::read(checkout, &cluster.list_file(root))
                .ok()
                .flatten()
                .is_some_and(|list| layout::listed_apps(&list).iter().any(|listed| listed == name))
        });
    if !still_listed {
        dirs.push(format!("{root}/{name}"));
    }
    plan::diff(checkout, &wanted, &dirs)
}

/// `app suspend` (`suspend = true`) and `app resume`.
pub async fn suspend(args: &SuspendRequest, target: &Target, printer: &Printer) -> Result<String> {
    let suspend = args.suspend;
    let context = context(target, &args.repo, args.persist, printer).await?;
    let patches = suspend_patches(context.cluster()?, &context, &args.name, suspend).await?;
    let replan = |checkout: &Checkout| persist_changes(&args.name, &context, suspend, &patches, checkout);
    let (checkout, files) = if args.persist {
        let checkout = clone(context.repo()?).await?;
        let files = replan(&checkout.files())?;
        (Some(checkout), files)
    } else {
        (None, Vec::new())
    };
    let (verb, done, capital) =
        if suspend { ("suspend", "suspended", "Suspend") } else { ("resume", "resumed", "Resume") };
    let change = Change {
        noun: "app",
        verb,
        done,
        app: &args.name,
        message: args.delivery.message.clone().unwrap_or_else(|| {
            let cluster = context.record().map_or("the cluster", |record| record.path.as_str());
            format!("{capital} app {} in {cluster}", args.name)
        }),
        files,
        patches: patches.clone(),
        migrations: Vec::new(),
        objects: Vec::new(),
        wait: None,
        notes: if args.persist {
            Vec::new()
        } else {
            vec!["only the cluster changes; pass --persist to record it in the config repo too".to_string()]
        },
        awaits: Awaits::one(&context.namespace, &args.name, false, Some(crate::flux::bootstrap::APPS_LAYER)),
        new_repo: None,
        request: if args.persist { recorded::persist_words(&args.name, suspend) } else { Vec::new() },
        already_there: None,
    };
    drive(&context, &args.delivery, change, checkout, &replan).await
}

/// `--persist`'s file changes on `checkout`, for the app's objects the cluster holds: what a
/// recorded `app suspend|resume --persist` plans again.
pub(crate) async fn persisted(
    request: &SuspendRequest,
    context: &Context,
    checkout: &Workspace,
) -> Result<Vec<FileChange>> {
    let patches = suspend_patches(context.cluster()?, context, &request.name, request.suspend).await?;
    persist_changes(&request.name, context, request.suspend, &patches, &checkout.files())
}

/// `spec.suspend` patches for the app's release and source, at the versions the cluster serves.
async fn suspend_patches(cluster: &Cluster, context: &Context, app: &str, suspend: bool) -> Result<Vec<SuspendPatch>> {
    let mut patches = Vec::new();
    let kinds =
        [&api::KUSTOMIZATION, &api::HELM_RELEASE, &api::GIT_REPOSITORY, &api::HELM_REPOSITORY, &api::OCI_REPOSITORY];
    for kind in kinds {
        let Some(version) = context.versions.lookup(kind) else { continue };
        let resource = kind.at(version);
        let objects: Api<kube::api::DynamicObject> =
            Api::namespaced_with(cluster.client.clone(), &context.namespace, &resource);
        let found = objects.get_opt(app).await.map_err(|error| cluster.error(error))?;
        if found.is_some() {
            patches.push(SuspendPatch {
                kind,
                version: version.to_string(),
                namespace: context.namespace.clone(),
                name: app.to_string(),
                suspend,
            });
        }
    }
    if !patches.iter().any(|patch| patch.kind.group != api::GIT_REPOSITORY.group) {
        return Err(Error::usage(
            format!("no app {app} in namespace {} (no Kustomization or HelmRelease of that name)", context.namespace),
            "`kubectl gitops app list` lists the apps",
        ));
    }
    Ok(patches)
}

/// `--persist`: the current cluster's overlay patches `spec.suspend` into the app's objects (or
/// stops).
fn persist_changes(
    app: &str,
    context: &Context,
    suspend: bool,
    patches: &[SuspendPatch],
    checkout: &Checkout,
) -> Result<Vec<FileChange>> {
    let mut wanted = std::collections::BTreeMap::new();
    for cluster in &target_clusters(checkout, &[], context.record())? {
        let path = format!("{}/{}", cluster.app_dir(app), layout::KUSTOMIZATION_FILE);
        let existing = plan::read(checkout, &path)?.ok_or_else(|| {
            Error::usage(
                format!("app {app} is not in the config repo for {}", cluster.path),
                "suspend it without --persist, or add it with `kubectl gitops app add`",
            )
        })?;
        wanted.insert(path, layout::with_suspend_patches(&existing, patches, suspend)?);
    }
    plan::diff(checkout, &wanted, &[])
}

pub(crate) mod wait;

#[cfg(test)]
mod tests;
