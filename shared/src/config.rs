//! Settings that come from outside the command line: the config file, the provider tokens
//! found in the environment or in that file, and the hosts each cluster's credentials may go to
//! ([`hosts`]). Commands resolve them here; the provider module only receives the [`Token`].

pub mod hosts;

use std::path::{Path, PathBuf};

use crate::env;
use crate::error::{Error, Result};
use crate::http::Origin;
use crate::provider::{Kind, Provider, ProviderConfig, Token};

/// The config file tokens may be kept in (mode 0600 is wise): `$KUBECTL_GITOPS_CONFIG`, else
/// `$XDG_CONFIG_HOME/kubectl-gitops/config.yaml`, else `~/.config/kubectl-gitops/config.yaml`.
/// Its shape: `tokens: {github.com: <token>, gitlab.example.com: <token>}`, keyed by host, and
/// `clusters:` the hosts each cluster is bound to ([`hosts`]), which commands write.
pub fn config_file() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    set(env::KUBECTL_GITOPS_CONFIG)
        .or_else(|| set(env::XDG_CONFIG_HOME).map(|dir| dir.join("kubectl-gitops/config.yaml")))
        .or_else(|| set(env::HOME).map(|home| home.join(".config/kubectl-gitops/config.yaml")))
}

/// The one way a command reaches a forge's API: `kind` at `host` (its public host, or the one
/// the user or the install record names), with the token [`provider_token`] finds for that host
/// (`bound`: the host the user's side binds), at the API base the user may override
/// (`KUBECTL_GITOPS_*_API_URL`). `None` when there is no token; the caller says why one is
/// needed.
pub fn forge(kind: Kind, host: &Origin, bound: Option<&Origin>) -> Result<Option<(Provider, Token)>> {
    let Some(token) = provider_token(kind, host, bound)? else { return Ok(None) };
    let public = hosts::public_host(kind)?;
    let config = ProviderConfig {
        kind,
        host: (*host != public).then(|| host.clone()),
        api_base: std::env::var(kind.api_url_env()).ok().filter(|value| !value.is_empty()),
        token: token.clone(),
    };
    Ok(Some((Provider::new(config)?, token)))
}

/// The API token for `host`, looked up by that host: `GITHUB_TOKEN`, `GITLAB_TOKEN` or
/// `GITEA_TOKEN` when `host` is its provider's public host or `bound`, the host the user's side
/// binds (the cluster's binding in the config file, or a flag), else the config file's
/// `tokens.<host>` ([`config_file`]); `None` when neither has one. An error when that file's
/// token is there but other users may read the file.
pub fn provider_token(kind: Kind, host: &Origin, bound: Option<&Origin>) -> Result<Option<Token>> {
    let ours = host.authority() == kind.default_host() || bound == Some(host);
    let from_env = std::env::var(kind.token_env()).ok().filter(|_| ours).map(Token::new);
    if let Some(token) = from_env.filter(|token| !token.expose().is_empty()) {
        return Ok(Some(token));
    }
    config_file().map_or(Ok(None), |path| token_from_file(&path, &host.authority()))
}

/// `tokens.<host>` of a config file; `None` when the file or the entry is missing. A token in a
/// file other users may read is refused, as ssh refuses such a private key: it is not a secret.
fn token_from_file(path: &Path, host: &str) -> Result<Option<Token>> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(None) };
    let config: serde_json::Value = crate::yaml::from_str(&text).unwrap_or_default();
    let Some(token) = config.get("tokens").and_then(|tokens| tokens.get(host)).and_then(serde_json::Value::as_str)
    else {
        return Ok(None);
    };
    let token = Token::new(token);
    if token.expose().is_empty() {
        return Ok(None);
    }
    if let Some(mode) = readable_by_others(path) {
        return Err(Error::usage(
            format!("{} holds the token for {host}, and other users may read it (mode {mode:o})", path.display()),
            format!("make it yours alone: chmod 600 {}", path.display()),
        ));
    }
    Ok(Some(token))
}

/// The file's permission bits when its group or other users may read or write it.
#[cfg(unix)]
fn readable_by_others(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

/// Windows keeps a user's profile to the user by its ACL: there are no mode bits to check.
#[cfg(not(unix))]
fn readable_by_others(_path: &Path) -> Option<u32> {
    None
}

/// Where to put a token instead of the environment, for hints.
pub fn token_hint(kind: Kind, host: &str) -> String {
    let file = config_file().map_or_else(|| "the config file".to_string(), |path| path.display().to_string());
    format!("export {}=<token>, or put it under tokens.{host} in {file}; it is never printed", kind.token_env())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    #[test]
    fn tokens_come_from_the_config_file_by_host() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "tokens:\n  github.com: \" ghp_one\\n\"\n  gitlab.example.com: glpat-two\n").unwrap();
        private(&path);
        let found = |host: &str| token_from_file(&path, host).unwrap();
        assert_eq!(found("github.com").map(|t| t.expose().to_string()).as_deref(), Some("ghp_one"));
        assert_eq!(found("gitlab.example.com").unwrap().expose(), "glpat-two");
        assert!(found("gitlab.com").is_none());
        assert!(token_from_file(&dir.path().join("absent.yaml"), "github.com").unwrap().is_none());
        assert_eq!(format!("{:?}", found("github.com").unwrap()), "***");
    }

    fn private(path: &Path) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        #[cfg(not(unix))]
        let _ = path;
    }

    #[cfg(unix)]
    #[test]
    fn a_token_in_a_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "tokens:\n  github.com: ghp_shared\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = token_from_file(&path, "github.com").unwrap_err();
        assert!(error.to_string().contains("other users may read it (mode 644)"), "{error}");
        assert!(!error.to_string().contains("ghp_shared"), "{error}");
        assert_eq!(error.hint().unwrap(), format!("make it yours alone: chmod 600 {}", path.display()));
        // A file without a token for this host is no one's secret.
        assert!(token_from_file(&path, "gitlab.com").unwrap().is_none());
    }
}
