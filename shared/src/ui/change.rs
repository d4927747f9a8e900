//! Adding and removing an app from the UI: the request becomes the words of `kubectl gitops app
//! add` (or `app remove`), parsed by the same clap definition, and runs the same `app::add` (or
//! `app::remove`): plan, `--dry-run` with its diff, commit or pull request on the one git write
//! path. No second implementation to drift.

use std::ffi::OsString;

use clap::Parser;
use serde::{Deserialize, Serialize};

use crate::app::{self, AddArgs, RemoveArgs};
use crate::change::Target;
use crate::cli::RepoArgs;
use crate::error::{Error, Result};
use crate::output::Printer;

/// The body of `POST /api/v1/apps`: the flags of `app add`, by their camelCase names.
#[derive(Debug, Clone, Default, Deserialize)]
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
    /// Open a pull request instead of pushing.
    #[serde(default)]
    pub(crate) pr: bool,
    pub(crate) message: Option<String>,
    /// Return the plan and the diff; push nothing.
    #[serde(default)]
    pub(crate) dry_run: bool,
    /// Wait for Flux to apply the commit and the app to be Ready.
    #[serde(default)]
    pub(crate) wait: bool,
}

/// What `POST /api/v1/apps` and `DELETE /api/v1/apps/{namespace}/{name}` answer: what `app add`
/// or `app remove` printed (the plan and its diff with `dryRun`, else the commit or the pull
/// request).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Changed {
    pub(crate) name: String,
    pub(crate) dry_run: bool,
    pub(crate) output: String,
}

/// `app add`'s flags, parsed on their own.
#[derive(Debug, Parser)]
#[command(name = "add", no_binary_name = true)]
struct AddCommand {
    #[command(flatten)]
    args: AddArgs,
}

/// `app remove`'s flags, parsed on their own.
#[derive(Debug, Parser)]
#[command(name = "remove", no_binary_name = true)]
struct RemoveCommand {
    #[command(flatten)]
    args: RemoveArgs,
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

/// The words of the server's own config repo flags.
fn repo_words(repo: &RepoArgs) -> Vec<OsString> {
    let mut words = Vec::new();
    for (name, value) in [
        ("config-repo", repo.config_repo.clone()),
        ("config-branch", repo.config_branch.clone()),
        ("private-key-file", repo.private_key_file.as_ref().map(|path| path.display().to_string())),
        ("known-hosts-file", repo.known_hosts_file.as_ref().map(|path| path.display().to_string())),
    ] {
        if let Some(value) = value {
            words.push(format!("--{name}").into());
            words.push(value.into());
        }
    }
    for host in &repo.trust.accept_hosts {
        words.extend(["--accept-host".into(), host.into()]);
    }
    words
}

/// The flags without a value that are set, as words.
fn switches(words: &mut Vec<OsString>, flags: &[(&str, bool)]) {
    words.extend(flags.iter().filter(|(_, set)| *set).map(|(name, _)| format!("--{name}").into()));
}

/// Parses the words with a command's own flag definitions; what it refuses is bad input.
fn parse<C: Parser>(words: Vec<OsString>, command: &str) -> Result<C> {
    C::try_parse_from(words).map_err(|error| {
        let text = error.to_string();
        let first = text.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
        Error::usage(first, format!("the fields are the flags of `kubectl gitops app {command}` (docs/api.md)"))
    })
}

impl RemoveApp {
    fn words(&self, repo: &RepoArgs) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec![self.name.clone().into()];
        switches(&mut words, &[("pr", self.pr), ("dry-run", self.dry_run), ("wait", self.wait)]);
        words.extend(repo_words(repo));
        words
    }

    /// Removes the app from the config repo of the Flux namespace `namespace`.
    pub(crate) async fn run(
        &self,
        namespace: &str,
        repo: &RepoArgs,
        target: &Target,
        printer: &Printer,
    ) -> Result<Changed> {
        let command: RemoveCommand = parse(self.words(repo), "remove")?;
        let request = command.args.request()?;
        let target = Target { namespace: Some(namespace.to_string()), ..target.clone() };
        let output = app::remove(&request, &target, printer).await?;
        Ok(Changed { name: self.name.clone(), dry_run: self.dry_run, output })
    }
}

