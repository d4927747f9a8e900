//! Prometheus' HTTP API, as `monitoring status` reads it: the alerting rules with their state
//! (`/api/v1/rules?type=alert`) and instant queries (`/api/v1/query`). Reached at
//! `--prometheus-url`, or through the API server's service proxy to the stack's Prometheus, so
//! that nothing but a kubeconfig is needed.

use serde::Deserialize;
use serde_json::Value;

use super::NAMESPACE;
use super::manifests::RELEASE;
use crate::cluster::Cluster;
use crate::error::{Error, Result};

/// Where Prometheus answers.
pub enum Endpoint {
    /// `--prometheus-url`.
    Url { client: reqwest::Client, base: String },
    /// The stack's Prometheus Service, through the API server.
    Proxy(Cluster),
}

/// The Prometheus Service kube-prometheus-stack creates for the release, and its port.
fn proxied(path: &str) -> String {
    format!("/api/v1/namespaces/{NAMESPACE}/services/{RELEASE}-prometheus:9090/proxy{path}")
}

impl Endpoint {
    /// `--prometheus-url URL`: checked to be http(s) before anything is asked.
    pub fn url(base: &str) -> Result<Endpoint> {
        crate::repo_access::refuse_credentials_in_url(base, "leave --prometheus-url out to go through the API server")?;
        let parsed = url::Url::parse(base).ok().filter(|url| matches!(url.scheme(), "http" | "https"));
        if parsed.is_none() {
            return Err(Error::usage(
                format!("--prometheus-url {base:?} is not an http(s) URL"),
                "e.g. --prometheus-url http://127.0.0.1:9090",
            ));
        }
        let client = crate::http::client().map_err(|error| Error::Remote {
            message: format!("cannot build an HTTP client: {}", crate::diagnostic::chain_to_line(&error)),
            hint: None,
        })?;
        Ok(Endpoint::Url { client, base: base.trim_end_matches('/').to_string() })
    }

    /// What Prometheus answers at `path` (with its query): the `data` of a `success`.
    async fn get(&self, path: &str) -> Result<Value> {
        let body: Value = match self {
            Endpoint::Url { client, base } => {
                let url = format!("{base}{path}");
                let unreachable = |error: reqwest::Error| Error::Remote {
                    message: format!("cannot reach Prometheus at {base}: {}", crate::diagnostic::chain_to_line(&error)),
                    hint: Some("check --prometheus-url and that Prometheus is running".into()),
                };
                let response = client.get(&url).send().await.map_err(unreachable)?;
                let status = response.status();
                let text = response.text().await.map_err(unreachable)?;
                serde_json::from_str(&text).map_err(|_| Error::Remote {
                    message: format!("Prometheus at {base} answered {status}, not its API's JSON"),
                    hint: Some("check --prometheus-url: it is Prometheus' address, without /api/v1".into()),
                })?
            }
            Endpoint::Proxy(cluster) => {
                let request = http::Request::get(proxied(path))
                    .body(Vec::new())
                    .map_err(|error| Error::Internal(format!("a request to the service proxy: {error}")))?;
                // Reaching the API server and being allowed to proxy are the cluster's errors;
                // anything else is the proxy saying no Prometheus answers behind the Service.
                cluster.client.request::<Value>(request).await.map_err(|error| match cluster.error(error) {
                    stop @ (Error::Unreachable { .. } | Error::Unauthorized { .. } | Error::Forbidden { .. }) => stop,
                    other => not_installed(&other.to_string()),
                })?
            }
        };
        match body["status"].as_str() {
            Some("success") => Ok(body["data"].clone()),
            _ => Err(Error::Remote {
                message: format!(
                    "Prometheus refused the request: {}",
                    body["error"].as_str().unwrap_or("no error message")
                ),
                hint: None,
            }),
        }
    }

    /// Every alerting rule and its state.
    pub async fn alert_rules(&self) -> Result<Vec<AlertRule>> {
        let data = self.get("/api/v1/rules?type=alert").await?;
        let groups: Vec<Group> = serde_json::from_value(data["groups"].clone()).unwrap_or_default();
        Ok(groups.into_iter().flat_map(|group| group.rules).collect())
    }

    /// An instant query's vector: each series' labels and value.
    pub async fn query(&self, expr: &str) -> Result<Vec<(serde_json::Map<String, Value>, f64)>> {
        let query: String = form_urlencoded::Serializer::new(String::new()).append_pair("query", expr).finish();
        let data = self.get(&format!("/api/v1/query?{query}")).await?;
        let series = data["result"].as_array().cloned().unwrap_or_default();
        Ok(series
            .into_iter()
            .filter_map(|sample| {
                let labels = sample["metric"].as_object().cloned().unwrap_or_default();
                let value = sample["value"][1].as_str()?.parse::<f64>().ok()?;
                Some((labels, value))
            })
            .collect())
    }
}

fn not_installed(why: &str) -> Error {
    Error::Remote {
        message: format!("no Prometheus answers at service {NAMESPACE}/{RELEASE}-prometheus: {why}"),
        hint: Some("run `kubectl gitops monitoring install`, wait for it, or pass --prometheus-url".into()),
    }
}

#[derive(Deserialize)]
struct Group {
    #[serde(default)]
    rules: Vec<AlertRule>,
}

/// One alerting rule, as `/api/v1/rules` returns it.
#[derive(Debug, Clone, Deserialize)]
pub struct AlertRule {
    /// The alert's name.
    pub name: String,
    /// `inactive`, `pending` or `firing`.
    #[serde(default)]
    pub state: String,
    /// `for`, in seconds.
    #[serde(default)]
    pub duration: f64,
    /// The active alerts.
    #[serde(default)]
    pub alerts: Vec<ActiveAlert>,
    /// The rule's labels (`severity`).
    #[serde(default)]
    pub labels: serde_json::Map<String, Value>,
}

/// One pending or firing alert of a rule.
#[derive(Debug, Clone, Deserialize)]
pub struct ActiveAlert {
    /// Its labels.
    #[serde(default)]
    pub labels: serde_json::Map<String, Value>,
    /// Its annotations (`summary`).
    #[serde(default)]
    pub annotations: serde_json::Map<String, Value>,
    /// `pending` or `firing`.
    #[serde(default)]
    pub state: String,
    /// Since when, RFC 3339.
    #[serde(default, rename = "activeAt")]
    pub active_at: Option<String>,
}
