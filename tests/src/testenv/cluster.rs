//! What the tests do with the running environment: kubectl as admin or as a tenant, applying
//! YAML and waiting for objects, and reading the API server's audit log and the processes' logs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::process::{run, wait_until};
use super::servers;
use super::{TENANT_TOKEN, TestEnv, write_kubeconfig};

impl TestEnv {
    /// Runs the real kubectl against this environment (admin).
    pub fn kubectl(&self, args: &[&str]) -> Result<Output> {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .context("cannot run kubectl")
    }

    /// A kubeconfig of the user `tenant` (no rights until a test binds a role), whose context's
    /// namespace is `namespace`.
    pub fn tenant_kubeconfig(&self, namespace: &str) -> Result<PathBuf> {
        let path = self.dir.join(format!("tenant-{namespace}.kubeconfig"));
        write_kubeconfig(&path, &self.server, &self.pki, Some(TENANT_TOKEN), Some(namespace))?;
        Ok(path)
    }

    /// Runs kubectl and returns stdout; fails on a non-zero exit.
    pub fn kubectl_ok(&self, args: &[&str]) -> Result<String> {
        run(Command::new("kubectl").arg("--kubeconfig").arg(&self.kubeconfig).args(args))
    }

    /// Applies the config repo's sync as `flux bootstrap` makes it, but over HTTP with the git
    /// server's user (Secret `http-credentials`): GitRepository and Kustomization `flux-system`
    /// in flux-system, applying `./clusters/dev` of the repository `repo`.
    pub fn apply_http_sync(&self, repo: &str) -> Result<String> {
        self.apply_yaml(&format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: http-credentials\n  namespace: flux-system\nstringData:\n  username: {}\n  password: {}\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  timeout: 5s\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
            servers::GIT_HTTP_USER,
            servers::GIT_HTTP_PASSWORD,
            self.git.http_url(repo)
        ))
    }

    /// A team's repository as the config repo lists it: GitRepository `team` (over HTTP, with
    /// `http-credentials`) of the repository `repo`, and Kustomization `team-app` applying all of
    /// it into `default`.
    pub fn team_source_yaml(&self, repo: &str) -> String {
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: team\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  url: {}\n  ref:\n    branch: main\n  secretRef:\n    name: http-credentials\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: team-app\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: GitRepository\n    name: team\n",
            self.git.http_url(repo)
        )
    }

    /// `kubectl gitops` through the real kubectl with the plugins of `plugins` first on PATH, this
    /// environment's kubeconfig and flux CLI, and the config repo `config_repo` of its git server
    /// over HTTP with the server's user (a cluster not installed by us has no install record to
    /// name it), after `args`.
    pub fn kubectl_gitops(&self, plugins: &Path, config_repo: &str, args: &[&str]) -> std::process::Command {
        let path = format!("{}:{}", plugins.display(), std::env::var("PATH").unwrap_or_default());
        let mut command = std::process::Command::new(crate::binaries::kubectl());
        command
            .arg("gitops")
            .args(args)
            .args(["--config-repo", &self.git.http_url(config_repo)])
            .env("PATH", path)
            .env("KUBECONFIG", &self.kubeconfig)
            // github.com is not reached: the flux CLI the environment pins.
            .env("KUBECTL_GITOPS_FLUX_BIN", crate::flux_release::cli())
            // What reads the config repo over http, as a CI job sets it.
            .env("GITOPS_GIT_USERNAME", servers::GIT_HTTP_USER)
            .env("GITOPS_GIT_PASSWORD", servers::GIT_HTTP_PASSWORD)
            .env("NO_COLOR", "1");
        command
    }

    /// Waits until each `KIND/NAME` of flux-system is Ready, within `timeout` each.
    pub fn wait_ready(&self, objects: &[&str], timeout: Duration) -> Result<()> {
        for object in objects {
            let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
            self.wait_for_jsonpath(&["-n", "flux-system", object], ready, "True", timeout)?;
        }
        Ok(())
    }

    /// `kubectl apply --server-side -f -` of a YAML text.
    pub fn apply_yaml(&self, yaml: &str) -> Result<String> {
        use std::io::Write;
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["apply", "--server-side", "--force-conflicts", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        child.stdin.take().context("kubectl stdin")?.write_all(yaml.as_bytes())?;
        let output = child.wait_with_output()?;
        if !output.status.success() {
            bail!("kubectl apply failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Waits until `kubectl get <what> -o jsonpath=<path>` prints `expected`; on timeout
    /// the error shows the object.
    /// `kubectl get WHAT -o=jsonpath=PATH`, as text.
    pub fn jsonpath(&self, what: &[&str], path: &str) -> Result<String> {
        let jsonpath = format!("-o=jsonpath={path}");
        self.kubectl_ok(&[&["get"][..], what, &[jsonpath.as_str()]].concat())
    }

    /// Asks Flux to reconcile each of `objects` (`kind/name` in `namespace`) now, as `flux
    /// reconcile` asks: a new `reconcile.fluxcd.io/requestedAt`. A test that pushed or merged a
    /// commit itself asks this instead of waiting for the source's interval.
    pub fn request_reconcile(&self, namespace: &str, objects: &[&str]) -> Result<()> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos();
        let requested = format!("reconcile.fluxcd.io/requestedAt={now}");
        for object in objects {
            self.kubectl_ok(&["-n", namespace, "annotate", "--overwrite", object, &requested])?;
        }
        Ok(())
    }

    pub fn wait_for_jsonpath(&self, what: &[&str], path: &str, expected: &str, timeout: Duration) -> Result<()> {
        let mut get: Vec<&str> = vec!["get"];
        get.extend(what);
        let jsonpath = format!("-o=jsonpath={path}");
        get.push(&jsonpath);
        let result = wait_until(&format!("{} {path} = {expected}", what.join(" ")), timeout, || {
            Ok(self.kubectl(&get)?.stdout == expected.as_bytes())
        });
        if result.is_err() {
            let mut describe: Vec<&str> = vec!["get"];
            describe.extend(what);
            describe.push("-o=yaml");
            let shown =
                self.kubectl(&describe).map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
            return result.with_context(|| format!("the object:\n{shown}"));
        }
        result
    }

    /// The API server's audit events (one JSON object per line).
    pub fn audit_events(&self) -> Result<Vec<serde_json::Value>> {
        let text = std::fs::read_to_string(&self.audit_log)?;
        Ok(text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect())
    }

    /// The requests kubectl-gitops itself sent (its user agent), from the audit log.
    pub fn our_requests(&self) -> Result<Vec<OurRequest>> {
        let events = self.audit_events()?;
        let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_string();
        Ok(events
            .iter()
            .filter(|event| event["userAgent"].as_str().unwrap_or_default().starts_with("kubectl-gitops/"))
            .map(|event| OurRequest {
                verb: text(&event["verb"]),
                resource: text(&event["objectRef"]["resource"]),
                uri: text(&event["requestURI"]),
                stage: text(&event["stage"]),
                at: text(&event["stageTimestamp"]),
                id: text(&event["auditID"]),
                agent: text(&event["userAgent"]),
            })
            .collect())
    }

    /// The log of one process.
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.supervisor().log_path(name)).unwrap_or_default()
    }
}

/// One request of kubectl-gitops, as the API server's audit log recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OurRequest {
    /// `get`, `list`, `watch`, `create`, `patch`, …
    pub verb: String,
    /// The resource's plural (`kustomizations`).
    pub resource: String,
    /// Path and query.
    pub uri: String,
    /// `ResponseStarted` (a watch began) or `ResponseComplete` (the request ended).
    pub stage: String,
    /// When the stage was reached (RFC 3339, microseconds).
    pub at: String,
    /// The request's audit ID: its stages share it.
    pub id: String,
    /// Its user agent: `kubectl-gitops/<version> (<binary>)`.
    pub agent: String,
}

impl OurRequest {
    /// Whether it changed something (an access review asks, it changes nothing).
    pub fn mutates(&self) -> bool {
        matches!(self.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
            && self.resource != "selfsubjectaccessreviews"
    }
}
