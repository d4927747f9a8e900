//! `kubectl gitops mcp` through the real kubectl, driven over stdio by the official Python MCP SDK
//! (`mcp` on PyPI, tests/mcp/session.py), against the real API server and Flux controllers: the
//! tools it lists, a call of each read tool whose result matches the tool's output schema, a
//! failing app's cause, the events, pages, refusals an assistant can read, and no Secret's value
//! in any result.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gitops_e2e::binaries;
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::TestEnv;
use serde_json::{Value, json};

const NAMESPACE: &str = "mcp-team";
/// In a Secret of the namespace: no tool's result may carry it.
const MARKER: &str = "mcp-secret-marker-5f1e";

/// `kubectl gitops mcp ARGS` through the real kubectl with `kubeconfig`, and the directory of
/// plugins it finds (kept while the command is used).
pub(crate) fn kubectl_gitops_mcp(kubeconfig: &Path, args: &[&str]) -> (Command, tempfile::TempDir) {
    let plugins = binaries::plugin_dir();
    let path = format!("{}:{}", plugins.path().display(), std::env::var("PATH").unwrap_or_default());
    let mut command = Command::new(binaries::kubectl());
    command.args(["gitops", "mcp"]).args(args).env("PATH", path).env("KUBECONFIG", kubeconfig);
    (command, plugins)
}

/// One MCP session: `calls` made in order by the Python SDK against the server `server` starts
/// (its program, arguments and environment).
pub(crate) fn session(server: &Command, calls: &Value) -> Value {
    let mut command = python_client(calls);
    command.arg("--").arg(server.get_program()).args(server.get_args());
    for (name, value) in server.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    answered(command)
}

/// tests/mcp/session.py with `calls`, to be told how to reach the server.
fn python_client(calls: &Value) -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/session.py");
    let mut command = Command::new(gitops_e2e::tools::pypi_python());
    command.arg(script).arg(calls.to_string());
    command
}

/// What the Python client printed, as JSON (the test fails if it failed).
fn answered(mut command: Command) -> Value {
    let run = Run::of(&mut command);
    assert_eq!(run.code, Some(0), "{}", run.render());
    serde_json::from_str(&run.stdout).unwrap_or_else(|error| panic!("{error}: {}", run.render()))
}

