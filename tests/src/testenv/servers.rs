//! Git (sshd and smart HTTP), OCI registry and Helm chart repository servers on loopback.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::process::{Supervisor, port_open, run, wait_until};

/// The user the git servers accept, and the password of the HTTP one.
pub const GIT_HTTP_USER: &str = "gitops";
/// The HTTP git password (test-only).
pub const GIT_HTTP_PASSWORD: &str = "testenv-not-secret";

/// sshd and `git http-backend` serving bare repositories from one directory.
pub struct GitServer {
    /// Where the bare repositories live.
    pub repos: PathBuf,
    /// sshd's port.
    pub ssh_port: u16,
    /// The user the repositories are reached as over SSH: whoever runs the tests (sshd runs as
    /// them, and lets only them in).
    pub ssh_user: String,
    /// The smart-HTTP server's port.
    pub http_port: u16,
    /// A `known_hosts` file with sshd's host key.
    pub known_hosts: PathBuf,
    /// The `known_hosts` line itself.
    pub known_hosts_line: String,
    /// A private key the tests push with (already authorized).
    pub client_key: PathBuf,
    authorized_keys: PathBuf,
}

impl GitServer {
    /// Starts sshd and the HTTP server.
    pub fn start(dir: &Path, supervisor: &mut Supervisor, ssh_port: u16, http_port: u16) -> Result<GitServer> {
        let repos = dir.join("repos");
        let ssh = dir.join("ssh");
        std::fs::create_dir_all(&repos)?;
        std::fs::create_dir_all(&ssh)?;
        let keygen = |file: &Path, comment: &str| {
            run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"]).arg(file))
        };
        let host_key = ssh.join("host_ed25519");
        let client_key = ssh.join("client_ed25519");
        keygen(&host_key, "testenv-host")?;
        keygen(&client_key, "testenv-client")?;
        let authorized_keys = ssh.join("authorized_keys");
        let ssh_user = super::whoami();
        std::fs::write(&authorized_keys, std::fs::read_to_string(client_key.with_extension("pub"))?)?;
        let host_pub = std::fs::read_to_string(host_key.with_extension("pub"))?;
        let key_fields: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        let known_hosts_line = format!("[127.0.0.1]:{ssh_port} {}", key_fields.join(" "));
        let known_hosts = ssh.join("known_hosts");
        std::fs::write(&known_hosts, format!("{known_hosts_line}\n"))?;
        let config = ssh.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {ssh_port}\nListenAddress 127.0.0.1\nHostKey {host}\nPidFile {pid}\nAuthorizedKeysFile {keys}\n\
                 PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nAllowUsers {user}\nUsePAM no\nStrictModes no\n\
                 AllowTcpForwarding no\nX11Forwarding no\nLogLevel VERBOSE\n\
                 # Tests open dozens of connections at once (16 concurrent writers); sshd's default\n\
                 # MaxStartups 10:30:100 drops some of them mid-handshake (\"Failed getting banner\").\n\
                 MaxStartups 256\n{penalties}",
                host = host_key.display(),
                pid = ssh.join("sshd.pid").display(),
                keys = authorized_keys.display(),
                user = ssh_user,
                penalties = per_source_penalties_off()?,
            ),
        )?;
        if rustix::process::geteuid().is_root() {
            // As root, sshd insists on /run/sshd (its privilege separation chroot); a private mount
            // namespace gives it one without touching the host.
            let sshd = format!(
                "mount -t tmpfs -o mode=755 tmpfs /run && mkdir -m 755 /run/sshd && exec /usr/sbin/sshd -D -e -f '{}'",
                config.display()
            );
            supervisor
                .spawn("sshd", Command::new("unshare").args(["-m", "--propagation", "private", "sh", "-c", &sshd]))?;
        } else {
            // As anyone else it needs neither: it serves that user alone, as a GitHub runner's does.
            supervisor.spawn("sshd", Command::new("/usr/sbin/sshd").arg("-D").arg("-e").arg("-f").arg(&config))?;
        }

        let backend = Path::new(env!("CARGO_MANIFEST_DIR")).join("testenv/servers/git_http_backend.py");
        supervisor.spawn(
            "git-http",
            Command::new("python3").arg(backend).arg("--root").arg(&repos).args([
                "--port".to_string(),
                http_port.to_string(),
                "--auth".to_string(),
                format!("{GIT_HTTP_USER}:{GIT_HTTP_PASSWORD}"),
            ]),
        )?;
        Ok(GitServer {
            repos,
            ssh_port,
            ssh_user,
            http_port,
            known_hosts,
            known_hosts_line,
            client_key,
            authorized_keys,
        })
    }

    /// Waits until both servers accept connections.
    pub fn wait_ready(&self, supervisor: &mut Supervisor) -> Result<()> {
        // 20 s was not enough once on a loaded 2-core machine, with several environments starting.
        wait_until("sshd and the git HTTP server", Duration::from_secs(60), || {
            supervisor.check_alive()?;
            Ok(port_open(self.ssh_port) && port_open(self.http_port))
        })
    }

    /// Creates an empty bare repository (default branch `main`) and returns its name.
    pub fn create_repo(&self, name: &str) -> Result<PathBuf> {
        let path = self.repos.join(format!("{name}.git"));
        run(Command::new("git").args(["init", "-q", "--bare", "-b", "main"]).arg(&path))?;
        run(Command::new("git").args(["config", "http.receivepack", "true"]).current_dir(&path))?;
        Ok(path)
    }

    /// The SSH URL of a repository.
    pub fn ssh_url(&self, name: &str) -> String {
        format!("ssh://{}@127.0.0.1:{}{}/{name}.git", self.ssh_user, self.ssh_port, self.repos.display())
    }

    /// The HTTP URL of a repository (credentials are separate).
    pub fn http_url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}.git", self.http_port)
    }

    /// Lets a public key (OpenSSH one-line format) in, as a deploy key.
    pub fn authorize_key(&self, public_key: &str) -> Result<()> {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().append(true).open(&self.authorized_keys)?;
        writeln!(file, "{}", public_key.trim()).context("append to authorized_keys")
    }

    /// The commit `main` of repository `name` points at, empty when the branch does not exist.
    pub fn head(&self, name: &str) -> String {
        run(Command::new("git")
            .args(["ls-remote", &self.ssh_url(name), "refs/heads/main"])
            .env("GIT_SSH_COMMAND", self.git_ssh_command()))
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
    }

    /// The git CLI in `dir`, as a test user that reaches this server with the test client key.
    pub fn git(&self, dir: &Path, args: &[&str]) -> Result<String> {
        run(Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .env("GIT_SSH_COMMAND", self.git_ssh_command()))
    }

    /// `GIT_SSH_COMMAND` for the git CLI: the test client key, strict host key checking.
    pub fn git_ssh_command(&self) -> String {
        format!(
            "ssh -F /dev/null -i {} -o IdentitiesOnly=yes -o UserKnownHostsFile={} -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes",
            self.client_key.display(),
            self.known_hosts.display()
        )
    }
}

