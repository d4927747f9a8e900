//! `kubectl gitops tenant`: teams connected to namespaces through the config repo
//! (docs/tenants.md). A tenant is a directory of the config repo (see [`layout`]) that Flux
//! applies: the team's namespaces, the ServiceAccount Flux impersonates for it and what that
//! account may do there, and the team's own repo synced into each namespace as that account.
//!
//! `add` and `remove` run like `app add|remove` and through the same driver: the flags become a
//! request (bad input stops before any I/O), the context is resolved read-only, the change is
//! planned against a clone of the config repo, and `--dry-run` prints the plan that execution
//! would consume (one commit or one pull request, re-planned on a refused push).

pub mod args;
pub mod layout;
mod list;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;

pub use self::args::{LIST_FORMATS, TenantAddArgs, TenantListArgs, TenantRemoveArgs};
use self::args::{TeamRepo, TenantAddRequest, TenantRemoveRequest};
use self::layout::{Inputs, TENANT_LABEL, TENANTS_DIR};
pub use self::list::{TenantRow, list};
use crate::change::layout::{self as repo_layout, ClusterDir, KUSTOMIZATION_FILE};
use crate::change::plan::FileChange;
use crate::change::recorded::{self, Replanned};
use crate::change::shared_secret::{NewSource, refuse_shared_secret};
use crate::change::{self, Awaits, Change, Context, Target, clone, drive, target_clusters};
use crate::error::{Error, Result};
use crate::flux::api::{self, Versions};
use crate::flux::bootstrap::PLATFORM_LAYER;
use crate::flux::objects::GitRef;
use crate::git::{Checkout, Workspace};
use crate::output::Printer;
use crate::plan;

/// `tenant add`.
pub async fn add(request: &TenantAddRequest, target: &Target, printer: &Printer) -> Result<String> {
    if request.export {
        change::exports_yaml(printer)?;
        return export(request);
    }
    let context = change::context(target, &request.config.in_platform_repo(), true, printer).await?;
    let checkout = clone(context.repo()?).await?;
    let (adopted, clusters) = add_inputs(request, &context, &checkout).await?;
    let inputs = Inputs { versions: &context.versions, adopted: &adopted };
    let build = |checkout: &Checkout| add_changes(request, &inputs, &clusters, checkout);
    let files = build(&checkout.files())?;
    let cluster_list = repo_layout::paths(&clusters);
    let namespaces = request.namespaces.join(", ");
    let message = request.delivery.message.clone().unwrap_or_else(|| {
        let verb = if files.iter().any(|file| file.before.is_some() && file.path.starts_with(TENANTS_DIR)) {
            "Update"
        } else {
            "Add"
        };
        format!("{verb} tenant {} ({namespaces}) to {cluster_list}", request.name)
    });
    let mut objects: Vec<String> = request
        .namespaces
        .iter()
        .map(|namespace| {
            format!(
                "Namespace {namespace}, ServiceAccount {namespace}/{}, RoleBinding {namespace}/{}-reconciler (ClusterRole {})",
                request.service_account, request.name, request.role
            )
        })
        .collect();
    let synced: Vec<(String, String)> = match &request.repo {
        Some(_) => request.namespaces.iter().map(|namespace| (namespace.clone(), request.name.clone())).collect(),
        None => Vec::new(),
    };
    objects.extend(synced.iter().map(|(namespace, name)| format!("GitRepository + Kustomization {namespace}/{name}")));
    let mut notes: Vec<String> = adopted
        .iter()
        .map(|namespace| format!("namespace {namespace} exists already: it is kept when the tenant is removed"))
        .collect();
    if request.lockdown {
        notes.push(
            "lockdown: the controllers' Deployments are patched; apps in the Flux namespace run as the controllers' ServiceAccounts"
                .to_string(),
        );
    }
    let change = Change {
        noun: "tenant",
        verb: "add",
        done: "added",
        app: &request.name,
        message,
        files,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects,
        wait: request.delivery.wait.then(|| match synced.is_empty() {
            true => format!("wait until the cluster has applied the commit ({namespaces})"),
            false => format!("wait until Kustomization {} is Ready in {namespaces}", request.name),
        }),
        notes,
        awaits: Some(Awaits { objects: synced, ready: true, layer: Some(crate::flux::bootstrap::TENANTS_LAYER) }),
        new_repo: None,
        request: add_words(request),
        already_there: Some(format!(
            "tenant {} is already in the config repo for {cluster_list}; nothing to change\n",
            request.name
        )),
    };
    drive(&context, &request.delivery, change, Some(checkout), &build).await
}

