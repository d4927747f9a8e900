//! The API server as curl reaches it, and the seeded apps: N GitRepositories and Kustomizations
//! whose status looks like what Flux writes, each with its deployment ledger.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use gitops_e2e::testenv::TestEnv;

use super::{HISTORY, INVENTORY, NAMESPACES, SEED_PARALLEL};

/// The API server as curl reaches it, with the admin client certificate.
pub(super) struct Api {
    server: String,
    tls: [String; 6],
    dir: PathBuf,
    /// Touches so far, the value of the next.
    touched: std::sync::atomic::AtomicUsize,
}

impl Api {
    pub(super) fn new(env: &TestEnv) -> Api {
        let pki = |name: &str| env.dir.join("pki").join(name).display().to_string();
        Api {
            server: env.server.clone(),
            tls: [
                "--cacert".into(),
                pki("ca.crt"),
                "--cert".into(),
                pki("admin.crt"),
                "--key".into(),
                pki("admin.key"),
            ],
            dir: env.dir.clone(),
            touched: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// One GET, the body in memory.
    pub(super) fn get(&self, path: &str) -> Result<Vec<u8>> {
        // The API server pretty-prints JSON for curl's own user agent, as for no client.
        let output = Command::new("curl")
            .args(["-sS", "--fail-with-body", "--user-agent", "kubectl-gitops-bench"])
            .args(&self.tls)
            .arg(format!("{}{path}", self.server))
            .output()
            .context("running curl")?;
        if !output.status.success() {
            bail!("GET {path}: {}{}", String::from_utf8_lossy(&output.stderr), String::from_utf8_lossy(&output.stdout));
        }
        Ok(output.stdout)
    }

    /// Changes an annotation of one GitRepository and one Kustomization, as controllers change
    /// objects all the time on a real cluster. An idle API server's watch cache drops its
    /// snapshots at the next etcd compaction (every 5 minutes), and from then on it reads every
    /// continuation page of a paginated LIST from etcd: 3 times slower here, for the paginated
    /// clients (status, kubectl, the floor) but not for flux's single LIST, depending on when a
    /// row happens to run. A fresh change gives the cache a snapshot again.
    pub(super) fn touch(&self) -> Result<()> {
        let count = self.touched.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let body = serde_json::json!({ "metadata": { "annotations": { "bench.kubectl-gitops.io/touched": count.to_string() } } });
        let requests: Vec<Request> =
            [("source.toolkit.fluxcd.io/v1", "gitrepositories"), ("kustomize.toolkit.fluxcd.io/v1", "kustomizations")]
                .iter()
                .map(|(group_version, plural)| Request {
                    method: "PATCH",
                    path: format!("{}/app-0", App::new(0).path(group_version, plural)),
                    content_type: "application/merge-patch+json",
                    agent: "kubectl-gitops-bench",
                    body: body.to_string(),
                })
                .collect();
        self.send_all("touching objects", &requests, 200)
    }

    /// Sends every request with one curl (`--parallel`, HTTP/2 to the API server), and fails unless
    /// each one answered `expected`.
    pub(super) fn send_all(&self, what: &str, requests: &[Request], expected: u16) -> Result<()> {
        let mut config = String::new();
        let quote = |text: &str| text.replace('\\', "\\\\").replace('"', "\\\"");
        for (index, request) in requests.iter().enumerate() {
            if index > 0 {
                config.push_str("next\n");
            }
            let _ = write!(
                config,
                "url = \"{}{}\"\nrequest = \"{}\"\nheader = \"Content-Type: {}\"\nuser-agent = \"{}\"\ndata-binary = \"{}\"\noutput = \"/dev/null\"\nwrite-out = \"%{{http_code}}\\n\"\n",
                self.server,
                request.path,
                request.method,
                request.content_type,
                request.agent,
                quote(&request.body)
            );
            for pair in self.tls.chunks(2) {
                let _ = writeln!(config, "{} = \"{}\"", pair[0].trim_start_matches('-'), quote(&pair[1]));
            }
        }
        let file = self.dir.join("bench-requests.curlrc");
        std::fs::write(&file, config)?;
        let output = Command::new("curl")
            .args(["-sS", "--parallel", "--parallel-max", &SEED_PARALLEL.to_string(), "-K"])
            .arg(&file)
            .output()
            .context("running curl")?;
        let codes = String::from_utf8_lossy(&output.stdout);
        let wrong = codes.lines().filter(|code| code.trim() != expected.to_string()).count();
        let answered = codes.lines().count();
        if !output.status.success() || wrong > 0 || answered != requests.len() {
            bail!(
                "{what}: {answered} of {} requests answered, {wrong} not {expected}: {}",
                requests.len(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }
}

pub(super) struct Request {
    pub(super) method: &'static str,
    pub(super) path: String,
    pub(super) content_type: &'static str,
    pub(super) agent: &'static str,
    pub(super) body: String,
}

/// A POST of `body` to `path`, sent as `agent`.
fn post(path: String, agent: &'static str, body: &serde_json::Value) -> Request {
    Request { method: "POST", path, content_type: "application/json", agent, body: body.to_string() }
}

/// Creates apps `from..to` (a GitRepository and a Kustomization each, in 10 namespaces, with an
/// event and a ledger), then writes their status through the status subresource, as the
/// controllers do.
pub(super) fn seed(api: &Api, from: usize, to: usize) -> Result<()> {
    let started = Instant::now();
    let mut creates = Vec::new();
    let mut statuses = Vec::new();
    for index in from..to {
        let app = App::new(index);
        for (path, object, status, agent) in [
            (
                app.path("source.toolkit.fluxcd.io/v1", "gitrepositories"),
                app.git_repository(),
                app.git_status(),
                "source-controller",
            ),
            (
                app.path("kustomize.toolkit.fluxcd.io/v1", "kustomizations"),
                app.kustomization(),
                app.kustomization_status(),
                "kustomize-controller",
            ),
        ] {
            statuses.push(Request {
                method: "PATCH",
                path: format!("{path}/{}/status", app.name),
                content_type: "application/merge-patch+json",
                agent,
                body: serde_json::json!({ "status": status }).to_string(),
            });
            creates.push(post(path, "kubectl-gitops-bench", &object));
        }
        let core = |plural: &str| format!("/api/v1/namespaces/{}/{plural}", app.namespace);
        creates.push(post(core("configmaps"), "kubectl-gitops-bench", &app.ledger()));
        creates.push(post(core("events"), "kustomize-controller", &app.event()));
    }
    api.send_all("creating objects", &creates, 201)?;
    let created = started.elapsed();
    api.send_all("writing status", &statuses, 200)?;
    eprintln!(
        "bench: seeded apps {from}..{to} in {:.1?} ({:.1?} creating, {:.1?} writing status)",
        started.elapsed(),
        created,
        started.elapsed() - created
    );
    Ok(())
}

/// One seeded app: deterministic names, revisions and digests derived from its index.
struct App {
    index: usize,
    namespace: String,
    name: String,
}

impl App {
    pub(super) fn new(index: usize) -> App {
        App { index, namespace: format!("bench-{}", index % NAMESPACES), name: format!("app-{index}") }
    }

    /// The event kustomize-controller records of a reconciliation: every tenth app's failed.
    fn event(&self) -> serde_json::Value {
        let failed = self.index.is_multiple_of(10);
        let now = gitops_shared::duration::format_timestamp(gitops_shared::duration::now() as i64);
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": format!("{}.reconciled", self.name), "namespace": self.namespace},
            "involvedObject": {
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "name": self.name,
                "namespace": self.namespace,
            },
            "type": if failed { "Warning" } else { "Normal" },
            "reason": if failed { "ReconciliationFailed" } else { "ReconciliationSucceeded" },
            "message": if failed { "kustomization path not found: stat ./deploy: no such file or directory" } else { "Reconciliation finished in 1.2s, next run in 10m0s" },
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": "kustomize-controller"},
        })
    }

    fn path(&self, group_version: &str, plural: &str) -> String {
        format!("/apis/{group_version}/namespaces/{}/{plural}", self.namespace)
    }

    /// `n` hex digits, a function of the app and `salt`.
    fn hex(&self, salt: u64, n: usize) -> String {
        let mut state =
            (self.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let mut out = String::with_capacity(n + 16);
        while out.len() < n {
            // splitmix64
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let _ = write!(out, "{:016x}", z ^ (z >> 31));
        }
        out.truncate(n);
        out
    }

    /// The revision of history snapshot `age` (0 is the current one).
    fn revision(&self, age: usize) -> String {
        format!("main@sha1:{}", self.hex(age as u64, 40))
    }

    /// A time `minutes` (plus up to 10 hours, by app) before 2026-12-01T00:00:00Z, RFC 3339, at
    /// most 30 days back.
    fn time(&self, minutes: usize) -> String {
        const NOVEMBER: usize = 30 * 24 * 60;
        let since_november = NOVEMBER - (minutes + self.index % 600).clamp(1, NOVEMBER);
        format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}Z",
            1 + since_november / (24 * 60),
            since_november / 60 % 24,
            since_november % 60,
            self.index % 60
        )
    }

    fn labels() -> serde_json::Value {
        serde_json::json!({ "app.kubernetes.io/managed-by": "kubectl-gitops" })
    }

    fn git_repository(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": { "name": self.name, "namespace": self.namespace, "labels": App::labels() },
            "spec": {
                "interval": "1m0s",
                "timeout": "60s",
                "url": format!("https://git.example.com/apps/{}.git", self.name),
                "ref": { "branch": "main" },
                "secretRef": { "name": "git-credentials" },
            },
        })
    }

