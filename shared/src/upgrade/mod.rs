//! `kubectl gitops upgrade`: move Flux, and every manifest we generated, to a new release through
//! one reviewed change of the config repo.
//!
//! 1. [`args`]: the flags become a request; an unknown or malformed version stops here.
//! 2. [`inspect`]: read-only. The cluster (what runs, what etcd stores), the config repo and each
//!    cluster's install record; the move is checked (one line at a time, never down).
//! 3. [`preflight`]: pure, over a checkout. The new component manifests, the install record, the
//!    manifests migrated to the API versions the target serves, and what blocks.
//! 4. `--check` and `--dry-run` print; otherwise the change goes through the `app` commands'
//!    plan, delivery and git write path ([`crate::app`]): the storage migrations the new CRDs need
//!    first (the only direct cluster write), then one commit or one pull request.
//! 5. `--wait`: Flux applies the commit; the controllers run the target, the CRDs are the
//!    target's, storage is migrated to the new storage versions, and everything is Ready.

pub mod args;
mod preflight;
mod report;

use std::collections::BTreeMap;

pub use self::args::{UpgradeArgs, UpgradeRequest};
use self::preflight::{OtherRepo, describe_other_repo, other_repos, scan};
pub use self::report::Check;
use self::report::Versions;
use crate::change::layout::{self, ClusterDir};
use crate::change::{self, Change, Context, Target};
use crate::cli::OutputFormat;
use crate::error::{Error, ExitCode, Result};
use crate::flux::release::{self, FluxVersion, Move};
use crate::flux::storage::{self, StoredKind};
use crate::git::{Checkout, Workspace};
use crate::output::Printer;
use crate::record::{self, InstallRecord};

/// Everything the upgrade is planned from, read once.
struct Inspection {
    context: Context,
    checkout: Workspace,
    /// The clusters changed, each with the install record its directory holds.
    clusters: Vec<(ClusterDir, InstallRecord)>,
    /// What the current cluster runs, when the current cluster is one of them.
    running: Option<String>,
    /// The Flux CRDs of the current cluster and what they store (empty when it is not upgraded).
    stored: Vec<StoredKind>,
}

/// What an upgrade is planned from and what it would change: read once, by `--check` and by the
/// upgrade itself.
struct Prepared {
    inspection: Inspection,
    versions: Versions,
    /// The target's component manifests, by the components an install record lists.
    components: BTreeMap<Vec<String>, String>,
    repo: preflight::RepoScan,
    /// The Flux kinds whose stored objects are migrated before the upgrade.
    migrations: Vec<StoredKind>,
    /// The other repos to change first.
    others: Vec<OtherRepo>,
}

impl Prepared {
    /// Reads the cluster and the config repo, and plans the upgrade there.
    async fn read(request: &UpgradeRequest, target: &Target, printer: &Printer) -> Result<Prepared> {
        let inspection = inspect(request, target, printer).await?;
        let versions =
            versions(request.target, request.allow_skip, inspection.running.clone(), &inspection.clusters, printer)?;
        let (context, checkout) = (&inspection.context, &inspection.checkout);
        let components = target_components(request, context, checkout, &inspection.clusters, printer).await?;
        let repo = scan(&inspection.checkout.files(), &inspection.clusters, request, &components)?;
        let migrations = before_upgrade(&inspection.stored, request.target)?;
        let others = repos_to_change_first(&inspection, request.target).await?;
        Ok(Prepared { inspection, versions, components, repo, migrations, others })
    }

    /// `--check`'s report.
    fn check(&self, target: FluxVersion) -> Check {
        Check::new(&self.versions, &self.repo, &self.migrations, &self.inspection.stored, &self.others, target)
    }
}

/// `upgrade --check`'s report: the versions, and what an upgrade would change. Changes nothing.
pub async fn check(request: &UpgradeRequest, target: &Target, printer: &Printer) -> Result<Check> {
    Ok(Prepared::read(request, target, printer).await?.check(request.target))
}

