//! Reaching a git repository as a user: its URL parsed (`ssh://`, scp-like, `https://`), the
//! credentials we push with (an SSH key, HTTPS from the environment) and the host keys we trust
//! (`--known-hosts-file`, the cluster's pinned keys, the keys GitHub and GitLab publish,
//! ~/.ssh/known_hosts, or a scan the user confirms). `install` and `app` both use it.

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::cluster::Cluster;
use crate::env;
use crate::error::{Error, Result};
use crate::git::{Auth, Remote};

/// A parsed repository URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    /// `ssh`, `https` or `http`.
    pub scheme: String,
    /// Host name or address.
    pub host: String,
    /// Port, when not the scheme's default.
    pub port: Option<u16>,
    /// User, for SSH (`git` by default).
    pub user: Option<String>,
    /// The canonical URL (`git@host:path` becomes `ssh://git@host/path`).
    pub canonical: String,
}

/// Parses `ssh://`, `https://`, `http://` and scp-like `user@host:path` URLs. A password or
/// token in the URL is refused ([`refuse_credentials_in_url`]), and never shown.
pub fn parse_url(text: &str) -> Result<ParsedUrl> {
    refuse_credentials_in_url(
        text,
        &format!("set {} (and {}) instead", env::GITOPS_GIT_PASSWORD, env::GITOPS_GIT_USERNAME),
    )?;
    let unsupported = || {
        Error::usage(
            format!("unsupported repository URL {:?}", redact_userinfo(text)),
            "use ssh://user@host[:port]/path, user@host:path or https://host/path",
        )
    };
    let canonical = if !text.contains("://") {
        let (user_host, path) = text.split_once(':').ok_or_else(unsupported)?;
        if !user_host.contains('@') || path.is_empty() {
            return Err(unsupported());
        }
        format!("ssh://{user_host}/{}", path.trim_start_matches('/'))
    } else {
        text.to_string()
    };
    let parsed = url::Url::parse(&canonical).map_err(|_| unsupported())?;
    if !matches!(parsed.scheme(), "ssh" | "https" | "http") || parsed.host_str().is_none() || parsed.path().len() <= 1 {
        return Err(unsupported());
    }
    Ok(ParsedUrl {
        scheme: parsed.scheme().to_string(),
        host: parsed.host_str().unwrap_or_default().to_string(),
        port: parsed.port(),
        user: Some(parsed.username()).filter(|u| !u.is_empty()).map(String::from),
        canonical,
    })
}

/// `text` with its URL's userinfo shown as `***`, for messages: a token may hide there (as the
/// user name too: `https://<token>@github.com/…`). An ssh user name alone stays; it is no secret.
pub fn redact_userinfo(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else { return text.to_string() };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let Some(at) = authority.rfind('@') else { return text.to_string() };
    if scheme.eq_ignore_ascii_case("ssh") && !authority[..at].contains(':') {
        return text.to_string();
    }
    format!("{scheme}://***@{}", &rest[at + 1..])
}

/// Refuses a URL that carries a password or token (`https://user:token@host/…`, `https://token@host/…`,
/// `ssh://user:password@host/…`): it would be written into the config repo and the cluster, and
/// shown in plans and `-o json`. `hint` says where the credential goes instead. The message shows
/// the URL redacted.
pub fn refuse_credentials_in_url(text: &str, hint: &str) -> Result<()> {
    let redacted = redact_userinfo(text);
    if redacted == text {
        return Ok(());
    }
    Err(Error::usage(
        format!("the URL {redacted} carries credentials (shown as ***); they are never written or sent from a URL"),
        format!("remove them from the URL and {hint}"),
    ))
}

/// Whether two URLs are on one server, reached the same way: the same scheme, user, host and
/// port, so that the same credentials and host keys serve both.
pub fn same_server(a: &ParsedUrl, b: &ParsedUrl) -> bool {
    (&a.scheme, &a.user, &a.host, a.port) == (&b.scheme, &b.user, &b.host, b.port)
}

