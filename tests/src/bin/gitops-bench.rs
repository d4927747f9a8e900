//! `make bench`: `kubectl gitops status -A` (table and `-o json`) against `kubectl get`, the raw LIST
//! floor and the real `flux get kustomizations -A`, on the same API server in the same run, for N apps
//! (a GitRepository and a Kustomization each) whose status looks like what Flux writes: conditions,
//! an artifact, applied revisions, a 20-entry inventory and 5 history snapshots, each app with its
//! deployment ledger (docs/history.md) as an earlier look kept it; and `kubectl gitops metrics
//! dora -A` over the same apps, against `status -A -o json`.
//!
//! Prints each row's median wall time and peak RSS, the size of the LIST responses, and the ratios
//! the targets in docs/performance.md are about, each with PASS or FAIL. The Flux CRDs are installed
//! but no controller runs, so the objects stay as seeded. The rows run round-robin, one warm-up
//! round and `RUNS` measured ones (`SMALL_RUNS` at 1,000 apps and fewer).
//!
//! Arguments: the sizes (default 1000 10000). Environment: `FLUX_CLI` (a flux binary) or
//! `GITOPS_FLUX_CLI_DIR` (what tests/testenv/build-flux-cli.sh built; else the script runs);
//! `BENCH_BASELINE` (another kubectl-gitops-status build, measured alongside: before and after in
//! one run); `BENCH_HOLD` (keep the environment up afterwards, for profiling); `BENCH_ONLY=ui`
//! (seed and measure `kubectl gitops ui` only, while working on it); `BENCH_ONLY=diff` (only
//! `kubectl gitops diff` against `flux diff kustomization`); `BENCH_ONLY=drift` (only `kubectl
//! gitops drift -A` against `flux diff kustomization` for each, drift.rs); `BENCH_ONLY=fleet` (only
//! `kubectl gitops fleet status` over ten clusters against `status -A` of each, fleet.rs).

#[path = "gitops-bench/drift.rs"]
mod drift;
#[path = "gitops-bench/fleet.rs"]
mod fleet;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use gitops_e2e::testenv::{Options, TestEnv};

const RUNS: usize = 5;
/// Measured rounds of the status rows at 1,000 apps and fewer.
const SMALL_RUNS: usize = 15;
const NAMESPACES: usize = 10;
const KINDS: &str = "gitrepositories,helmrepositories,ocirepositories,kustomizations,helmreleases";
/// The LISTs of the floor: the kinds `kubectl get` above reads, as (group/version, plural).
const LISTS: [(&str, &str); 5] = [
    ("source.toolkit.fluxcd.io/v1", "gitrepositories"),
    ("source.toolkit.fluxcd.io/v1", "helmrepositories"),
    ("source.toolkit.fluxcd.io/v1", "ocirepositories"),
    ("kustomize.toolkit.fluxcd.io/v1", "kustomizations"),
    ("helm.toolkit.fluxcd.io/v2", "helmreleases"),
];
/// Page size of the floor's LISTs, the same as status's.
const PAGE: usize = 500;
/// Requests in flight while seeding.
const SEED_PARALLEL: usize = 16;
/// Inventory entries and history snapshots of each seeded Kustomization.
const INVENTORY: usize = 20;
const HISTORY: usize = 5;

fn main() -> Result<()> {
    let sizes: Vec<usize> = std::env::args().skip(1).map(|n| n.parse()).collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() { vec![1_000, 10_000] } else { sizes };
    let ui_only = match std::env::var("BENCH_ONLY").as_deref() {
        Ok("ui") => true,
        Ok("diff") => {
            let env = &TestEnv::start(Options { flux: false })?;
            env.install_flux_crds()?;
            return diff_rows(env, &flux_cli().map_err(anyhow::Error::msg)?);
        }
        Ok("drift") => {
            let env = &TestEnv::start(Options { flux: false })?;
            env.install_flux_crds()?;
            return drift::drift_rows(env, &Api::new(env), &flux_cli().map_err(anyhow::Error::msg)?);
        }
        Ok("fleet") => return fleet::fleet_rows(),
        Ok(other) => bail!("BENCH_ONLY={other}: only `ui`, `diff`, `drift` or `fleet` can be measured alone"),
        Err(_) => false,
    };
    // The flux CLI takes minutes to build cold: build it while the environment starts and is seeded.
    let flux_build = (!ui_only).then(|| std::thread::spawn(flux_cli));
    let env = &TestEnv::start(Options { flux: false })?;
    env.install_flux_crds()?;
    eprintln!("bench: environment ready in {:.1?}", env.startup);
    let api = Api::new(env);
    for namespace in 0..NAMESPACES {
        let _ = env.kubectl(&["create", "namespace", &format!("bench-{namespace}")]);
    }
    let mut flux_build = flux_build;
    let mut flux: Result<PathBuf, String> = Err("not built".into());
    let mut created = 0;
    for size in sizes {
        let seeded = Instant::now();
        seed(&api, created, size)?;
        let seeding = seeded.elapsed();
        created = size;
        // Nothing is measured while the build runs: it would compete for the two cores.
        if let Some(build) = flux_build.take() {
            flux = build.join().unwrap_or_else(|_| Err("the flux CLI build thread panicked".into()));
        }
        if !ui_only {
            report(env, &api, size, seeding, &flux)?;
        }
        ui(env, size)?;
    }
    if !ui_only {
        budgets(env)?;
        match &flux {
            Ok(cli) => {
                passthrough(cli)?;
                artifacts(cli)?;
                diff_rows(env, cli)?;
                drift::drift_rows(env, &api, cli)?;
            }
            Err(error) => {
                println!("\nkubectl gitops flux and artifact: not measured, the flux CLI is missing: {error}")
            }
        }
        fleet::fleet_rows()?;
    }
    if std::env::var_os("BENCH_HOLD").is_some() {
        // For profiling against the seeded objects (docs/performance.md).
        eprintln!("bench: holding the environment until interrupted: export KUBECONFIG={}", env.kubeconfig.display());
        loop {
            std::thread::park();
        }
    }
    Ok(())
}