/// The whole command. Returns what to print on stdout and the exit code.
pub async fn run(
    request: &UpgradeRequest,
    target: &Target,
    format: OutputFormat,
    printer: &Printer,
) -> Result<(String, ExitCode)> {
    crate::output::ensure_supported(format, crate::cli::STRUCTURED)?;
    let prepared = Prepared::read(request, target, printer).await?;
    if request.check {
        let check = prepared.check(request.target);
        let code = if check.up_to_date { ExitCode::Ok } else { ExitCode::No };
        let text = match format {
            OutputFormat::Json | OutputFormat::Yaml => {
                crate::output::render_structured(&crate::output::document(&check), format)?
            }
            _ => check.render(),
        };
        return Ok((text, code));
    }
    let Prepared { inspection, versions, components, repo, migrations, others } = prepared;
    let (components, clusters) = (&components, &inspection.clusters);
    let replan = |checkout: &Checkout| scan(checkout, clusters, request, components)?.into_files();
    if !repo.blockers.is_empty() {
        return Err(Error::usage(
            format!("the upgrade to {} needs changes it cannot make:\n{}", request.target, repo.render_blockers()),
            "rewrite those fields in the config repo, then run upgrade again (nothing was changed)",
        ));
    }
    if !repo.not_ours.is_empty() {
        return Err(Error::usage(
            format!(
                "Flux manifests kubectl-gitops did not generate use API versions {} no longer serves:\n{}",
                request.target,
                repo.render_not_ours()
            ),
            "pass --all-manifests to migrate them in the same change, or migrate them first (nothing was changed)",
        ));
    }
    let cluster_list = clusters.iter().map(|(dir, _)| dir.path.as_str()).collect::<Vec<_>>().join(", ");
    let mut notes = versions.notes();
    notes.extend(repo.notes());
    if !others.is_empty() {
        printer.warning(&format!(
            "{} other repo(s) hold Flux manifests {} no longer serves: change them first, then merge this change",
            others.len(),
            request.target
        ));
    }
    notes.extend(
        others
            .iter()
            .enumerate()
            .map(|(index, other)| format!("change first ({}): {}", index + 1, describe_other_repo(other))),
    );
    notes.extend(after_upgrade_note(&inspection, request));
    let target_text = request.target.to_string();
    let change = Change {
        noun: "Flux",
        verb: "upgrade",
        done: "pushed",
        app: &target_text,
        message: request.delivery.message.clone().unwrap_or_else(|| {
            format!("Upgrade Flux {} to {} in {cluster_list}", versions.recorded_text(), request.target)
        }),
        files: repo.files.clone(),
        patches: Vec::new(),
        migrations,
        objects: Vec::new(),
        wait: request.delivery.wait.then(|| {
            format!(
                "wait until Flux applies the commit, the controllers run {}, the CRDs are {}'s, storage is migrated \
                 to the new storage versions, and every Kustomization and HelmRelease is Ready",
                request.target, request.target
            )
        }),
        notes,
        awaits: None,
        new_repo: None,
        request: upgrade_words(request),
        already_there: Some(format!("the config repo holds Flux {} for {cluster_list} already\n", request.target)),
    };
    let context = &inspection.context;
    // An upgrade is reviewed.
    let delivery = change::reviewed(&request.delivery, context);
    let Inspection { checkout, .. } = inspection;
    let head = checkout.files().head();
    let branch = context_branch(context)?;
    let mut driven = change::drive_change(context, &delivery, change, Some(checkout), &replan).await?;
    if request.delivery.dry_run || !request.delivery.wait {
        return Ok((driven.text(printer)?, ExitCode::Ok));
    }
    let outcome = driven.outcome.clone().unwrap_or_default();
    if outcome.pull_request.is_some() {
        printer.warning("--wait waits once the pull request is merged: run `kubectl gitops upgrade --wait` then");
        return Ok((driven.text(printer)?, ExitCode::Ok));
    }
    let Some(commit) = outcome.commit.or(head) else { return Ok((driven.text(printer)?, ExitCode::Ok)) };
    let cluster = context.cluster.as_ref().ok_or_else(|| Error::Internal("no cluster to wait on".into()))?;
    wait_rollout(cluster, context, &branch, &commit, request, components, printer).await?;
    let cluster_name = clusters.first().map(|(dir, _)| dir.name.as_str()).unwrap_or_default();
    let runs = format!(
        "Flux {} runs in {cluster_name}: controllers, CRDs and stored objects at {}, everything Ready",
        request.target, request.target
    );
    driven.result.waited =
        Some(change::result::Waited { what: runs.clone(), objects: Vec::new(), ready: true, commit });
    driven.line = format!("{}{runs}\n", driven.line);
    Ok((driven.text(printer)?, ExitCode::Ok))
}

