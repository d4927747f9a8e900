//! A real local Kubernetes + Flux environment, built from Go modules (tests/testenv/build.sh).
//!
//! Real: etcd, kube-apiserver (TLS, client-cert and token auth, RBAC, audit log),
//! kube-controller-manager, kube-scheduler, the four Flux controllers, sshd, `git http-backend`,
//! docker-registry and a Helm chart repository. Simulated: kubelets. kwok runs one fake node
//! whose pods it marks Running and Ready, so Deployments become Available without containers.
//!
//! Every process runs in one process group under a temp dir; a watchdog ends the group when
//! the test process exits, so nothing is left behind even after a panic.

mod cluster;
mod flux;
pub mod gitea;
mod pki;
pub mod process;
pub mod servers;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

pub use self::cluster::OurRequest;
use self::gitea::Gitea;
use self::pki::Pki;
use self::process::{Supervisor, free_ports, port_open, run, tail, wait_until};
use self::servers::{GitServer, HelmRepository, Registry};

/// Token of the read-only user (bound to the `view` ClusterRole).
const VIEWER_TOKEN: &str = "testenv-viewer-token";
/// The user `tenant`, who may do nothing until a test binds a role in some namespace.
const TENANT_TOKEN: &str = "testenv-tenant-token";
/// The Flux controllers, in start order.
pub const FLUX_CONTROLLERS: [&str; 4] =
    ["source-controller", "kustomize-controller", "helm-controller", "notification-controller"];

/// What to start.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Install the Flux CRDs and start the Flux controllers.
    pub flux: bool,
}

/// A running environment. Dropping it stops everything.
pub struct TestEnv {
    /// The temp dir holding state and logs.
    pub dir: PathBuf,
    /// The built binaries and CRDs (`build.sh`'s cache dir).
    pub cache: PathBuf,
    /// Admin kubeconfig (client certificate in system:masters).
    pub kubeconfig: PathBuf,
    /// Read-only kubeconfig (token of a user bound to `view`).
    pub readonly_kubeconfig: PathBuf,
    /// The API server's audit log (JSON lines).
    pub audit_log: PathBuf,
    /// The API server URL.
    pub server: String,
    /// Git over SSH and HTTP.
    pub git: GitServer,
    /// The OCI registry.
    pub registry: Registry,
    /// The Helm chart repository.
    pub helm: HelmRepository,
    /// How long start-up took.
    pub startup: Duration,
    /// Each running Flux controller and the 127.0.0.1 port of its metrics endpoint (what the
    /// `http-prom` container port is in a cluster).
    pub flux_metrics: Mutex<Vec<(&'static str, u16)>>,
    pki: Pki,
    ports: Ports,
    supervisor: Mutex<Supervisor>,
    _temp: Option<tempfile::TempDir>,
}

struct Ports {
    etcd: u16,
    etcd_peer: u16,
    apiserver: u16,
    controller_manager: u16,
    scheduler: u16,
    kwok: u16,
    storage: u16,
    events: u16,
}

impl TestEnv {
    /// The environment shared by all tests of one test binary, with Flux, started on first use.
    /// A failed start is remembered, so the other tests fail at once instead of retrying.
    pub fn shared() -> &'static TestEnv {
        static SHARED: OnceLock<Result<Arc<TestEnv>, String>> = OnceLock::new();
        let started = SHARED.get_or_init(|| {
            let env = TestEnv::start(Options { flux: true }).map_err(|error| format!("{error:#}"))?;
            env.print_logs_on_panic();
            Ok(env)
        });
        match started {
            Ok(env) => env.as_ref(),
            Err(error) => panic!("testenv: {error}"),
        }
    }

