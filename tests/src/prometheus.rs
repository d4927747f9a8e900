//! A real Prometheus (built from its Go module by tests/testenv/build-tools.sh) on 127.0.0.1,
//! started with a configuration and stopped when dropped, and what tests ask it.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use gitops_shared::monitoring::{Thresholds, rules};
use serde_json::{Value, json};

use crate::tools;

/// The `groups` of the PrometheusRule `monitoring install` commits, as a Prometheus rules file
/// in `dir`.
pub fn rules_file(dir: &Path, thresholds: &Thresholds) -> std::path::PathBuf {
    let rule = rules::prometheus_rule(thresholds);
    let path = dir.join("flux-rules.yaml");
    std::fs::write(&path, serde_json::to_string(&json!({"groups": rule["spec"]["groups"]})).unwrap()).unwrap();
    path
}

/// A Prometheus on 127.0.0.1, stopped when dropped.
pub struct Prometheus {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts one with `config` (written to `dir`, its data there too) on `port` of every
    /// address (the API server's service proxy reaches it at this machine's own), and waits
    /// until it is ready.
    pub fn start(dir: &Path, config: &Value, port: u16) -> Prometheus {
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, serde_json::to_string(config).unwrap()).unwrap();
        let child = Command::new(tools::path("prometheus"))
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=0.0.0.0:{port}"))
            .stdout(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .stderr(std::fs::File::create(dir.join("prometheus.err")).unwrap())
            .spawn()
            .unwrap();
        let prometheus = Prometheus { child, url: format!("http://127.0.0.1:{port}") };
        wait_for("Prometheus ready", Duration::from_secs(60), || {
            Command::new("curl")
                .args(["-sf", "-o", "/dev/null", &format!("{}/-/ready", prometheus.url)])
                .status()
                .is_ok_and(|s| s.success())
        });
        prometheus
    }

    /// `GET path` of its API, as JSON.
    pub fn get(&self, path: &str) -> Value {
        let out = Command::new("curl").args(["-sf", &format!("{}{path}", self.url)]).output().unwrap();
        assert!(out.status.success(), "GET {path}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The result of an instant query.
    pub fn query(&self, expr: &str) -> Vec<Value> {
        let query: String = form_urlencoded::Serializer::new(String::new()).append_pair("query", expr).finish();
        self.get(&format!("/api/v1/query?{query}"))["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The state of the alerting rule `name` (`inactive`, `pending`, `firing`; empty if none).
    pub fn alert_state(&self, name: &str) -> String {
        let rules = self.get("/api/v1/rules?type=alert");
        let groups = rules["data"]["groups"].as_array().cloned().unwrap_or_default();
        let rule = groups
            .iter()
            .flat_map(|group| group["rules"].as_array().cloned().unwrap_or_default())
            .find(|rule| rule["name"] == name);
        rule.map(|rule| rule["state"].as_str().unwrap_or_default().to_string()).unwrap_or_default()
    }
}

/// Polls `done` every half second until it holds; fails the test after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}
