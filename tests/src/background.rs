//! A command left running (a `--watch`, a server), its output collected as it comes, stopped
//! with Ctrl-C as a user stops it.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running command and what it printed so far.
pub struct Background {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts `command` with its stdout and stderr collected.
    pub fn spawn(command: &mut Command) -> Background {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let (stdout, stderr) = (Arc::new(Mutex::new(String::new())), Arc::new(Mutex::new(String::new())));
        let collect = |mut stream: Box<dyn Read + Send>, into: Arc<Mutex<String>>| {
            std::thread::spawn(move || {
                let mut buffer = [0u8; 8192];
                while let Ok(read) = stream.read(&mut buffer) {
                    if read == 0 {
                        break;
                    }
                    into.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..read]));
                }
            })
        };
        let readers = vec![
            collect(Box::new(child.stdout.take().unwrap()), stdout.clone()),
            collect(Box::new(child.stderr.take().unwrap()), stderr.clone()),
        ];
        Background { child, stdout, stderr, readers }
    }

    /// What it printed on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until its stdout so far meets `done`; fails the test after `limit` (or if it ends),
    /// showing both streams.
    pub fn wait_until(&mut self, what: &str, limit: Duration, mut done: impl FnMut(&str) -> bool) {
        let started = Instant::now();
        while !done(&self.stdout()) {
            let ended = self.child.try_wait().unwrap();
            assert!(
                ended.is_none() && started.elapsed() < limit,
                "{what}: not within {limit:?} (ended: {ended:?})\nstdout:\n{}\nstderr:\n{}",
                self.stdout(),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits for it to end; fails the test, showing what it printed, if it still runs after
    /// `limit` (it is killed then). Its exit code, stdout and stderr.
    pub fn wait_within(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < limit,
                "still running after {limit:?}\nstdout:\n{}\nstderr:\n{}",
                self.stdout(),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        for reader in std::mem::take(&mut self.readers) {
            reader.join().unwrap();
        }
        (status.code(), self.stdout(), self.stderr())
    }

    /// Stops it with Ctrl-C (SIGINT); its exit code, stdout, stderr, and how long it took to end.
    pub fn interrupt(mut self) -> (Option<i32>, String, String, Duration) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(started.elapsed() < Duration::from_secs(15), "it did not stop on Ctrl-C:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = started.elapsed();
        for reader in std::mem::take(&mut self.readers) {
            reader.join().unwrap();
        }
        (status.code(), self.stdout(), self.stderr(), took)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