/// What an add is planned from besides its flags, checked: the team's namespaces the cluster
/// holds already (adopted), and the clusters `checkout` has of those asked for.
async fn add_inputs(
    request: &TenantAddRequest,
    context: &Context,
    checkout: &Workspace,
) -> Result<(Vec<String>, Vec<ClusterDir>)> {
    refuse_reserved(request, &context.namespace)?;
    if request.lockdown && context.repo()?.platform {
        return Err(Error::usage(
            "--lockdown changes the config repo's flux-system, and this cluster keeps its tenants in its platform repo",
            "one plan writes one repository: add the tenant without --lockdown, and the lockdown's patches to the \
             config repo by hand (docs/tenants.md lists them)",
        ));
    }
    if let Some(TeamRepo { url, secret_ref: Some(secret), .. }) = &request.repo {
        for namespace in &request.namespaces {
            let source = NewSource {
                kind: &api::GIT_REPOSITORY,
                name: &request.name,
                namespace,
                url,
                secret,
                url_flag: "--repo",
            };
            refuse_shared_secret(&source, context).await?;
        }
    }
    let adopted = existing_namespaces(context, request).await?;
    Ok((adopted, target_clusters(&checkout.files(), &request.clusters, context.record())?))
}

/// `tenant add --export`: the team's objects as the config repo would get them (`rbac.yaml`, then
/// `sync.yaml` with a team repo), at the API versions this build pins, with no cluster and no repo.
pub fn export(request: &TenantAddRequest) -> Result<String> {
    let versions = Versions::pinned();
    let files = layout::tenant_files(request, &Inputs { versions: &versions, adopted: &[] })?;
    let dir = layout::tenant_dir(&request.name);
    Ok(["rbac.yaml", "sync.yaml"]
        .iter()
        .filter_map(|name| files.get(&format!("{dir}/{name}")))
        .map(String::as_str)
        .collect())
}

/// The words that record a `tenant add` in its pull request, every flag resolved.
fn add_words(request: &TenantAddRequest) -> Vec<String> {
    let mut words = vec!["tenant".to_string(), "add".to_string(), request.name.clone()];
    let mut flag = |name: &str, value: &str| words.extend([format!("--{name}"), value.to_string()]);
    for namespace in &request.namespaces {
        flag("with-namespace", namespace);
    }
    flag("cluster-role", &request.role);
    flag("service-account", &request.service_account);
    if let Some(repo) = &request.repo {
        flag("repo", &repo.url);
        if let GitRef::Branch(branch) = &repo.git_ref {
            flag("branch", branch);
        }
        flag("path", &repo.path);
        if let Some(secret) = &repo.secret_ref {
            flag("secret-ref", secret);
        }
    }
    flag("interval", &crate::duration::format(request.interval));
    words.extend(recorded::cluster_words(&request.clusters));
    words.extend((request.role == args::CLUSTER_ADMIN).then(|| "--allow-cluster-admin".to_string()));
    words.extend(request.lockdown.then(|| "--lockdown".to_string()));
    words
}

/// A recorded `tenant add|remove` (`words`, all of them) planned again on `base`.
pub(crate) async fn replan(words: &[String], context: &Context, base: &Workspace) -> Result<Replanned> {
    match words {
        [_, verb, rest @ ..] if verb == "add" => {
            let request = recorded::parse_args::<TenantAddArgs>(rest, words)?.request()?;
            let (adopted, clusters) = add_inputs(&request, context, base).await?;
            let inputs = Inputs { versions: &context.versions, adopted: &adopted };
            Ok(Replanned::of("add", &request.name, add_changes(&request, &inputs, &clusters, &base.files())?))
        }
        [_, verb, rest @ ..] if verb == "remove" => {
            let request = recorded::parse_args::<TenantRemoveArgs>(rest, words)?.request()?;
            let base = base.files();
            let clusters = target_clusters(&base, &request.clusters, context.record())?;
            let files = change::layout::remove_listed(TENANTS_DIR, &request.name, &clusters, &base)?;
            Ok(Replanned::of("remove", &request.name, files))
        }
        _ => Err(recorded::unreadable(words, "it is not tenant add or remove")),
    }
}