/// `url` with its path replaced by `path` (`/acme/hello.git`): the same scheme, user, host and
/// port.
pub fn with_path(url: &str, path: &str) -> Result<String> {
    let canonical = parse_url(url)?.canonical;
    let mut url = url::Url::parse(&canonical).map_err(|error| Error::Internal(format!("{canonical}: {error}")))?;
    url.set_path(path);
    Ok(url.to_string())
}

/// The path of a repository URL (`/acme/platform.git`).
pub fn path_of(url: &str) -> Result<String> {
    let canonical = parse_url(url)?.canonical;
    let parsed = url::Url::parse(&canonical).map_err(|error| Error::Internal(format!("{canonical}: {error}")))?;
    Ok(parsed.path().to_string())
}

/// HTTPS credentials from the environment.
pub fn https_credentials() -> Result<(String, String)> {
    let username = std::env::var(env::GITOPS_GIT_USERNAME).unwrap_or_else(|_| "git".to_string());
    let password = std::env::var(env::GITOPS_GIT_PASSWORD).map_err(|_| {
        Error::usage(
            format!("pushing over HTTPS needs a password or token in {}", env::GITOPS_GIT_PASSWORD),
            format!(
                "export {}=<token> (and {} if the user is not `git`)",
                env::GITOPS_GIT_PASSWORD,
                env::GITOPS_GIT_USERNAME
            ),
        )
    })?;
    Ok((username, password))
}

/// Reads `--private-key-file` and checks that it holds a private key libgit2 can use: PEM or
/// OpenSSH, not protected by a passphrase (nothing could type it).
pub fn read_private_key(path: &Path) -> Result<String> {
    let text = read(path, "--private-key-file")?;
    let shown = path.display();
    if !(text.contains("-----BEGIN ") && text.contains("PRIVATE KEY-----")) {
        return Err(Error::usage(
            format!("--private-key-file {shown} holds no private key"),
            "give the private half of an SSH key pair (OpenSSH or PEM), e.g. ~/.ssh/id_ed25519, not the .pub file",
        ));
    }
    let encrypted =
        text.contains("ENCRYPTED") || ssh_key::PrivateKey::from_openssh(&text).is_ok_and(|key| key.is_encrypted());
    if encrypted {
        return Err(Error::usage(
            format!("--private-key-file {shown} is protected by a passphrase"),
            "use a key without a passphrase (a deploy key), or `ssh-keygen -p -N '' -f KEY` on a copy",
        ));
    }
    Ok(text)
}

/// Reads a file named by a flag; a failure is a usage error naming the flag.
pub fn read(path: &Path, flag: &str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|error| {
        Error::usage(
            format!("cannot read {flag} {}: {error}", path.display()),
            format!("check the path given to {flag}"),
        )
    })
}

fn home() -> Option<PathBuf> {
    std::env::var_os(env::HOME).map(PathBuf::from)
}

/// The user's own SSH key for pushing: ~/.ssh/id_ed25519, id_ecdsa or id_rsa.
pub fn default_ssh_key() -> Result<String> {
    let candidates = ["id_ed25519", "id_ecdsa", "id_rsa"];
    home()
        .into_iter()
        .flat_map(|home| candidates.map(|name| home.join(".ssh").join(name)))
        .find_map(|path| std::fs::read_to_string(path).ok())
        .ok_or_else(|| {
            Error::usage(
                "no SSH key to push with (looked for ~/.ssh/id_ed25519, id_ecdsa and id_rsa)",
                "pass --private-key-file with a key that may push to the repository",
            )
        })
}

/// The `known_hosts` entry name for a host: `host`, or `[host]:port` off port 22.
pub fn known_hosts_name(host: &str, port: Option<u16>) -> String {
    match port {
        Some(port) if port != 22 => format!("[{host}]:{port}"),
        _ => host.to_string(),
    }
}

