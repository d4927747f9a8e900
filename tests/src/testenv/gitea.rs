//! A real Gitea on loopback, built from its Go module by tests/testenv/build-gitea.sh: SQLite, its
//! built-in SSH server, the REST API and git over HTTP. Its web assets are not built (the npm build
//! is not in the module); nothing here needs them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::process::{Supervisor, free_ports, run, wait_until};

/// The site administrator the tests act as (and whose token they use).
pub const ADMIN: &str = "gitops";
/// Passwords of the users the tests create (test-only; nobody logs in with them).
const PASSWORD: &str = "testenv-Not-a-secret-1";

/// A running Gitea.
pub struct Gitea {
    /// `http://127.0.0.1:<port>`: the web and git-over-HTTP root.
    pub url: String,
    /// The built-in SSH server's port.
    pub ssh_port: u16,
    /// An access token of [`ADMIN`] with every scope.
    pub token: String,
    /// A `known_hosts` file with the SSH server's host key.
    pub known_hosts: PathBuf,
    /// A private key of [`ADMIN`] (added to the account's SSH keys): pushes over SSH as the admin.
    pub client_key: PathBuf,
    binary: PathBuf,
    config: PathBuf,
    work: PathBuf,
}

impl Gitea {
    /// Writes the configuration into `dir`, creates the database and [`ADMIN`], and starts the
    /// server under `supervisor`; returns once its API answers.
    pub fn start(dir: &Path, supervisor: &mut Supervisor) -> Result<Gitea> {
        let built = crate::tools::built_dir("GITOPS_GITEA_DIR", "build-gitea.sh")?;
        let binary = built.join("bin/gitea");
        if !binary.is_file() {
            bail!("{} is missing: rebuild it with tests/testenv/build-gitea.sh", binary.display());
        }
        let work = dir.to_path_buf();
        std::fs::create_dir_all(work.join("ssh"))?;
        let ports = free_ports(2)?;
        let (http_port, ssh_port) = (ports[0], ports[1]);
        let url = format!("http://127.0.0.1:{http_port}");

        let host_key = work.join("ssh/host_ed25519");
        let client_key = work.join("ssh/admin_ed25519");
        for (file, comment) in [(&host_key, "gitea-host"), (&client_key, "gitea-admin")] {
            run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"]).arg(file))?;
        }
        let host_pub = std::fs::read_to_string(host_key.with_extension("pub"))?;
        let key_fields: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        let known_hosts = work.join("ssh/known_hosts");
        std::fs::write(&known_hosts, format!("[127.0.0.1]:{ssh_port} {}\n", key_fields.join(" ")))?;

        let config = work.join("app.ini");
        std::fs::write(&config, app_ini(&work, &built.join("src"), http_port, ssh_port, &host_key))?;
        let gitea = Gitea { url, ssh_port, token: String::new(), known_hosts, client_key, binary, config, work };
        run(gitea.command().arg("migrate")).context("gitea migrate")?;
        let token = gitea.create_account(ADMIN, true)?;

        supervisor.spawn("gitea", gitea.command().arg("web"))?;
        let health = format!("{}/api/healthz", gitea.url);
        wait_until("Gitea's API", Duration::from_secs(120), || {
            supervisor.check_alive()?;
            Ok(Command::new("curl").args(["-sf", "-o", "/dev/null", &health]).status()?.success())
        })?;
        let gitea = Gitea { token, ..gitea };
        let admin_key = std::fs::read_to_string(gitea.client_key.with_extension("pub"))?;
        gitea.api("POST", "/user/keys", Some(&serde_json::json!({ "title": "testenv", "key": admin_key.trim() })))?;
        Ok(gitea)
    }

    /// The REST API's base URL.
    pub fn api_url(&self) -> String {
        format!("{}/api/v1", self.url)
    }

    /// One API call as [`ADMIN`]; fails unless the answer is a 2xx. Returns the JSON answer
    /// (`null` when empty).
    pub fn api(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        self.api_as(&self.token, method, path, body)
    }

    /// One API call with `token`; fails unless the answer is a 2xx.
    pub fn api_as(&self, token: &str, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let mut curl = Command::new("curl");
        curl.args(["-sS", "-X", method, "-H", &format!("Authorization: token {token}")])
            .args(["-H", "Content-Type: application/json", "-w", "\n%{http_code}"])
            .arg(format!("{}{path}", self.api_url()));
        if let Some(body) = body {
            curl.args(["--data-binary", &body.to_string()]);
        }
        let output = run(&mut curl)?;
        let (text, status) = output.trim_end().rsplit_once('\n').unwrap_or(("", output.trim()));
        if !status.starts_with('2') {
            bail!("Gitea answered {method} {path} with {status}: {text}");
        }
        Ok(if text.trim().is_empty() { Value::Null } else { serde_json::from_str(text)? })
    }

