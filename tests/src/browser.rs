//! A real headless Chromium for the UI's browser tests, driven through WebDriver: Debian's
//! `chromium` and `chromium-driver` (installed by `make deps`), and fantoccini as the client.
//! The tests are synchronous, so each [`Browser`] carries a small runtime of its own.

#![allow(clippy::unwrap_used, reason = "a failed browser step fails the test that took it")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::testenv::process::free_ports;

/// Debian's chromium and chromium-driver; `GITOPS_CHROME` and `GITOPS_CHROMEDRIVER` name others
/// (a GitHub runner's Google Chrome and its chromedriver, whose Ubuntu `chromium` is a snap).
fn program(variable: &str, debian: &str) -> PathBuf {
    std::env::var_os(variable).map_or_else(|| debian.into(), PathBuf::from)
}

/// chromedriver, the session it opened in Chromium, and the runtime the client runs on.
pub struct Browser {
    driver: Child,
    client: Option<Client>,
    runtime: tokio::runtime::Runtime,
    /// Chromium's profile, removed with the browser.
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session through it.
    pub fn start() -> Browser {
        let chromedriver = program("GITOPS_CHROMEDRIVER", "/usr/bin/chromedriver");
        let chrome = program("GITOPS_CHROME", "/usr/bin/chromium");
        for program in [&chromedriver, &chrome] {
            assert!(
                program.exists(),
                "{} is missing: the browser tests need Debian's chromium and chromium-driver (`make deps` installs them), or GITOPS_CHROME and GITOPS_CHROMEDRIVER naming others",
                program.display()
            );
        }
        let port = free_ports(1).unwrap()[0];
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": chrome,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1400,1000", format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let connected = runtime
                .block_on(ClientBuilder::new(HttpConnector::new()).capabilities(capabilities.clone()).connect(&url));
            match connected {
                Ok(client) => break client,
                // chromedriver takes a moment to listen.
                Err(_) if started.elapsed() < Duration::from_secs(30) => std::thread::sleep(Duration::from_millis(200)),
                Err(error) => panic!(
                    "no WebDriver session with {} through {} on {url}: {error}",
                    chrome.display(),
                    chromedriver.display()
                ),
            }
        };
        Browser { driver, client: Some(client), runtime, _profile: profile }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    pub fn goto(&self, url: &str) {
        self.runtime.block_on(self.client().goto(url)).unwrap_or_else(|error| panic!("open {url}: {error}"));
    }

    pub fn current_url(&self) -> String {
        self.runtime.block_on(self.client().current_url()).unwrap().to_string()
    }

    /// The visible text of the first element `css` selects, `None` when there is none. Read in one
    /// script, not found then read: the live updates swap the table in between, and an element
    /// found before the swap is gone when it is read.
    pub fn text(&self, css: &str) -> Option<String> {
        let script =
            "const element = document.querySelector(arguments[0]); return element ? element.innerText.trim() : null;";
        let text = self.runtime.block_on(self.client().execute(script, vec![serde_json::json!(css)])).unwrap();
        text.as_str().map(String::from)
    }

    /// How many elements `css` selects.
    pub fn count(&self, css: &str) -> usize {
        self.runtime.block_on(self.client().find_all(Locator::Css(css))).map(|found| found.len()).unwrap_or(0)
    }

    /// The value of a JavaScript expression on the page.
    pub fn eval(&self, expression: &str) -> serde_json::Value {
        self.runtime.block_on(self.client().execute(&format!("return {expression};"), Vec::new())).unwrap()
    }

    pub fn click(&self, css: &str) {
        self.runtime
            .block_on(async { self.client().find(Locator::Css(css)).await?.click().await })
            .unwrap_or_else(|error| panic!("click {css}: {error}"));
    }

    /// Types `text` into the input `css` selects, as a user does.
    pub fn type_into(&self, css: &str, text: &str) {
        self.runtime
            .block_on(async {
                let input = self.client().find(Locator::Css(css)).await?;
                input.clear().await?;
                input.send_keys(text).await
            })
            .unwrap_or_else(|error| panic!("type into {css}: {error}"));
    }

    /// The browser's cookie `name`, as a `Cookie` header carries it (`name=value`).
    pub fn cookie(&self, name: &str) -> String {
        let cookie = self.runtime.block_on(self.client().get_named_cookie(name)).unwrap();
        format!("{}={}", cookie.name(), cookie.value())
    }