/// known_hosts lines for the host: `file` (`--known-hosts-file`), else the lines already pinned
/// for it (the cluster's Flux Secret), else the keys GitHub and GitLab publish for github.com and
/// gitlab.com, else ~/.ssh/known_hosts, else a scan the user confirms (the fingerprints are
/// shown; `--yes` accepts them).
pub fn known_hosts(
    file: Option<&Path>,
    pinned: Option<&str>,
    url: &ParsedUrl,
    confirm: &dyn Fn(&str) -> Result<bool>,
) -> Result<String> {
    let name = known_hosts_name(&url.host, url.port);
    // As ssh reads them: patterns, hashed names and @revoked lines, which must travel with the rest.
    let matching = |text: &str| crate::git::known_hosts::lines_for(text, &url.host, url.port.unwrap_or(22));
    if let Some(path) = file {
        let found = matching(&read(path, "--known-hosts-file")?);
        if found.is_empty() {
            return Err(Error::usage(
                format!("{} has no entry for {name}", path.display()),
                format!("add one with `ssh-keyscan -p {} {} >> {}`", url.port.unwrap_or(22), url.host, path.display()),
            ));
        }
        return Ok(found);
    }
    if let Some(found) = pinned.map(matching).filter(|found| !found.is_empty()) {
        return Ok(found);
    }
    if let Some(published) = published_host_keys(&name) {
        return Ok(published.to_string());
    }
    if let Some(text) = home().and_then(|home| std::fs::read_to_string(home.join(".ssh/known_hosts")).ok()) {
        let found = matching(&text);
        if !found.is_empty() {
            return Ok(found);
        }
    }
    let scanned = scan(&url.host, url.port.unwrap_or(22))?;
    let question = format!(
        "the SSH host keys of {name} are not known. A scan found:\n{}Pin these for Flux?",
        scanned.lines().map(|line| format!("  {}\n", fingerprint_line(line))).collect::<String>()
    );
    if confirm(&question)? {
        Ok(scanned)
    } else {
        Err(Error::usage(
            "the host keys were not accepted",
            "pass --known-hosts-file with the host's known_hosts lines",
        ))
    }
}

/// The SSH host keys GitHub and GitLab publish for their cloud services
/// (docs.github.com "GitHub's SSH key fingerprints"; docs.gitlab.com "SSH host keys fingerprints").
fn published_host_keys(name: &str) -> Option<&'static str> {
    match name {
        "github.com" => {
            Some("github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
        }
        "gitlab.com" => {
            Some("gitlab.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAfuCHKVTjquxvt6CM6tdG4SLp1Btn/nOeHHE5UOzRdf\n")
        }
        _ => None,
    }
}