/// The words that record a `tenant remove` in its pull request.
fn remove_words(request: &TenantRemoveRequest) -> Vec<String> {
    let mut words = vec!["tenant".to_string(), "remove".to_string(), request.name.clone()];
    words.extend(recorded::cluster_words(&request.clusters));
    words
}

/// The file changes of an add: the team's definition, each cluster's overlay and tenant list,
/// and with `--lockdown` the cluster's Flux patches.
fn add_changes(
    request: &TenantAddRequest,
    inputs: &Inputs<'_>,
    clusters: &[ClusterDir],
    checkout: &Checkout,
) -> Result<Vec<FileChange>> {
    let owners = layout::namespace_owners(checkout)?;
    refuse_owned(
        request,
        owners.iter().map(|(namespace, team)| (namespace.as_str(), team.as_str())),
        "the config repo",
    )?;
    let definition_dir = layout::tenant_dir(&request.name);
    let mut wanted = layout::tenant_files(request, inputs)?;
    let mut dirs = vec![definition_dir];
    for cluster in clusters {
        wanted.extend(layout::cluster_files(&request.name, cluster)?);
        dirs.push(cluster.entry_dir(TENANTS_DIR, &request.name));
        let list_path = cluster.list_file(TENANTS_DIR);
        let list = repo_layout::app_list(plan::read(checkout, &list_path)?.as_deref(), &request.name, true)?;
        wanted.insert(list_path, list);
        if request.lockdown {
            lock_down(cluster, checkout, &mut wanted)?;
        }
    }
    plan::diff(checkout, &wanted, &dirs)
}

/// `--lockdown`: the Flux patches of `<cluster>/flux-system/kustomization.yaml`, and the layers,
/// components, platform services and apps running as the controllers' ServiceAccounts (through
/// the root `<cluster>/kustomization.yaml`, so a directory laid out before the layers is refused).
fn lock_down(cluster: &ClusterDir, checkout: &Checkout, wanted: &mut BTreeMap<String, String>) -> Result<()> {
    let flux_system = format!("{}/{}/{KUSTOMIZATION_FILE}", cluster.path, crate::flux::bootstrap::SYNC_NAME);
    let text = plan::read(checkout, &flux_system)?.ok_or_else(|| {
        Error::usage(
            format!("{flux_system} is not in the config repo, so there is nothing to lock down"),
            "install the cluster with `kubectl gitops install` first, or leave out --lockdown",
        )
    })?;
    wanted.insert(flux_system, layout::with_lockdown(&text)?);
    let root = format!("{}/{KUSTOMIZATION_FILE}", cluster.path);
    let layered = plan::read(checkout, &format!("{}/{}", cluster.path, PLATFORM_LAYER.file()))?.is_some();
    let root_text = plan::read(checkout, &root)?.filter(|_| layered).ok_or_else(|| {
        Error::usage(
            format!("{} is not laid out in the platform, apps and tenants layers, which --lockdown runs as Flux's own accounts", cluster.path),
            "run `kubectl gitops install --layers` first (docs/layout.md), then --lockdown",
        )
    })?;
    wanted.insert(root, layout::with_layer_accounts(&root_text)?);
    Ok(())
}

/// Refuses the Flux namespace and Kubernetes' own: an admin there could run anything as the
/// controllers, or as the cluster itself.
fn refuse_reserved(request: &TenantAddRequest, flux_namespace: &str) -> Result<()> {
    let reserved = |namespace: &str| namespace == flux_namespace || namespace.starts_with("kube-");
    match request.namespaces.iter().find(|namespace| reserved(namespace)) {
        Some(namespace) => Err(Error::usage(
            format!("namespace {namespace} cannot be a tenant's: it belongs to Flux or to Kubernetes"),
            "give the team namespaces of its own",
        )),
        None => Ok(()),
    }
}

