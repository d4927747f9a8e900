//! Registry credentials: `--creds user:password`, else the docker config file the way docker, flux
//! and crane read it (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`): a credential
//! helper for the host (`credHelpers`, else `credsStore`), else the `auths` entry. They are handed
//! to the registry client and never printed; `Debug` hides them.

use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use base64::Engine;
use serde::Deserialize;

use crate::env;
use crate::error::{Error, Result};

/// How we authenticate to one registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// No credentials: pull and push anonymously.
    Anonymous,
    /// HTTP basic credentials (the registry may exchange them for a token).
    Basic {
        /// The user name.
        username: String,
        /// The password or token.
        password: String,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, <hidden>)"),
        }
    }
}

impl Credentials {
    /// `--creds user:password`.
    pub fn from_flag(creds: &str) -> Result<Credentials> {
        match creds.split_once(':') {
            Some((username, password)) if !username.is_empty() => {
                Ok(Credentials::Basic { username: username.to_string(), password: password.to_string() })
            }
            _ => Err(Error::usage(
                "--creds must be USER:PASSWORD",
                "pass --creds user:token, or log in with `docker login` and leave --creds out",
            )),
        }
    }

    /// The flag when given, else what the docker config file holds for `registry` (host[:port]).
    pub fn resolve(creds: Option<&str>, registry: &str) -> Result<Credentials> {
        match creds {
            Some(creds) => Credentials::from_flag(creds),
            None => from_docker_config(registry),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, AuthEntry>,
    #[serde(default)]
    cred_helpers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct HelperAnswer {
    username: String,
    secret: String,
}

fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(env::DOCKER_CONFIG).filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os(env::HOME).map(|home| PathBuf::from(home).join(".docker/config.json"))
}

fn from_docker_config(registry: &str) -> Result<Credentials> {
    match docker_config_path() {
        Some(path) => from_config_file(&path, registry),
        None => Ok(Credentials::Anonymous),
    }
}

fn from_config_file(path: &std::path::Path, registry: &str) -> Result<Credentials> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Credentials::Anonymous),
        Err(error) => return Err(Error::io(format!("cannot read {}", path.display()), error)),
    };
    let config: DockerConfig = serde_json::from_str(&text).map_err(|error| {
        Error::usage(
            format!("{} is not a docker config file: {error}", path.display()),
            "fix or remove it, or pass --creds user:password",
        )
    })?;
    let helper = config.cred_helpers.get(registry).or(config.creds_store.as_ref());
    if let Some(helper) = helper.filter(|helper| !helper.is_empty())
        && let Some(credentials) = ask_helper(helper, registry)?
    {
        return Ok(credentials);
    }
    // Keys are written as the host, or as a URL (https://host/v1/ for Docker Hub).
    let entry = config.auths.iter().find(|(key, _)| {
        let key = key.trim_start_matches("https://").trim_start_matches("http://");
        key.split('/').next() == Some(registry)
    });
    let Some((_, entry)) = entry else { return Ok(Credentials::Anonymous) };
    if let (Some(username), Some(password)) = (&entry.username, &entry.password) {
        return Ok(Credentials::Basic { username: username.clone(), password: password.clone() });
    }
    let Some(auth) = &entry.auth else { return Ok(Credentials::Anonymous) };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.split_once(':').map(|(user, password)| (user.to_string(), password.to_string())));
    match decoded {
        Some((username, password)) => Ok(Credentials::Basic { username, password }),
        None => Err(Error::usage(
            format!("the auth entry for {registry} in {} is not base64 of user:password", path.display()),
            format!("log in again with `docker login {registry}`, or pass --creds user:password"),
        )),
    }
}

/// `docker-credential-<helper> get`, with the registry on stdin. `None` when the helper knows
/// nothing of it.
fn ask_helper(helper: &str, registry: &str) -> Result<Option<Credentials>> {
    let program = format!("docker-credential-{helper}");
    let failed = |why: String| {
        Error::usage(
            format!("the docker credential helper {program} failed for {registry}: {why}"),
            "check the helper (`docker login` sets it up), or pass --creds user:password",
        )
    };
    let mut child = Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| failed(error.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(registry.as_bytes()).map_err(|error| failed(error.to_string()))?;
    }
    let output = child.wait_with_output().map_err(|error| failed(error.to_string()))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stdout).trim().to_string();
        // Helpers say "credentials not found in native keychain" for a host they do not know.
        if said.contains("not found") {
            return Ok(None);
        }
        return Err(failed(format!("it exited with {}", output.status)));
    }
    let answer: HelperAnswer =
        serde_json::from_slice(&output.stdout).map_err(|_| failed("it did not answer in JSON".into()))?;
    Ok(Some(Credentials::Basic { username: answer.username, password: answer.secret }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_needs_a_user_and_hides_the_password() {
        let credentials = Credentials::from_flag("robot:s3cret:with:colons").unwrap();
        assert_eq!(credentials, Credentials::Basic { username: "robot".into(), password: "s3cret:with:colons".into() });
        assert!(!format!("{credentials:?}").contains("s3cret"));
        let error = Credentials::from_flag("nocolon").unwrap_err();
        assert!(!error.to_string().contains("nocolon"), "the flag's value is never echoed: {error}");
    }

    #[test]
    fn reads_auths_by_host_or_url() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let auth = base64::engine::general_purpose::STANDARD.encode("ci:pa55");
        std::fs::write(
            &path,
            format!(r#"{{"auths": {{"127.0.0.1:5000": {{"auth": "{auth}"}}, "https://index.docker.io/v1/": {{"auth": "{auth}"}}}}}}"#),
        )
        .unwrap();
        let basic = Credentials::Basic { username: "ci".into(), password: "pa55".into() };
        assert_eq!(from_config_file(&path, "127.0.0.1:5000").unwrap(), basic);
        assert_eq!(from_config_file(&path, "index.docker.io").unwrap(), basic);
        assert_eq!(from_config_file(&path, "ghcr.io").unwrap(), Credentials::Anonymous);
        assert_eq!(from_config_file(&dir.path().join("none.json"), "ghcr.io").unwrap(), Credentials::Anonymous);
        std::fs::write(&path, r#"{"auths": {"ghcr.io": {"auth": "!!"}}}"#).unwrap();
        assert_eq!(from_config_file(&path, "ghcr.io").unwrap_err().exit_code(), crate::error::ExitCode::Usage);
    }
}