/// Debian's `docker-registry` (CNCF distribution), plain HTTP, no auth unless asked for.
pub struct Registry {
    /// `127.0.0.1:<port>`.
    pub address: String,
    /// Where it stores blobs and manifests (tests that tamper with a blob write here).
    pub data: PathBuf,
}

/// A user name and password the authenticated test registry accepts (test-only).
pub const REGISTRY_USER: &str = "ci";
/// The password of [`REGISTRY_USER`].
pub const REGISTRY_PASSWORD: &str = "right-password";
/// [`REGISTRY_USER`]:[`REGISTRY_PASSWORD`] as an htpasswd line (bcrypt, cost 5, made once with
/// golang.org/x/crypto/bcrypt: distribution accepts bcrypt only).
const REGISTRY_HTPASSWD: &str = "ci:$2a$05$3UXo3iJA1yZYgYLETeoja.ueofkNrQLqyUL56NLmVk3iLvQiCZiue";

impl Registry {
    /// Starts the registry; with `authenticated`, it accepts only [`REGISTRY_USER`].
    pub fn start(dir: &Path, supervisor: &mut Supervisor, port: u16, authenticated: bool) -> Result<Registry> {
        let config = dir.join("registry.yml");
        let data = dir.join("registry-data");
        let auth = if authenticated {
            let htpasswd = dir.join("registry.htpasswd");
            std::fs::write(&htpasswd, format!("{REGISTRY_HTPASSWD}\n"))?;
            format!("auth:\n  htpasswd: {{realm: testenv, path: {}}}\n", htpasswd.display())
        } else {
            String::new()
        };
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog: {{level: info}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\n  delete: {{enabled: true}}\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: testenv-not-secret\nhealth:\n  storagedriver: {{enabled: false}}\n{auth}",
                data.display()
            ),
        )?;
        supervisor.spawn("registry", Command::new("docker-registry").arg("serve").arg(&config))?;
        Ok(Registry { address: format!("127.0.0.1:{port}"), data })
    }
}

/// A registry of one test's own, outside any cluster, stopped when dropped.
pub struct OwnRegistry {
    /// The registry.
    pub registry: Registry,
    _supervisor: Supervisor,
    _dir: tempfile::TempDir,
}

