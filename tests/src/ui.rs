//! A client of `kubectl gitops ui` for the tests and the bench: start the server, exchange its
//! one-time token for the session cookie, plain HTTP/1.1 requests and Server-Sent Events, and
//! Ctrl-C. Plain sockets, so every header a test sends is the one it wrote.

#![allow(clippy::unwrap_used, reason = "a failed request fails the test or the bench that made it")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `kubectl-gitops-ui`, killed when dropped ([`Ui::interrupt`] stops it as a user does).
pub struct Ui {
    child: Child,
    /// `127.0.0.1:PORT`
    pub address: String,
    /// The one-time token of the URL it printed.
    pub token: String,
}

impl Ui {
    /// Starts `binary` (a kubectl-gitops-ui build) with `--no-browser` and `extra` flags.
    pub fn start(binary: &Path, kubeconfig: &Path, extra: &[&str]) -> Ui {
        let mut command = Command::new(binary);
        command.args(extra).env("KUBECONFIG", kubeconfig);
        Ui::launch(command)
    }

    /// Starts `command` (a kubectl-gitops-ui with its flags and environment) with `--no-browser`.
    pub fn launch(mut command: Command) -> Ui {
        crate::binaries::isolate_config(&mut command);
        let mut child = command.arg("--no-browser").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().strip_prefix("http://").unwrap_or_else(|| panic!("not a URL: {line:?}")).to_string();
        let (address, token) = url.split_once("/?token=").unwrap();
        Ui { child, address: address.to_string(), token: token.to_string() }
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.address.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// The name of its session cookie, which carries its port.
    pub fn cookie_name(&self) -> String {
        format!("gitops_ui_session_{}", self.port())
    }

    /// Exchanges the token for the session cookie.
    pub fn login(&self) -> String {
        let answer = self.request("GET", &format!("/?token={}", self.token), &[], b"");
        assert_eq!(answer.status, 303, "{}", answer.body);
        let cookie = answer.header("set-cookie").unwrap().to_string();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
        cookie.split(';').next().unwrap().to_string()
    }

    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        // An add with `wait` answers once Flux applied the commit: minutes on a loaded machine.
        stream.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        // `Host` names the address connected to, unless the test writes its own.
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.address));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        stream.write_all(head.as_bytes()).unwrap();
        // A refused oversized body may be answered before it is all sent.
        let _ = stream.write_all(body);
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        Answer::parse(&raw)
    }

    pub fn get(&self, cookie: &str, path: &str) -> Answer {
        self.request("GET", path, &[("Cookie", cookie)], b"")
    }

    pub fn json(&self, cookie: &str, path: &str) -> serde_json::Value {
        let answer = self.get(cookie, path);
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        serde_json::from_str(&answer.body).unwrap()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it as a user does, with Ctrl-C; returns its exit code and stderr.
    pub fn interrupt(self) -> (Option<i32>, String) {
        let (code, stderr, _) = self.interrupt_timed();
        (code, stderr)
    }

    /// [`Ui::interrupt`], and how long it took to stop.
    pub fn interrupt_timed(mut self) -> (Option<i32>, String, Duration) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(started.elapsed() < Duration::from_secs(15), "the UI did not stop on Ctrl-C");
            std::thread::sleep(Duration::from_millis(50));
        };
        let took = started.elapsed();
        let mut stderr = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        (status.code(), stderr, took)
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer, whole (the requests say `Connection: close`).
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
}

impl Answer {
    pub fn parse(raw: &[u8]) -> Answer {
        let text = String::from_utf8_lossy(raw);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no HTTP answer (the read timed out or the server closed): {text:?}"));
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_string()))
            .collect();
        Answer { status, headers, body: body.to_string() }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// The `{"error", "hint"}` of a refusal, checked to have both.
    pub fn error(&self) -> String {
        let json: serde_json::Value = serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("{}", self.body));
        assert!(json["hint"].is_string(), "{json}");
        json["error"].as_str().unwrap().to_string()
    }
}

/// Reads Server-Sent Events from `/api/v1/events` (or another stream of the API).
pub struct Events {
    reader: BufReader<TcpStream>,
}

impl Events {
    pub fn open(ui: &Ui, cookie: &str) -> Events {
        Events::open_at(ui, cookie, "/api/v1/events")
    }

    pub fn open_at(ui: &Ui, cookie: &str, path: &str) -> Events {
        let mut stream = TcpStream::connect(&ui.address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {cookie}\r\n\r\n", ui.address).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "{status}");
        Events { reader }
    }

    /// The data of the next `apps` event.
    pub fn next_apps(&mut self) -> serde_json::Value {
        self.next("apps")
    }

    /// The data of the next event called `name`.
    pub fn next(&mut self, name: &str) -> serde_json::Value {
        let mut event = String::new();
        loop {
            let mut line = String::new();
            assert!(self.reader.read_line(&mut line).unwrap() > 0, "the event stream ended");
            let line = line.trim_end();
            if let Some(name) = line.strip_prefix("event: ") {
                event = name.to_string();
            } else if let Some(data) = line.strip_prefix("data: ")
                && event == name
            {
                return serde_json::from_str(data).unwrap();
            }
        }
    }
}
