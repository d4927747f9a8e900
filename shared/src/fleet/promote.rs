//! `kubectl gitops promote APP --from ENV --to ENV` (docs/fleet.md): what one cluster runs of an
//! app, carried to another cluster's directory in the config repo. The environments are the fleet
//! file's; the version (a chart version or a source's tag, [`Carried`], and the images a
//! Kustomization overrides) is what the source cluster runs and is Ready at (read from it, not
//! from a file); it is written as a patch in the target cluster's overlay, through the change engine (one commit or pull request, `--dry-run`,
//! `--preview`, `--wait` on the target cluster).

use clap::Args;
use serde_json::{Value, json};

use super::carried::{Carried, Running};
use super::images::{self, Image};
use crate::change::fleet::{FILE_NAME, FleetEntry, FleetFile};
use crate::change::layout::{APPS_DIR, ClusterDir, KUSTOMIZATION_FILE};
use crate::change::recorded::{self, Replanned};
use crate::change::{self, Awaits, Change, DeliverySettings, RepoSettings, Target, drive};
use crate::cli::{DeliveryArgs, GlobalArgs, RepoArgs};
use crate::cluster::{Cluster, Connection};
use crate::error::{Error, Result};
use crate::flux::api::HELM_RELEASE;
use crate::git::Checkout;
use crate::output::Printer;
use crate::plan::FileChange;

/// `kubectl gitops promote APP --from ENV --to ENV`.
#[derive(Debug, Clone, Args)]
pub struct PromoteArgs {
    /// The app: a HelmRelease `app add` made.
    pub name: String,

    /// The environment (or cluster name) of fleet.yaml whose version is promoted.
    #[arg(long, value_name = "ENV", help_heading = "Promote")]
    pub from: String,

    /// Where to: the deployment (app rollback) or the environment (promote) that is the target.
    ///
    /// The environment (or cluster name) of fleet.yaml that gets the version.
    #[arg(long, value_name = "TARGET", help_heading = "Promote")]
    pub to: String,

    /// Promote only this version (chart or tag): refused unless --from runs it and is Ready at it.
    ///
    /// The pull request of a promotion records the version it read from --from's cluster this
    /// way, so that `pr show` plans exactly that version again.
    #[arg(long, value_name = "VERSION", help_heading = "Promote")]
    pub expect_version: Option<String>,

    /// Promote only with these image overrides (NAME[=NEW_NAME][:TAG][@DIGEST], repeated).
    ///
    /// Refused unless --from's Kustomization of the app overrides exactly these images
    /// (`spec.images`) and has applied them. A promotion's pull request records the images it
    /// read this way.
    #[arg(long = "expect-image", value_name = "IMAGE", help_heading = "Promote")]
    pub expect_images: Vec<String>,

    /// Carry --from's own values files too, replacing --to's.
    ///
    /// The values files of --from's overlay of the app (`<cluster>/apps/<app>/values/`, those
    /// `app add --values --cluster-name` wrote) replace --to's, with the ConfigMap and
    /// `valuesFrom` entries that read them. The values the clusters share do not move.
    #[arg(long, help_heading = "Promote")]
    pub with_values: bool,

    #[command(flatten)]
    pub config: RepoArgs,

    #[command(flatten)]
    pub delivery: DeliveryArgs,
}

/// `promote`, resolved.
#[derive(Debug, Clone)]
pub struct PromoteRequest {
    pub name: String,
    pub from: String,
    pub to: String,
    pub expect_version: Option<String>,
    /// Sorted, as [`Carried::running`] reads them.
    pub expect_images: Vec<Image>,
    pub with_values: bool,
    pub config: RepoSettings,
    pub delivery: DeliverySettings,
}

impl PromoteArgs {
    /// Checks every flag.
    pub fn request(&self, global: &GlobalArgs) -> Result<PromoteRequest> {
        let name = crate::names::validate_name(&self.name, "the app")?;
        if global.context.is_some() {
            return Err(Error::usage(
                "promote reaches each cluster through the context fleet.yaml names; --context is not taken",
                "name the environments with --from and --to (fleet.yaml maps them to contexts)",
            ));
        }
        if self.from == self.to {
            return Err(Error::usage(
                format!("--from and --to are both {}", self.from),
                "promote between two environments",
            ));
        }
        Ok(PromoteRequest {
            name,
            from: self.from.clone(),
            to: self.to.clone(),
            expect_version: self.expect_version.as_deref().map(one_version).transpose()?,
            expect_images: expected_images(&self.expect_images)?,
            with_values: self.with_values,
            config: self.config.settings()?,
            delivery: self.delivery.settings()?,
        })
    }
}

