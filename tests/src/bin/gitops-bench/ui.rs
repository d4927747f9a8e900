//! The `ui` rows: how fast `kubectl gitops ui` lists the seeded apps, answers its first pages and
//! feeds its event streams, and its peak RSS.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use gitops_e2e::testenv::TestEnv;

use super::{RUNS, binaries_path, check};

/// `kubectl gitops ui` over the seeded apps: how long its watches take to list them, the first
/// page of the API and of the Apps page (median of `RUNS`), `UI_CLIENTS` event streams fed by
/// the server's one set of watches (the audit log shows no watch started for them) and how late
/// a change reaches the last of them, and the server's peak RSS.
pub(super) fn ui(env: &TestEnv, size: usize) -> Result<()> {
    const UI_CLIENTS: usize = 50;
    // The watches the server holds: a watch is logged when it starts (ResponseStarted) and when it
    // ends (ResponseComplete), both stages under one audit ID. The server renews each of its
    // watches when the API server ends the call (every `timeoutSeconds`): a watch that began
    // before the clients came ends, and one begins. Any other start is a watch for the clients.
    let watch_events = |stage: &str| -> Result<Vec<gitops_e2e::testenv::OurRequest>> {
        Ok(env
            .our_requests()?
            .into_iter()
            .filter(|request| request.verb == "watch" && request.stage == stage)
            .collect())
    };
    // The peer of the first answer: `status -A` reading the same objects, just before (the
    // median of three, the first warming the API server's cache as the UI's would find it).
    let mut status_times = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let run = Command::new(binaries_path("kubectl-gitops-status"))
            .args(["-A", "-o", "json"])
            .env("KUBECONFIG", &env.kubeconfig)
            .output()?;
        // Its exit code says whether every app is ready; the listing is what is compared.
        if run.stdout.is_empty() {
            bail!("status -A printed nothing: {}", String::from_utf8_lossy(&run.stderr));
        }
        status_times.push(started.elapsed());
    }
    status_times.sort();
    let status_time = status_times[1];
    let server = gitops_e2e::ui::Ui::start(&binaries_path("kubectl-gitops-ui"), &env.kubeconfig, &[]);
    let cookie = server.login();
    let started = Instant::now();
    // The Apps page comes at once while the watches list, saying how far they are.
    let at_once = server.get(&cookie, "/apps");
    let first_page = started.elapsed();
    if at_once.status != 200 {
        bail!("GET /apps while listing: {} {}", at_once.status, at_once.body);
    }
    // Until the watches have listed everything the server answers 503 after waiting 20 s; on a
    // loaded machine listing 20,000 objects can take longer.
    let first = loop {
        let answer = server.get(&cookie, "/api/v1/apps?limit=50");
        match answer.status {
            200 => break serde_json::from_str::<serde_json::Value>(&answer.body)?,
            503 if started.elapsed() < Duration::from_secs(300) => continue,
            status => bail!("GET /api/v1/apps: {status} {}", answer.body),
        }
    };
    let listed = started.elapsed();
    let matching = first["matching"].as_u64().unwrap_or(0) as usize;
    if matching < size {
        bail!("the UI listed {matching} apps, expected {size}");
    }
    let time = |path: &str| -> Result<Duration> {
        let mut times = Vec::new();
        for _ in 0..=RUNS {
            let started = Instant::now();
            let answer = server.get(&cookie, path);
            if answer.status != 200 {
                bail!("GET {path}: {} {}", answer.status, answer.body);
            }
            times.push(started.elapsed());
        }
        // The first run warms up.
        let mut measured = times.split_off(1);
        measured.sort();
        Ok(measured[measured.len() / 2])
    };
    let api_page = time("/api/v1/apps?limit=50")?;
    let html_page = time("/apps")?;
    let (started_before, ended_before) = (watch_events("ResponseStarted")?, watch_events("ResponseComplete")?.len());
    let mut streams: Vec<gitops_e2e::ui::Events> =
        (0..UI_CLIENTS).map(|_| gitops_e2e::ui::Events::open(&server, &cookie)).collect();
    for stream in &mut streams {
        stream.next_apps();
    }
    let suspend = |suspended: bool| {
        let patch = format!(r#"{{"spec":{{"suspend":{suspended}}}}}"#);
        env.kubectl_ok(&["-n", "bench-0", "patch", "kustomization", "app-0", "--type=merge", "-p", &patch])
    };
    let changed = Instant::now();
    suspend(true)?;
    for stream in &mut streams {
        loop {
            let event = stream.next_apps();
            if event["changed"].to_string().contains("\"app-0\"") {
                break;
            }
            // A stream that fell behind is told to read again, and does.
            if event["resync"] == true
                && server.json(&cookie, "/api/v1/apps?namespace=bench-0&q=app-0&health=suspended")["matching"] != 0
            {
                break;
            }
        }
    }
    let reached_all = changed.elapsed();
    suspend(false)?;
    // The clients and the change they all saw started no watch: they read the server's snapshots.
    let began = watch_events("ResponseStarted")?.split_off(started_before.len());
    let renewed = watch_events("ResponseComplete")?
        .split_off(ended_before)
        .iter()
        .filter(|ended| started_before.iter().any(|started| started.id == ended.id))
        .count();
    for watch in &began {
        eprintln!("bench: a watch began while the clients read: {} {}", watch.at, watch.uri);
    }
    let client_watches = began.len().saturating_sub(renewed);
    // The Events page: its first answer (the events' watch, which the first request starts,
    // listing them) against `kubectl get events -A` reading the same events, the median of three.
    let mut kubectl_times = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        env.kubectl_ok(&["get", "events", "-A", "-o", "json"])?;
        kubectl_times.push(started.elapsed());
    }
    kubectl_times.sort();
    let started = Instant::now();
    let events = server.json(&cookie, "/api/v1/cluster/events?limit=50");
    let events_listed = started.elapsed();
    if events["listed"] != true {
        bail!("the events were not listed within the request's wait: {events}");
    }
    let events_page = time("/api/v1/cluster/events?limit=50&type=Warning")?;
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid()))?;
    let peak_kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let (code, stderr) = server.interrupt();
    if code != Some(0) {
        bail!("kubectl gitops ui did not stop cleanly: {stderr}");
    }
    drop(streams);
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    println!("\nkubectl gitops ui, {size} apps ({RUNS} runs each, medians)");
    println!("  watches listed the apps (first request)   {:>8.0} ms", ms(listed));
    println!("  status -A -o json, same objects            {:>8.0} ms", ms(status_time));
    check("first answer ÷ status -A", listed.as_secs_f64() / status_time.as_secs_f64(), 1.5, "×");
    check("a page meanwhile, GET /apps (listing)", ms(first_page), 300.0, " ms");
    check(&format!("a change reached all {UI_CLIENTS} event streams"), ms(reached_all), 2000.0, " ms");
    check("first page, GET /api/v1/apps?limit=50", ms(api_page), 300.0, " ms");
    check("first page, GET /apps (HTML)", ms(html_page), 300.0, " ms");
    check(&format!("watches started for {UI_CLIENTS} clients"), client_watches as f64, 0.0, "");
    println!("  events in the cluster                      {:>8}", events["matching"]);
    println!("  kubectl get events -A -o json              {:>8.0} ms", ms(kubectl_times[1]));
    check("events first answer ÷ kubectl get events -A", ms(events_listed) / ms(kubectl_times[1]), 1.5, "×");
    check("events page, GET /api/v1/cluster/events (warnings)", ms(events_page), 300.0, " ms");
    check("server peak RSS", peak_kb as f64 / 1024.0, 150.0, " MB");
    Ok(())
}
