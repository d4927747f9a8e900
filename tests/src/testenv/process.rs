//! Child processes of the environment: one process group, logs to files, and a watchdog
//! that kills the group when the process that started it goes away, even after a panic.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// Starts processes into one process group and remembers their logs.
pub struct Supervisor {
    log_dir: PathBuf,
    group: Option<u32>,
    children: Vec<(String, Child)>,
}

impl Supervisor {
    /// A supervisor writing logs into `log_dir`.
    pub fn new(log_dir: &Path) -> Result<Supervisor> {
        std::fs::create_dir_all(log_dir)?;
        Ok(Supervisor { log_dir: log_dir.to_path_buf(), group: None, children: Vec::new() })
    }

    /// Starts a process; stdout and stderr go to `<log_dir>/<name>.log`.
    pub fn spawn(&mut self, name: &str, command: &mut Command) -> Result<u32> {
        let log = File::create(self.log_path(name))?;
        command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(self.group.unwrap_or(0) as i32);
        }
        let child = command.spawn().with_context(|| format!("cannot start {name} ({command:?})"))?;
        let pid = child.id();
        self.group.get_or_insert(pid);
        // The watchdog reads this file when it fires, so processes started after `watch`
        // (the Flux controllers of `run_flux_once_installed`) are stopped too.
        use std::io::Write;
        let mut pids = std::fs::OpenOptions::new().create(true).append(true).open(self.pid_file())?;
        writeln!(pids, "{pid}")?;
        self.children.push((name.to_string(), child));
        Ok(pid)
    }

    /// The log file of a process.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.log_dir.join(format!("{name}.log"))
    }

    /// Fails when a process has already exited, naming it and showing its log's tail.
    pub fn check_alive(&mut self) -> Result<()> {
        for (name, child) in &mut self.children {
            if let Some(status) = child.try_wait()? {
                let log = std::fs::read_to_string(self.log_dir.join(format!("{name}.log"))).unwrap_or_default();
                bail!("{name} exited with {status}; last lines of its log:\n{}", tail(&log, 30));
            }
        }
        Ok(())
    }

    /// The file listing every PID started, one per line.
    fn pid_file(&self) -> PathBuf {
        self.log_dir.join("pids")
    }

    /// Starts the watchdog: when `owner` exits, every process started (now or later) is
    /// terminated and `remove` (the environment's temp dir) deleted. It signals each PID, never
    /// a negative number: procps `kill -TERM -<pgid>` signals every process of the user.
    pub fn watch(&self, owner: u32, remove: Option<&Path>) -> Result<()> {
        let pids = format!("$(cat '{}' 2>/dev/null)", self.pid_file().display());
        let remove = remove.map(|dir| format!("rm -rf '{}'", dir.display())).unwrap_or_default();
        let script = format!(
            "while kill -0 {owner} 2>/dev/null; do sleep 0.3; done; kill -TERM {pids} 2>/dev/null; sleep 2; kill -KILL {pids} 2>/dev/null; {remove}"
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
        let Some(group) = self.group.take() else {
            return;
        };
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
