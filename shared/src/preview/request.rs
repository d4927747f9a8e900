//! How a preview renders what it compares (the other sources' checkouts, the helm that renders),
//! as flags and checked, and the source a Kustomization applies.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};

/// How a preview renders what it compares: the other sources, the helm that renders.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RenderArgs {
    /// A checkout of another source some Kustomizations apply: KIND/NAMESPACE/NAME=DIR (repeatable).
    ///
    /// A checkout of another source some Kustomizations apply (a team's or an app's repository),
    /// compared as they would apply it: KIND/NAMESPACE/NAME=DIR, as flux build's --local-sources
    /// names one, e.g. GitRepository/team-a/team-a=../team-a (repeatable).
    #[arg(long = "local-source", value_name = "KIND/NAMESPACE/NAME=DIR")]
    pub local_sources: Vec<String>,

    /// The helm executable to render HelmReleases with, instead of the pinned release.
    ///
    /// The helm executable to render HelmReleases with (also KUBECTL_GITOPS_HELM_BIN), instead
    /// of the release dependencies.toml pins, which is downloaded once, verified and cached.
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub helm_bin: Option<PathBuf>,

    /// Fetch charts from HelmRepository URLs the change introduces, not only those the cluster uses.
    ///
    /// Fetch a HelmRelease's chart from a HelmRepository URL the change introduces. Without it,
    /// charts come only from repositories the cluster already pulls from, so that a change
    /// cannot make the reviewer's machine reach a host of its choosing.
    #[arg(long)]
    pub fetch_new_chart_repositories: bool,
}

impl RenderArgs {
    /// The flags, checked.
    pub fn rendering(&self) -> Result<Rendering> {
        Ok(Rendering {
            local_sources: self.local_sources.iter().map(|given| local_source(given)).collect::<Result<_>>()?,
            helm_bin: self.helm_bin.clone(),
            fetch_new_chart_repositories: self.fetch_new_chart_repositories,
        })
    }

    /// The first of these flags given, for a command that takes them only with another flag.
    pub fn first_given(&self) -> Option<&'static str> {
        if !self.local_sources.is_empty() {
            Some("--local-source")
        } else if self.helm_bin.is_some() {
            Some("--helm-bin")
        } else if self.fetch_new_chart_repositories {
            Some("--fetch-new-chart-repositories")
        } else {
            None
        }
    }
}

/// [`RenderArgs`], checked.
#[derive(Debug, Clone, Default)]
pub struct Rendering {
    /// `--local-source`: other sources, each with its checkout.
    pub local_sources: Vec<(SourceRef, PathBuf)>,
    /// `--helm-bin`.
    pub helm_bin: Option<PathBuf>,
    /// `--fetch-new-chart-repositories`.
    pub fetch_new_chart_repositories: bool,
}

/// A Flux source, as a Kustomization's `sourceRef` names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceRef {
    pub(crate) kind: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl SourceRef {
    /// A source by kind, namespace and name.
    pub fn new(kind: &str, namespace: &str, name: &str) -> SourceRef {
        SourceRef { kind: kind.to_string(), namespace: namespace.to_string(), name: name.to_string() }
    }

    /// The source `kustomization`'s `sourceRef` names (its namespace defaults to the
    /// Kustomization's).
    pub fn applied_by(kustomization: &Value) -> SourceRef {
        let reference = &kustomization["spec"]["sourceRef"];
        let namespace = kustomization["metadata"]["namespace"].as_str().unwrap_or_default();
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        SourceRef {
            kind: text(&reference["kind"]),
            namespace: reference["namespace"].as_str().unwrap_or(namespace).to_string(),
            name: text(&reference["name"]),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Its namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `kustomization`'s `sourceRef` names this source (its namespace defaults to the
    /// Kustomization's).
    pub(crate) fn is_applied_by(&self, kustomization: &Value) -> bool {
        *self == SourceRef::applied_by(kustomization)
    }
}

impl std::fmt::Display for SourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// `--local-source KIND/NAMESPACE/NAME=DIR`, checked: a Flux source kind, names Kubernetes takes,
/// and a directory.
fn local_source(given: &str) -> Result<(SourceRef, PathBuf)> {
    let hint = "give it as KIND/NAMESPACE/NAME=DIR, e.g. GitRepository/team-a/team-a=../team-a";
    let (reference, dir) = given
        .split_once('=')
        .ok_or_else(|| Error::usage(format!("--local-source {given:?} names no directory"), hint))?;
    let parts: Vec<&str> = reference.split('/').collect();
    let [kind, namespace, name] = parts[..] else {
        return Err(Error::usage(format!("--local-source {reference:?} is not KIND/NAMESPACE/NAME"), hint));
    };
    if !matches!(kind, "GitRepository" | "OCIRepository" | "Bucket") {
        return Err(Error::usage(format!("--local-source: {kind:?} is not a source Kustomizations apply"), hint));
    }
    let source = SourceRef {
        kind: kind.to_string(),
        namespace: crate::names::validate_name(namespace, "--local-source namespace")?,
        name: crate::names::validate_name(name, "--local-source name")?,
    };
    Ok((source, existing_dir(Path::new(dir))?))
}

/// `--dir`, which must be a directory, as an absolute path.
pub fn existing_dir(dir: &Path) -> Result<PathBuf> {
    if !dir.is_dir() {
        return Err(Error::usage(
            format!("--dir {} is not a directory", dir.display()),
            "give a checkout of the config repo",
        ));
    }
    std::fs::canonicalize(dir)
        .map_err(|error| Error::Io { context: format!("reading {}", dir.display()), source: error })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_source_is_a_flux_source_and_a_directory() {
        let (source, dir) = local_source("GitRepository/team-a/team-a=/").unwrap();
        assert_eq!((source.to_string(), dir), ("GitRepository/team-a/team-a".to_string(), PathBuf::from("/")));
        for bad in [
            "GitRepository/team-a/team-a",
            "team-a=/",
            "HelmRelease/a/b=/",
            "GitRepository/A_/b=/",
            "GitRepository/a/b=/nowhere",
        ] {
            assert!(local_source(bad).is_err(), "{bad}");
        }
    }
}