/// The repos other than the config repo to change before this one (the current cluster's view).
async fn repos_to_change_first(inspection: &Inspection, target: FluxVersion) -> Result<Vec<OtherRepo>> {
    let context = &inspection.context;
    let (Some(cluster), Some(record)) =
        (&context.cluster, context.detection.as_ref().and_then(|detection| detection.gitops.as_ref()))
    else {
        return Ok(Vec::new());
    };
    other_repos(cluster, &context.versions, target, &record.url).await
}

fn context_branch(context: &Context) -> Result<String> {
    context.repo.as_ref().map(|repo| repo.branch.clone()).ok_or_else(|| Error::Internal("no config repo".into()))
}

/// Reads the cluster, the config repo and each cluster's install record; changes nothing.
async fn inspect(request: &UpgradeRequest, target: &Target, printer: &Printer) -> Result<Inspection> {
    let context = change::context(target, &request.repo, true, printer).await?;
    let checkout =
        change::clone(context.repo.as_ref().ok_or_else(|| Error::Internal("no config repo".into()))?).await?;
    let clusters = recorded_clusters(&context, &checkout.files(), &request.clusters)?;
    let running = running_version(&context, &clusters);
    let current_upgraded = current_upgraded(&context, &clusters);
    let stored = match (&context.cluster, current_upgraded) {
        (Some(cluster), true) => storage::read(cluster).await?,
        _ => Vec::new(),
    };
    Ok(Inspection { context, checkout, clusters, running, stored })
}

/// The clusters `names` asks for (default: the current one), each with the install record its
/// directory in `checkout` holds.
fn recorded_clusters(
    context: &Context,
    checkout: &Checkout,
    names: &[String],
) -> Result<Vec<(ClusterDir, InstallRecord)>> {
    let record = context.record();
    if names.is_empty()
        && let Some(record) = record
    {
        let path = format!("{}/{}", record.path, record::FILE_NAME);
        let text = crate::plan::read(checkout, &path)?;
        if text.as_deref().and_then(layout::parse_record).is_none() {
            return Err(Error::usage(
                format!(
                    "the install record {path} in the config repo is {}",
                    if text.is_some() { "broken (not a kubectl-gitops install record)" } else { "missing" }
                ),
                "run `kubectl gitops install` with the same --url and --path to write it again (nothing was changed)",
            ));
        }
    }
    let mut clusters = Vec::new();
    for dir in change::target_clusters(checkout, names, record)? {
        let path = format!("{}/{}", dir.path, record::FILE_NAME);
        let recorded =
            crate::plan::read(checkout, &path)?.as_deref().and_then(layout::parse_record).ok_or_else(|| {
                Error::usage(
                    format!("the install record {path} is missing or broken"),
                    "run `kubectl gitops install` again",
                )
            })?;
        clusters.push((dir, recorded));
    }
    Ok(clusters)
}

/// Whether the current cluster is one of those upgraded: the live checks are of it then.
fn current_upgraded(context: &Context, clusters: &[(ClusterDir, InstallRecord)]) -> bool {
    context.record().is_some_and(|record| clusters.iter().any(|(dir, _)| dir.path == record.path))
}

/// The Flux version the current cluster runs, when it is one of those upgraded.
fn running_version(context: &Context, clusters: &[(ClusterDir, InstallRecord)]) -> Option<String> {
    current_upgraded(context, clusters)
        .then(|| context.detection.as_ref().and_then(|d| d.flux.as_ref()).and_then(|flux| flux.version.clone()))
        .flatten()
}

/// The words that record an upgrade in its pull request. The component manifests are not named:
/// `pr show` generates them again with the verified flux CLI of the target.
fn upgrade_words(request: &UpgradeRequest) -> Vec<String> {
    let mut words = vec!["upgrade".to_string(), "--flux-version".to_string(), request.target.to_string()];
    words.extend(change::recorded::cluster_words(&request.clusters));
    words.extend(request.allow_skip.then(|| "--allow-skip".to_string()));
    words.extend(request.all_manifests.then(|| "--all-manifests".to_string()));
    words
}

