//! What an app is (validated from `app add`'s flags) and the Flux objects it becomes.
//!
//! Everything here is pure: no cluster, no repo, no network. Bad input is refused here, before
//! anything is cloned or written.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::definition::AppDefinition;
use crate::change::new_repo::{NewRepoRequest, Source as NewRepoSource};
use crate::error::{Error, Result};
use crate::flux::api::{self, FluxKind, Versions};
use crate::flux::objects::{
    self, Chart, GitRef, HelmReleaseSpec, KustomizationSpec, Meta, OciRef, SourceRef, ValuesReference,
};
use crate::names::{source_path, validate_git_ref, validate_name};
use crate::record::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};

mod constraint;

pub use crate::record::APP_LABEL;

pub use crate::change::layout::APPS_DIR;

/// The directory of the app layout's manifests, the path `app add --create-repo` deploys.
pub const LAYOUT_PATH: &str = "./deploy";

/// Where an app belongs: with the teams' apps (`apps/`), or with the cluster-wide services every
/// team uses (`platform/`, `kubectl gitops platform add`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tier {
    /// `app add`.
    #[default]
    App,
    /// `platform add`.
    Platform,
}

impl Tier {
    /// The directory of its definitions, and of each cluster's list: `apps` or `platform`.
    pub fn root(self) -> &'static str {
        match self {
            Tier::App => APPS_DIR,
            Tier::Platform => crate::record::PLATFORM_TIER,
        }
    }

    /// The command that manages it: `app` or `platform`.
    pub fn command(self) -> &'static str {
        match self {
            Tier::App => "app",
            Tier::Platform => "platform",
        }
    }

    /// The layer of the cluster directory whose list holds it (`apps` or `platform`).
    pub fn layer(self) -> crate::flux::bootstrap::Layer {
        match self {
            Tier::App => crate::flux::bootstrap::APPS_LAYER,
            Tier::Platform => crate::flux::bootstrap::PLATFORM_LAYER,
        }
    }

    /// What messages call one: `app` or `platform app`.
    pub fn noun(self) -> &'static str {
        match self {
            Tier::App => "app",
            Tier::Platform => "platform app",
        }
    }
}

/// How an app is deployed; the KIND column of `app list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppKind {
    /// A Kustomization of a directory in a git repository.
    Kustomize,
    /// A HelmRelease of a chart (Helm repository, OCI registry or git).
    Helm,
    /// A Kustomization of an OCI artifact.
    Oci,
}

impl AppKind {
    /// The word used in messages and tables.
    pub fn word(self) -> &'static str {
        match self {
            AppKind::Kustomize => "kustomize",
            AppKind::Helm => "helm",
            AppKind::Oci => "oci",
        }
    }
}

/// Where the app's source is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A git repository and the commits to follow.
    Git {
        /// Its URL.
        url: String,
        /// Branch, tag, semver range or commit.
        git_ref: GitRef,
    },
    /// An https Helm repository, or an OCI registry holding Helm charts.
    HelmRepository {
        /// `https://…` or `oci://…`.
        url: String,
    },
    /// An OCI artifact of manifests.
    Oci {
        /// `oci://…`.
        url: String,
        /// Tag, semver range or digest.
        oci_ref: OciRef,
    },
}

/// What deploys from the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deploy {
    /// A Kustomization of a directory (`./…`).
    Kustomize {
        /// The directory in the source.
        path: String,
    },
    /// A HelmRelease.
    Helm {
        /// The chart name, or its `./path` in a git source.
        chart: String,
        /// Version or range (Helm repositories only).
        version: Option<String>,
    },
}

/// A values file given with `--values`, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesFile {
    /// Its file name in the repo (the name it was given with).
    pub name: String,
    /// Its contents, unchanged: the repo keeps the user's file, comments and all.
    pub contents: String,
    /// Its values (a mapping, or null for an empty file), for `--export`'s inline `values`.
    pub parsed: Value,
}