    /// Starts a new environment. It stops when the last handle is dropped: a test's own
    /// environment ends with the test.
    pub fn start(options: Options) -> Result<Arc<TestEnv>> {
        let started = Instant::now();
        check_prerequisites()?;
        let cache = cache_dir()?;
        let temp = tempfile::Builder::new().prefix("gitops-testenv-").tempdir()?;
        let dir = temp.path().to_path_buf();
        let mut supervisor = Supervisor::new(&dir.join("logs"))?;
        supervisor.watch(std::process::id(), (!keep_dir()).then_some(dir.as_path()))?;
        let mut ports = free_ports(8)?.into_iter();
        let mut next = || ports.next().context("enough free ports");
        let ports = Ports {
            etcd: next()?,
            etcd_peer: next()?,
            apiserver: next()?,
            controller_manager: next()?,
            scheduler: next()?,
            kwok: next()?,
            storage: next()?,
            events: next()?,
        };
        let (ssh_port, http_port, registry_port, helm_port) = {
            let extra = free_ports(4)?;
            (extra[0], extra[1], extra[2], extra[3])
        };

        let pki = Pki::generate(&dir.join("pki"))?;
        let bin = cache.join("bin");
        supervisor.spawn(
            "etcd",
            Command::new(bin.join("etcd")).args([
                "--name=testenv".to_string(),
                format!("--data-dir={}", dir.join("etcd").display()),
                format!("--listen-client-urls=http://127.0.0.1:{}", ports.etcd),
                format!("--advertise-client-urls=http://127.0.0.1:{}", ports.etcd),
                format!("--listen-peer-urls=http://127.0.0.1:{}", ports.etcd_peer),
                format!("--initial-advertise-peer-urls=http://127.0.0.1:{}", ports.etcd_peer),
                format!("--initial-cluster=testenv=http://127.0.0.1:{}", ports.etcd_peer),
                "--listen-metrics-urls=".to_string(),
                "--unsafe-no-fsync".to_string(),
                "--log-level=warn".to_string(),
            ]),
        )?;
        // The servers outside Kubernetes start while etcd and the API server boot.
        let git = GitServer::start(&dir.join("git"), &mut supervisor, ssh_port, http_port)?;
        let registry = Registry::start(&dir, &mut supervisor, registry_port, false)?;
        let helm = HelmRepository::start(&dir.join("charts"), &mut supervisor, helm_port)?;
        wait_until("etcd", Duration::from_secs(30), || {
            supervisor.check_alive()?;
            Ok(port_open(ports.etcd))
        })?;

        let audit_policy = dir.join("audit-policy.yaml");
        std::fs::write(
            &audit_policy,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
        )?;
        let tokens = dir.join("pki/tokens.csv");
        std::fs::write(
            &tokens,
            format!(
                "{VIEWER_TOKEN},viewer,viewer-uid,\"testenv:viewers\"\n{TENANT_TOKEN},tenant,tenant-uid,\"testenv:tenants\"\n"
            ),
        )?;
        let audit_log = dir.join("audit.log");
        supervisor.spawn(
            "kube-apiserver",
            Command::new(bin.join("kube-apiserver")).args([
                format!("--etcd-servers=http://127.0.0.1:{}", ports.etcd),
                "--bind-address=127.0.0.1".to_string(),
                "--advertise-address=127.0.0.1".to_string(),
                format!("--secure-port={}", ports.apiserver),
                format!("--tls-cert-file={}", pki.server_cert.display()),
                format!("--tls-private-key-file={}", pki.server_key.display()),
                format!("--client-ca-file={}", pki.ca_cert.display()),
                format!("--token-auth-file={}", tokens.display()),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_string(),
                format!("--service-account-key-file={}", pki.service_account_pub.display()),
                format!("--service-account-signing-key-file={}", pki.service_account_key.display()),
                "--service-cluster-ip-range=10.0.0.0/24".to_string(),
                "--authorization-mode=Node,RBAC".to_string(),
                "--allow-privileged=true".to_string(),
                format!("--audit-policy-file={}", audit_policy.display()),
                format!("--audit-log-path={}", audit_log.display()),
                format!("--cert-dir={}", dir.join("apiserver-certs").display()),
            ]),
        )?;
        let server = format!("https://127.0.0.1:{}", ports.apiserver);
        let kubeconfig = dir.join("admin.kubeconfig");
        let readonly_kubeconfig = dir.join("readonly.kubeconfig");
        write_kubeconfig(&kubeconfig, &server, &pki, None, None)?;
        write_kubeconfig(&readonly_kubeconfig, &server, &pki, Some(VIEWER_TOKEN), None)?;
        git.wait_ready(&mut supervisor)?;

        let mut env = TestEnv {
            dir,
            cache,
            kubeconfig,
            readonly_kubeconfig,
            audit_log,
            server,
            git,
            registry,
            helm,
            startup: Duration::ZERO,
            flux_metrics: Mutex::new(Vec::new()),
            pki,
            ports,
            supervisor: Mutex::new(supervisor),
            _temp: Some(temp),
        };
        env.wait_for_apiserver()?;
        env.kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "testenv-viewers",
            "--clusterrole=view",
            "--group=testenv:viewers",
        ])?;
        env.start_controller_manager_scheduler_and_kwok()?;
        if options.flux {
            env.start_flux()?;
        }
        env.startup = started.elapsed();
        Ok(Arc::new(env))
    }

    /// The shared environment is never dropped, so a panicking test shows its logs from here.
    fn print_logs_on_panic(&self) {
        let dir = self.dir.clone();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            print_logs(&dir);
        }));
    }

    fn wait_for_apiserver(&mut self) -> Result<()> {
        let ca = self.pki.ca_cert.clone();
        let readyz = format!("{}/readyz", self.server);
        let (cert, key) = (self.pki.admin_cert.clone(), self.pki.admin_key.clone());
        let mut supervisor = self.supervisor();
        // Under `make test` a dozen environments share 2 cores with the tests' own work; a fresh
        // kube-apiserver once took longer than 90 s to become ready there (tenant test, session 13).
        wait_until("kube-apiserver /readyz", Duration::from_secs(240), || {
            supervisor.check_alive()?;
            let status = Command::new("curl")
                .args(["-sf", "-o", "/dev/null", "--cacert"])
                .arg(&ca)
                .arg("--cert")
                .arg(&cert)
                .arg("--key")
                .arg(&key)
                .arg(&readyz)
                .status()?;
            Ok(status.success())
        })
    }

    fn start_controller_manager_scheduler_and_kwok(&mut self) -> Result<()> {
        let bin = self.cache.join("bin");
        let kubeconfig = self.kubeconfig.display().to_string();
        let common = |port: u16, certs: &str| {
            vec![
                format!("--kubeconfig={kubeconfig}"),
                format!("--authentication-kubeconfig={kubeconfig}"),
                format!("--authorization-kubeconfig={kubeconfig}"),
                "--bind-address=127.0.0.1".to_string(),
                format!("--secure-port={port}"),
                format!("--cert-dir={}", self.dir.join(certs).display()),
                "--leader-elect=false".to_string(),
            ]
        };
        let mut kcm = common(self.ports.controller_manager, "kcm-certs");
        kcm.extend([
            format!("--service-account-private-key-file={}", self.pki.service_account_key.display()),
            format!("--root-ca-file={}", self.pki.ca_cert.display()),
            "--use-service-account-credentials=true".to_string(),
            format!("--cluster-signing-cert-file={}", self.pki.ca_cert.display()),
            format!("--cluster-signing-key-file={}", self.pki.ca_key.display()),
            "--service-cluster-ip-range=10.0.0.0/24".to_string(),
            "--controllers=*".to_string(),
        ]);
        self.spawn_restarting("kube-controller-manager", bin.join("kube-controller-manager"), kcm)?;
        self.spawn_restarting(
            "kube-scheduler",
            bin.join("kube-scheduler"),
            common(self.ports.scheduler, "scheduler-certs"),
        )?;
        if bin.join("kwok").exists() {
            // build.sh copies kwok's stages (node ready and heartbeat, pod ready/complete/delete).
            let stages = self.cache.join("kwok/stages.yaml");
            // Every container's log is the one file `pod_log` names (in the CRI log format), served
            // as a kubelet serves logs: the API server's pods/log reaches kwok's server, over TLS
            // with the API server's own certificate, at the node's port.
            let logs = self.dir.join("kwok-logs.yaml");
            std::fs::write(
                &logs,
                format!(
                    "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: ClusterLogs\nmetadata:\n  name: every-pod\nspec:\n  selector: {{}}\n  logs:\n  - logsFile: {}\n    follow: true\n",
                    self.pod_log().display()
                ),
            )?;
            std::fs::write(self.pod_log(), "")?;
            self.spawn_restarting(
                "kwok",
                bin.join("kwok"),
                vec![
                    format!("--config={}", stages.display()),
                    format!("--config={}", logs.display()),
                    format!("--node-port={}", self.ports.kwok),
                    format!("--tls-cert-file={}", self.pki.server_cert.display()),
                    format!("--tls-private-key-file={}", self.pki.server_key.display()),
                    format!("--kubeconfig={kubeconfig}"),
                    "--manage-all-nodes=false".to_string(),
                    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".to_string(),
                    "--cidr=10.0.1.0/24".to_string(),
                    "--node-ip=127.0.0.1".to_string(),
                    // The node's heartbeat is its Lease (the heartbeat-with-lease stage updates its
                    // status only every 10 minutes). Without a lease, kwok patched the status about
                    // once a minute, past the controller manager's 40 s grace period: the node went
                    // NotReady for a few seconds each minute, the controller manager marked every
                    // pod NotReady, and kwok (whose pod-ready stage runs once per pod) never made
                    // them Ready again, so a Deployment of a long-lived environment stayed unready.
                    "--node-lease-duration-seconds=40".to_string(),
                    format!("--server-address=127.0.0.1:{}", self.ports.kwok),
                ],
            )?;
            // No taint: every pod may land on the fake node, as on a one-node cluster.
            self.apply_yaml(
                "apiVersion: v1\nkind: Node\nmetadata:\n  name: kwok-node-0\n  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: \"0\"}\n  labels: {kubernetes.io/hostname: kwok-node-0, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}\n",
            )?;
        }
        Ok(())
    }

    /// The log every pod's containers have (kwok serves it through pods/log): lines appended to
    /// it in the CRI format (`2026-12-07T10:00:00.000000000Z stdout F text`) reach a follower.
    pub fn pod_log(&self) -> PathBuf {
        self.dir.join("pod.log")
    }

    /// Starts a real Gitea (tests/testenv/build-gitea.sh) beside this environment; it stops with it.
    pub fn start_gitea(&self) -> Result<Gitea> {
        Gitea::start(&self.dir.join("gitea"), &mut self.supervisor())
    }

    /// Starts a control-plane process that is restarted when it exits, as a kubelet would.
    fn spawn_restarting(&self, name: &str, program: PathBuf, args: Vec<String>) -> Result<u32> {
        self.supervisor().spawn_restarting(name, move || {
            let mut command = Command::new(&program);
            command.args(&args);
            command
        })
    }

    /// How often a process of the environment was restarted after it exited, and its PID now
    /// (`None` for a process that is not restarted).
    pub fn restarts(&self, name: &str) -> Option<(u32, u32)> {
        self.supervisor().restarts(name)
    }

    fn supervisor(&self) -> MutexGuard<'_, Supervisor> {
        self.supervisor.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for TestEnv {
    /// Stops every process and removes the temp dir (kept with `KEEP_TESTENV` set); a panicking
    /// test first shows the logs' tails.
    fn drop(&mut self) {
        if std::thread::panicking() {
            print_logs(&self.dir);
        }
        self.supervisor().stop();
        if keep_dir()
            && let Some(temp) = self._temp.take()
        {
            eprintln!("testenv: kept {}", temp.keep().display());
        }
    }
}