    /// Waits until the text of `css` satisfies `wanted`, checking every 50 ms; returns the text
    /// and how long it took.
    pub fn wait_for_text(&self, css: &str, timeout: Duration, wanted: impl Fn(&str) -> bool) -> (String, Duration) {
        let started = Instant::now();
        loop {
            let text = self.text(css);
            if let Some(text) = text.as_deref().filter(|text| wanted(text)) {
                return (text.to_string(), started.elapsed());
            }
            assert!(
                started.elapsed() < timeout,
                "{css} did not become what was wanted in {timeout:?}; it is {text:?}, on {} showing:\n{}",
                self.current_url(),
                self.text("body").unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What a user sees, kept and checked, in the light theme and the dark: a screenshot of each
    /// ([`Browser::screenshot`]: `<name>.png`, `<name>-dark.png`), and no serious or critical
    /// accessibility violation in either ([`Browser::accessibility_violations`]: contrast is a
    /// theme's). The page's own theme is put back afterwards.
    pub fn look(&self, name: &str) {
        let was = self.eval("document.documentElement.dataset.theme || ''");
        for (theme, shot) in [("light", name.to_string()), ("dark", format!("{name}-dark"))] {
            self.eval(&format!("(document.documentElement.dataset.theme = '{theme}')"));
            self.screenshot(&shot);
            let violations = self.accessibility_violations();
            assert!(
                violations.is_empty(),
                "the page {name} ({}) breaks accessibility rules in the {theme} theme:\n{}",
                self.current_url(),
                violations.join("\n")
            );
        }
        let restore = match was.as_str() {
            Some("") | None => "delete document.documentElement.dataset.theme".to_string(),
            Some(theme) => format!("(document.documentElement.dataset.theme = '{theme}')"),
        };
        self.eval(&restore);
    }

    /// Presses a key (a character, or one of WebDriver's: `'\u{e004}'` Tab, `'\u{e015}'`
    /// ArrowDown) on whatever has the focus, as a keyboard does.
    pub fn press(&self, key: char) {
        use fantoccini::actions::{InputSource, KeyAction, KeyActions};
        let actions =
            KeyActions::new("keyboard".into()).then(KeyAction::Down { value: key }).then(KeyAction::Up { value: key });
        self.runtime
            .block_on(self.client().perform_actions(actions))
            .unwrap_or_else(|error| panic!("press {key:?}: {error}"));
    }

    /// Tabs through the page from its top, as a keyboard user does, and returns what Tab never
    /// reached of what can be used (links, buttons, fields, scrollable figures), one line each.
    pub fn unreachable_by_keyboard(&self) -> Vec<String> {
        let count = self.eval(
            "(function () {
              const all = Array.from(document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, [tabindex]:not([tabindex=\"-1\"])'))
                .filter(function (element) { return element.getClientRects().length > 0; });
              all.forEach(function (element, index) { element.setAttribute('data-focus-index', index); });
              window.focusSeen = new Set();
              document.addEventListener('focusin', function (event) {
                const index = event.target.getAttribute && event.target.getAttribute('data-focus-index');
                if (index !== null) window.focusSeen.add(Number(index));
              });
              if (document.activeElement) document.activeElement.blur();
              return all.length;
            })()",
        );
        let count = count.as_u64().unwrap();
        assert!(count > 0, "nothing on {} can be used", self.current_url());
        // Twice round the page at most.
        for _ in 0..count * 2 {
            self.press('\u{e004}');
            if self.eval("window.focusSeen.size").as_u64() == Some(count) {
                break;
            }
        }
        let missed = self.eval(
            "Array.from(document.querySelectorAll('[data-focus-index]'))
              .filter(function (element) { return !window.focusSeen.has(Number(element.getAttribute('data-focus-index'))); })
              .map(function (element) { return element.outerHTML.slice(0, 160); })",
        );
        missed.as_array().unwrap().iter().map(|line| line.as_str().unwrap_or_default().to_string()).collect()
    }

    /// What axe-core (the npm package, tests/testenv/build-npm.sh) finds on the page that is
    /// serious or critical: one line per rule broken, with the elements that break it. Injected
    /// through WebDriver, as axe's own integrations do, so the page's Content-Security-Policy
    /// stays as users get it.
    pub fn accessibility_violations(&self) -> Vec<String> {
        static AXE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let axe = AXE.get_or_init(|| {
            let path = crate::tools::npm_file("axe-core/axe.min.js");
            std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        });
        self.runtime.block_on(self.client().execute(axe, Vec::new())).unwrap();
        let run = "const done = arguments[arguments.length - 1];
            axe.run(document, { resultTypes: ['violations'] }).then(function (results) {
              done({
                passed: results.passes.length,
                violations: results.violations
                  .filter(function (v) { return v.impact === 'serious' || v.impact === 'critical'; })
                  .map(function (v) {
                    return v.impact + ' ' + v.id + ': ' + v.help + ' (' +
                      v.nodes.map(function (n) { return n.target.join(' '); }).join(', ') + ')';
                  }),
              });
            }, function (error) { done({ passed: 0, violations: ['axe failed: ' + error] }); });";
        let found = self.runtime.block_on(self.client().execute_async(run, Vec::new())).unwrap();
        // A page axe found nothing to check on was not checked.
        assert!(found["passed"].as_u64().unwrap_or(0) > 0, "axe checked no rule on {}: {found}", self.current_url());
        let violations = found["violations"].as_array().unwrap();
        violations.iter().map(|line| line.as_str().unwrap_or_default().to_string()).collect()
    }

    /// Saves a PNG of the window as `target/ui-screenshots/<name>.png`; returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.runtime.block_on(self.client().screenshot()).unwrap();
        let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ui-screenshots");
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.runtime.block_on(client.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