/// A validated `app add`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSpec {
    /// The app's name.
    pub name: String,
    /// The source.
    pub source: Source,
    /// What deploys from it.
    pub deploy: Deploy,
    /// A Secret with the source's credentials.
    pub secret_ref: Option<String>,
    /// Plain-HTTP OCI registry.
    pub insecure: bool,
    /// Where the workloads go.
    pub target_namespace: String,
    /// Create the target namespace.
    pub create_namespace: bool,
    /// Reconcile interval.
    pub interval: Duration,
    /// Prune (Kustomizations).
    pub prune: bool,
    /// Apps that must be Ready first.
    pub depends_on: Vec<String>,
    /// Values files: shared by every cluster without `--cluster-name`, else for those clusters.
    pub values: Vec<ValuesFile>,
    /// An app, or a platform app.
    pub tier: Tier,
}

impl AppSpec {
    /// Checks an app's definition (from `app add`'s flags, the UI or a recorded request) and reads
    /// its values files with `read_values` (this machine's, [`read_values`]; `pr show` takes them
    /// from the branch that wrote them). `new_repo`: `--create-repo` makes its repository first.
    pub fn from_definition(
        args: &AppDefinition,
        new_repo: Option<&NewRepoRequest>,
        read_values: &dyn Fn(&[std::path::PathBuf]) -> Result<Vec<ValuesFile>>,
    ) -> Result<AppSpec> {
        args.check_combinations()?;
        let (name, target_namespace) = check_names(args)?;
        check_versions(args)?;
        // `--create-repo`: a git repository whose URL is known once the config repo is (see
        // [`AppSpec::from_new_repo`]).
        let given_url = args.url.as_deref().unwrap_or_default();
        crate::repo_access::refuse_credentials_in_url(
            given_url,
            "keep them in a Secret in the Flux namespace, named with --secret-ref",
        )?;
        let scheme = given_url.split_once("://").map(|(scheme, _)| scheme).unwrap_or_default();
        let is_git = new_repo.is_some()
            || matches!(scheme, "ssh" | "http" | "https")
            || (scheme.is_empty() && given_url.contains('@'));
        if !is_git && scheme != "oci" {
            return Err(Error::usage(
                format!("unsupported URL {given_url:?}"),
                "use a git URL (ssh://, https://, user@host:path), an https:// Helm repository with --chart, or oci://",
            ));
        }
        let ref_given = args.branch.is_some() || args.commit.is_some() || args.tag.is_some() || args.semver.is_some();
        if args.chart.is_some() && ref_given {
            return refuse("--branch/--tag/--semver/--commit", "do not apply to a Helm chart; use --chart-version");
        }
        let (source, deploy) = match (scheme, &args.chart, &args.chart_path) {
            ("oci", Some(chart), _) => {
                let deploy = Deploy::Helm { chart: chart.clone(), version: args.chart_version.clone() };
                (Source::HelmRepository { url: given_url.to_string() }, deploy)
            }
            ("oci", None, Some(_)) => return refuse("--chart-path", "needs a git URL; for OCI charts use --chart"),
            ("oci", None, None) => oci_artifact(args, given_url)?,
            (_, Some(chart), _) => {
                if scheme != "https" && scheme != "http" {
                    return refuse("--chart", "needs an https:// Helm repository or an oci:// registry URL");
                }
                let deploy = Deploy::Helm { chart: chart.clone(), version: args.chart_version.clone() };
                (Source::HelmRepository { url: given_url.to_string() }, deploy)
            }
            (_, None, chart_path) => git_source(args, new_repo, given_url, chart_path.as_deref())?,
        };
        if args.insecure && scheme != "oci" {
            return refuse("--insecure", "applies to oci:// sources only");
        }
        let helm = matches!(deploy, Deploy::Helm { .. });
        if !args.values.is_empty() && !helm {
            return refuse("--values", "applies to Helm charts only (--chart or --chart-path)");
        }
        let values = read_values(&args.values)?;
        Ok(AppSpec {
            name,
            source,
            deploy,
            secret_ref: args.secret_ref.clone(),
            insecure: args.insecure,
            target_namespace,
            create_namespace: args.create_namespace,
            interval: args.interval,
            prune: args.prune,
            depends_on: args.depends_on.clone(),
            values,
            tier: Tier::App,
        })
    }
    /// The words of `app add` that give this app again (the values files by their names), for
    /// the request a pull request records: the definition of them is this app.
    pub fn words(&self) -> Vec<String> {
        let mut words = vec![self.name.clone()];
        let mut flag = |name: &str, value: &str| words.extend([format!("--{name}"), value.to_string()]);
        let (url, reference) = match &self.source {
            Source::Git { url, git_ref } => (
                url,
                match git_ref {
                    GitRef::Branch(branch) => vec![("branch", branch.clone())],
                    GitRef::Tag(tag) => vec![("tag", tag.clone())],
                    GitRef::Semver(range) => vec![("semver", range.clone())],
                    GitRef::Commit { commit, branch } => {
                        let mut reference = vec![("commit", commit.clone())];
                        reference.extend(branch.iter().map(|branch| ("branch", branch.clone())));
                        reference
                    }
                },
            ),
            Source::HelmRepository { url } => (url, Vec::new()),
            Source::Oci { url, oci_ref } => (
                url,
                match oci_ref {
                    OciRef::Semver(range) => vec![("semver", range.clone())],
                    OciRef::Tag(tag) | OciRef::Digest(tag) => vec![("tag", tag.clone())],
                },
            ),
        };
        flag("url", url);
        for (name, value) in reference {
            flag(name, &value);
        }
        match (&self.deploy, &self.source) {
            (Deploy::Kustomize { path }, _) => flag("path", path),
            (Deploy::Helm { chart, .. }, Source::Git { .. }) => flag("chart-path", chart),
            (Deploy::Helm { chart, version }, _) => {
                flag("chart", chart);
                if let Some(version) = version {
                    flag("chart-version", version);
                }
            }
        }
        if let Some(secret) = &self.secret_ref {
            flag("secret-ref", secret);
        }
        flag("target-namespace", &self.target_namespace);
        flag("interval", &crate::duration::format(self.interval));
        flag("prune", &self.prune.to_string());
        for dependency in &self.depends_on {
            flag("depends-on", dependency);
        }
        for file in &self.values {
            flag("values", &file.name);
        }
        words.extend(self.insecure.then(|| "--insecure".to_string()));
        words.extend(self.create_namespace.then(|| "--create-namespace".to_string()));
        words
    }