fn scan(host: &str, port: u16) -> Result<String> {
    let output = Command::new("ssh-keyscan")
        .args(["-T", "5", "-t", "ed25519,ecdsa,rsa", "-p", &port.to_string(), host])
        .output()
        .map_err(|error| Error::usage(format!("cannot run ssh-keyscan: {error}"), "pass --known-hosts-file instead"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if text.trim().is_empty() {
        return Err(Error::Remote {
            message: format!("cannot reach {host}:{port} to read its SSH host keys"),
            hint: Some("check the URL, or pass --known-hosts-file".into()),
        });
    }
    Ok(text.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect())
}

fn fingerprint_line(line: &str) -> String {
    let mut fields = line.split_whitespace();
    let (host, key_type, key) =
        (fields.next().unwrap_or_default(), fields.next().unwrap_or_default(), fields.next().unwrap_or_default());
    let fingerprint = ssh_key::PublicKey::from_openssh(&format!("{key_type} {key}"))
        .map(|k| k.fingerprint(ssh_key::HashAlg::Sha256).to_string())
        .unwrap_or_else(|_| "unreadable key".into());
    format!("{host} {key_type} {fingerprint}")
}

/// A repository as Flux reaches it: `url` with the credentials of the Secret `secret` in
/// `namespace` (Flux's keys: `identity` and `known_hosts` for SSH, `username` and `password` for
/// HTTPS); no Secret is anonymous access. The error is a sentence, for showing beside the rest.
pub async fn flux_remote(
    cluster: &Cluster,
    namespace: &str,
    url: &str,
    secret: Option<&str>,
) -> std::result::Result<Remote, String> {
    let Some(secret_name) = secret else {
        return Ok(Remote { url: url.to_string(), auth: Auth::Anonymous });
    };
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), namespace);
    let secret = secrets
        .get(secret_name)
        .await
        .map_err(|error| format!("cannot read Secret {namespace}/{secret_name}: {}", cluster.error(error)))?;
    let data = secret.data.unwrap_or_default();
    let field = |key: &str| data.get(key).map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned());
    let auth = match (field("identity"), field("known_hosts"), field("username"), field("password")) {
        (Some(private_key), Some(known_hosts), _, _) => Auth::Ssh { user: field("username"), private_key, known_hosts },
        (_, _, Some(username), Some(password)) => Auth::Basic { username, password },
        _ => Auth::Anonymous,
    };
    Ok(Remote { url: url.to_string(), auth })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_and_scp_form_is_canonicalised() {
        let url = parse_url("git@github.com:acme/fleet.git").unwrap();
        assert_eq!(url.canonical, "ssh://git@github.com/acme/fleet.git");
        assert_eq!((url.scheme.as_str(), url.host.as_str(), url.port), ("ssh", "github.com", None));
        let url = parse_url("ssh://root@127.0.0.1:2222/srv/fleet.git").unwrap();
        assert_eq!((url.port, url.user.as_deref()), (Some(2222), Some("root")));
        assert_eq!(parse_url("https://gitlab.example.com/acme/fleet.git").unwrap().scheme, "https");
    }

    #[test]
    fn unsupported_urls_are_usage_errors() {
        for bad in ["ftp://host/repo", "file:///srv/repo", "just-a-name", "https://host", "https://u:p@host/r"] {
            let error = parse_url(bad).unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{bad}");
        }
    }

    #[test]
    fn credentials_in_a_url_are_refused_and_never_shown() {
        for (given, shown) in [
            ("https://ci:glpat-s3cret@gitlab.com/acme/fleet.git", "https://***@gitlab.com/acme/fleet.git"),
            ("https://ghp_s3cret@github.com/acme/fleet.git", "https://***@github.com/acme/fleet.git"),
            ("ssh://git:s3cret@host:2222/fleet.git", "ssh://***@host:2222/fleet.git"),
            ("oci://robot:s3cret@ghcr.io/acme/app", "oci://***@ghcr.io/acme/app"),
            ("https://u:s3cret@host", "https://***@host"),
        ] {
            assert_eq!(redact_userinfo(given), shown);
            let error = parse_url(given).unwrap_err();
            let text = format!("{error} {}", error.hint().unwrap_or_default());
            assert!(text.contains(shown) && !text.contains("s3cret"), "{text}");
            assert!(text.contains("GITOPS_GIT_PASSWORD"), "{text}");
        }
        for fine in ["ssh://git@github.com/acme/fleet.git", "git@github.com:acme/fleet.git", "https://h/p@v1"] {
            assert_eq!(redact_userinfo(fine), fine);
        }
        assert!(parse_url("ftp://u:s3cret@host/x").unwrap_err().to_string().contains("***"));
    }

    #[test]
    fn published_keys_cover_the_cloud_hosts_only() {
        let github = published_host_keys("github.com").unwrap();
        assert_eq!(
            fingerprint_line(github.trim()),
            "github.com ssh-ed25519 SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU"
        );
        assert!(published_host_keys("gitlab.com").is_some());
        assert!(published_host_keys("git.example.com").is_none());
    }

    #[test]
    fn known_hosts_names_use_brackets_off_port_22() {
        assert_eq!(known_hosts_name("github.com", None), "github.com");
        assert_eq!(known_hosts_name("github.com", Some(22)), "github.com");
        assert_eq!(known_hosts_name("127.0.0.1", Some(2222)), "[127.0.0.1]:2222");
    }
}