/// `promote`: the line that says what was done (or the plan, with `--dry-run`).
pub async fn promote(request: &PromoteRequest, target: &Target, printer: &Printer) -> Result<String> {
    let here = change::context(target, &request.config, true, printer).await?;
    let checkout = change::clone(here.repo()?).await?;
    let (from, to) = {
        let files = checkout.files();
        let fleet = read_fleet(&files)?;
        (environment(&fleet, &request.from)?, environment(&fleet, &request.to)?)
    };
    let namespace = here.namespace.clone();
    let carried = Carried::of_definition(&checkout.files(), &request.name)?;
    let noun = carried.noun();
    let running = running_version(target, &from, &namespace, &request.name, carried, printer).await?;
    let running = checked_running(running, &from.name, noun, &request.name)?;
    let version = running.describe(noun);
    if let Some(expected) =
        request.expect_version.as_ref().filter(|expected| running.version.as_ref() != Some(*expected))
    {
        return Err(Error::Negative {
            message: format!("{} runs {version} of {}, not {expected}", from.name, request.name),
            hint: Some("promote what it runs (leave out --expect-version), or wait until it runs that version".into()),
        });
    }
    if !request.expect_images.is_empty() && request.expect_images != running.images {
        let expected = images::listed(&request.expect_images);
        return Err(Error::Negative {
            message: format!("{} runs {version} of {}, not images {expected}", from.name, request.name),
            hint: Some("promote what it runs (leave out --expect-image), or wait until it runs those images".into()),
        });
    }
    let connection = Connection { context: to.context.clone(), ..target.connection.clone() };
    let context = change::context(&Target { connection, namespace: None }, &request.config, true, printer).await?;
    same_cluster(&to, context.detection.as_ref().and_then(|detection| detection.gitops.as_ref()))?;
    let promotion = Promotion {
        name: &request.name,
        carried,
        running: &running,
        from: cluster_dir(&from),
        to: cluster_dir(&to),
        namespace: &namespace,
        with_values: request.with_values,
    };
    let build = |checkout: &Checkout| promotion.files(checkout);
    let files = build(&checkout.files())?;
    let values = if request.with_values { format!(" and {}'s values", from.name) } else { String::new() };
    let change = Change {
        noun: "app",
        verb: "promote",
        done: "promoted",
        app: &request.name,
        message: request.delivery.message.clone().unwrap_or_else(|| {
            format!("Promote {} ({version}) from {} to {}", request.name, from.environment, to.environment)
        }),
        files,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects: vec![format!(
            "{} {namespace}/{} in {} ({}): {version}, as {} runs it{values}",
            patched_kinds(carried, &running),
            request.name,
            to.name,
            to.environment,
            from.name
        )],
        wait: request.delivery.wait.then(|| {
            format!("wait until {} {namespace}/{} is Ready in {}", carried.release().kind, request.name, to.name)
        }),
        notes: Vec::new(),
        awaits: Awaits::one(&namespace, &request.name, true, Some(crate::flux::bootstrap::APPS_LAYER)),
        new_repo: None,
        request: promote_words(request, &running),
        already_there: Some(format!(
            "{} runs {version} of {}{values} already; nothing to change\n",
            to.name, request.name
        )),
    };
    drive(&context, &request.delivery, change, Some(checkout), &build).await
}

/// The kinds a promotion patches: the one that holds the version, and the Kustomization when it
/// carries images.
fn patched_kinds(carried: Carried, running: &Running) -> String {
    let version = running.version.is_some().then_some(carried.patched().kind);
    let images = (!running.images.is_empty()).then_some(crate::flux::api::KUSTOMIZATION.kind);
    version.into_iter().chain(images).collect::<Vec<_>>().join(" and ")
}