impl OwnRegistry {
    /// Starts one and waits until it answers.
    pub fn start(authenticated: bool) -> Result<OwnRegistry> {
        let dir = tempfile::tempdir()?;
        let mut supervisor = Supervisor::new(&dir.path().join("logs"))?;
        let port = super::process::free_ports(1)?[0];
        let registry = Registry::start(dir.path(), &mut supervisor, port, authenticated)?;
        wait_until("the registry", Duration::from_secs(20), || {
            supervisor.check_alive()?;
            Ok(port_open(port))
        })?;
        Ok(OwnRegistry { registry, _supervisor: supervisor, _dir: dir })
    }
}

impl Registry {
    /// Pushes a directory as a Flux OCI artifact (the layout `flux push artifact` makes:
    /// a gzipped tarball layer and the Flux config media type) and returns the manifest digest.
    pub fn push_artifact(&self, repository: &str, tag: &str, dir: &Path, revision: &str) -> Result<String> {
        let work = tempfile::tempdir()?;
        let layer = work.path().join("layer.tgz");
        run(Command::new("sh").arg("-c").arg(format!(
            "tar --sort=name --mtime='2024-01-01 00:00Z' --owner=0 --group=0 --numeric-owner -C '{}' -cf - . | gzip -n > '{}'",
            dir.display(),
            layer.display()
        )))?;
        self.push_layer(repository, tag, &std::fs::read(&layer)?, revision)
    }

    /// Pushes `layer` (a tar.gz made by anyone, hostile ones included) as a Flux artifact, with
    /// curl: the product's own client is not the one under test here.
    pub fn push_layer(&self, repository: &str, tag: &str, layer_bytes: &[u8], revision: &str) -> Result<String> {
        self.push_crafted(repository, tag, layer_bytes, revision, |_| {})
    }

    /// [`Registry::push_layer`] with the manifest changed by `craft` before it is pushed (a
    /// layer size it does not have, annotations of any size), as an attacker who can push would.
    pub fn push_crafted(
        &self,
        repository: &str,
        tag: &str,
        layer_bytes: &[u8],
        revision: &str,
        craft: impl FnOnce(&mut serde_json::Value),
    ) -> Result<String> {
        let work = tempfile::tempdir()?;
        let layer = work.path().join("layer.tgz");
        std::fs::write(&layer, layer_bytes)?;
        let config = work.path().join("config.json");
        std::fs::write(&config, "{}")?;
        let base = format!("http://{}/v2/{repository}", self.address);
        let mut described = Vec::new();
        for blob in [&config, &layer] {
            let digest = format!("sha256:{}", sha256_file(blob)?);
            let size = std::fs::metadata(blob)?.len();
            let location = run(Command::new("curl").args([
                "-sf",
                "-D",
                "-",
                "-o",
                "/dev/null",
                "-X",
                "POST",
                &format!("{base}/blobs/uploads/"),
            ]))?
            .lines()
            .find_map(|line| {
                line.split_once(':')
                    .filter(|(name, _)| name.eq_ignore_ascii_case("location"))
                    .map(|(_, v)| v.trim().to_string())
            })
            .context("the registry sent no upload location")?;
            let separator = if location.contains('?') { '&' } else { '?' };
            let url = if location.starts_with("http") {
                location.clone()
            } else {
                format!("http://{}{location}", self.address)
            };
            run(Command::new("curl")
                .args(["-sf", "-X", "PUT", "-H", "Content-Type: application/octet-stream", "--data-binary"])
                .arg(format!("@{}", blob.display()))
                .arg(format!("{url}{separator}digest={digest}")))?;
            described.push((digest, size));
        }
        let mut manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.cncf.flux.config.v1+json", "digest": described[0].0, "size": described[0].1},
            "layers": [{"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip", "digest": described[1].0, "size": described[1].1}],
            "annotations": {
                "org.opencontainers.image.created": "2024-01-01T00:00:00Z",
                "org.opencontainers.image.source": "testenv",
                "org.opencontainers.image.revision": revision
            }
        });
        craft(&mut manifest);
        let manifest_path = work.path().join("manifest.json");
        std::fs::write(&manifest_path, manifest.to_string())?;
        run(Command::new("curl")
            .args([
                "-sf",
                "-X",
                "PUT",
                "-H",
                "Content-Type: application/vnd.oci.image.manifest.v1+json",
                "--data-binary",
            ])
            .arg(format!("@{}", manifest_path.display()))
            .arg(format!("{base}/manifests/{tag}")))?;
        Ok(format!("sha256:{}", sha256_file(&manifest_path)?))
    }
}