/// A recorded `upgrade` (`args`: its words after `upgrade`; `words`: all of them) planned again
/// on `base`. The component manifests are generated again with the verified flux CLI of the
/// target: flags that name local files are refused.
pub(crate) async fn replan(
    args: &[String],
    words: &[String],
    context: &Context,
    base: &Workspace,
    printer: &Printer,
) -> Result<change::recorded::Replanned> {
    let parsed = change::recorded::parse_args::<UpgradeArgs>(args, words)?;
    if parsed.check || parsed.components_file.is_some() || parsed.flux_bin.is_some() {
        return Err(change::recorded::unreadable(words, "it names local files or asks for no change"));
    }
    let request = parsed.request()?;
    let clusters = recorded_clusters(context, &base.files(), &request.clusters)?;
    versions(request.target, request.allow_skip, running_version(context, &clusters), &clusters, printer)?;
    let components = target_components(&request, context, base, &clusters, printer).await?;
    let files = scan(&base.files(), &clusters, &request, &components)?.into_files()?;
    Ok(change::recorded::Replanned::of("upgrade", &request.target.to_string(), files))
}

/// The target's component manifests for each controller list the clusters record: the repo's copy
/// when it is the target's already, else obtained the way install obtains them.
async fn target_components(
    request: &UpgradeRequest,
    context: &Context,
    checkout: &Workspace,
    clusters: &[(ClusterDir, InstallRecord)],
    printer: &Printer,
) -> Result<BTreeMap<Vec<String>, String>> {
    let mut components = BTreeMap::new();
    let target = request.target.to_string();
    for (dir, recorded) in clusters {
        if components.contains_key(&recorded.components) {
            continue;
        }
        let path = format!("{}/flux-system/gotk-components.yaml", dir.path);
        let repo_copy = crate::plan::read(&checkout.files(), &path)?
            .filter(|copy| crate::flux::bootstrap::parse_components_header(copy).0.as_deref() == Some(target.as_str()));
        let text = match repo_copy {
            Some(copy) if request.components_file.is_none() => copy,
            _ => {
                let wanted = crate::flux::components::Components {
                    file: request.components_file.as_deref(),
                    flux_bin: request.flux_bin.clone(),
                    allow_unpinned: request.allow_unpinned_flux,
                    deadline: request.delivery.timeout,
                    version: &target,
                    namespace: &context.namespace,
                    components: &recorded.components,
                };
                crate::flux::components::flux_components(&wanted, printer).await?
            }
        };
        check_components(&text, request.target)?;
        components.insert(recorded.components.clone(), text);
    }
    Ok(components)
}

/// The manifests are the target's, and hold CRDs.
fn check_components(text: &str, target: FluxVersion) -> Result<()> {
    let (version, _) = crate::flux::bootstrap::parse_components_header(text);
    if let Some(version) = version.filter(|version| *version != target.to_string()) {
        return Err(Error::usage(
            format!("the component manifests are Flux {version}, not {target}"),
            format!("pass --components-file with the output of `flux install --export` of {target}"),
        ));
    }
    if !text.contains("kind: CustomResourceDefinition") {
        return Err(Error::usage(
            "the component manifests contain no CustomResourceDefinition",
            "pass the full output of `flux install --export` as --components-file",
        ));
    }
    Ok(())
}

/// The versions involved, checked: no downgrade, no skipped line without `--allow-skip`.
fn versions(
    target: FluxVersion,
    allow_skip: bool,
    running: Option<String>,
    clusters: &[(ClusterDir, InstallRecord)],
    printer: &Printer,
) -> Result<Versions> {
    let mut versions = Versions::new(target, running);
    for (dir, recorded) in clusters {
        let parsed = recorded.flux_version.parse::<FluxVersion>().map_err(|_| {
            Error::usage(
                format!(
                    "the install record of {} names Flux {:?}, which is not a version",
                    dir.path, recorded.flux_version
                ),
                format!("fix fluxVersion in {}/{}", dir.path, record::FILE_NAME),
            )
        })?;
        versions.recorded.push((dir.path.clone(), parsed));
    }
    for from in versions.sources() {
        match release::classify(from, target) {
            Move::Downgrade => {
                return Err(Error::usage(
                    format!("Flux {from} runs or is recorded, and {} is older: downgrades are refused", target),
                    "pass --version with a release at or above the current one (nothing was changed)",
                ));
            }
            Move::Skip { lines } if !allow_skip => {
                return Err(Error::usage(
                    format!(
                        "{from} to {} skips {} release line(s); Flux supports upgrading one line at a time",
                        target,
                        lines.saturating_sub(1)
                    ),
                    format!(
                        "upgrade to the latest v{}.{}.x first, or pass --allow-skip to move at once (nothing was changed)",
                        from.major,
                        from.minor + 1
                    ),
                ));
            }
            Move::Skip { .. } => printer.warning(&format!(
                "{from} to {} skips a release line (--allow-skip): read the release notes of each line in between",
                target
            )),
            Move::UpToDate | Move::Patch | Move::NextMinor => {}
        }
    }
    if let Some(disagreement) = versions.disagreement() {
        printer.warning(&disagreement);
    }
    Ok(versions)
}