/// The words that record a promotion in its pull request: with the version and images read from
/// the source cluster, which a reviewer's `pr show` plans again without asking that cluster.
fn promote_words(request: &PromoteRequest, running: &Running) -> Vec<String> {
    let mut flags = vec![("--from", request.from.clone()), ("--to", request.to.clone())];
    flags.extend(running.version.iter().map(|version| ("--expect-version", version.clone())));
    flags.extend(running.images.iter().map(|image| ("--expect-image", image.to_string())));
    let flags = flags.into_iter().flat_map(|(flag, value)| [flag.to_string(), value]);
    let values = request.with_values.then(|| "--with-values".to_string());
    ["promote".to_string(), request.name.clone()].into_iter().chain(flags).chain(values).collect()
}

/// A recorded `promote` (`words`, all of them) planned again on `base`: the version it records
/// written into the target environment's overlay (the source cluster was asked when it was
/// opened; its answer is in the words, and the reviewer sees it there).
pub(crate) fn replan(words: &[String], namespace: &str, base: &Checkout) -> Result<Replanned> {
    let args = recorded::parse_args::<PromoteArgs>(words.get(1..).unwrap_or_default(), words)?;
    let name = crate::names::validate_name(&args.name, "the app")?;
    let running = Running {
        version: args.expect_version.as_deref().map(one_version).transpose()?,
        images: expected_images(&args.expect_images)?,
    };
    if running.version.is_none() && running.images.is_empty() {
        return Err(recorded::unreadable(
            words,
            "it does not record the version promoted (--expect-version or --expect-image)",
        ));
    }
    let fleet = read_fleet(base)?;
    let promotion = Promotion {
        name: &name,
        carried: Carried::of_definition(base, &name)?,
        running: &running,
        from: cluster_dir(&environment(&fleet, &args.from)?),
        to: cluster_dir(&environment(&fleet, &args.to)?),
        namespace,
        with_values: args.with_values,
    };
    Ok(Replanned::of("promote", &name, promotion.files(base)?))
}

/// A version as promote takes it: one chart version or tag (a semver range would not be what the
/// source cluster proved).
fn one_version(version: &str) -> Result<String> {
    if is_one_version(version) {
        Ok(version.to_string())
    } else {
        Err(Error::usage(
            format!("--expect-version {version:?} is not one chart version or tag"),
            "give the exact version --from runs, like 0.2.0 or v1.2.0 (`kubectl gitops fleet status` shows it)",
        ))
    }
}

fn is_one_version(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 128
        && version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
        && version.starts_with(|c: char| c.is_ascii_alphanumeric())
}

/// `--expect-image`'s, each checked, sorted as [`Carried::running`] reads them.
fn expected_images(words: &[String]) -> Result<Vec<Image>> {
    let mut images = words.iter().map(|words| words.parse()).collect::<Result<Vec<Image>>>()?;
    images.sort();
    Ok(images)
}

/// The version read from the source cluster is input too (anyone who may write its status, or a
/// tag named by whoever pushes to the source, could make it anything): checked as it is read, so
/// that nothing is planned, written or recorded with a version a YAML patch or a pull request's
/// words would carry as something else.
fn checked_running(running: Running, from: &str, noun: &str, name: &str) -> Result<Running> {
    let Some(version) = running.version.as_ref().filter(|version| !is_one_version(version)) else {
        return Ok(running);
    };
    Err(Error::Negative {
        message: format!(
            "{from} reports {noun} {version:?} for {name}: not one chart version or tag, so it is not promoted"
        ),
        hint: Some(format!(
            "look at what {from} runs with `kubectl gitops app status {name}`; promote once it runs a plain version like 0.2.0 or v1.2.0"
        )),
    })
}

/// The fleet file, which names the environments.
fn read_fleet(checkout: &Checkout) -> Result<FleetFile> {
    let text = crate::plan::read(checkout, FILE_NAME)?.ok_or_else(|| {
        Error::usage(
            format!("the config repo has no {FILE_NAME}: promote needs it to know the environments"),
            "install each cluster with `kubectl gitops install` (it adds the cluster there), or write it (docs/fleet.md)",
        )
    })?;
    FleetFile::parse(&text)
}

