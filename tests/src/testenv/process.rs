//! Child processes of the environment: one process group, logs to files, and a watchdog
//! that kills the group when the process that started it goes away, even after a panic.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The file listing every PID started, one per line, in the log dir.
const PID_FILE: &str = "pids";

/// How a process started with [`Supervisor::spawn_restarting`] is restarted.
#[derive(Debug, Clone, Copy)]
pub struct RestartPolicy {
    /// The pause before the first restart; it doubles with each further one (jittered, at most 10 s).
    pub first_backoff: Duration,
    /// How often a process that keeps exiting is started again before it is given up on.
    pub max_restarts: u32,
}

impl Default for RestartPolicy {
    fn default() -> RestartPolicy {
        RestartPolicy { first_backoff: Duration::from_millis(500), max_restarts: 6 }
    }
}

/// Starts processes into one process group and remembers their logs.
pub struct Supervisor {
    log_dir: PathBuf,
    group: Option<u32>,
    children: Vec<(String, Child)>,
    restarting: Vec<(String, Arc<Mutex<RestartState>>)>,
    /// How processes started with [`Supervisor::spawn_restarting`] from now on are restarted.
    pub restart_policy: RestartPolicy,
    /// Set by `stop`; held while a restart spawns, so nothing starts after the group is stopped.
    stopping: Arc<Mutex<bool>>,
}

/// What a kubelet would show for a restarted container: how often it restarted, and whether it
/// was given up on (with its last log lines).
#[derive(Debug, Default)]
struct RestartState {
    pid: u32,
    restarts: u32,
    gave_up: Option<String>,
}

impl Supervisor {
    /// A supervisor writing logs into `log_dir`.
    pub fn new(log_dir: &Path) -> Result<Supervisor> {
        std::fs::create_dir_all(log_dir)?;
        // The watchdog watches while this file exists, so it exists from the start.
        File::create(log_dir.join(PID_FILE))?;
        Ok(Supervisor {
            log_dir: log_dir.to_path_buf(),
            group: None,
            children: Vec::new(),
            restarting: Vec::new(),
            restart_policy: RestartPolicy::default(),
            stopping: Arc::new(Mutex::new(false)),
        })
    }

    /// Starts a process; stdout and stderr go to `<log_dir>/<name>.log`.
    pub fn spawn(&mut self, name: &str, command: &mut Command) -> Result<u32> {
        let log = File::create(self.log_path(name))?;
        let child = start(name, command, log, self.group, &self.pid_file())?;
        let pid = child.id();
        self.group.get_or_insert(pid);
        self.children.push((name.to_string(), child));
        Ok(pid)
    }

    /// Starts a process the way a kubelet runs a container: when it exits it is started again
    /// after a backoff (by default 500 ms, doubling, jittered), each restart logged to stderr and
    /// to its log, which it appends to. After `max_restarts` restarts it is given up on, and
    /// [`Supervisor::check_alive`] fails with its last log lines. `command` builds the command
    /// anew for each start.
    pub fn spawn_restarting(&mut self, name: &str, command: impl Fn() -> Command + Send + 'static) -> Result<u32> {
        let log_path = self.log_path(name);
        let log = File::create(&log_path)?;
        let group = self.group;
        let pid_file = self.pid_file();
        let mut child = start(name, &mut command(), log, group, &pid_file)?;
        let pid = child.id();
        self.group.get_or_insert(pid);
        let group = self.group;
        let state = Arc::new(Mutex::new(RestartState { pid, ..RestartState::default() }));
        let policy = self.restart_policy;
        self.restarting.push((name.to_string(), Arc::clone(&state)));
        let stopping = Arc::clone(&self.stopping);
        let name = name.to_string();
        std::thread::spawn(move || {
            // Restarts are counted, not timed.
            let mut backoff =
                gitops_shared::retry::Backoff::without_deadline(policy.first_backoff, Duration::from_secs(10));
            loop {
                let status = child.wait();
                if *lock(&stopping) {
                    return;
                }
                let restarts = lock(&state).restarts;
                let status = status.map_or_else(|error| error.to_string(), |status| status.to_string());
                if restarts >= policy.max_restarts {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    lock(&state).gave_up = Some(format!(
                        "{name} exited {} times, last with {status}; the last lines of its log:\n{}",
                        restarts + 1,
                        tail(&log, 30)
                    ));
                    return;
                }
                let pause = backoff.pause(None).unwrap_or(Duration::from_secs(10));
                let note = format!("testenv: {name} exited with {status}; restart {} in {pause:.1?}", restarts + 1);
                eprintln!("{note}");
                append_line(&log_path, &note);
                std::thread::sleep(pause);
                let stopping = lock(&stopping);
                if *stopping {
                    return;
                }
                let restarted = File::options()
                    .append(true)
                    .open(&log_path)
                    .map_err(anyhow::Error::from)
                    .and_then(|log| start(&name, &mut command(), log, group, &pid_file));
                match restarted {
                    Ok(next) => child = next,
                    Err(error) => {
                        lock(&state).gave_up = Some(format!("{name} could not be started again: {error:#}"));
                        return;
                    }
                }
                drop(stopping);
                let mut state = lock(&state);
                state.restarts += 1;
                state.pid = child.id();
            }
        });
        Ok(pid)
    }

