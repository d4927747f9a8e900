//! `app add` and `app remove` as the faces ask for them (the UI's forms and API, the MCP server's
//! tools): the request is plain data (JSON fields named for the flags), built into an
//! [`AppDefinition`] and the delivery, checked by the same functions as `app add`'s flags, and
//! runs the same `app::add` (or `app::remove`): plan, `--dry-run` with its diff, commit or pull
//! request on the one git write path. No second implementation to drift.

use serde::Deserialize;

use crate::app;
use crate::app::definition::{self, AppDefinition};
use crate::app::settings::{AddRequest, RemoveRequest, checked_clusters};
use crate::app::spec::{AppSpec, Tier};
use crate::change::Target;
use crate::change::result::Changed;
use crate::change::settings::delivery;
use crate::cli::RepoArgs;
use crate::error::{Error, Result};
use crate::output::Printer;

/// The body of `POST /api/v1/apps`: the flags of `app add`, by their camelCase names.
/// The MCP server's `add_app` takes the same fields (docs/mcp.md).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AddApp {
    pub(crate) name: String,
    pub(crate) url: String,
    pub(crate) branch: Option<String>,
    pub(crate) tag: Option<String>,
    pub(crate) semver: Option<String>,
    pub(crate) commit: Option<String>,
    pub(crate) secret_ref: Option<String>,
    pub(crate) path: Option<String>,
    pub(crate) chart: Option<String>,
    pub(crate) chart_version: Option<String>,
    pub(crate) chart_path: Option<String>,
    pub(crate) target_namespace: Option<String>,
    #[serde(default)]
    pub(crate) create_namespace: bool,
    pub(crate) interval: Option<String>,
    pub(crate) prune: Option<bool>,
    #[serde(default)]
    pub(crate) depends_on: Vec<String>,
    #[serde(default)]
    pub(crate) clusters: Vec<String>,
    #[serde(default)]
    pub(crate) update: bool,
    /// Open a pull request (`true`), or push unless the branch is protected (`false`). Unset:
    /// the UI pushes, the MCP server opens a pull request.
    pub(crate) pr: Option<bool>,
    pub(crate) message: Option<String>,
    /// Return the plan and the diff; push nothing.
    #[serde(default)]
    pub(crate) dry_run: bool,
    /// Wait for Flux to apply the commit and the app to be Ready.
    #[serde(default)]
    pub(crate) wait: bool,
}

/// `DELETE /api/v1/apps/{namespace}/{name}`: `app remove NAME`, with the query's `dryRun`, `pr`
/// and `wait` as its flags.
#[derive(Debug, Clone, Default)]
pub(crate) struct RemoveApp {
    pub(crate) name: String,
    pub(crate) pr: bool,
    pub(crate) dry_run: bool,
    pub(crate) wait: bool,
}

/// A field that is left empty is not given.
fn given(value: &Option<String>) -> Option<String> {
    value.clone().filter(|value| !value.trim().is_empty())
}

impl RemoveApp {
    /// The request `app remove NAME` makes, checked as its flags are.
    fn request(&self, repo: &RepoArgs) -> Result<RemoveRequest> {
        crate::names::validate_name(&self.name, "app name")?;
        Ok(RemoveRequest {
            name: self.name.clone(),
            tier: Tier::App,
            clusters: Vec::new(),
            repo: repo.settings()?,
            delivery: delivery(self.pr, None, self.dry_run, self.wait),
        })
    }

    /// Removes the app from the config repo of the Flux namespace `namespace`.
    pub(crate) async fn run(
        &self,
        namespace: &str,
        repo: &RepoArgs,
        target: &Target,
        printer: &Printer,
    ) -> Result<Changed> {
        let request = self.request(repo)?;
        let target = Target { namespace: Some(namespace.to_string()), ..target.clone() };
        let output = app::remove(&request, &target, printer).await?;
        Ok(Changed { name: self.name.clone(), dry_run: self.dry_run, output })
    }
}

impl AddApp {
    /// The app the body defines, each field as the flag of its name reads it.
    fn definition(&self) -> Result<AppDefinition> {
        let interval = match given(&self.interval) {
            Some(text) => crate::duration::parse(&text).map_err(|why| {
                Error::usage(format!("interval {text:?}: {why}"), "a Go duration, e.g. 1m or 30s (docs/api.md)")
            })?,
            None => definition::default_interval(),
        };
        Ok(AppDefinition {
            name: self.name.clone(),
            url: Some(self.url.clone()),
            branch: given(&self.branch),
            tag: given(&self.tag),
            semver: given(&self.semver),
            commit: given(&self.commit),
            insecure: false,
            secret_ref: given(&self.secret_ref),
            path: given(&self.path),
            chart: given(&self.chart),
            chart_version: given(&self.chart_version),
            chart_path: given(&self.chart_path),
            values: Vec::new(),
            target_namespace: given(&self.target_namespace).unwrap_or_else(definition::default_target_namespace),
            create_namespace: self.create_namespace,
            interval,
            prune: self.prune.unwrap_or_else(definition::default_prune),
            depends_on: self.depends_on.clone(),
        })
    }