/// The fleet's cluster `name` names: by environment, else by cluster name; it must have a context.
fn environment(fleet: &FleetFile, name: &str) -> Result<FleetEntry> {
    let known = || fleet.ordered().iter().map(|entry| entry.environment.clone()).collect::<Vec<_>>().join(", ");
    let found = fleet
        .clusters
        .iter()
        .find(|entry| entry.environment == name)
        .or_else(|| fleet.clusters.iter().find(|entry| entry.name == name));
    let entry = found.ok_or_else(|| {
        Error::usage(
            format!("{FILE_NAME} names no environment or cluster {name:?}"),
            format!("its environments: {}", known()),
        )
    })?;
    if entry.context.is_none() {
        return Err(Error::usage(
            format!("cluster {} has no context in {FILE_NAME}", entry.name),
            format!("name the kubeconfig context that reaches it there ({FILE_NAME}, `context:`)"),
        ));
    }
    Ok(entry.clone())
}

/// Refuses a context that reaches another cluster than the fleet file's `entry` says: fleet.yaml is
/// input, and a wrong context would read the version from, or wait on, some other cluster. The
/// cluster's install record must name `entry`.
fn same_cluster(entry: &FleetEntry, record: Option<&crate::record::InstallRecord>) -> Result<()> {
    let context = entry.context.as_deref().unwrap_or_default();
    match record {
        Some(record) if record.cluster_name == entry.name => Ok(()),
        found => Err(Error::usage(
            format!(
                "{FILE_NAME} says context {context:?} reaches cluster {}, and it reaches {}",
                entry.name,
                found.map_or_else(
                    || "a cluster kubectl-gitops did not install".to_string(),
                    |r| format!("cluster {}", r.cluster_name)
                )
            ),
            format!("fix cluster {}'s `context:` in {FILE_NAME}", entry.name),
        )),
    }
}

/// The version the app runs in `from`'s cluster ([`Carried::running`]), asked through the
/// context the fleet file names, which must reach the cluster it says.
async fn running_version(
    target: &Target,
    from: &FleetEntry,
    namespace: &str,
    name: &str,
    carried: Carried,
    printer: &Printer,
) -> Result<Running> {
    let connection = Connection { context: from.context.clone(), ..target.connection.clone() };
    let cluster = Cluster::connect(&connection, printer).await?;
    let detection = crate::detect::detect(&cluster).await?;
    if let Some(unreachable) = detection.unreachable_error() {
        return Err(unreachable);
    }
    same_cluster(from, detection.gitops.as_ref())?;
    let served = crate::flux::api::Versions::served(detection.api_versions);
    carried.running(&cluster, &served, &from.name, namespace, name).await
}

/// A fleet file entry's directory.
fn cluster_dir(entry: &FleetEntry) -> ClusterDir {
    ClusterDir { name: entry.name.clone(), path: entry.path.clone() }
}

/// What a promotion writes: app `name` at what `from` runs (the version `carried` says, the
/// images) in `to`'s overlay, and with `with_values` `from`'s own values files there instead of
/// `to`'s.
struct Promotion<'a> {
    name: &'a str,
    carried: Carried,
    running: &'a Running,
    from: ClusterDir,
    to: ClusterDir,
    /// The Flux namespace: the values' ConfigMap is generated there, beside the HelmRelease.
    namespace: &'a str,
    with_values: bool,
}

impl Promotion<'_> {
    /// The file changes: `version` set in the target cluster's overlay of the app as a patch of
    /// the shared HelmRelease or source (replacing the one promote wrote before), and the values
    /// files carried over. The app must be in that cluster.
    fn files(&self, checkout: &Checkout) -> Result<Vec<FileChange>> {
        let (name, to) = (self.name, &self.to);
        let to_dir = to.entry_dir(APPS_DIR, name);
        let path = format!("{to_dir}/{KUSTOMIZATION_FILE}");
        let before = crate::plan::read(checkout, &path)?.ok_or_else(|| {
            Error::usage(
                format!("{name} is not in cluster {} ({path} does not exist)", to.name),
                format!("add it there first: `kubectl gitops app add {name} --cluster-name {} …`", to.name),
            )
        })?;
        let mut after = before;
        if let Some(version) = &self.running.version {
            after = with_patch(&after, self.carried.patch(name, version)?, |entry| self.carried.is_patch(entry, name))?;
        }
        if !self.running.images.is_empty() {
            let patch = images::patch(name, &self.running.images)?;
            after = with_patch(&after, patch, |entry| images::is_patch(entry, name))?;
        }
        let mut wanted = std::collections::BTreeMap::new();
        let mut replaced = Vec::new();
        if self.with_values {
            if !self.carried.is_helm() {
                return Err(Error::usage(
                    format!("{name} is not a HelmRelease: it has no values to carry"),
                    "leave out --with-values",
                ));
            }
            let values = own_values(checkout, &self.from.entry_dir(APPS_DIR, name))?;
            let names: Vec<String> = values.iter().map(|(file, _)| file.clone()).collect();
            let mut config: Value = crate::yaml::from_str(&after).map_err(Error::Internal)?;
            crate::change::values_overlay::set_cluster_values(
                &mut config,
                name,
                &to.name,
                self.namespace,
                &names,
                &HELM_RELEASE,
            )?;
            after = crate::yaml::to_string(&config)?;
            for (file, contents) in values {
                wanted.insert(format!("{to_dir}/values/{file}"), contents);
            }
            replaced.push(format!("{to_dir}/values"));
        }
        wanted.insert(path, after);
        crate::plan::diff(checkout, &wanted, &replaced)
    }
}