    /// Creates a user (not an admin) and returns an access token of theirs with every scope.
    pub fn create_user(&self, name: &str) -> Result<String> {
        self.create_account(name, false)
    }

    /// `gitea admin user create` for `name` (a site administrator with `admin`), with an access
    /// token of every scope, which it returns.
    fn create_account(&self, name: &str, admin: bool) -> Result<String> {
        let created = run(self
            .command()
            .args(["admin", "user", "create", "--username", name])
            .args(admin.then_some("--admin"))
            .args(["--password", PASSWORD, "--email", &format!("{name}@example.invalid")])
            .args(["--must-change-password=false", "--access-token", "--access-token-scopes", "all"]))?;
        access_token(&created)
    }

    /// The SSH URL of `owner/name`, as Gitea reports it.
    pub fn ssh_url(&self, repo: &str) -> String {
        format!("ssh://git@127.0.0.1:{}/{repo}.git", self.ssh_port)
    }

    /// The bare repository of `owner/name` in Gitea's storage (where its git hooks are).
    pub fn repo_dir(&self, repo: &str) -> PathBuf {
        self.work.join("repos").join(format!("{}.git", repo.to_lowercase()))
    }

    /// The git CLI in `dir`, as [`ADMIN`] over SSH with the admin's key.
    pub fn git(&self, dir: &Path, args: &[&str]) -> Result<String> {
        let ssh = format!(
            "ssh -F /dev/null -i {} -o IdentitiesOnly=yes -o UserKnownHostsFile={} -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes",
            self.client_key.display(),
            self.known_hosts.display()
        );
        run(Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .env("GIT_SSH_COMMAND", ssh))
    }

    /// The commit branch `branch` of `owner/name` points at, as git reads it over SSH. (Not the
    /// API's branch: right after a push, Gitea 1.27's `GET /repos/{repo}/branches/{branch}`
    /// sometimes answers 500 with a nil pointer panic in its commit reader, under load.)
    pub fn head(&self, repo: &str, branch: &str) -> Result<String> {
        let listed = self.git(&self.work, &["ls-remote", &self.ssh_url(repo), &format!("refs/heads/{branch}")])?;
        let sha = listed.split_whitespace().next().context(format!("{repo} has no branch {branch}"))?;
        Ok(sha.to_string())
    }

    /// `gitea --config … --work-path …`: the server, or one of its admin commands.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command.arg("--config").arg(&self.config).arg("--work-path").arg(&self.work);
        command
    }
}

/// The token `gitea admin user create --access-token` prints last: `… created... <token>`.
fn access_token(output: &str) -> Result<String> {
    output
        .lines()
        .find_map(|line| line.strip_prefix("Access token was successfully created... "))
        .map(|token| token.trim().to_string())
        .with_context(|| format!("no access token in: {output}"))
}

/// Gitea's configuration: SQLite, HTTP on `http_port`, the built-in SSH server on `ssh_port`,
/// offline, no mail, no registration. The templates and locales are read from `source`, the
/// module source the binary was built from.
fn app_ini(work: &Path, source: &Path, http_port: u16, ssh_port: u16, host_key: &Path) -> String {
    let user = super::whoami();
    // Gitea refuses to run as root unless told this; CI containers run as root.
    let as_root = if user == "root" { "I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n" } else { "" };
    let work = work.display();
    format!(
        "APP_NAME = testenv\nRUN_MODE = prod\nRUN_USER = {user}\n{as_root}WORK_PATH = {work}\n\
         [server]\nPROTOCOL = http\nHTTP_ADDR = 127.0.0.1\nHTTP_PORT = {http_port}\n\
         ROOT_URL = http://127.0.0.1:{http_port}/\nLOCAL_ROOT_URL = http://127.0.0.1:{http_port}/\nDOMAIN = 127.0.0.1\n\
         START_SSH_SERVER = true\nBUILTIN_SSH_SERVER_USER = git\nSSH_DOMAIN = 127.0.0.1\nSSH_LISTEN_HOST = 127.0.0.1\n\
         SSH_PORT = {ssh_port}\nSSH_LISTEN_PORT = {ssh_port}\nSSH_SERVER_HOST_KEYS = {host_key}\n\
         STATIC_ROOT_PATH = {source}\nAPP_DATA_PATH = {work}/data\nOFFLINE_MODE = true\nLFS_START_SERVER = false\n\
         [database]\nDB_TYPE = sqlite3\nPATH = {work}/gitea.db\n\
         [repository]\nROOT = {work}/repos\n\
         [security]\nINSTALL_LOCK = true\n\
         [service]\nDISABLE_REGISTRATION = true\n\
         [mailer]\nENABLED = false\n\
         [log]\nMODE = console\nLEVEL = warn\n",
        host_key = host_key.display(),
        source = source.display(),
    )
}