fn sha256_file(path: &Path) -> Result<String> {
    let out = run(Command::new("sha256sum").arg(path))?;
    Ok(out.split_whitespace().next().unwrap_or_default().to_string())
}

/// A static HTTP server for Helm chart repositories (`index.yaml` plus packaged charts).
pub struct HelmRepository {
    /// The directory served.
    pub dir: PathBuf,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl HelmRepository {
    /// Starts the server.
    pub fn start(dir: &Path, supervisor: &mut Supervisor, port: u16) -> Result<HelmRepository> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("index.yaml"), "apiVersion: v1\nentries: {}\n")?;
        supervisor.spawn(
            "helm-repository",
            Command::new("python3")
                .args(["-m", "http.server", "--bind", "127.0.0.1", "--directory"])
                .arg(dir)
                .arg(port.to_string()),
        )?;
        Ok(HelmRepository { dir: dir.to_path_buf(), url: format!("http://127.0.0.1:{port}") })
    }

    /// Packages a chart directory (`Chart.yaml` with `name` and `version`) and adds it to the
    /// index, beside the chart's other versions.
    pub fn publish(&self, chart_dir: &Path) -> Result<()> {
        let chart_yaml = std::fs::read_to_string(chart_dir.join("Chart.yaml"))?;
        let field = |key: &str| {
            chart_yaml
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{key}:")).map(|v| v.trim().trim_matches('"').to_string()))
                .with_context(|| format!("Chart.yaml has no {key}"))
        };
        let (name, version) = (field("name")?, field("version")?);
        let archive = format!("{name}-{version}.tgz");
        let staging = tempfile::tempdir()?;
        run(Command::new("cp").arg("-r").arg(chart_dir).arg(staging.path().join(&name)))?;
        run(Command::new("tar")
            .args(["--sort=name", "--mtime=2024-01-01 00:00Z", "--owner=0", "--group=0", "--numeric-owner", "-czf"])
            .arg(self.dir.join(&archive))
            .arg("-C")
            .arg(staging.path())
            .arg(&name))?;
        let digest = sha256_file(&self.dir.join(&archive))?;
        let index = self.dir.join("index.yaml");
        let mut text = std::fs::read_to_string(&index)?;
        if text.contains("entries: {}") {
            text = text.replace("entries: {}\n", "entries:\n");
        }
        let entry = format!(
            "  - apiVersion: v2\n    name: {name}\n    version: {version}\n    digest: {digest}\n    created: \"2024-01-01T00:00:00Z\"\n    urls:\n    - {url}/{archive}\n",
            url = self.url
        );
        let key = format!("\n  {name}:\n");
        match text.find(&key) {
            Some(at) => text.insert_str(at + key.len(), &entry),
            None => text.push_str(&format!("  {name}:\n{entry}")),
        }
        std::fs::write(index, text)?;
        Ok(())
    }
}

/// OpenSSH 9.8 and later penalise a source address whose connections fail authentication or
/// never authenticate (PerSourcePenalties); every test connects from 127.0.0.1 and some fail on
/// purpose, so the penalty would refuse the tests that follow. Older sshd rejects the keyword.
fn per_source_penalties_off() -> Result<&'static str> {
    let output = Command::new("/usr/sbin/sshd").arg("-V").output().context("cannot run /usr/sbin/sshd -V")?;
    let banner = String::from_utf8_lossy(&output.stderr);
    Ok(if openssh_has_penalties(&banner) { "PerSourcePenalties no\n" } else { "" })
}

/// `OpenSSH_9.2, OpenSSL …` → false; `OpenSSH_9.8p1 …` or `OpenSSH_10.0p2 …` → true.
fn openssh_has_penalties(banner: &str) -> bool {
    let version = banner.trim_start().strip_prefix("OpenSSH_").unwrap_or("");
    let mut numbers = version.split(|c: char| !c.is_ascii_digit()).map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    (major, minor) >= (9, 8)
}

#[cfg(test)]
mod tests {
    use super::openssh_has_penalties;

    #[test]
    fn per_source_penalties_exist_from_openssh_9_8() {
        assert!(!openssh_has_penalties("OpenSSH_9.2, OpenSSL 3.0.22 25 Aug 2026"));
        assert!(!openssh_has_penalties("OpenSSH_9.7p1 Debian"));
        assert!(openssh_has_penalties("OpenSSH_9.8p1, OpenSSL 3.3"));
        assert!(openssh_has_penalties("OpenSSH_10.0p2 Debian-7, OpenSSL 3.5.1"));
        assert!(!openssh_has_penalties("something else"));
    }
}