/// A cluster overlay's own values files (`dir/values/*`): name and contents. They come from the
/// config repo, so each name is checked: it becomes a key of the generated ConfigMap.
fn own_values(checkout: &Checkout, dir: &str) -> Result<Vec<(String, String)>> {
    let prefix = format!("{dir}/values/");
    let mut values = Vec::new();
    for path in crate::plan::files_under(checkout, &format!("{dir}/values"))? {
        let file = path.strip_prefix(&prefix).unwrap_or(&path);
        let key = !file.is_empty()
            && file.len() <= 253
            && file.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !file.starts_with('.');
        if !key {
            return Err(Error::usage(
                format!("{path} cannot be carried as a values file (its name is not a ConfigMap key)"),
                "rename it in the config repo: letters, digits, '-', '_' and '.'",
            ));
        }
        values.push((file.to_string(), crate::plan::read(checkout, &path)?.unwrap_or_default()));
    }
    Ok(values)
}

/// `overlay` (a kustomization.yaml) with `patch`, in place of the entry an earlier promotion wrote
/// (the one `is_same` knows).
fn with_patch(overlay: &str, patch: Value, is_same: impl Fn(&Value) -> bool) -> Result<String> {
    let mut config: Value = crate::yaml::from_str(overlay).map_err(|error| {
        Error::usage(format!("the app's overlay is not YAML: {error}"), "fix it in the config repo")
    })?;
    if !config["patches"].is_array() {
        config["patches"] = json!([]);
    }
    let patches = config["patches"].as_array_mut().ok_or_else(|| Error::Internal("patches is a list".into()))?;
    match patches.iter_mut().find(|entry| is_same(entry)) {
        Some(entry) => *entry = patch,
        None => patches.push(patch),
    }
    crate::yaml::to_string(&config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `promote`'s flags parsed as the command line would.
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        promote: PromoteArgs,
    }

    /// `overlay` with chart `version` of `carried` set, as a promotion writes it.
    fn with_version(overlay: &str, name: &str, carried: Carried, version: &str) -> Result<String> {
        with_patch(overlay, carried.patch(name, version)?, |entry| carried.is_patch(entry, name))
    }

    /// What a cluster that runs chart (or tag) `version` runs.
    fn running(version: &str) -> Running {
        Running { version: Some(version.to_string()), images: Vec::new() }
    }

    #[test]
    fn the_version_is_a_patch_of_the_overlay_replaced_on_the_next_promotion() {
        let overlay =
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../../../apps/mccp\n";
        let once = with_version(overlay, "mccp", Carried::Chart, "0.2.0").unwrap();
        let config: Value = crate::yaml::from_str(&once).unwrap();
        assert_eq!(
            config["patches"][0]["target"],
            json!({"group": "helm.toolkit.fluxcd.io", "kind": "HelmRelease", "name": "mccp"})
        );
        assert_eq!(config["patches"][0]["patch"], "- op: add\n  path: /spec/chart/spec/version\n  value: \"0.2.0\"\n");
        let twice = with_version(&once, "mccp", Carried::Chart, "0.3.0").unwrap();
        let config: Value = crate::yaml::from_str(&twice).unwrap();
        assert_eq!(config["patches"].as_array().unwrap().len(), 1, "{twice}");
        assert!(twice.contains("0.3.0") && !twice.contains("0.2.0"), "{twice}");
        assert_eq!(
            with_version(&twice, "mccp", Carried::Chart, "0.3.0").unwrap(),
            twice,
            "the same version again changes nothing"
        );
    }

    /// What `running` runs of chart mccp, from dev to uat.
    fn dev_to_uat(running: &Running, with_values: bool) -> Promotion<'_> {
        Promotion {
            name: "mccp",
            carried: Carried::Chart,
            running,
            from: ClusterDir { name: "dev".into(), path: "clusters/dev".into() },
            to: ClusterDir { name: "uat".into(), path: "clusters/uat".into() },
            namespace: "flux-system",
            with_values,
        }
    }

    /// A config repo with the fleet file of dev and uat, and app `app` defined as `source` and
    /// `release` and in uat's cluster.
    fn fleet_with(app: &str, source: &str, release: &str) -> (tempfile::TempDir, Checkout) {
        let (dir, remote) = crate::git::tests::bare();
        let mut checkout = Checkout::clone(&remote, "main").unwrap();
        let fleet = "apiVersion: gitops.kubectl.io/v1alpha1\nkind: Fleet\nclusters:\n- name: dev\n  path: clusters/dev\n  context: dev\n  environment: dev\n  order: 1\n- name: uat\n  path: clusters/uat\n  context: uat\n  environment: uat\n  order: 2\n";
        checkout.write(FILE_NAME, fleet.as_bytes()).unwrap();
        checkout.write(&format!("apps/{app}/source.yaml"), format!("---\nkind: {source}\n").as_bytes()).unwrap();
        checkout.write(&format!("apps/{app}/release.yaml"), format!("---\nkind: {release}\n").as_bytes()).unwrap();
        let overlay = format!("resources:\n- ../../../../apps/{app}\n");
        checkout.write(&format!("clusters/uat/apps/{app}/kustomization.yaml"), overlay.as_bytes()).unwrap();
        (dir, checkout)
    }

    #[test]
    fn a_recorded_promotion_plans_its_version_again_into_the_target_overlay() {
        let (_dir, checkout) = fleet_with("mccp", "HelmRepository", "HelmRelease");
        let request = Cli::try_parse_from(["promote", "mccp", "--from", "dev", "--to", "uat"]).unwrap().promote;
        let request = PromoteRequest {
            name: request.name,
            from: request.from,
            to: request.to,
            expect_version: None,
            expect_images: Vec::new(),
            with_values: false,
            config: request.config.settings().unwrap(),
            delivery: request.delivery.settings().unwrap(),
        };
        let words = promote_words(&request, &running("0.2.0"));
        assert_eq!(words.join(" "), "promote mccp --from dev --to uat --expect-version 0.2.0");
        let replanned = replan(&words, "flux-system", &checkout).unwrap();
        assert_eq!(replanned.files, dev_to_uat(&running("0.2.0"), false).files(&checkout).unwrap());
        assert!(replanned.branch.starts_with("gitops/promote-mccp-"), "{}", replanned.branch);
        // Without the version, or with a range, there is nothing exact to plan.
        let unpinned = replan(&words[..6], "flux-system", &checkout).unwrap_err();
        assert!(unpinned.to_string().contains("does not record the version promoted"), "{unpinned}");
        let range = [&words[..6], &["--expect-version".to_string(), ">=0.1.0".to_string()]].concat();
        assert!(replan(&range, "flux-system", &checkout).unwrap_err().to_string().contains("is not one chart version"));
    }

    #[test]
    fn a_git_apps_tag_is_a_patch_of_its_source_in_the_target_overlay_planned_again_from_its_words() {
        let (_dir, mut checkout) = fleet_with("web", "GitRepository", "Kustomization");
        let carried = Carried::of_definition(&checkout, "web").unwrap();
        assert_eq!(carried, Carried::Tag(&crate::flux::api::GIT_REPOSITORY));
        let words: Vec<String> =
            "promote web --from dev --to uat --expect-version v1.2.0".split(' ').map(String::from).collect();
        let replanned = replan(&words, "flux-system", &checkout).unwrap();
        let overlay: Value = crate::yaml::from_str(replanned.files[0].after.as_deref().unwrap()).unwrap();
        assert_eq!(
            overlay["patches"],
            json!([{
                "patch": "- op: add\n  path: /spec/ref\n  value:\n    tag: v1.2.0\n",
                "target": {"group": "source.toolkit.fluxcd.io", "kind": "GitRepository", "name": "web"},
            }])
        );
        let with_values = [&words[..], &["--with-values".to_string()]].concat();
        let refused = replan(&with_values, "flux-system", &checkout).unwrap_err().to_string();
        assert!(refused.contains("web is not a HelmRelease: it has no values to carry"), "{refused}");
        // What promote does not carry is refused by name.
        checkout
            .write("apps/web/source.yaml", b"---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: Bucket\n")
            .unwrap();
        let bucket = Carried::of_definition(&checkout, "web").unwrap_err().to_string();
        assert!(bucket.contains("does not carry the version of a Kustomization from a Bucket"), "{bucket}");
    }

    #[test]
    fn images_are_a_patch_of_the_kustomization_beside_the_tag_and_recorded_for_the_pull_request() {
        let (_dir, checkout) = fleet_with("web", "GitRepository", "Kustomization");
        let words: Vec<String> =
            "promote web --from dev --to uat --expect-image ghcr.io/acme/web:1.1.0 --expect-image api=registry.local/api:2"
                .split(' ')
                .map(String::from)
                .collect();
        // A Kustomization on a branch: carried by its images alone.
        let replanned = replan(&words, "flux-system", &checkout).unwrap();
        let overlay: Value = crate::yaml::from_str(replanned.files[0].after.as_deref().unwrap()).unwrap();
        assert_eq!(overlay["patches"].as_array().unwrap().len(), 1, "{overlay:#}");
        assert_eq!(overlay["patches"][0]["target"]["kind"], "Kustomization");
        let patch: Value = crate::yaml::from_str(overlay["patches"][0]["patch"].as_str().unwrap()).unwrap();
        assert_eq!(
            patch[0]["value"],
            json!([{"name": "api", "newName": "registry.local/api", "newTag": "2"}, {"name": "ghcr.io/acme/web", "newTag": "1.1.0"}]),
            "sorted, as read from the cluster"
        );
        // With the tag too: both patches; the words record both, the images sorted.
        let running = Running {
            version: Some("v1.1.0".into()),
            images: expected_images(&words[6..].iter().skip(1).step_by(2).cloned().collect::<Vec<_>>()).unwrap(),
        };
        let request = Cli::try_parse_from(["promote", "web", "--from", "dev", "--to", "uat"]).unwrap().promote;
        let request = request.request(&GlobalArgs::default()).unwrap();
        let recorded = promote_words(&request, &running);
        assert_eq!(
            recorded.join(" "),
            "promote web --from dev --to uat --expect-version v1.1.0 --expect-image api=registry.local/api:2 --expect-image ghcr.io/acme/web:1.1.0"
        );
        assert_eq!(running.describe("tag"), "tag v1.1.0 and images api=registry.local/api:2, ghcr.io/acme/web:1.1.0");
        assert_eq!(
            patched_kinds(Carried::Tag(&crate::flux::api::GIT_REPOSITORY), &running),
            "GitRepository and Kustomization"
        );
        let both = replan(&recorded, "flux-system", &checkout).unwrap();
        let overlay: Value = crate::yaml::from_str(both.files[0].after.as_deref().unwrap()).unwrap();
        let kinds: Vec<&str> =
            overlay["patches"].as_array().unwrap().iter().map(|p| p["target"]["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["GitRepository", "Kustomization"]);
        let bad = [&words[..6], &["--expect-image".to_string(), "web:1 --to prod".to_string()]].concat();
        let refused = replan(&bad, "flux-system", &checkout).unwrap_err().to_string();
        assert!(refused.contains("is not an image override"), "{refused}");
    }

    #[test]
    fn with_values_the_source_overlays_values_replace_the_targets_and_the_version_patch_stays() {
        let (_dir, remote) = crate::git::tests::bare();
        let mut checkout = Checkout::clone(&remote, "main").unwrap();
        checkout.write("clusters/dev/apps/mccp/values/dev.yaml", b"database:\n  type: sqlite\n").unwrap();
        checkout.write("clusters/uat/apps/mccp/values/uat.yaml", b"database:\n  type: postgresql\n").unwrap();
        let overlay = "resources:\n- ../../../../apps/mccp\n";
        checkout.write("clusters/uat/apps/mccp/kustomization.yaml", overlay.as_bytes()).unwrap();
        let chart = running("0.2.0");
        let promotion = dev_to_uat(&chart, true);
        let files = promotion.files(&checkout).unwrap();
        let paths: Vec<(&str, bool)> = files.iter().map(|file| (file.path.as_str(), file.after.is_some())).collect();
        assert_eq!(
            paths,
            [
                ("clusters/uat/apps/mccp/kustomization.yaml", true),
                ("clusters/uat/apps/mccp/values/dev.yaml", true),
                ("clusters/uat/apps/mccp/values/uat.yaml", false),
            ]
        );
        let config: Value = crate::yaml::from_str(files[0].after.as_deref().unwrap()).unwrap();
        assert_eq!(
            config["configMapGenerator"],
            json!([{"files": ["values/dev.yaml"], "name": "mccp-uat-values", "namespace": "flux-system"}])
        );
        let patches: Vec<&str> =
            config["patches"].as_array().unwrap().iter().map(|p| p["patch"].as_str().unwrap()).collect();
        assert_eq!(patches.len(), 2, "{config:#}");
        assert!(patches[0].contains("/spec/valuesFrom/-") && patches[0].contains("valuesKey: dev.yaml"), "{config:#}");
        assert!(patches[1].contains("/spec/chart/spec/version"), "{config:#}");
        assert_eq!(files[1].after.as_deref(), Some("database:\n  type: sqlite\n"));
        // Written, the same promotion has nothing left to change.
        for file in &files {
            match &file.after {
                Some(after) => checkout.write(&file.path, after.as_bytes()).unwrap(),
                None => std::fs::remove_file(checkout.root().join(&file.path)).unwrap(),
            }
        }
        assert_eq!(promotion.files(&checkout).unwrap(), Vec::new());
        // A values file whose name cannot be a ConfigMap key is refused, not carried.
        checkout.write("clusters/dev/apps/mccp/values/a b.yaml", b"x: 1\n").unwrap();
        let refused = promotion.files(&checkout).unwrap_err();
        assert!(refused.to_string().contains("is not a ConfigMap key"), "{refused}");
    }

    #[test]
    fn a_context_that_reaches_another_cluster_than_the_fleet_file_says_is_refused() {
        let entry = FleetEntry {
            name: "uat".into(),
            path: "clusters/uat".into(),
            context: Some("uat".into()),
            environment: "uat".into(),
            order: 2,
        };
        let record = crate::record::InstallRecord::of_cluster;
        same_cluster(&entry, Some(&record("uat"))).unwrap();
        let other = same_cluster(&entry, Some(&record("prod"))).unwrap_err();
        assert!(other.to_string().contains("reaches cluster uat, and it reaches cluster prod"), "{other}");
        let none = same_cluster(&entry, None).unwrap_err();
        assert!(none.to_string().contains("a cluster kubectl-gitops did not install"), "{none}");
    }

    #[test]
    fn a_version_read_from_the_cluster_is_checked_as_it_is_read() {
        assert_eq!(checked_running(running("0.2.0"), "dev", "chart version", "mccp").unwrap(), running("0.2.0"));
        for read in ["0.2.0\n- op: remove", "v1 --to prod", ">=0.1.0", "", "-rf"] {
            let error = checked_running(running(read), "dev", "tag", "web").unwrap_err().to_string();
            assert!(error.contains("dev reports tag") && error.contains("not one chart version or tag"), "{error}");
            assert!(!error.contains("--expect-version"), "the user gave no flag: {error}");
        }
    }

    #[test]
    fn environments_are_named_by_environment_or_cluster_and_need_a_context() {
        let fleet = FleetFile::parse(
            "apiVersion: gitops.kubectl.io/v1alpha1\nkind: Fleet\nclusters:\n- name: dev\n  path: clusters/dev\n  context: kind-dev\n  environment: development\n  order: 1\n- name: uat\n  path: clusters/uat\n  environment: uat\n  order: 2\n",
        )
        .unwrap();
        assert_eq!(environment(&fleet, "development").unwrap().name, "dev");
        assert_eq!(environment(&fleet, "dev").unwrap().name, "dev");
        assert!(environment(&fleet, "uat").unwrap_err().to_string().contains("has no context"));
        let unknown = environment(&fleet, "prod").unwrap_err();
        assert!(unknown.to_string().contains("names no environment or cluster \"prod\""), "{unknown}");
    }
}
