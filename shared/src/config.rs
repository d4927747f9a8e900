//! Settings that come from outside the command line: the config file, the provider tokens
//! found in the environment or in that file, and the hosts each cluster's credentials may go to
//! ([`hosts`]). Commands resolve them here; the provider module only receives the [`Token`].

pub mod hosts;

use std::path::{Path, PathBuf};

use crate::env;
use crate::http::Origin;
use crate::provider::{Kind, Token};

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

/// The API token for `host`, looked up by that host: `GITHUB_TOKEN`, `GITLAB_TOKEN` or
/// `GITEA_TOKEN` when `host` is its provider's public host or `bound`, the host the user's side
/// binds (the cluster's binding in the config file, or a flag), else the config file's
/// `tokens.<host>` ([`config_file`]); `None` when neither has one.
pub fn provider_token(kind: Kind, host: &Origin, bound: Option<&Origin>) -> Option<Token> {
    let ours = host.authority() == kind.default_host() || bound == Some(host);
    let from_env = std::env::var(kind.token_env()).ok().filter(|_| ours).map(Token::new);
    from_env.filter(|token| !token.expose().is_empty()).or_else(|| token_from_file(&config_file()?, &host.authority()))
}

/// `tokens.<host>` of a config file; `None` when the file or the entry is missing.
fn token_from_file(path: &Path, host: &str) -> Option<Token> {
    let text = std::fs::read_to_string(path).ok()?;
    let config: serde_json::Value = crate::yaml::from_str(&text).ok()?;
    let token = Token::new(config.get("tokens")?.get(host)?.as_str()?);
    (!token.expose().is_empty()).then_some(token)
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
        assert_eq!(token_from_file(&path, "github.com").map(|t| t.expose().to_string()).as_deref(), Some("ghp_one"));
        assert_eq!(token_from_file(&path, "gitlab.example.com").unwrap().expose(), "glpat-two");
        assert!(token_from_file(&path, "gitlab.com").is_none());
        assert!(token_from_file(&dir.path().join("absent.yaml"), "github.com").is_none());
        assert_eq!(format!("{:?}", token_from_file(&path, "github.com").unwrap()), "***");
    }
}