    /// How often a process started with [`Supervisor::spawn_restarting`] was restarted, and the
    /// PID it runs as now.
    pub fn restarts(&self, name: &str) -> Option<(u32, u32)> {
        let (_, state) = self.restarting.iter().find(|(known, _)| known == name)?;
        let state = lock(state);
        Some((state.restarts, state.pid))
    }

    /// The log file of a process.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.log_dir.join(format!("{name}.log"))
    }

    /// Fails when a process has already exited, naming it and showing its log's tail.
    /// A process started with [`Supervisor::spawn_restarting`] fails this only once it has been
    /// given up on.
    pub fn check_alive(&mut self) -> Result<()> {
        for (name, child) in &mut self.children {
            if let Some(status) = child.try_wait()? {
                let log = std::fs::read_to_string(self.log_dir.join(format!("{name}.log"))).unwrap_or_default();
                bail!("{name} exited with {status}; last lines of its log:\n{}", tail(&log, 30));
            }
        }
        for (_, state) in &self.restarting {
            if let Some(reason) = &lock(state).gave_up {
                bail!("{reason}");
            }
        }
        Ok(())
    }

    /// The file listing every PID started, one per line.
    fn pid_file(&self) -> PathBuf {
        self.log_dir.join(PID_FILE)
    }

    /// Starts the watchdog: when `owner` exits, every process started (now or later) is
    /// terminated and `remove` (the environment's temp dir) deleted. It signals each PID, never
    /// a negative number: procps `kill -TERM -<pgid>` signals every process of the user. It
    /// leaves at once when the PID file is gone: [`Supervisor::stop`] removes it.
    pub fn watch(&self, owner: u32, remove: Option<&Path>) -> Result<()> {
        let pid_file = self.pid_file();
        let pids = format!("$(cat '{}' 2>/dev/null)", pid_file.display());
        let remove = remove.map(|dir| format!("rm -rf '{}'", dir.display())).unwrap_or_default();
        let script = format!(
            "while kill -0 {owner} 2>/dev/null; do [ -e '{}' ] || exit 0; sleep 0.3; done; kill -TERM {pids} 2>/dev/null; sleep 2; kill -KILL {pids} 2>/dev/null; {remove}",
            pid_file.display()
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start the testenv watchdog")?;
        Ok(())
    }

    /// Stops every process now: SIGTERM to the group, SIGKILL to what is left after 5 s.
    pub fn stop(&mut self) {
        *lock(&self.stopping) = true;
        if let Some(group) = self.group.take() {
            self.stop_group(group);
        }
        // Everything is stopped: the watchdog has nothing left to do (and these PIDs may be reused).
        let _ = std::fs::remove_file(self.pid_file());
    }

    fn stop_group(&mut self, group: u32) {
        let signal_group = |signal| {
            if let Some(pid) = i32::try_from(group).ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process_group(pid, signal);
            }
        };
        signal_group(rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        for (_, child) in &mut self.children {
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        signal_group(rustix::process::Signal::KILL);
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `command` with its output appended to `log`, in process group `group` (a new one when
/// `None`), and records its PID in `pid_file`: the watchdog reads that file when it fires, so
/// processes started after `watch` (controllers started late, restarts) are stopped too.
fn start(name: &str, command: &mut Command, log: File, group: Option<u32>, pid_file: &Path) -> Result<Child> {
    command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(group.unwrap_or(0) as i32);
    }
    let child = command.spawn().with_context(|| format!("cannot start {name} ({command:?})"))?;
    use std::io::Write;
    let mut pids = std::fs::OpenOptions::new().create(true).append(true).open(pid_file)?;
    writeln!(pids, "{}", child.id())?;
    Ok(child)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn append_line(path: &Path, line: &str) {
    use std::io::Write;
    if let Ok(mut file) = File::options().append(true).open(path) {
        let _ = writeln!(file, "{line}");
    }
}

/// The last `lines` lines of a text.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Polls `ready` every 100 ms until it returns true or `timeout` passes.
pub fn wait_until(what: &str, timeout: Duration, mut ready: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if ready()? {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Free 127.0.0.1 TCP ports, all distinct.
///
/// They come from below the kernel's ephemeral range: a port the kernel hands out (`bind` to 0)
/// can meanwhile become the source port of some outgoing connection, and a server started a few
/// seconds later would find it taken. Below that range only another `bind` can take it. Each port
/// is handed out once per process: environments starting in parallel would otherwise pick the same
/// port before either binds it.
pub fn free_ports(count: usize) -> Result<Vec<u16>> {
    use std::hash::{BuildHasher, Hasher};
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next().and_then(|low| low.parse::<u16>().ok()))
        .unwrap_or(32_768);
    let (low, high) = (10_000u16, ephemeral_start.saturating_sub(1).max(10_001));
    static ISSUED: std::sync::Mutex<BTreeSet<u16>> = std::sync::Mutex::new(BTreeSet::new());
    let mut issued = ISSUED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut held: Vec<std::net::TcpListener> = Vec::new();
    let mut attempts = 0;
    while held.len() < count {
        attempts += 1;
        if attempts > 10_000 {
            bail!("no {count} free ports between {low} and {high}");
        }
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(attempts);
        let port = low + (hasher.finish() % u64::from(high - low)) as u16;
        if issued.contains(&port) {
            continue;
        }
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            issued.insert(port);
            held.push(listener);
        }
    }
    held.iter().map(|listener| Ok(listener.local_addr()?.port())).collect()
}

/// Whether something accepts TCP connections on a 127.0.0.1 port.
pub fn port_open(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)).is_ok()
}

/// Runs a command to completion and returns stdout, failing with stderr on a non-zero exit.
pub fn run(command: &mut Command) -> Result<String> {
    let output = command.output().with_context(|| format!("cannot run {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    /// A supervisor with quick restarts, whose process group is led by a process that stays (as
    /// etcd leads the environment's): a group whose last member is gone takes no new members.
    fn fast(log_dir: &Path) -> Supervisor {
        let mut supervisor = Supervisor::new(log_dir).unwrap();
        supervisor.restart_policy = RestartPolicy { first_backoff: Duration::from_millis(10), max_restarts: 3 };
        supervisor.spawn("leader", Command::new("sleep").arg("30")).unwrap();
        supervisor
    }

    #[test]
    fn a_process_that_exits_once_is_restarted_and_counts_as_alive() {
        let temp = tempfile::tempdir().unwrap();
        let marker = temp.path().join("started-before");
        let mut supervisor = fast(&temp.path().join("logs"));
        let script = format!(
            "if [ -e '{0}' ]; then exec sleep 30; else touch '{0}'; echo first start fails; exit 3; fi",
            marker.display()
        );
        let first = supervisor
            .spawn_restarting("flaky", move || {
                let mut command = Command::new("sh");
                command.args(["-c", &script]);
                command
            })
            .unwrap();
        wait_until("the restart", Duration::from_secs(10), || {
            Ok(supervisor.restarts("flaky").is_some_and(|(n, _)| n == 1))
        })
        .unwrap();
        let (_, pid) = supervisor.restarts("flaky").unwrap();
        assert_ne!(pid, first);
        std::thread::sleep(Duration::from_millis(200));
        supervisor.check_alive().unwrap();
        let log = std::fs::read_to_string(supervisor.log_path("flaky")).unwrap();
        assert!(log.contains("first start fails\ntestenv: flaky exited with exit status: 3; restart 1 in"), "{log}");
        supervisor.stop();
        assert_eq!(supervisor.restarts("flaky").unwrap().0, 1, "nothing restarts after stop");
    }

    #[test]
    fn a_process_that_keeps_exiting_is_given_up_on_with_its_last_log_lines() {
        let temp = tempfile::tempdir().unwrap();
        let mut supervisor = fast(&temp.path().join("logs"));
        supervisor
            .spawn_restarting("crashing", || {
                let mut command = Command::new("sh");
                command.args(["-c", "echo 'no matches for kind HelmRelease'; exit 1"]);
                command
            })
            .unwrap();
        let error = loop {
            if let Err(error) = supervisor.check_alive() {
                break error.to_string();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            error.starts_with("crashing exited 4 times, last with exit status: 1; the last lines of its log:\n"),
            "{error}"
        );
        assert!(error.contains("no matches for kind HelmRelease"), "{error}");
        assert_eq!(supervisor.restarts("crashing").unwrap().0, 3);
    }
}
