//! `kubectl gitops app` (and `platform`): add, list, remove, suspend and resume apps in the config
//! repo. Each changing subcommand describes its change and hands it to the change engine
//! ([`crate::change`]):
//! 1. the flags are resolved into a request ([`settings`]; the app, plain data
//!    ([`definition::AppDefinition`]), checked by [`spec::AppSpec::from_definition`]):
//!    bad input stops here;
//! 2. the engine resolves the context ([`crate::change::context`]);
//! 3. the app's file changes are computed on a clone of the config branch ([`layout`]) and handed
//!    over as a [`Change`], which the engine plans, prints for `--dry-run` or delivers, and waits for.

pub mod args;
pub mod chart;
pub mod definition;
pub mod layout;
mod list;
pub mod recorded;
pub(crate) mod requests;
pub mod rollback;
pub mod settings;
pub mod spec;

use kube::api::Api;

pub use self::args::{AddArgs, ListArgs, RemoveArgs, SuspendArgs};
pub use self::list::{AppRow, list, run_list};
pub use self::rollback::{RollbackArgs, rollback};
pub use self::settings::ListRequest;
use self::settings::{AddRequest, RemoveRequest, SuspendRequest};
use self::spec::AppSpec;
use crate::change::layout::{self as repo_layout, ClusterDir, SuspendPatch, remove_listed};
use crate::change::plan::FileChange;
use crate::change::shared_secret::{NewSource, refuse_shared_secret};
use crate::change::{Awaits, Change, Context, Target, clone, context, drive, new_repo, reviewed, target_clusters};
use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux::api::{self, Versions};
use crate::flux::bootstrap::SYNC_NAME;
use crate::git::{Checkout, Workspace};
use crate::output::Printer;
use crate::plan;
use crate::repo_access::{self, parse_url};

/// `app add`.
pub async fn add(request: &AddRequest, target: &Target, printer: &Printer) -> Result<String> {
    let args = request;
    if args.export {
        crate::change::exports_yaml(printer)?;
        let namespace = match &target.namespace {
            Some(namespace) => namespace.clone(),
            None => crate::cluster::default_flux_namespace()?,
        };
        return request.spec.export(&namespace);
    }
    let context =
        context(target, &args.repo.for_platform(args.spec.tier == spec::Tier::Platform), true, printer).await?;
    check_secret_ref(&request.spec, &context)?;
    if let Some(secret) = request.spec.secret_ref.as_deref() {
        let source = NewSource {
            kind: request.spec.source_kind(),
            name: &request.spec.name,
            namespace: &context.namespace,
            url: request.spec.source_url(),
            secret,
            url_flag: "--url",
        };
        refuse_shared_secret(&source, &context).await?;
    }
    let checkout = clone(context.repo()?).await?;
    let clusters = target_clusters(&checkout.files(), &args.clusters, context.record())?;
    let (spec, new_repo) = match &args.new_repo {
        Some(new) => {
            let planned = new_repo::for_app(&context, new, &request.spec.name, &clusters).await?;
            let spec = request.spec.from_new_repo(
                planned.url.clone(),
                planned.plan.branch.clone(),
                planned.secret_ref.clone(),
            );
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
    let cluster_list = repo_layout::paths(&clusters);
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
        let list = repo_layout::app_list(plan::read(checkout, &list_path)?.as_deref(), &spec.name, true)?;
        wanted.insert(list_path, list);
    }
    plan::diff(checkout, &wanted, &dirs)
}

/// `app remove` (and `platform remove`: `args.tier`).
pub async fn remove(args: &RemoveRequest, target: &Target, printer: &Printer) -> Result<String> {
    let context = context(target, &args.repo.for_platform(args.tier == spec::Tier::Platform), true, printer).await?;
    let checkout = clone(context.repo()?).await?;
    let clusters = target_clusters(&checkout.files(), &args.clusters, context.record())?;
    let root = args.tier.root();
    let build = |checkout: &Checkout| remove_listed(root, &args.name, &clusters, checkout);
    let files = build(&checkout.files())?;
    let cluster_list = repo_layout::paths(&clusters);
    let noun = args.tier.noun();
    if files.is_empty() {
        return Err(Error::usage(
            format!("{noun} {} is not in the config repo for {cluster_list}", args.name),
            format!("`kubectl gitops {} list --in-repo` lists them and their clusters", args.tier.command()),
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
        let path = format!("{}/{}", cluster.app_dir(app), repo_layout::KUSTOMIZATION_FILE);
        let existing = plan::read(checkout, &path)?.ok_or_else(|| {
            Error::usage(
                format!("app {app} is not in the config repo for {}", cluster.path),
                "suspend it without --persist, or add it with `kubectl gitops app add`",
            )
        })?;
        wanted.insert(path, repo_layout::with_suspend_patches(&existing, patches, suspend)?);
    }
    plan::diff(checkout, &wanted, &[])
}

#[cfg(test)]
mod tests;
