//! `gitops-testenv up [--gitea]|down|status [FIELD]`: the local environment for people (`make
//! testenv`, `make demo`, `make demo-sockshop`, which adds a real Gitea with `--gitea`). A failure is
//! one line on stderr, `testenv: error: …`, naming the log file.
//!
//! `up` starts a background server process that owns the environment and prints
//! `export KUBECONFIG=…`; `down` stops it, which also stops every process and removes the temp dir.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use gitops_e2e::testenv::{Options, TestEnv};

fn state_file() -> PathBuf {
    let dir = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    dir.join("kubectl-gitops-testenv.json")
}

fn read_state() -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(state_file()).ok()?;
    let state: serde_json::Value = serde_json::from_str(&text).ok()?;
    let alive = process(&state).is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
    alive.then_some(state)
}

fn process(state: &serde_json::Value) -> Option<rustix::process::Pid> {
    state["pid"].as_i64().and_then(|pid| i32::try_from(pid).ok()).and_then(rustix::process::Pid::from_raw)
}

fn up(gitea: bool) -> Result<()> {
    if let Some(state) = read_state() {
        println!("export KUBECONFIG={}", state["kubeconfig"].as_str().unwrap_or_default());
        eprintln!("testenv: already running (pid {})", state["pid"]);
        return Ok(());
    }
    let _ = std::fs::remove_file(state_file());
    // Beside the state file: the runtime directory is this user's (a fixed name in the shared temp
    // directory could be another user's file).
    let log = state_file().with_file_name("kubectl-gitops-testenv.log");
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new(std::env::current_exe()?)
            .arg("serve")
            .args(gitea.then_some("--gitea"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::create(&log)?)
            .process_group(0)
            .spawn()?
    };
    let started = Instant::now();
    eprintln!("testenv: starting etcd, kube-apiserver, controller-manager, scheduler, kwok, Flux, git, registry …");
    loop {
        if let Some(state) = read_state() {
            println!("export KUBECONFIG={}", state["kubeconfig"].as_str().unwrap_or_default());
            eprintln!(
                "testenv: ready in {:.1}s (git over SSH on 127.0.0.1:{}, HTTP on 127.0.0.1:{}, registry {}, charts {}); stop it with `make testenv-down`",
                started.elapsed().as_secs_f64(),
                state["sshPort"],
                state["httpPort"],
                state["registry"].as_str().unwrap_or_default(),
                state["helmRepository"].as_str().unwrap_or_default(),
            );
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            // The log ends with the reason (`serve` prints it last); the rest stays in the file.
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let reason = text.lines().rev().find(|line| line.starts_with("testenv: error: ")).unwrap_or("");
            let reason = reason.trim_start_matches("testenv: error: ");
            bail!("the environment did not start ({status}): {reason}; full log: {}", log.display());
        }
        if started.elapsed() > Duration::from_secs(180) {
            bail!("the environment did not start within 180s; see {}", log.display());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn serve(with_gitea: bool) -> Result<()> {
    let env = &TestEnv::start(Options { flux: true })?;
    let gitea = with_gitea.then(|| env.start_gitea()).transpose()?;
    let mut state = serde_json::json!({
        "pid": std::process::id(),
        "dir": env.dir,
        "kubeconfig": env.kubeconfig,
        "readonlyKubeconfig": env.readonly_kubeconfig,
        "server": env.server,
        "sshPort": env.git.ssh_port,
        "httpPort": env.git.http_port,
        "gitRepos": env.git.repos,
        "knownHosts": env.git.known_hosts,
        "gitClientKey": env.git.client_key,
        "registry": env.registry.address,
        "helmRepository": env.helm.url,
        "helmRepositoryDir": env.helm.dir,
        "startupSeconds": env.startup.as_secs_f64(),
    });
    if let Some(gitea) = &gitea {
        state["giteaUrl"] = gitea.url.clone().into();
        state["giteaApiUrl"] = gitea.api_url().into();
        state["giteaToken"] = gitea.token.clone().into();
        state["giteaKnownHosts"] = gitea.known_hosts.display().to_string().into();
        state["giteaClientKey"] = gitea.client_key.display().to_string().into();
        state["giteaSshPort"] = gitea.ssh_port.into();
    }
    std::fs::write(state_file(), serde_json::to_string_pretty(&state)?)?;
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn down() -> Result<()> {
    let Some(state) = read_state() else {
        eprintln!("testenv: not running");
        return Ok(());
    };
    let pid = process(&state).context("the state file has no valid pid")?;
    rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
    let _ = std::fs::remove_file(state_file());
    eprintln!("testenv: stopped (pid {})", pid.as_raw_nonzero());
    Ok(())
}

/// `status`: the state as JSON, or one field of it (`status sshPort`) for scripts.
fn status(field: Option<&str>) -> Result<()> {
    let state = read_state().context("the environment is not running; start it with `make testenv`")?;
    match field {
        None => println!("{}", serde_json::to_string_pretty(&state)?),
        Some(field) => match &state[field] {
            serde_json::Value::String(text) => println!("{text}"),
            serde_json::Value::Null => bail!("the state has no field {field}"),
            other => println!("{other}"),
        },
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("up") => up(args.get(1).is_some_and(|arg| arg == "--gitea")),
        Some("serve") => serve(args.get(1).is_some_and(|arg| arg == "--gitea")),
        Some("down") => down(),
        Some("status") => status(args.get(1).map(String::as_str)),
        _ => Err(anyhow::anyhow!("usage: gitops-testenv up [--gitea]|down|status [FIELD]")),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // One line, the causes joined; never a backtrace.
            eprintln!("testenv: error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
