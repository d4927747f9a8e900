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

#[path = "gitops-bench/artifacts.rs"]
mod artifacts;
#[path = "gitops-bench/budgets.rs"]
mod budgets;
#[path = "gitops-bench/diff.rs"]
mod diff;
#[path = "gitops-bench/drift.rs"]
mod drift;
#[path = "gitops-bench/fleet.rs"]
mod fleet;
#[path = "gitops-bench/seed.rs"]
mod seed;
#[path = "gitops-bench/ui.rs"]
mod ui;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use gitops_e2e::testenv::{Options, TestEnv};

use self::artifacts::artifacts;
use self::budgets::{budgets, passthrough};
use self::diff::diff_rows;
use self::seed::{Api, seed};
use self::ui::ui;

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

/// One measurement against its budget (at most `limit`), with PASS or FAIL.
fn check(name: &str, value: f64, limit: f64, unit: &str) {
    let verdict = if value <= limit { "PASS" } else { "FAIL" };
    println!("  {name:<46} {value:>8.2}{unit}  (target <= {limit}{unit})  {verdict}");
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