#[test]
fn an_assistant_lists_the_apps_finds_why_one_fails_and_reads_events_through_the_python_sdk() {
    let env = TestEnv::shared();
    env.kubectl(&["create", "namespace", NAMESPACE]).unwrap();
    let kustomization = |name: &str, source: &str| {
        format!(
            "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\n  labels:\n    app.kubernetes.io/managed-by: kubectl-gitops\nspec:\n  interval: 10m0s\n  path: ./{name}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: {source}\n"
        )
    };
    let now = gitops_shared::duration::format_timestamp(i64::try_from(gitops_shared::duration::now()).unwrap());
    let objects = [
        kustomization("checkout", "checkout-source"),
        kustomization("cart", "cart-source"),
        format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: checkout-credentials\n  namespace: {NAMESPACE}\nstringData:\n  password: {MARKER}\n"
        ),
        format!(
            "---\napiVersion: v1\nkind: Event\nmetadata:\n  name: checkout.failed\n  namespace: {NAMESPACE}\ninvolvedObject:\n  kind: Kustomization\n  name: checkout\n  namespace: {NAMESPACE}\ntype: Warning\nreason: ArtifactFailed\nmessage: GitRepository checkout-source not found\ncount: 2\nfirstTimestamp: {now}\nlastTimestamp: {now}\nsource:\n  component: kustomize-controller\n"
        ),
    ]
    .concat();
    env.apply_yaml(&objects).unwrap();

    let calls = json!([
        {"tool": "list_apps", "arguments": {"namespace": NAMESPACE}},
        {"tool": "list_apps", "arguments": {"namespace": NAMESPACE, "limit": 1}},
        {"tool": "app_status", "arguments": {"name": "checkout", "namespace": NAMESPACE}},
        {"tool": "app_history", "arguments": {"name": "checkout", "namespace": NAMESPACE}},
        {"tool": "events", "arguments": {"namespace": NAMESPACE, "type": "Warning"}},
        {"tool": "detect", "arguments": {}},
        {"tool": "dora_metrics", "arguments": {"namespace": NAMESPACE}},
        {"tool": "app_status", "arguments": {"name": "nope", "namespace": NAMESPACE}},
        {"tool": "list_apps", "arguments": {"limit": 0}},
        {"tool": "events", "arguments": {"type": "Error"}},
        {"tool": "list_apps", "arguments": {"bogus": true}},
        {"tool": "remove_app", "arguments": {"name": "checkout", "namespace": NAMESPACE}},
        {"resource": "gitops://docs/exit-codes"},
        {"resource": "gitops://schemas/AppReport.json"},
        {"resource": "gitops://docs/../../etc/passwd"},
    ]);
    let (server, _plugins) = kubectl_gitops_mcp(&env.kubeconfig, &[]);
    let answer = session(&server, &calls);
    assert_eq!(answer["server"]["name"], "kubectl-gitops", "{answer:#}");

    // The tools, each with its input and output schemas.
    let tools: Vec<&str> =
        answer["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    for tool in ["list_apps", "app_status", "app_history", "events", "drift", "fleet_status", "detect", "dora_metrics"]
    {
        assert!(tools.contains(&tool), "{tool} in {tools:?}");
    }
    for tool in answer["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool:#}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool:#}");
    }
    let calls = answer["calls"].as_array().unwrap();
    // Every read answered, matching its tool's output schema, under 100 KB, no secret in it.
    for call in &calls[..7] {
        assert_eq!(call["isError"], false, "{call:#}");
        assert_eq!(call["schemaErrors"], json!([]), "{call:#}");
        assert!(call["bytes"].as_u64().unwrap() < 100 * 1024, "{call:#}");
    }
    assert!(!answer.to_string().contains(MARKER), "a Secret's value reached a result");
    let names = |page: &Value| -> Vec<String> {
        page["items"].as_array().unwrap().iter().map(|row| row["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&calls[0]["structured"]), ["cart", "checkout"], "{:#}", calls[0]);
    assert_eq!(calls[0]["structured"]["matching"], 2);
    assert_eq!(names(&calls[1]["structured"]), ["cart"], "{:#}", calls[1]);
    assert_eq!(calls[1]["structured"]["continue"], format!("{NAMESPACE}/cart"), "the next page's token");
    // Why checkout fails: the source it waits on.
    let report = &calls[2]["structured"];
    assert_eq!(report["app"]["name"], "checkout", "{report:#}");
    assert!(report["waitingOn"].to_string().contains("checkout-source"), "{report:#}");
    assert_eq!(calls[3]["structured"]["name"], "checkout", "{:#}", calls[3]);
    let events = &calls[4]["structured"];
    let reasons: Vec<&str> =
        events["items"].as_array().unwrap().iter().map(|e| e["reason"].as_str().unwrap()).collect();
    assert!(reasons.contains(&"ArtifactFailed"), "{events:#}");
    assert!(events["items"].as_array().unwrap().iter().all(|event| event["type"] == "Warning"), "{events:#}");
    assert!(calls[5]["structured"]["kubernetesVersion"].is_string(), "{:#}", calls[5]);
    // Bad input: a tool error an assistant can read, as the command line says it.
    for call in &calls[7..10] {
        assert_eq!(call["isError"], true, "{call:#}");
        let text = call["text"].as_str().unwrap();
        assert!(text.starts_with("error: ") && text.contains("\nhint: "), "{call:#}");
    }
    assert!(calls[7]["text"].as_str().unwrap().contains("not found"), "{:#}", calls[7]);
    assert!(calls[8]["text"].as_str().unwrap().contains("limit"), "{:#}", calls[8]);
    assert!(calls[9]["text"].as_str().unwrap().contains("is not Normal or Warning"), "{:#}", calls[9]);
    // An argument the tool does not take is refused, named.
    assert_eq!(calls[10]["isError"], true, "{:#}", calls[10]);
    assert!(calls[10]["text"].as_str().unwrap().contains("unknown field `bogus`"), "{:#}", calls[10]);
    // Read-only (no --allow-writes): no tool that changes something is listed, and a call of one
    // is refused.
    let writes =
        ["add_app", "remove_app", "suspend_app", "resume_app", "rollback_app", "reconcile_app", "promote", "merge_pr"];
    for write in writes {
        assert!(!tools.contains(&write), "{write} in {tools:?}");
    }
    let refused = &calls[11];
    assert!(refused["protocolError"].is_string() || refused["isError"] == true, "{refused:#}");
    assert!(refused.to_string().contains("remove_app"), "{refused:#}");
    assert!(env.kubectl_ok(&["get", "kustomization", "checkout", "-n", NAMESPACE]).is_ok(), "nothing removed");
    // The docs and the schemas, as resources.
    let uris: Vec<&str> =
        answer["resources"].as_array().unwrap().iter().map(|resource| resource["uri"].as_str().unwrap()).collect();
    for uri in ["gitops://docs/layout", "gitops://docs/exit-codes", "gitops://docs/output", "gitops://docs/mcp"] {
        assert!(uris.contains(&uri), "{uri} in {uris:?}");
    }
    assert!(uris.contains(&"gitops://schemas/Status.json"), "{uris:?}");
    let exit_codes = include_str!("../../../docs/exit-codes.md");
    assert_eq!(calls[12]["text"], exit_codes, "{:#}", calls[12]);
    let schema: Value = serde_json::from_str(calls[13]["text"].as_str().unwrap()).unwrap();
    assert_eq!(schema["title"], "AppReport", "{schema:#}");
    assert!(calls[14]["protocolError"].as_str().unwrap().contains("no resource"), "{:#}", calls[14]);
}

/// How long the server takes to close `stream`, reading whatever it sends.
fn closed_after(stream: std::net::TcpStream) -> Duration {
    closed_after_reading(stream, &mut String::new())
}

/// How long the server takes to close `stream`; what it sent, in `answer`.
fn closed_after_reading(mut stream: std::net::TcpStream, answer: &mut String) -> Duration {
    use std::io::Read;
    let started = std::time::Instant::now();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = stream.read_to_string(answer);
    started.elapsed()
}

/// One HTTP request to the server at `address` (`host:port`), `headers` added to a POST of an
/// `initialize` message; the status line.
fn status_of(address: &str, headers: &str) -> String {
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.lines().next().unwrap_or_default().to_string()
}

#[test]
fn over_http_an_assistant_needs_the_token_names_the_server_and_ctrl_c_ends_it() {
    let env = TestEnv::shared();
    env.kubectl(&["create", "namespace", "mcp-http"]).unwrap();
    env.apply_yaml("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\n  namespace: mcp-http\nspec:\n  interval: 10m0s\n  path: ./web\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: web\n").unwrap();
    let (mut command, _plugins) = kubectl_gitops_mcp(&env.kubeconfig, &["--http"]);
    let mut server = gitops_e2e::background::Background::spawn(&mut command);
    server.wait_until("the address and the token", Duration::from_secs(30), |out| out.lines().count() >= 2);
    let printed = server.stdout();
    let mut lines = printed.lines();
    let url = lines.next().unwrap().to_string();
    let token = lines.next().unwrap().strip_prefix("Authorization: Bearer ").unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{printed}");
    assert_eq!(token.len(), 64, "32 random bytes, as hex");
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    // Two clients that hold a connection without finishing a request, beside the real one: one
    // connects and says nothing, one sends a head promising a body it never sends. The server's
    // deadlines (10 s each, shared/src/ui/serve.rs) close the first and answer the second.
    let silent = std::thread::spawn({
        let address = address.clone();
        move || {
            let stream = std::net::TcpStream::connect(&address).unwrap();
            closed_after(stream)
        }
    });
    let trickling = std::thread::spawn({
        let address = address.clone();
        move || {
            use std::io::Write;
            let mut stream = std::net::TcpStream::connect(&address).unwrap();
            let head = format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"");
            stream.write_all(head.as_bytes()).unwrap();
            let mut answer = String::new();
            let took = closed_after_reading(stream, &mut answer);
            (took, answer)
        }
    });

    // The official Python SDK's streamable HTTP client, with the token: the read tools that need
    // no config repo, each answer valid against its tool's output schema.
    let mut client = python_client(&json!([
        {"tool": "detect", "arguments": {}},
        {"resource": "gitops://docs/exit-codes"},
        {"tool": "list_apps", "arguments": {"limit": 5}},
        {"tool": "events", "arguments": {"limit": 5}},
        {"tool": "dora_metrics", "arguments": {}},
        {"tool": "app_status", "arguments": {"name": "web", "namespace": "mcp-http"}},
        {"tool": "app_history", "arguments": {"name": "web", "namespace": "mcp-http"}},
    ]));
    client.args(["--http", &url, &token]);
    let answer = answered(client);
    assert_eq!(answer["server"]["name"], "kubectl-gitops", "{answer:#}");
    let calls = answer["calls"].as_array().unwrap();
    assert_eq!(
        (calls[0]["isError"].clone(), calls[0]["schemaErrors"].clone()),
        (json!(false), json!([])),
        "{answer:#}"
    );
    assert!(calls[0]["structured"]["kubernetesVersion"].is_string(), "{answer:#}");
    assert!(calls[1]["text"].as_str().unwrap().starts_with("# Exit codes"), "{answer:#}");
    for call in &calls[2..] {
        assert_eq!(call["isError"], false, "{call:#}");
        assert_eq!(call["schemaErrors"], json!([]), "{call:#}");
    }
    // Without the token, with another one, for another host (a DNS-rebinding page) or from
    // another site: refused before any tool runs.
    let host = format!("Host: {address}\r\n");
    assert!(status_of(&address, &host).contains(" 401 "), "no token");
    assert!(status_of(&address, &format!("{host}Authorization: Bearer {}\r\n", "0".repeat(64))).contains(" 401 "));
    let bearer = format!("Authorization: Bearer {token}\r\n");
    let port = address.rsplit(':').next().unwrap();
    assert!(status_of(&address, &format!("Host: attacker.example:{port}\r\n{bearer}")).contains(" 421 "));
    let foreign = format!("{host}{bearer}Origin: http://attacker.example\r\n");
    assert!(status_of(&address, &foreign).contains(" 403 "));
    assert!(status_of(&address, &format!("{host}{bearer}")).contains(" 200 "), "the token opens it");
    assert!(!server.stderr().contains(&token), "the token is printed once, on stdout");
    let took = silent.join().unwrap();
    assert!(took > Duration::from_secs(9) && took < Duration::from_secs(20), "a silent client closed after {took:?}");
    let (took, answer) = trickling.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(took > Duration::from_secs(9) && took < Duration::from_secs(20), "a missing body answered after {took:?}");

    let (code, _, stderr, took) = server.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < Duration::from_secs(2), "Ctrl-C ended it in {took:?}");
}