/// The storage migrations the upgrade needs before Flux applies the target's CRDs: kinds whose
/// objects are stored or managed at a version the target no longer serves.
fn before_upgrade(stored: &[StoredKind], target: FluxVersion) -> Result<Vec<StoredKind>> {
    let mut needed = Vec::new();
    for kind in stored {
        let dropped = |version: &String| !release::serves(target, &kind.group, version);
        // Stored at a dropped version, or served at one and some object is managed at another
        // version than the storage one (kustomize-controller applied it at the old version).
        let stored_dropped = kind.stored.iter().any(dropped);
        let managed_dropped = kind.served.iter().any(dropped) && !kind.stale_objects.is_empty();
        if !stored_dropped && !managed_dropped {
            continue;
        }
        if !release::serves(target, &kind.group, &kind.storage) {
            return Err(Error::usage(
                format!(
                    "{} are stored at {}/{}, which Flux {target} no longer serves, and this Flux has no newer \
                     storage version to move them to",
                    kind.kind, kind.group, kind.storage
                ),
                "upgrade one release line at a time",
            ));
        }
        needed.push(kind.clone());
    }
    Ok(needed)
}

/// Says what `--wait` adds, when it is not asked for.
fn after_upgrade_note(inspection: &Inspection, request: &UpgradeRequest) -> Option<String> {
    (!request.delivery.wait && inspection.context.cluster.is_some()).then(|| {
        "once Flux has applied the change, `kubectl gitops upgrade --wait` waits for the rollout and migrates \
         storage to the new storage versions"
            .to_string()
    })
}

/// `--wait`: Flux applied `commit`; the controllers run the target; the CRDs are the target's;
/// storage moves to the new storage versions; every Kustomization and HelmRelease is Ready.
async fn wait_rollout(
    cluster: &crate::cluster::Cluster,
    context: &Context,
    branch: &str,
    commit: &str,
    request: &UpgradeRequest,
    components: &BTreeMap<Vec<String>, String>,
    printer: &Printer,
) -> Result<()> {
    let timeout = request.delivery.timeout;
    let mut revisions = crate::change::sync_wait::Revisions::sync_only(branch, commit);
    if let Ok(repo) = context.repo() {
        revisions = revisions.or_later_of(&repo.remote);
    }
    // The commit is pushed or merged: Flux fetches it now rather than at the next interval.
    crate::change::sync_wait::fetch_now(cluster, &context.namespace, printer).await;
    crate::change::sync_wait::until_synced(cluster, &context.namespace, &revisions, false, timeout, printer).await?;
    let texts: Vec<&String> = components.values().collect();
    preflight::check_rollout(cluster, &context.namespace, request.target, &texts).await?;
    printer.done(&format!("the Flux controllers run {} and the CRDs are its own", request.target));
    for kind in storage::read(cluster).await?.iter().filter(|kind| kind.needs_migration()) {
        printer.step(&kind.describe());
        storage::migrate(cluster, kind).await?;
    }
    let view = crate::readers::View {
        format: OutputFormat::Table,
        all_namespaces: true,
        headers: true,
        failed_only: false,
        cluster_only: false,
        style: printer.stdout_style(),
    };
    let wait = crate::readers::WaitRequest {
        limits: crate::readers::Limits { timeout, grace_period: crate::timeouts::GRACE_PERIOD },
        revision: Some(commit.to_string()),
    };
    crate::readers::wait_cluster(cluster.clone(), &crate::readers::Scope::All, None, view, &wait, *printer)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests;
