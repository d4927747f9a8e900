//! An app as plain data, before it is checked: what `app add`'s flags say of it (args.rs), and what
//! the UI and a future API build directly (serde). [`super::spec::AppSpec::from_definition`] checks
//! it whoever built it, so that clap's flag rules are not the only ones.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::args::AddArgs;
use crate::error::{Error, Result};

/// The app: its name, its source and how it deploys. Field by field the flags of `app add`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppDefinition {
    /// The app's name.
    pub name: String,
    /// Where it comes from (none when `--create-repo` makes its repository).
    pub url: Option<String>,
    /// The git branch.
    pub branch: Option<String>,
    /// The git or OCI tag.
    pub tag: Option<String>,
    /// A semver range of tags.
    pub semver: Option<String>,
    /// A git commit.
    pub commit: Option<String>,
    /// Plain-HTTP OCI registry.
    #[serde(default)]
    pub insecure: bool,
    /// A Secret with the source's credentials.
    pub secret_ref: Option<String>,
    /// The kustomize directory.
    pub path: Option<String>,
    /// A Helm chart's name in its repository or registry.
    pub chart: Option<String>,
    /// The chart's version or range.
    pub chart_version: Option<String>,
    /// A Helm chart's directory in a git source.
    pub chart_path: Option<String>,
    /// Helm values files, read from this machine.
    #[serde(default)]
    pub values: Vec<PathBuf>,
    /// Where the workloads go.
    #[serde(default = "default_target_namespace")]
    pub target_namespace: String,
    /// Create the target namespace.
    #[serde(default)]
    pub create_namespace: bool,
    /// How often Flux checks and re-applies, as a Go duration (`1m`).
    #[serde(default = "default_interval", with = "crate::duration::go")]
    pub interval: Duration,
    /// Prune what disappears from the source.
    #[serde(default = "default_prune")]
    pub prune: bool,
    /// Apps that must be Ready first.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

pub(crate) fn default_target_namespace() -> String {
    "default".to_string()
}

pub(crate) fn default_interval() -> Duration {
    Duration::from_secs(60)
}

pub(crate) fn default_prune() -> bool {
    true
}

impl AppDefinition {
    /// Refuses what no app can be, as `app add`'s flags refuse it: two git or OCI references,
    /// a kustomize path beside a chart, a chart from both a repository and a directory, a chart
    /// version without a chart.
    pub(crate) fn check_combinations(&self) -> Result<()> {
        let references =
            [("--branch", &self.branch), ("--tag", &self.tag), ("--semver", &self.semver), ("--commit", &self.commit)];
        let mut given = references.iter().filter(|(_, value)| value.is_some()).map(|(flag, _)| *flag);
        if let (Some(first), Some(second)) = (given.next(), given.next()) {
            return Err(conflict(first, second));
        }
        for (flag, value) in [("--chart", &self.chart), ("--chart-path", &self.chart_path)] {
            if self.path.is_some() && value.is_some() {
                return Err(conflict("--path", flag));
            }
        }
        if self.chart.is_some() && self.chart_path.is_some() {
            return Err(conflict("--chart", "--chart-path"));
        }
        if self.chart_version.is_some() && self.chart.is_none() {
            return Err(Error::usage("--chart-version needs --chart", "see `kubectl gitops app add --help`"));
        }
        Ok(())
    }
}

fn conflict(first: &str, second: &str) -> Error {
    Error::usage(format!("{first} cannot be used with {second}"), "see `kubectl gitops app add --help`")
}

impl AddArgs {
    /// The app these flags define.
    pub fn definition(&self) -> AppDefinition {
        AppDefinition {
            name: self.name.clone(),
            url: self.url.clone(),
            branch: self.branch.clone(),
            tag: self.tag.clone(),
            semver: self.semver.clone(),
            commit: self.commit.clone(),
            insecure: self.insecure,
            secret_ref: self.secret_ref.clone(),
            path: self.path.clone(),
            chart: self.chart.clone(),
            chart_version: self.chart_version.clone(),
            chart_path: self.chart_path.clone(),
            values: self.values.clone(),
            target_namespace: self.target_namespace.clone(),
            create_namespace: self.create_namespace,
            interval: self.interval,
            prune: self.prune,
            depends_on: self.depends_on.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::spec::{AppSpec, Deploy};

    #[test]
    fn an_app_as_json_is_the_app_its_flags_make() {
        let json =
            r#"{"name": "web", "url": "https://git.example.com/acme/web", "path": "./deploy", "interval": "5m"}"#;
        let definition: AppDefinition = serde_json::from_str(json).unwrap();
        assert_eq!(definition.target_namespace, "default", "defaults as the flags'");
        assert!(definition.prune);
        let spec = AppSpec::from_definition(&definition, None, &|_| Ok(Vec::new())).unwrap();
        assert_eq!(spec.deploy, Deploy::Kustomize { path: "./deploy".into() });
        assert_eq!(spec.interval, Duration::from_secs(300));
        let again: AppDefinition = serde_json::from_str(&serde_json::to_string(&definition).unwrap()).unwrap();
        assert_eq!(again, definition, "it reads back what it writes");
        let unknown = serde_json::from_str::<AppDefinition>(r#"{"name": "web", "colour": "red"}"#).unwrap_err();
        assert!(unknown.to_string().contains("unknown field `colour`"), "{unknown}");
        let both = AppDefinition { tag: Some("v1".into()), commit: Some("a".repeat(40)), ..definition };
        let refused = AppSpec::from_definition(&both, None, &|_| Ok(Vec::new())).unwrap_err();
        assert!(refused.to_string().contains("--tag cannot be used with --commit"), "{refused}");
    }
}