    /// The request `app add` makes of the same flags, checked the same way.
    fn request(&self, repo: &RepoArgs) -> Result<AddRequest> {
        Ok(AddRequest {
            spec: AppSpec::from_definition(&self.definition()?, None, &|_| Ok(Vec::new()))?,
            export: false,
            clusters: checked_clusters(&self.clusters)?,
            update: self.update,
            repo: repo.settings()?,
            delivery: delivery(self.pr.unwrap_or(false), given(&self.message), self.dry_run, self.wait),
            new_repo: None,
        })
    }

    /// Checks the request the way `app add` checks its flags, then adds the app.
    pub(crate) async fn run(&self, repo: &RepoArgs, target: &Target, printer: &Printer) -> Result<Changed> {
        let request = self.request(repo)?;
        let output = app::add(&request, target, printer).await?;
        Ok(Changed { name: self.name.clone(), dry_run: self.dry_run, output })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::app::AddArgs;
    use crate::app::spec::{Deploy, Source};
    use crate::change::DeliveryMode;

    /// `app add`'s flags, parsed as the CLI parses them.
    #[derive(Parser)]
    #[command(no_binary_name = true)]
    struct AddCommand {
        #[command(flatten)]
        args: AddArgs,
    }

    fn shop() -> AddApp {
        AddApp {
            name: "shop".into(),
            url: "https://charts.example.com".into(),
            chart: Some("shop".into()),
            chart_version: Some("1.2.x".into()),
            target_namespace: Some("shop".into()),
            create_namespace: true,
            depends_on: vec!["db".into()],
            prune: Some(false),
            interval: Some("5m".into()),
            branch: Some(" ".into()),
            dry_run: true,
            ..AddApp::default()
        }
    }

    #[test]
    fn a_removal_is_app_remove_with_the_servers_repo_settings() {
        let remove = RemoveApp { name: "shop".into(), pr: true, dry_run: true, wait: false };
        let repo = RepoArgs {
            config_repo: Some("ssh://git@example.com/fleet.git".into()),
            trust: crate::cli::TrustArgs { accept_hosts: vec!["git.example.com:2222".into()] },
            ..RepoArgs::default()
        };
        let request = remove.request(&repo).unwrap();
        assert_eq!(request.name, "shop");
        assert_eq!(request.delivery.mode, DeliveryMode::PullRequest);
        assert!(request.delivery.dry_run && !request.delivery.wait);
        assert_eq!(request.repo.config_repo.as_deref(), Some("ssh://git@example.com/fleet.git"));
        assert_eq!(request.repo.accepted_hosts, ["git.example.com:2222"]);
        let bad = RemoveApp { name: "Shop_1".into(), ..RemoveApp::default() };
        assert!(bad.request(&RepoArgs::default()).unwrap_err().to_string().contains("Shop_1"));
    }

    #[test]
    fn the_fields_make_the_app_its_flags_make() {
        let request = shop().request(&RepoArgs::default()).unwrap();
        let spec = &request.spec;
        assert_eq!(spec.source, Source::HelmRepository { url: "https://charts.example.com".into() });
        assert_eq!(spec.deploy, Deploy::Helm { chart: "shop".into(), version: Some("1.2.x".into()) });
        assert_eq!(spec.target_namespace, "shop");
        assert!(spec.create_namespace && !spec.prune && request.delivery.dry_run);
        assert_eq!(spec.depends_on, ["db"]);
        // The same app, typed as flags: the one app, whichever way it came.
        let words = [
            "shop",
            "--url",
            "https://charts.example.com",
            "--chart",
            "shop",
            "--chart-version",
            "1.2.x",
            "--target-namespace",
            "shop",
            "--create-namespace",
            "--depends-on",
            "db",
            "--prune",
            "false",
            "--interval",
            "5m",
        ];
        let typed = AddCommand::try_parse_from(words).unwrap().args.request().unwrap();
        assert_eq!(typed.spec, request.spec);
    }

    #[test]
    fn what_app_add_refuses_is_refused() {
        let both = AddApp {
            name: "shop".into(),
            url: "https://example.com/shop.git".into(),
            path: Some("./deploy".into()),
            chart: Some("shop".into()),
            ..AddApp::default()
        };
        let error = both.request(&RepoArgs::default()).unwrap_err().to_string();
        assert!(error.contains("--path cannot be used with --chart"), "{error}");
        let two_references = AddApp { tag: Some("v1".into()), semver: Some(">=1".into()), ..shop() };
        let error = two_references.request(&RepoArgs::default()).unwrap_err().to_string();
        assert!(error.contains("--tag cannot be used with --semver"), "{error}");
        let bad_interval = AddApp { interval: Some("often".into()), ..shop() };
        let error = bad_interval.request(&RepoArgs::default()).unwrap_err().to_string();
        assert!(error.contains("interval \"often\""), "{error}");
        let bad_cluster = AddApp { clusters: vec!["Dev_1".into()], ..shop() };
        assert!(bad_cluster.request(&RepoArgs::default()).unwrap_err().to_string().contains("Dev_1"));
    }

    #[test]
    fn unknown_fields_are_refused() {
        let error = serde_json::from_str::<AddApp>(r#"{"name": "a", "url": "b", "values": "x: 1"}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field `values`"), "{error}");
        let missing = serde_json::from_str::<AddApp>(r#"{"name": "a"}"#).unwrap_err();
        assert!(missing.to_string().contains("missing field `url`"), "{missing}");
    }
}