/// Kustomizations of the config repo the diff rows build and compare, beside the sync.
const DIFF_KUSTOMIZATIONS: usize = 100;
/// Measured rounds of the diff rows (after one warm-up).
const DIFF_RUNS: usize = 3;

/// `kubectl gitops diff --dir` against the real `flux diff kustomization` run for each of the same
/// Kustomizations one after the other (the sync and 100 apps, each applying a directory of its
/// own: a ConfigMap and a Deployment, none of them in the cluster yet, so every object is new to
/// both). Targets (docs/performance.md): ours <= 0.5x the peer's time, and under 200 MB of peak RSS
/// (GNU time's, which counts the largest of the process and the flux builds it waited for).
fn diff_rows(env: &TestEnv, cli: &Path) -> Result<()> {
    let checkout = tempfile::tempdir()?;
    let root = checkout.path();
    let _ = env.kubectl(&["create", "namespace", "flux-system"]);
    let kustomization = |name: &str, path: &str| {
        format!(
            "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: {path}\n  prune: true\n  targetNamespace: default\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        )
    };
    std::fs::create_dir_all(root.join("clusters/bench"))?;
    std::fs::write(
        root.join("clusters/bench/marker.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-marker\ndata:\n  ok: \"yes\"\n",
    )?;
    let mut objects = kustomization("flux-system", "./clusters/bench");
    let mut peers = vec![("flux-system".to_string(), root.join("clusters/bench"))];
    for n in 0..DIFF_KUSTOMIZATIONS {
        let dir = root.join(format!("apps/app-{n}"));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("config.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{n}\ndata:\n  n: \"{n}\"\n"),
        )?;
        std::fs::write(
            dir.join("deployment.yaml"),
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{n}\nspec:\n  selector:\n    matchLabels:\n      app: app-{n}\n  template:\n    metadata:\n      labels:\n        app: app-{n}\n    spec:\n      containers:\n      - name: app\n        image: registry.invalid/app:{n}\n"
            ),
        )?;
        objects.push_str(&kustomization(&format!("app-{n}"), &format!("./apps/app-{n}")));
        peers.push((format!("app-{n}"), dir));
    }
    env.apply_yaml(&objects)?;
    let ours = binaries_path("kubectl-gitops-diff");
    let timed = |command: &mut Command| timed_run(command.current_dir(root), &env.kubeconfig, 1);
    let (mut our_times, mut peer_times, mut peak_kb) = (Vec::new(), Vec::new(), 0);
    for round in 0..=DIFF_RUNS {
        let (ours_took, kb) = timed(
            Command::new("/usr/bin/time")
                .args(["-f", "%M"])
                .arg(&ours)
                .args(["--dir", ".", "-n", "flux-system", "-q"])
                .env("KUBECTL_GITOPS_FLUX_BIN", cli),
        )?;
        let started = Instant::now();
        for (name, dir) in &peers {
            timed(
                Command::new("/usr/bin/time")
                    .args(["-f", "%M"])
                    .arg(cli)
                    .args([
                        "diff",
                        "kustomization",
                        name,
                        "--namespace",
                        "flux-system",
                        "--progress-bar=false",
                        "--path",
                    ])
                    .arg(dir),
            )?;
        }
        let peer_took = started.elapsed();
        if round > 0 {
            our_times.push(ours_took);
            peer_times.push(peer_took);
            peak_kb = peak_kb.max(kb);
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (ours_took, peer_took) = (median(&mut our_times), median(&mut peer_times));
    let count = peers.len();
    println!(
        "\nkubectl gitops diff vs flux diff kustomization ({count} Kustomizations, 2 objects each; {DIFF_RUNS} runs, medians)"
    );
    println!(
        "  kubectl gitops diff --dir          {:>9.0} ms  peak {:>6.1} MB",
        ours_took.as_secs_f64() * 1e3,
        peak_kb as f64 / 1e3
    );
    println!("  flux diff kustomization x {count:<4}    {:>9.0} ms", peer_took.as_secs_f64() * 1e3);
    check("diff / flux diff, one after the other", ours_took.as_secs_f64() / peer_took.as_secs_f64(), 0.5, "x");
    check("diff peak RSS", peak_kb as f64 / 1e3, 200.0, " MB");
    Ok(())
}

/// Runs `command` against the environment's cluster; how long it took, and the peak RSS (KB) GNU
/// time printed last on stderr (0 when not run under it). Any exit code but `expected` fails.
fn timed_run(command: &mut Command, kubeconfig: &Path, expected: i32) -> Result<(Duration, u64)> {
    let started = Instant::now();
    let output = command.env("KUBECONFIG", kubeconfig).output()?;
    let elapsed = started.elapsed();
    if output.status.code() != Some(expected) {
        bail!(
            "{command:?} exited {:?}, not {expected}: {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout).lines().take(5).collect::<Vec<_>>().join("\n"),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Ok((elapsed, stderr.lines().last().and_then(|line| line.trim().parse().ok()).unwrap_or(0)))
}

/// `kubectl gitops artifact push` and `pull` against `flux push artifact` and `flux pull artifact`
/// on a directory of 1,000 YAML files (20 MB), to a registry of their own on loopback. Each round
/// changes one file first, so every push uploads a new layer (both skip blobs the registry holds).
fn artifacts(cli: &Path) -> Result<()> {
    const FILES: usize = 1_000;
    const FILE_SIZE: usize = 20_000;
    let ours = binaries_path("kubectl-gitops-artifact");
    let own = gitops_e2e::testenv::servers::OwnRegistry::start(false)?;
    let registry = own.registry.address.clone();
    let work = tempfile::tempdir()?;
    let dir = work.path().join("manifests");
    // Deterministic, YAML-looking text that compresses about as well as real manifests.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for file in 0..FILES {
        let sub = dir.join(format!("team-{}", file % 20));
        std::fs::create_dir_all(&sub)?;
        let mut text = String::with_capacity(FILE_SIZE);
        while text.len() < FILE_SIZE {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let _ = writeln!(text, "  key-{}: value-{:x}", state % 97, state >> 40);
        }
        std::fs::write(sub.join(format!("object-{file}.yaml")), text)?;
    }
    let path = dir.to_str().context("a UTF-8 temp path")?;
    let run = |program: &Path, args: &[&str]| -> Result<Duration> {
        let started = Instant::now();
        let output = Command::new(program).args(args).env("DOCKER_CONFIG", work.path()).output()?;
        if !output.status.success() {
            bail!("{} {}: {}", program.display(), args.join(" "), String::from_utf8_lossy(&output.stderr));
        }
        Ok(started.elapsed())
    };
    let (mut pushes, mut pulls) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for round in 0..=RUNS {
        std::fs::write(dir.join("round.yaml"), format!("round: {round}\n"))?;
        let (our_url, flux_url) =
            (format!("oci://{registry}/bench/ours:r{round}"), format!("oci://{registry}/bench/flux:r{round}"));
        let meta = ["--path", path, "--source", "https://example.com/bench", "--revision", "main@sha1:0"];
        let (our_out, flux_out) =
            (work.path().join(format!("ours-{round}")), work.path().join(format!("flux-{round}")));
        std::fs::create_dir(&flux_out)?;
        let (our_dir, flux_dir) = (our_out.to_str().context("UTF-8")?, flux_out.to_str().context("UTF-8")?);
        let our_push = || run(&ours, &[&["push", &our_url][..], &meta].concat());
        let flux_push = || run(cli, &[&["push", "artifact", &flux_url][..], &meta].concat());
        let our_pull = || run(&ours, &["pull", &our_url, "--dir", our_dir]);
        let flux_pull = || run(cli, &["pull", "artifact", &flux_url, "--output", flux_dir]);
        // Who goes first alternates: the second one pays for flushing the first one's writes.
        let ((our_push, flux_push), (our_pull, flux_pull)) = if round % 2 == 0 {
            ((our_push()?, flux_push()?), (our_pull()?, flux_pull()?))
        } else {
            let (flux_push, our_push) = (flux_push()?, our_push()?);
            let (flux_pull, our_pull) = (flux_pull()?, our_pull()?);
            ((our_push, flux_push), (our_pull, flux_pull))
        };
        if round > 0 {
            pushes.0.push(our_push);
            pushes.1.push(flux_push);
            pulls.0.push(our_pull);
            pulls.1.push(flux_pull);
        }
        std::fs::remove_dir_all(&our_out)?;
        std::fs::remove_dir_all(&flux_out)?;
    }
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2].as_secs_f64() * 1e3
    };
    println!(
        "\nartifact push and pull, {FILES} files ({} MB), {RUNS} runs each, medians; flux {}",
        FILES * FILE_SIZE / 1_000_000,
        cli.display()
    );
    for (name, (mine, theirs)) in [("push", pushes), ("pull", pulls)] {
        let (mine, theirs) = (median(mine), median(theirs));
        let ratio = mine / theirs;
        let verdict = if ratio <= 1.0 { "PASS" } else { "FAIL" };
        println!("  kubectl gitops artifact {name}   {mine:>8.0} ms");
        println!("  flux {name} artifact             {theirs:>8.0} ms");
        println!("  ours / flux                    {ratio:>8.2}     (target <= 1)  {verdict}");
    }
    Ok(())
}

/// `kubectl gitops ui` over the seeded apps: how long its watches take to list them, the first
/// page of the API and of the Apps page (median of `RUNS`), `UI_CLIENTS` event streams fed by
/// the server's one set of watches (the audit log shows no watch started for them) and how late
/// a change reaches the last of them, and the server's peak RSS.
fn ui(env: &TestEnv, size: usize) -> Result<()> {
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

/// The start-up, detect and size budgets of docs/performance.md. The timed rows run alternating,
/// `STARTUP_RUNS` each after one warm-up round, medians, against kubectl in the same rounds:
/// `--help` and `version --client` of the dispatcher (our start alone, as a script calls
/// `kubectl-gitops`) against `kubectl version --client`; `kubectl gitops detect` through the real
/// kubectl against `kubectl version`, both on the environment's API server.
/// The budget of each binary of the host's release build (10^6 bytes): the one binary holds every
/// command.
const RELEASE_BINARY_MB: f64 = 16.0;
/// The budget of each binary in the release archive. On Linux it is the static build, which
/// carries OpenSSL and musl besides (17.2 MB against the host build's 12.0 MB, 2026-12-05).
const ARCHIVE_BINARY_MB: f64 = 20.0;

fn budgets(env: &TestEnv) -> Result<()> {
    const STARTUP_RUNS: usize = 40;
    let kubectl = gitops_e2e::binaries::kubectl();
    let dispatcher = binaries_path("kubectl-gitops");
    let bin_dir = dispatcher.parent().context("the binaries' directory")?.to_path_buf();
    // kubectl finds kubectl-gitops (and the dispatcher its siblings) on PATH.
    let path = std::env::join_paths(
        std::iter::once(bin_dir.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )?;
    let rows: [(&str, &Path, &[&str]); 5] = [
        ("kubectl-gitops --help", &dispatcher, &["--help"]),
        ("kubectl-gitops version --client", &dispatcher, &["version", "--client"]),
        ("kubectl version --client", &kubectl, &["version", "--client"]),
        ("kubectl gitops detect", &kubectl, &["gitops", "detect"]),
        ("kubectl version", &kubectl, &["version"]),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
    for round in 0..=STARTUP_RUNS {
        for ((name, program, args), row) in rows.iter().zip(&mut times) {
            let started = Instant::now();
            let output =
                Command::new(program).args(*args).env("PATH", &path).env("KUBECONFIG", &env.kubeconfig).output()?;
            let elapsed = started.elapsed();
            if !output.status.success() {
                bail!("{name}: {}", String::from_utf8_lossy(&output.stderr));
            }
            if round > 0 {
                row.push(elapsed);
            }
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|row| {
            row.sort();
            row[row.len() / 2].as_secs_f64() * 1e3
        })
        .collect();
    println!("\nstart-up and detect ({STARTUP_RUNS} runs each, alternating, medians)");
    for ((name, _, _), median) in rows.iter().zip(&medians) {
        println!("  {name:<46} {median:>8.1} ms");
    }
    let [help, client, kubectl_client, detect, kubectl_version] = medians[..] else { unreachable!() };
    check("kubectl-gitops --help", help, 10.0, " ms");
    check("kubectl-gitops version --client", client, 10.0, " ms");
    check("--help / kubectl version --client", help / kubectl_client, 0.2, "");
    check("version --client / kubectl version --client", client / kubectl_client, 0.2, "");
    check("kubectl gitops detect / kubectl version", detect / kubectl_version, 2.0, "");

    // MB as the budgets mean it: 10^6 bytes.
    println!("\nsizes ({})", bin_dir.display());
    // What a release ships: the one binary that runs every command, and the completion shim.
    for name in gitops_e2e::binaries::RELEASE {
        let size =
            std::fs::metadata(bin_dir.join(name)).with_context(|| format!("{name} in {}", bin_dir.display()))?.len();
        check(name, size as f64 / 1e6, RELEASE_BINARY_MB, " MB");
    }
    match std::env::var_os("BENCH_ARCHIVE").map(PathBuf::from) {
        Some(archive) => {
            let size = std::fs::metadata(&archive).with_context(|| format!("the archive {}", archive.display()))?.len();
            check(&archive.file_name().unwrap_or_default().to_string_lossy(), size as f64 / 1e6, 25.0, " MB");
            // What the archive holds: on Linux, the static build (musl, OpenSSL inside).
            let listing = Command::new("tar").arg("-tvzf").arg(&archive).output()?;
            for line in String::from_utf8_lossy(&listing.stdout).lines() {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let (Some(size), Some(name)) = (fields.get(2), fields.last()) else { continue };
                if gitops_e2e::binaries::RELEASE.contains(name) {
                    let size: f64 = size.parse().with_context(|| format!("the size of {name}: {line}"))?;
                    check(&format!("{name} in the archive"), size / 1e6, ARCHIVE_BINARY_MB, " MB");
                }
            }
        }
        None => println!("  the release archive: not measured (BENCH_ARCHIVE unset; `make bench` sets it)"),
    }
    Ok(())
}

/// One measurement against its budget (at most `limit`), with PASS or FAIL.
fn check(name: &str, value: f64, limit: f64, unit: &str) {
    let verdict = if value <= limit { "PASS" } else { "FAIL" };
    println!("  {name:<46} {value:>8.2}{unit}  (target <= {limit}{unit})  {verdict}");
}

/// What `kubectl gitops flux` adds to flux's own start: `version --client` (no cluster) through
/// the release build, with the CLI in a cache that `install-cli` filled from a local release
/// server, against the same CLI run directly; alternating, `PASSTHROUGH_RUNS` each, medians.
fn passthrough(cli: &Path) -> Result<()> {
    const PASSTHROUGH_RUNS: usize = 40;
    let ours = binaries_path("kubectl-gitops-flux");
    let server = gitops_e2e::flux_release::ReleaseServer::start(gitops_e2e::flux_release::Tamper::None);
    let cache = tempfile::tempdir()?;
    let isolated = gitops_e2e::flux_release::isolated_env(cache.path(), &server.url);
    let installed = Command::new(&ours).arg("install-cli").envs(isolated.clone()).output()?;
    if !installed.status.success() {
        bail!("kubectl-gitops-flux install-cli: {}", String::from_utf8_lossy(&installed.stderr));
    }
    let cached = PathBuf::from(String::from_utf8_lossy(&installed.stdout).trim());
    let time = |program: &Path| -> Result<Duration> {
        let started = Instant::now();
        let output = Command::new(program).args(["version", "--client"]).envs(isolated.clone()).output()?;
        if !output.status.success() {
            bail!("{} version --client failed", program.display());
        }
        Ok(started.elapsed())
    };
    let (mut direct, mut through) = (Vec::new(), Vec::new());
    for run in 0..=PASSTHROUGH_RUNS {
        let (a, b) = (time(&cached)?, time(&ours)?);
        if run > 0 {
            direct.push(a);
            through.push(b);
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (direct, through) = (median(&mut direct), median(&mut through));
    let added = through.saturating_sub(direct);
    println!("\nkubectl gitops flux version --client ({PASSTHROUGH_RUNS} runs each, medians; flux {})", cli.display());
    println!("  flux directly                  {:>8.1} ms", direct.as_secs_f64() * 1e3);
    println!("  through kubectl gitops flux    {:>8.1} ms", through.as_secs_f64() * 1e3);
    let verdict = if added <= Duration::from_millis(5) { "PASS" } else { "FAIL" };
    println!("  added by the passthrough       {:>8.1} ms  (target <= 5 ms)  {verdict}", added.as_secs_f64() * 1e3);
    // Without embed-flux the binary carries no CLI: it must stay within the plugins' size budget.
    // MB as the budget means it: 10^6 bytes (5.9 MiB is 6.1 MB).
    let megabytes = std::fs::metadata(&ours)?.len() as f64 / 1e6;
    let verdict = if megabytes <= 8.0 { "PASS" } else { "FAIL" };
    println!("  kubectl-gitops-flux size       {megabytes:>8.1} MB  (budget <= 8 MB, {})  {verdict}", ours.display());
    Ok(())
}

/// One size: every row, then the ratios against their targets.
fn report(env: &TestEnv, api: &Api, size: usize, seeding: Duration, flux: &Result<PathBuf, String>) -> Result<()> {
    let status = binaries_path("kubectl-gitops-status");
    // BENCH_BASELINE: another build of kubectl-gitops-status (say, of an older commit), measured
    // in the same rounds against the same objects.
    let baseline = std::env::var_os("BENCH_BASELINE").map(PathBuf::from);
    let command = |name: &str, program: &Path, args: &[&str], expect: Expect| Row {
        name: name.to_string(),
        probe: Probe::Command {
            program: program.to_path_buf(),
            args: args.iter().map(|a| a.to_string()).collect(),
            expect,
        },
        times: Vec::new(),
        peak_kb: None,
        bytes: 0,
    };
    // status shows one row per Kustomization; kubectl lists the GitRepositories too.
    let dora = binaries_path("kubectl-gitops-metrics");
    let mut rows = vec![
        command("kubectl gitops status -A -o json", &status, &["-A", "-o", "json"], Expect::JsonItems(size)),
        command(
            "kubectl gitops metrics dora -A -o json",
            &dora,
            &["dora", "-A", "-o", "json"],
            Expect::JsonItems(size),
        ),
        command("kubectl gitops status -A (table)", &status, &["-A"], Expect::Lines(size)),
        command(
            "kubectl get <5 Flux kinds> -A -o json",
            Path::new("kubectl"),
            &["get", KINDS, "-A", "-o", "json"],
            Expect::JsonItems(2 * size),
        ),
        Row {
            name: format!("raw paginated LIST floor (curl, limit={PAGE})"),
            probe: Probe::Floor { expected: 2 * size },
            times: Vec::new(),
            peak_kb: None,
            bytes: 0,
        },
    ];
    if let Some(baseline) = &baseline {
        rows.push(command("baseline: status -A -o json", baseline, &["-A", "-o", "json"], Expect::JsonItems(size)));
        rows.push(command("baseline: status -A (table)", baseline, &["-A"], Expect::Lines(size)));
    }
    match flux {
        Ok(flux) => rows.push(command(
            "flux get kustomizations -A (flux v2.9.4)",
            flux,
            &["get", "kustomizations", "-A"],
            Expect::Lines(size),
        )),
        Err(error) => println!("\nflux get kustomizations -A: not measured, the flux CLI was not built:\n{error}"),
    }
    // Round-robin, so that a slower spell of the machine (or of the API server) weighs on every
    // row alike; the first round is the warm-up that checks every object was listed. At 1,000 apps
    // a run takes a fifth of a second, and the API server's slow spells (its LIST pages take
    // twice as long) fall on about a third of the runs: 5 runs let a median land on one of
    // them, so small sizes get more runs.
    // Each round starts one row further on, so that no row always follows the same one: the
    // table used to follow `metrics dora`, whose reads of every ledger leave the API server busy
    // for a moment, and measured 1.4 times the JSON row that follows flux's one LIST.
    let runs = if size <= 1_000 { SMALL_RUNS } else { RUNS };
    let count = rows.len();
    for round in 0..=runs {
        for turn in 0..count {
            api.touch()?;
            rows[(round + turn) % count].run(&env.kubeconfig, api, round == 0)?;
        }
    }

    let bytes = rows.iter().map(|row| row.bytes).max().unwrap_or(0);
    println!();
    println!(
        "N = {size} apps ({} objects; LIST responses {:.1} MB; seeded in {:.1} s; {runs} runs, medians)",
        2 * size,
        bytes as f64 / 1e6,
        seeding.as_secs_f64()
    );
    println!("  {:<46} {:>10}  {:>9}", "row", "median ms", "peak RSS");
    for row in &rows {
        let rss = row.peak_kb.map_or("-".to_string(), |kb| format!("{:.1} MB", kb as f64 / 1024.0));
        println!("  {:<46} {:>10}  {rss:>9}", row.name, row.median().as_millis());
    }

    let find = |prefix: &str| rows.iter().find(|row| row.name.starts_with(prefix));
    let (kubectl, floor, flux_get) = (&rows[3], &rows[4], find("flux get"));
    targets("targets", (&rows[0], &rows[2]), kubectl, floor, flux_get);
    // Every app's 5 deployments (Flux's and its ledger's) against the listing of the same apps.
    let dora_ratio = rows[1].median().as_secs_f64() / rows[0].median().as_secs_f64();
    check("metrics dora / status -A -o json", dora_ratio, 2.0, "");
    if let (Some(json), Some(table)) = (find("baseline: status -A -o json"), find("baseline: status -A (table)")) {
        targets("targets, baseline", (json, table), kubectl, floor, flux_get);
    }
    Ok(())
}

/// The ratios the targets are about, for one build's JSON and table rows, each with PASS or FAIL.
fn targets(title: &str, (json, table): (&Row, &Row), kubectl: &Row, floor: &Row, flux_get: Option<&Row>) {
    println!("  {title:<46} {:>10}", "measured");
    let check = |name: &str, value: f64, limit: f64| {
        let verdict = if value <= limit { "PASS" } else { "FAIL" };
        println!("  {:<46} {:>10}  {verdict}", format!("{name} <= {limit}"), format!("{value:.2}"));
    };
    let ratio = |a: &Row, b: &Row| a.median().as_secs_f64() / b.median().as_secs_f64();
    let ours = if json.median() > table.median() { json } else { table };
    check("table / JSON", ratio(table, json), 1.2);
    check("JSON / LIST floor", ratio(json, floor), 1.5);
    if let Some(flux_get) = flux_get {
        check("slower of table and JSON / flux get", ratio(ours, flux_get), 1.0);
    }
    check("slower of table and JSON / kubectl get", ratio(ours, kubectl), 1.0);
    let peak = json.peak_kb.max(table.peak_kb).unwrap_or(0);
    check("peak RSS of table and JSON (MB)", peak as f64 / 1024.0, 100.0);
}

/// The release build of a binary (`make bench` builds it), else the debug one.
fn binaries_path(name: &str) -> PathBuf {
    // This binary lives in target/<profile>/.
    let profile_dir =
        std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)).unwrap_or_default();
    let release = profile_dir.join("../release").join(name);
    if release.exists() { release } else { profile_dir.join(name) }
}

/// The real flux CLI: `FLUX_CLI` when set, else the one tests/testenv/build-flux-cli.sh builds
/// (cached; `GITOPS_FLUX_CLI_DIR` names its directory). The error is the build's own last lines,
/// for the report.
fn flux_cli() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("FLUX_CLI") {
        return Ok(PathBuf::from(path));
    }
    let started = Instant::now();
    let dir = gitops_e2e::flux_release::cli_dir().map_err(|error| format!("{error:#}"))?;
    eprintln!("bench: flux CLI ready in {:.1?} ({})", started.elapsed(), dir.display());
    Ok(dir.join("bin/flux"))
}

/// The API server as curl reaches it, with the admin client certificate.
struct Api {
    server: String,
    tls: [String; 6],
    dir: PathBuf,
    /// Touches so far, the value of the next.
    touched: std::sync::atomic::AtomicUsize,
}

impl Api {
    fn new(env: &TestEnv) -> Api {
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
    fn get(&self, path: &str) -> Result<Vec<u8>> {
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
    fn touch(&self) -> Result<()> {
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
    fn send_all(&self, what: &str, requests: &[Request], expected: u16) -> Result<()> {
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

struct Request {
    method: &'static str,
    path: String,
    content_type: &'static str,
    agent: &'static str,
    body: String,
}

/// A POST of `body` to `path`, sent as `agent`.
fn post(path: String, agent: &'static str, body: &serde_json::Value) -> Request {
    Request { method: "POST", path, content_type: "application/json", agent, body: body.to_string() }
}

/// Creates apps `from..to` (a GitRepository and a Kustomization each, in 10 namespaces, with an
/// event and a ledger), then writes their status through the status subresource, as the
/// controllers do.
fn seed(api: &Api, from: usize, to: usize) -> Result<()> {
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
    fn new(index: usize) -> App {
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
        use gitops_shared::deployments::{self, AppKind, ledger};
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

/// What a warm-up run must show, so that a fast run cannot be a run that listed nothing.
#[derive(Clone, Copy)]
enum Expect {
    /// At least this many entries in `apps` or `items` of a JSON document.
    JsonItems(usize),
    /// At least this many lines that start with a bench namespace (the rows of an `-A` table).
    Lines(usize),
}

impl Expect {
    fn check(self, program: &Path, output: &Output) -> Result<()> {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let (count, expected) = match self {
            Expect::JsonItems(expected) => {
                let listed: serde_json::Value = serde_json::from_slice(&output.stdout)
                    .with_context(|| format!("{} printed no JSON: {stderr}", program.display()))?;
                (listed["apps"].as_array().or(listed["items"].as_array()).map_or(0, Vec::len), expected)
            }
            Expect::Lines(expected) => {
                let text = String::from_utf8_lossy(&output.stdout);
                (text.lines().filter(|line| line.starts_with("bench-")).count(), expected)
            }
        };
        if count < expected {
            bail!("{} listed {count} objects, expected {expected}: {stderr}", program.display());
        }
        Ok(())
    }
}

/// What a row runs.
enum Probe {
    /// A command, with the kubeconfig of the environment.
    Command { program: PathBuf, args: Vec<String>, expect: Expect },
    /// The LIST floor, made by the bench itself: at least `expected` objects.
    Floor { expected: usize },
}

/// A row of the report and its measurements so far.
struct Row {
    name: String,
    probe: Probe,
    /// Wall times of the measured runs.
    times: Vec<Duration>,
    /// The largest peak RSS of the measured runs (commands only).
    peak_kb: Option<u64>,
    /// Bytes one run of the floor read.
    bytes: usize,
}

impl Row {
    /// One run; the warm-up (`checked`) checks what was listed and is not counted.
    fn run(&mut self, kubeconfig: &Path, api: &Api, checked: bool) -> Result<()> {
        let elapsed = match &self.probe {
            Probe::Command { program, args, expect } => {
                let started = Instant::now();
                let output = Command::new("/usr/bin/time")
                    .args(["-f", "%M"])
                    .arg(program)
                    .args(args)
                    .env("KUBECONFIG", kubeconfig)
                    .output()
                    .with_context(|| format!("running {}", program.display()))?;
                let elapsed = started.elapsed();
                if checked {
                    expect.check(program, &output)?;
                    return Ok(());
                }
                let stderr = String::from_utf8_lossy(&output.stderr);
                let rss: u64 = stderr.lines().last().and_then(|line| line.trim().parse().ok()).unwrap_or(0);
                self.peak_kb = Some(self.peak_kb.unwrap_or(0).max(rss));
                elapsed
            }
            Probe::Floor { expected } => {
                let started = Instant::now();
                let (bytes, items) = list_floor(api, checked)?;
                let elapsed = started.elapsed();
                self.bytes = bytes;
                if checked {
                    if items < *expected {
                        bail!("the LIST floor read {items} objects, expected {expected}");
                    }
                    return Ok(());
                }
                elapsed
            }
        };
        self.times.push(elapsed);
        Ok(())
    }

    fn median(&self) -> Duration {
        let mut times = self.times.clone();
        times.sort();
        times.get(times.len() / 2).copied().unwrap_or_default()
    }
}

/// The transfer floor: the same LISTs `kubectl get` makes, page by page (limit=500, one curl per
/// page), the kinds concurrently, each body read and dropped. Returns the bytes read and, when
/// `counted`, the objects (counting is left out of measured runs).
fn list_floor(api: &Api, counted: bool) -> Result<(usize, usize)> {
    let listed = std::thread::scope(|scope| {
        let lists: Vec<_> = LISTS
            .iter()
            .map(|(group_version, plural)| scope.spawn(move || list_all(api, group_version, plural, counted)))
            .collect();
        lists
            .into_iter()
            .map(|list| list.join().unwrap_or_else(|_| bail!("a LIST thread panicked")))
            .collect::<Result<Vec<_>>>()
    })?;
    Ok(listed.iter().fold((0, 0), |(bytes, items), (b, i)| (bytes + b, items + i)))
}

/// Every page of one kind in all namespaces: (bytes read, items when `counted`).
fn list_all(api: &Api, group_version: &str, plural: &str, counted: bool) -> Result<(usize, usize)> {
    let mut bytes = 0;
    let mut items = 0;
    let mut token = String::new();
    loop {
        let mut path = format!("/apis/{group_version}/{plural}?limit={PAGE}");
        if !token.is_empty() {
            path.push_str(&format!("&continue={token}"));
        }
        let body = api.get(&path)?;
        bytes += body.len();
        if counted {
            // Each item has one uid (no owner references here), the list none.
            items += count(&body, b"\"uid\":\"");
        }
        token = continue_token(&body);
        if token.is_empty() {
            return Ok((bytes, items));
        }
    }
}

/// Occurrences of `needle` in `haystack`.
fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).filter(|window| *window == needle).count()
}

/// `metadata.continue` of a list page, which the API server writes before or after the items,
/// percent-encoded for the next URL.
fn continue_token(body: &[u8]) -> String {
    let needle = b"\"continue\":\"";
    let ends = [&body[..body.len().min(1024)], &body[body.len().saturating_sub(1024)..]];
    for end in ends {
        if let Some(at) = end.windows(needle.len()).position(|window| window == needle) {
            let rest = &end[at + needle.len()..];
            return rest
                .iter()
                .take_while(|&&b| b != b'"')
                .map(|&b| {
                    if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect();
        }
    }
    String::new()
}