impl AddApp {
    /// The words `kubectl gitops app add` would be given, then the server's own repo flags.
    fn words(&self, repo: &RepoArgs) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec![self.name.clone().into(), "--url".into(), self.url.clone().into()];
        let mut flag = |name: &str, value: &Option<String>| {
            if let Some(value) = value.as_deref().filter(|value| !value.trim().is_empty()) {
                words.push(format!("--{name}").into());
                words.push(value.into());
            }
        };
        flag("branch", &self.branch);
        flag("tag", &self.tag);
        flag("semver", &self.semver);
        flag("commit", &self.commit);
        flag("secret-ref", &self.secret_ref);
        flag("path", &self.path);
        flag("chart", &self.chart);
        flag("chart-version", &self.chart_version);
        flag("chart-path", &self.chart_path);
        flag("target-namespace", &self.target_namespace);
        flag("interval", &self.interval);
        flag("message", &self.message);
        flag("prune", &self.prune.map(|prune| prune.to_string()));
        for (name, values) in [("depends-on", &self.depends_on), ("cluster", &self.clusters)] {
            for value in values {
                words.push(format!("--{name}").into());
                words.push(value.into());
            }
        }
        switches(
            &mut words,
            &[
                ("create-namespace", self.create_namespace),
                ("update", self.update),
                ("pr", self.pr),
                ("dry-run", self.dry_run),
                ("wait", self.wait),
            ],
        );
        words.extend(repo_words(repo));
        words
    }

    /// Checks the request the way `app add` checks its flags, then adds the app.
    pub(crate) async fn run(&self, repo: &RepoArgs, target: &Target, printer: &Printer) -> Result<Changed> {
        let command: AddCommand = parse(self.words(repo), "add")?;
        let request = command.args.request()?;
        let output = app::add(&request, target, printer).await?;
        Ok(Changed { name: self.name.clone(), dry_run: self.dry_run, output })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(add: &AddApp) -> std::result::Result<AddCommand, clap::Error> {
        AddCommand::try_parse_from(add.words(&RepoArgs::default()))
    }

    #[test]
    fn a_removal_is_app_remove_with_the_servers_repo_flags() {
        let remove = RemoveApp { name: "shop".into(), pr: true, dry_run: true, wait: false };
        let repo = RepoArgs {
            config_repo: Some("ssh://git@example.com/fleet.git".into()),
            trust: crate::cli::TrustArgs { accept_hosts: vec!["git.example.com:2222".into()] },
            ..RepoArgs::default()
        };
        let args = RemoveCommand::try_parse_from(remove.words(&repo)).unwrap().args;
        assert_eq!(args.name, "shop");
        assert!(args.delivery.pr && args.delivery.dry_run && !args.delivery.wait);
        assert_eq!(args.repo.config_repo.as_deref(), Some("ssh://git@example.com/fleet.git"));
        assert_eq!(args.repo.trust.accept_hosts, ["git.example.com:2222"]);
        let bad = RemoveApp { name: "Shop_1".into(), ..RemoveApp::default() };
        let args = RemoveCommand::try_parse_from(bad.words(&RepoArgs::default())).unwrap().args;
        assert!(args.request().unwrap_err().to_string().contains("Shop_1"));
    }

    #[test]
    fn the_fields_become_the_flags_of_app_add() {
        let add = AddApp {
            name: "shop".into(),
            url: "https://charts.example.com".into(),
            chart: Some("shop".into()),
            chart_version: Some("1.2.x".into()),
            target_namespace: Some("shop".into()),
            create_namespace: true,
            depends_on: vec!["db".into()],
            prune: Some(false),
            dry_run: true,
            ..AddApp::default()
        };
        let args = parse(&add).unwrap().args;
        assert_eq!(
            (args.name.as_str(), args.url.as_deref().unwrap_or_default()),
            ("shop", "https://charts.example.com")
        );
        assert_eq!(args.chart.as_deref(), Some("shop"));
        assert_eq!(args.chart_version.as_deref(), Some("1.2.x"));
        assert_eq!(args.target_namespace, "shop");
        assert!(args.create_namespace && args.delivery.dry_run && !args.prune);
        assert_eq!(args.depends_on, ["db"]);
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
        assert!(parse(&both).unwrap_err().to_string().contains("cannot be used with"));
        let bad_interval =
            AddApp { name: "shop".into(), url: "x".into(), interval: Some("often".into()), ..AddApp::default() };
        assert!(parse(&bad_interval).is_err());
    }

    #[test]
    fn unknown_fields_are_refused() {
        let error = serde_json::from_str::<AddApp>(r#"{"name": "a", "url": "b", "values": "x: 1"}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field `values`"), "{error}");
        let missing = serde_json::from_str::<AddApp>(r#"{"name": "a"}"#).unwrap_err();
        assert!(missing.to_string().contains("missing field `url`"), "{missing}");
    }
}