    /// The source's URL.
    pub fn source_url(&self) -> &str {
        match &self.source {
            Source::Git { url, .. } | Source::HelmRepository { url } | Source::Oci { url, .. } => url,
        }
    }

    /// The app of `--create-repo`, once its repository is planned: deployed from `url`'s
    /// `branch`, read with the Secret `secret_ref`.
    pub fn from_new_repo(&self, url: String, branch: String, secret_ref: String) -> AppSpec {
        AppSpec {
            source: Source::Git { url, git_ref: GitRef::Branch(branch) },
            secret_ref: Some(secret_ref),
            ..self.clone()
        }
    }

    /// kustomize, helm or oci.
    pub fn kind(&self) -> AppKind {
        match (&self.source, &self.deploy) {
            (_, Deploy::Helm { .. }) => AppKind::Helm,
            (Source::Oci { .. }, _) => AppKind::Oci,
            _ => AppKind::Kustomize,
        }
    }

    /// The labels every generated object carries.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            (MANAGED_BY_LABEL.to_string(), MANAGED_BY_VALUE.to_string()),
            (APP_LABEL.to_string(), self.name.clone()),
        ]);
        if self.tier == Tier::Platform {
            labels.insert(crate::record::TIER_LABEL.to_string(), crate::record::PLATFORM_TIER.to_string());
        }
        labels
    }

    /// Where its shared definition lives: `apps/<name>` or `platform/<name>`.
    pub fn definition_dir(&self) -> String {
        format!("{}/{}", self.tier.root(), self.name)
    }

    /// The source object, at the API version the cluster serves.
    pub fn source_object(&self, namespace: &str, served: &Versions) -> Result<Value> {
        let meta = self.meta(namespace);
        let mut object = match &self.source {
            Source::Git { url, git_ref } => {
                let kind = &api::GIT_REPOSITORY;
                objects::git_repository(
                    kind,
                    served.get(kind)?,
                    &meta,
                    url,
                    git_ref,
                    self.interval,
                    self.secret_ref.as_deref(),
                )
            }
            Source::HelmRepository { url } => {
                let kind = &api::HELM_REPOSITORY;
                objects::helm_repository(kind, served.get(kind)?, &meta, url, self.interval, self.secret_ref.as_deref())
            }
            Source::Oci { url, oci_ref } => {
                let kind = &api::OCI_REPOSITORY;
                objects::oci_repository(
                    kind,
                    served.get(kind)?,
                    &meta,
                    url,
                    oci_ref,
                    self.interval,
                    self.secret_ref.as_deref(),
                )
            }
        };
        if self.insecure {
            object["spec"]["insecure"] = Value::Bool(true);
        }
        Ok(object)
    }

    /// The Kustomization or HelmRelease. `values_from` lists the shared values files.
    pub fn release_object(
        &self,
        namespace: &str,
        served: &Versions,
        values_from: Vec<ValuesReference>,
    ) -> Result<Value> {
        self.release(namespace, served, values_from, None)
    }

    /// `--export`: the source and the release as one YAML stream, at the versions Flux v2.9
    /// serves, as `flux create … --export` prints them. The `--values` files are merged into
    /// the HelmRelease's `spec.values`, as `flux create helmrelease --values` writes them: the
    /// repo holds them as ConfigMaps in `valuesFrom` instead (docs/layout.md), which gives Helm
    /// the same values. With `--cluster-name`, the files are what those clusters get; values already
    /// in the repo are not read (`--export` reads nothing but its flags and files).
    pub fn export(&self, namespace: &str) -> Result<String> {
        let versions = Versions::pinned();
        let source = self.source_object(namespace, &versions)?;
        let release = self.release(namespace, &versions, Vec::new(), self.merged_values())?;
        crate::yaml::to_documents(&[source, release])
    }

    /// The `--values` files merged in order, as `flux create helmrelease --values` merges them
    /// (fluxcd/pkg `transform.MergeMaps`, as helm-controller merges `valuesFrom`): mappings
    /// merge key by key, anything else (lists too) is replaced by the later file. `None`
    /// without files; empty files give an empty mapping, as flux prints `values: {}`.
    fn merged_values(&self) -> Option<Value> {
        if self.values.is_empty() {
            return None;
        }
        let mut merged = Value::Object(serde_json::Map::new());
        for file in &self.values {
            merge_values(&mut merged, &file.parsed);
        }
        Some(merged)
    }

    fn release(
        &self,
        namespace: &str,
        served: &Versions,
        values_from: Vec<ValuesReference>,
        values: Option<Value>,
    ) -> Result<Value> {
        let meta = self.meta(namespace);
        let source = SourceRef { kind: self.source_kind().kind.to_string(), name: self.name.clone() };
        Ok(match &self.deploy {
            Deploy::Kustomize { path } => {
                let spec = KustomizationSpec {
                    source,
                    path: path.clone(),
                    prune: self.prune,
                    interval: self.interval,
                    target_namespace: Some(self.target_namespace.clone()),
                    depends_on: self.depends_on.clone(),
                };
                objects::kustomization(&api::KUSTOMIZATION, served.get(&api::KUSTOMIZATION)?, &meta, &spec)
            }
            Deploy::Helm { chart, version } => {
                let spec = HelmReleaseSpec {
                    chart: Chart::Template { chart: chart.clone(), version: version.clone(), source },
                    interval: self.interval,
                    target_namespace: Some(self.target_namespace.clone()),
                    create_namespace: self.create_namespace,
                    depends_on: self.depends_on.clone(),
                    values_from,
                    values,
                };
                objects::helm_release(&api::HELM_RELEASE, served.get(&api::HELM_RELEASE)?, &meta, &spec)
            }
        })
    }

    /// The Flux kind of the source.
    pub fn source_kind(&self) -> &'static FluxKind {
        match self.source {
            Source::Git { .. } => &api::GIT_REPOSITORY,
            Source::HelmRepository { .. } => &api::HELM_REPOSITORY,
            Source::Oci { .. } => &api::OCI_REPOSITORY,
        }
    }

    /// The Flux kind of the release.
    pub fn release_kind(&self) -> &'static FluxKind {
        match self.deploy {
            Deploy::Kustomize { .. } => &api::KUSTOMIZATION,
            Deploy::Helm { .. } => &api::HELM_RELEASE,
        }
    }

    fn meta(&self, namespace: &str) -> Meta {
        Meta { name: self.name.clone(), namespace: namespace.to_string(), labels: self.labels() }
    }
}