/// Refuses namespaces that another tenant owns, as `where_` tells.
fn refuse_owned<'a>(
    request: &TenantAddRequest,
    owners: impl IntoIterator<Item = (&'a str, &'a str)>,
    where_: &str,
) -> Result<()> {
    for (namespace, team) in owners {
        if team != request.name && request.namespaces.iter().any(|wanted| wanted == namespace) {
            return Err(Error::usage(
                format!("namespace {namespace} already belongs to tenant {team} (in {where_})"),
                format!(
                    "pick another namespace, or remove it from {team} first (`kubectl gitops tenant remove {team}`)"
                ),
            ));
        }
    }
    Ok(())
}

/// The team's namespaces that exist in the cluster and belong to no tenant (they are adopted,
/// and kept on removal); refuses one that another tenant owns there.
async fn existing_namespaces(context: &Context, request: &TenantAddRequest) -> Result<Vec<String>> {
    let Some(cluster) = &context.cluster else { return Ok(Vec::new()) };
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let mut adopted = Vec::new();
    for name in &request.namespaces {
        let found = match namespaces.get_opt(name).await {
            Ok(found) => found,
            Err(error) => {
                context.printer.warning(&format!(
                    "could not read namespace {name}, so whether it exists is not known: {}",
                    crate::diagnostic::describe(&error)
                ));
                continue;
            }
        };
        let Some(found) = found else { continue };
        match found.metadata.labels.as_ref().and_then(|labels| labels.get(TENANT_LABEL)) {
            Some(team) => refuse_owned(request, [(name.as_str(), team.as_str())], "the cluster")?,
            None => adopted.push(name.clone()),
        }
    }
    Ok(adopted)
}

/// `tenant remove`.
pub async fn remove(request: &TenantRemoveRequest, target: &Target, printer: &Printer) -> Result<String> {
    let target = Target { namespace: None, ..target.clone() };
    let context = change::context(&target, &request.config.in_platform_repo(), true, printer).await?;
    let checkout = clone(context.repo()?).await?;
    let clusters = target_clusters(&checkout.files(), &request.clusters, context.record())?;
    let build = |checkout: &Checkout| change::layout::remove_listed(TENANTS_DIR, &request.name, &clusters, checkout);
    let files = build(&checkout.files())?;
    let cluster_list = repo_layout::paths(&clusters);
    if files.is_empty() {
        return Err(Error::usage(
            format!("tenant {} is not in the config repo for {cluster_list}", request.name),
            "`kubectl gitops tenant list` lists the tenants",
        ));
    }
    // What the team syncs, read before the files go: its Kustomizations are waited on to go.
    let owners = layout::namespace_owners(&checkout.files())?;
    let namespaces: Vec<String> =
        owners.iter().filter(|(_, team)| **team == request.name).map(|(namespace, _)| namespace.clone()).collect();
    let synced: Vec<(String, String)> =
        namespaces.iter().map(|namespace| (namespace.clone(), request.name.clone())).collect();
    let change = Change {
        noun: "tenant",
        verb: "remove",
        done: "removed",
        app: &request.name,
        message: request
            .delivery
            .message
            .clone()
            .unwrap_or_else(|| format!("Remove tenant {} from {cluster_list}", request.name)),
        files,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects: vec![format!("everything labelled {TENANT_LABEL}={}", request.name)],
        wait: request.delivery.wait.then(|| format!("wait until Flux has pruned tenant {}", request.name)),
        notes: vec![format!(
            "Flux prunes the namespaces it created for {} ({}) and what the team deployed into them",
            request.name,
            namespaces.join(", ")
        )],
        awaits: Some(Awaits { objects: synced, ready: false, layer: Some(crate::flux::bootstrap::TENANTS_LAYER) }),
        new_repo: None,
        request: remove_words(request),
        already_there: None,
    };
    drive(&context, &request.delivery, change, Some(checkout), &build).await
}

#[cfg(test)]
mod tests;