    fn kustomization(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": { "name": self.name, "namespace": self.namespace, "labels": App::labels() },
            "spec": {
                "interval": "10m0s",
                "retryInterval": "2m0s",
                "timeout": "5m0s",
                "path": "./deploy/production",
                "prune": true,
                "wait": true,
                "targetNamespace": self.namespace,
                "sourceRef": { "kind": "GitRepository", "name": self.name },
            },
        })
    }

    /// Most apps are ready; one in 50 has a failing source, one in 50 a failing health check, one
    /// in 50 is reconciling, as on a real cluster where something is always in motion.
    fn state(&self) -> usize {
        self.index % 50
    }

    fn condition(kind: &str, status: &str, reason: &str, message: &str, since: &str) -> serde_json::Value {
        serde_json::json!({
            "type": kind,
            "status": status,
            "observedGeneration": 1,
            "lastTransitionTime": since,
            "reason": reason,
            "message": message,
        })
    }

    fn git_status(&self) -> serde_json::Value {
        let revision = self.revision(0);
        let commit = &revision["main@sha1:".len()..];
        let stored = format!("stored artifact for revision '{revision}'");
        let since = self.time(5);
        let conditions = if self.state() == 13 {
            let failure = format!(
                "failed to checkout and determine revision: unable to clone 'https://git.example.com/apps/{}.git': authentication required",
                self.name
            );
            vec![
                App::condition("FetchFailed", "True", "GitOperationFailed", &failure, &since),
                App::condition("ArtifactInStorage", "True", "Succeeded", &stored, &self.time(90)),
                App::condition("Ready", "False", "GitOperationFailed", &failure, &since),
            ]
        } else {
            vec![
                App::condition("ArtifactInStorage", "True", "Succeeded", &stored, &since),
                App::condition("Ready", "True", "Succeeded", &stored, &since),
            ]
        };
        let path = format!("gitrepository/{}/{}/{commit}.tar.gz", self.namespace, self.name);
        serde_json::json!({
            "observedGeneration": 1,
            "conditions": conditions,
            "artifact": {
                "digest": format!("sha256:{}", self.hex(100, 64)),
                "lastUpdateTime": since,
                "path": path,
                "revision": revision,
                "size": 20_000 + self.index % 10_000,
                "url": format!("http://source-controller.flux-system.svc.cluster.local./{path}"),
            },
        })
    }

    fn kustomization_status(&self) -> serde_json::Value {
        let revision = self.revision(0);
        let since = self.time(4);
        let applied = format!("Applied revision: {revision}");
        let (conditions, applied_revision) = match self.state() {
            7 => {
                let failure = format!(
                    "health check failed after 5m0s: timeout waiting for: [Deployment/{}/{}-web status: 'InProgress']",
                    self.namespace, self.name
                );
                let conditions = vec![
                    App::condition("Ready", "False", "HealthCheckFailed", &failure, &since),
                    App::condition("Healthy", "False", "HealthCheckFailed", &failure, &since),
                ];
                (conditions, self.revision(1))
            }
            21 => {
                let progress = format!("Detecting drift for revision {revision} with a timeout of 5m0s");
                let conditions = vec![
                    App::condition("Reconciling", "True", "ProgressingWithRetry", &progress, &since),
                    App::condition("Ready", "Unknown", "Progressing", "Reconciliation in progress", &since),
                    App::condition("Healthy", "True", "Succeeded", "Health check passed in 2.01s", &self.time(60)),
                ];
                (conditions, self.revision(1))
            }
            _ => {
                let conditions = vec![
                    App::condition("Ready", "True", "ReconciliationSucceeded", &applied, &since),
                    App::condition("Healthy", "True", "Succeeded", "Health check passed in 2.01s", &since),
                ];
                (conditions, revision.clone())
            }
        };
        const KINDS: [(&str, &str, &str, &str); INVENTORY] = [
            ("web", "apps", "Deployment", "v1"),
            ("worker", "apps", "Deployment", "v1"),
            ("cron", "apps", "Deployment", "v1"),
            ("redis", "apps", "StatefulSet", "v1"),
            ("web", "", "Service", "v1"),
            ("worker", "", "Service", "v1"),
            ("redis", "", "Service", "v1"),
            ("redis-headless", "", "Service", "v1"),
            ("config", "", "ConfigMap", "v1"),
            ("nginx", "", "ConfigMap", "v1"),
            ("features", "", "ConfigMap", "v1"),
            ("env", "", "Secret", "v1"),
            ("tls", "", "Secret", "v1"),
            ("app", "", "ServiceAccount", "v1"),
            ("app", "rbac.authorization.k8s.io", "Role", "v1"),
            ("app", "rbac.authorization.k8s.io", "RoleBinding", "v1"),
            ("web", "autoscaling", "HorizontalPodAutoscaler", "v2"),
            ("web", "policy", "PodDisruptionBudget", "v1"),
            ("web", "networking.k8s.io", "Ingress", "v1"),
            ("default-deny", "networking.k8s.io", "NetworkPolicy", "v1"),
        ];
        let entries: Vec<serde_json::Value> = KINDS
            .iter()
            .map(|(suffix, group, kind, version)| {
                serde_json::json!({ "id": format!("{}_{}-{suffix}_{group}_{kind}", self.namespace, self.name), "v": version })
            })
            .collect();
        serde_json::json!({
            "observedGeneration": 1,
            "conditions": conditions,
            "lastAppliedRevision": applied_revision,
            "lastAttemptedRevision": revision,
            "inventory": { "entries": entries },
            "history": self.history(),
        })
    }

    /// The Kustomization's `status.history`: newest first, as kustomize-controller keeps it.
    fn history(&self) -> serde_json::Value {
        let history: Vec<serde_json::Value> = (0..HISTORY)
            .map(|age| {
                let status =
                    if age == 0 && self.state() == 7 { "HealthCheckFailed" } else { "ReconciliationSucceeded" };
                serde_json::json!({
                    "digest": format!("sha256:{}", self.hex(200 + age as u64, 64)),
                    "firstReconciled": self.time(60 * 24 * (age + 1)),
                    "lastReconciled": self.time(60 * 24 * age + 4),
                    "lastReconciledDuration": format!("{}.{:09}s", 1 + age, self.index * 7919 % 1_000_000_000),
                    "lastReconciledStatus": status,
                    "totalReconciliations": 144 - 20 * age as u64,
                    "metadata": { "revision": self.revision(age) },
                })
            })
            .collect();
        serde_json::Value::Array(history)
    }

    /// The app's ledger as an earlier look kept it: the same 5 deployments, each with its commit
    /// (authored 2 minutes before it was first reconciled), and the history's fingerprint, so
    /// that `status` finds nothing new to keep.
    fn ledger(&self) -> serde_json::Value {
        use gitops_shared::deployments::{self, AppKind};
        use gitops_shared::readers::ledger;
        let history = self.history();
        let flux = deployments::from_flux(AppKind::Kustomization, Some(&history));
        let mut kept = Vec::new();
        deployments::merge(&mut kept, &flux);
        let commits: Vec<gitops_shared::git::log::CommitInfo> = kept
            .iter()
            .filter_map(|deployment| {
                let first = gitops_shared::duration::parse_timestamp(&deployment.first)?;
                Some(gitops_shared::git::log::CommitInfo {
                    sha: deployment.commit_sha()?.to_string(),
                    author: "Jane Doe".into(),
                    email: "jane@example.invalid".into(),
                    time: gitops_shared::duration::format_timestamp(first as i64 - 120),
                    subject: format!("Change {}", self.name),
                    reverts: None,
                })
            })
            .collect();
        deployments::attach_commits(&mut kept, &commits);
        let id =
            ledger::AppId { kind: AppKind::Kustomization, namespace: self.namespace.clone(), name: self.name.clone() };
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": id.ledger_name(),
                "namespace": self.namespace,
                "labels": {
                    "app.kubernetes.io/managed-by": "kubectl-gitops",
                    ledger::APP_LABEL: self.name,
                    ledger::KIND_LABEL: "Kustomization",
                },
                "annotations": { ledger::FINGERPRINT_ANNOTATION: deployments::history_fingerprint(&history) },
            },
            "data": { ledger::DATA_KEY: serde_json::to_string(&kept).unwrap_or_default() },
        })
    }
}