/// Ranges Flux takes, for the hint of a refused `--semver` or `--chart-version`.
const RANGE_EXAMPLES: &str = r#"as Flux reads it, e.g. ">=1.0.0 <2.0.0", "~1.2", "^1", "1.x" or "1.2.3 || 2.x""#;

/// `later` merged into `merged`: mappings key by key, anything else replaced.
fn merge_values(merged: &mut Value, later: &Value) {
    match (merged, later) {
        (Value::Object(merged), Value::Object(later)) => {
            for (key, value) in later {
                match merged.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => merge_values(existing, value),
                    _ => {
                        merged.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        // An empty file adds nothing (flux unmarshals its `null` into the map: a no-op).
        (_, Value::Null) => {}
        (merged, later) => *merged = later.clone(),
    }
}

/// A DNS-1123 subdomain (a Secret's name): labels joined by dots, at most 253 characters.
fn validate_subdomain(name: &str, flag: &str) -> Result<()> {
    if name.len() <= 253 && name.split('.').all(|label| validate_name(label, flag).is_ok()) {
        return Ok(());
    }
    Err(Error::usage(
        format!("{flag} {name:?} is not a valid name"),
        "use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
    ))
}

/// A full commit id, SHA-1 or SHA-256: Flux checks out `spec.ref.commit` as given, and an
/// abbreviated one never resolves there.
fn validate_commit(commit: &str) -> Result<()> {
    if matches!(commit.len(), 40 | 64) && commit.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Ok(());
    }
    Err(Error::usage(
        format!("--commit {commit:?} is not a full commit id"),
        "give all 40 (SHA-1) or 64 (SHA-256) hex digits, as `git rev-parse HEAD` prints them",
    ))
}

/// An OCI tag, by the distribution spec: `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
fn validate_oci_tag(tag: &str) -> Result<()> {
    let mut chars = tag.chars();
    let valid = tag.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if valid {
        return Ok(());
    }
    Err(Error::usage(
        format!("--tag {tag:?} is not a valid OCI tag"),
        "an OCI tag is letters, digits, '_', '.' and '-', at most 128 characters, not starting with '.' or '-'",
    ))
}

/// Reads and checks `--values` files: each must exist and be a YAML mapping.
pub(crate) fn read_values(paths: &[std::path::PathBuf]) -> Result<Vec<ValuesFile>> {
    let read = |path: &std::path::PathBuf| std::fs::read_to_string(path);
    values_files(paths, &read)
}

/// The values files at `paths`, read with `read` and checked.
pub(crate) fn values_files(
    paths: &[std::path::PathBuf],
    read: &dyn Fn(&std::path::PathBuf) -> std::io::Result<String>,
) -> Result<Vec<ValuesFile>> {
    let mut files: Vec<ValuesFile> = Vec::new();
    for path in paths {
        let contents = read(path).map_err(|error| {
            Error::usage(format!("cannot read --values {}: {error}", path.display()), "check the path")
        })?;
        let parsed: Value = crate::yaml::from_str(&contents).map_err(|error| {
            // The parser's first line names the line and column; the rest is a source excerpt.
            let first = error.lines().next().unwrap_or_default().trim_start_matches("error: ");
            Error::usage(format!("--values {} is not valid YAML: {first}", path.display()), "fix the file")
        })?;
        if !(parsed.is_object() || parsed.is_null()) {
            return Err(Error::usage(
                format!("--values {} is not a YAML mapping of chart values", path.display()),
                "a values file maps keys to values, like the chart's own values.yaml",
            ));
        }
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        if files.iter().any(|file| file.name == name) {
            return Err(Error::usage(
                format!("two --values files are named {name}"),
                "rename one: the files keep their names in the repo",
            ));
        }
        files.push(ValuesFile { name, contents, parsed });
    }
    Ok(files)
}

/// A flag `app add` refuses in this combination.
fn refuse<T>(flag: &str, why: &str) -> Result<T> {
    Err(Error::usage(format!("{flag} {why}"), "see `kubectl gitops app add --help`"))
}

/// The app's name and target namespace, and every other name of the flags, checked.
fn check_names(args: &AppDefinition) -> Result<(String, String)> {
    let name = validate_name(&args.name, "app name")?;
    if crate::flux::bootstrap::applies_the_config_repo(&name) {
        return Err(Error::usage(
            format!("{name:?} names one of the Kustomizations that apply the cluster's directory"),
            "choose another name for the app",
        ));
    }
    for dependency in &args.depends_on {
        validate_name(dependency, "--depends-on")?;
    }
    let target_namespace = validate_name(&args.target_namespace, "--target-namespace")?;
    if let Some(secret) = &args.secret_ref {
        validate_subdomain(secret, "--secret-ref")?;
    }
    Ok((name, target_namespace))
}

/// `--semver` and `--chart-version`, checked as the ranges Flux reads.
fn check_versions(args: &AppDefinition) -> Result<()> {
    if let Some(range) = &args.semver {
        constraint::check(range).map_err(|why| {
            Error::usage(
                format!("--semver {range:?} is not a semver range: {why}"),
                format!("give a range {RANGE_EXAMPLES}"),
            )
        })?;
    }
    if let Some(version) = &args.chart_version {
        constraint::check(version).map_err(|why| {
            Error::usage(
                format!("--chart-version {version:?} is not a chart version or semver range: {why}"),
                format!("give a version (1.2.3) or a range {RANGE_EXAMPLES}"),
            )
        })?;
    }
    Ok(())
}

/// An OCI artifact of manifests at `url`, applied by a Kustomization.
fn oci_artifact(args: &AppDefinition, url: &str) -> Result<(Source, Deploy)> {
    if args.branch.is_some() || args.commit.is_some() {
        return refuse("--branch/--commit", "do not apply to an OCI artifact; use --tag, --semver");
    }
    if let Some(tag) = &args.tag {
        validate_oci_tag(tag)?;
    }
    let oci_ref = match (&args.tag, &args.semver) {
        (_, Some(range)) => OciRef::Semver(range.clone()),
        (Some(tag), None) => OciRef::Tag(tag.clone()),
        (None, None) => OciRef::Tag("latest".into()),
    };
    let deploy = Deploy::Kustomize { path: source_path(args.path.as_deref(), "--path")? };
    Ok((Source::Oci { url: url.to_string(), oci_ref }, deploy))
}

/// A git repository at `url` (empty with `--create-repo`, `new_repo`): kustomize at `--path`, or
/// the Helm chart at `chart_path`.
fn git_source(
    args: &AppDefinition,
    new_repo: Option<&NewRepoRequest>,
    url: &str,
    chart_path: Option<&str>,
) -> Result<(Source, Deploy)> {
    if let Some(branch) = &args.branch {
        validate_git_ref(branch, "--branch", "heads")?;
    }
    if let Some(tag) = &args.tag {
        validate_git_ref(tag, "--tag", "tags")?;
    }
    if let Some(commit) = &args.commit {
        validate_commit(commit)?;
    }
    let git_ref = match (&args.branch, &args.tag, &args.semver, &args.commit) {
        (branch, _, _, Some(commit)) => GitRef::Commit { commit: commit.clone(), branch: branch.clone() },
        (_, _, Some(range), None) => GitRef::Semver(range.clone()),
        (_, Some(tag), None, None) => GitRef::Tag(tag.clone()),
        (branch, None, None, None) => GitRef::Branch(branch.clone().unwrap_or_else(|| "main".into())),
    };
    let url = match new_repo {
        Some(_) => String::new(),
        None => crate::repo_access::parse_url(url)?.canonical,
    };
    // A new repository of our app layout keeps its manifests in ./deploy.
    let layout_path = new_repo.is_some_and(|new| new.source == NewRepoSource::Layout).then_some(LAYOUT_PATH);
    let deploy = match chart_path {
        Some(path) => Deploy::Helm { chart: source_path(Some(path), "--chart-path")?, version: None },
        None => Deploy::Kustomize { path: source_path(args.path.as_deref().or(layout_path), "--path")? },
    };
    Ok((Source::Git { url, git_ref }, deploy))
}