/// `KEEP_TESTENV` set: environments' temp dirs (state and logs) outlive them.
fn keep_dir() -> bool {
    std::env::var_os("KEEP_TESTENV").is_some()
}

fn write_kubeconfig(path: &Path, server: &str, pki: &Pki, token: Option<&str>, namespace: Option<&str>) -> Result<()> {
    let user = match token {
        Some(token) => format!("    token: {token}\n"),
        None => format!(
            "    client-certificate: {}\n    client-key: {}\n",
            pki.admin_cert.display(),
            pki.admin_key.display()
        ),
    };
    let name = if token.is_some() { "testenv-readonly" } else { "testenv" };
    let namespace = namespace.map(|namespace| format!("    namespace: {namespace}\n")).unwrap_or_default();
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: testenv\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\nusers:\n- name: {name}\n  user:\n{user}contexts:\n- name: {name}\n  context:\n    cluster: testenv\n    user: {name}\n{namespace}current-context: {name}\n",
            ca = pki.ca_cert.display()
        ),
    )?;
    Ok(())
}

/// Fails at once, in one line, when the machine lacks a command the environment runs
/// (tests/deps.sh, what `make deps` installs), instead of failing later on the first process
/// that cannot start.
fn check_prerequisites() -> Result<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deps.sh");
    let output = Command::new("bash").arg(&script).arg("check").output().context("cannot run tests/deps.sh")?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let missing: Vec<&str> = said
        .lines()
        .filter_map(|line| line.strip_prefix("deps: "))
        .filter(|line| !line.starts_with("hint: "))
        .collect();
    bail!("this machine lacks what the test environment needs ({}); run `make deps`", missing.join("; "))
}

/// The cache dir with the built binaries: `GITOPS_TESTENV_DIR`, else what build.sh prints
/// (a no-op when the cache is warm, a full Go build otherwise).
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("GITOPS_TESTENV_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("testenv/build.sh");
    let out =
        run(Command::new("bash").arg(script)).context("building the test environment (tests/testenv/build.sh)")?;
    let dir = out.lines().last().context("build.sh printed no cache dir")?;
    Ok(PathBuf::from(dir.trim()))
}

/// Prints the tail of every environment log; called when a test fails.
pub fn print_logs(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir.join("logs")) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    eprintln!("---- testenv logs under {} (last 15 lines each) ----", dir.display());
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        eprintln!("== {} ==\n{}", path.display(), tail(&text, 15));
    }
}

/// The name of the user running the tests (`id -un`).
pub fn whoami() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .unwrap_or_default()
}
