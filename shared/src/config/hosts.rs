//! Which hosts each cluster's install record may send the user's credentials to, kept on the
//! user's side as ssh's known_hosts keeps host keys: the config file's `clusters` section, keyed
//! by the cluster's API server URL.
//!
//! The record is data anyone who writes the config repo (or the cluster) controls; its `url`,
//! `provider` and `hostname` decide where the SSH key, `GITOPS_GIT_PASSWORD` and the provider
//! token go. So the first command that uses a cluster's record writes down the config repo's host
//! and the provider API's host it names (one line on stderr says so), `install` writes down the
//! hosts it was given, and a record that later names another host is refused, naming both, until
//! the user accepts the new one with `--accept-host HOST`.
//!
//! Nobody reads that line in CI, so there a record binds nothing: when `CI` is set or stdin is
//! not a terminal ([`FirstUse::Refuse`]), a host no binding names yet must come from the user's
//! side: the config file, `--accept-host HOST`, or `KUBECTL_GITOPS_ACCEPT_HOSTS=HOST[,HOST…]`.
//!
//! Every host is an [`Origin`], parsed once and strictly: the binding compares the value the
//! provider client builds its URL from, so no spelling reads as one host here and another there.
//!
//! The key is the API server URL rather than the kube context's name: context names are local
//! aliases that repeat across clusters (`default`, `admin`), while the URL is where the kubeconfig
//! connects, and a renamed context keeps its bindings.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::http::{Origin, OriginError};
use crate::provider::Kind;
use crate::record::InstallRecord;

/// The config file's key of the bindings.
const SECTION: &str = "clusters";

/// The flag that accepts a new host, as hints name it.
pub const ACCEPT_FLAG: &str = "--accept-host";

/// The hosts one cluster sends the user's credentials to, as the config file records them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bound {
    /// The config repo's `host[:port]` (the port only when it is not the scheme's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_host: Option<String>,
    /// The provider in front of it (`github`, `gitlab`, `gitea`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider API's `host[:port]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_host: Option<String>,
}

/// The hosts a command is about to send credentials to, as a record names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    /// The `host[:port]` of the repository read or written; `None` when the user named it.
    pub repo_host: Option<String>,
    /// The provider and its API's host, when the repo is reached through one.
    pub api: Option<(Kind, Origin)>,
}

impl Wanted {
    /// What `record` sends credentials to: the host of `repo_url` (the config repo, or the
    /// platform repo beside it; `None` when the user gave the URL), and its provider's API host.
    pub fn of_record(record: &InstallRecord, repo_url: Option<&str>) -> Result<Wanted> {
        let api = match (record.provider.as_deref().and_then(Kind::from_id), &record.repository) {
            (Some(kind), Some(_)) => Some((kind, record_api_host(kind, record.hostname.as_deref())?)),
            _ => None,
        };
        Wanted::new(repo_url, api)
    }

    /// The hosts of `repo_url` and of a provider API at `api`'s host.
    pub fn new(repo_url: Option<&str>, api: Option<(Kind, Origin)>) -> Result<Wanted> {
        Ok(Wanted { repo_host: repo_url.map(repo_host).transpose()?, api })
    }
}

/// The provider host a record names: its `hostname`, parsed strictly (anything but
/// `host[:port]` is refused before a request is built), else the provider's public host.
pub fn record_api_host(kind: Kind, hostname: Option<&str>) -> Result<Origin> {
    match hostname {
        Some(text) => Origin::parse(text).map_err(|error| not_a_host("the install record's hostname", &error)),
        None => public_host(kind),
    }
}

/// The usage error of `what` (`the install record's hostname`, `--accept-host`) not being a host:
/// refused before anything is sent anywhere.
pub fn not_a_host(what: &str, error: &OriginError) -> Error {
    Error::usage(format!("{what} {error}"), error.hint())
}

/// github.com, gitlab.com or gitea.com.
pub fn public_host(kind: Kind) -> Result<Origin> {
    Origin::parse(kind.default_host()).map_err(|error| Error::Internal(error.to_string()))
}

/// The `host[:port]` of a repository URL, lower case, without the scheme's default port.
pub fn repo_host(url: &str) -> Result<String> {
    let parsed = crate::repo_access::parse_url(url)?;
    let default_port = match parsed.scheme.as_str() {
        "ssh" => 22,
        "http" => 80,
        _ => 443,
    };
    // The host the URL parser found, held to the same rules as any other (no `%`, no non-ASCII).
    let host = Origin::parse(&parsed.host).map_err(|error| not_a_host("the repository URL's host", &error))?;
    let host = host.host().to_string();
    Ok(match parsed.port.filter(|port| *port != default_port) {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// The hosts the user accepts: `flags` (`--accept-host`, repeatable) and
/// `KUBECTL_GITOPS_ACCEPT_HOSTS` (comma separated), each parsed strictly.
pub fn accepted(flags: &[String]) -> Result<Vec<Origin>> {
    let variable = crate::env::KUBECTL_GITOPS_ACCEPT_HOSTS;
    let from_env = std::env::var(variable).unwrap_or_default();
    let named = flags.iter().map(|text| (text.as_str(), ACCEPT_FLAG.to_string()));
    let listed =
        from_env.split(',').map(str::trim).filter(|text| !text.is_empty()).map(|text| (text, variable.to_string()));
    named.chain(listed).map(|(text, source)| Origin::parse(text).map_err(|error| not_a_host(&source, &error))).collect()
}

/// Whether a host no binding names yet may be bound because a record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstUse {
    /// Someone at a terminal reads the line that says so: it is bound (trust on first use).
    Trust,
    /// `CI` is set or stdin is no terminal: nobody reads that line, so nothing is bound from a
    /// record, and the host must come from the user's side.
    Refuse,
}

impl FirstUse {
    /// This process's: [`FirstUse::Refuse`] when `CI` is set (non-empty) or stdin is not a terminal.
    pub fn of_this_run() -> FirstUse {
        use std::io::IsTerminal;
        let ci = std::env::var_os(crate::env::CI).is_some_and(|value| !value.is_empty());
        if ci || !std::io::stdin().is_terminal() { FirstUse::Refuse } else { FirstUse::Trust }
    }
}

/// Which hosts that differ from the bound ones, or that none binds yet, may be bound.
#[derive(Debug, Clone, Copy)]
pub enum Accept<'a> {
    /// Those the user named ([`accepted`]); one no binding names yet also when `first_use` trusts it.
    Named(&'a [Origin], FirstUse),
    /// Any: the user gave them on the command line (`install --url …`).
    Given,
}

impl Accept<'_> {
    fn covers(&self, host: &str) -> bool {
        match self {
            Accept::Named(hosts, _) => hosts.iter().any(|accepted| accepted.authority() == host),
            Accept::Given => true,
        }
    }

    /// Whether a host no binding names yet is bound.
    fn binds_new(&self, host: &str) -> bool {
        matches!(self, Accept::Named(_, FirstUse::Trust)) || self.covers(host)
    }
}

/// What [`bind`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binding {
    /// The line to print when the config file changed.
    pub line: Option<String>,
    /// The provider API host the cluster is now bound to, when one was wanted.
    pub api: Option<Origin>,
}

/// Checks `wanted` against the hosts `cluster` (its API server URL) is bound to in the config
/// file ([`super::config_file`]): what is not bound yet is bound (from a record, only when
/// `accept` says so), what differs is an error naming both unless `accept` covers it (then it
/// replaces the old one).
pub fn bind(cluster: &str, wanted: &Wanted, accept: Accept<'_>) -> Result<Binding> {
    let path = super::config_file().ok_or_else(|| {
        Error::usage(
            "there is no config file to record which hosts this cluster's credentials go to",
            format!("set {} (or HOME) to where it may be written", crate::env::KUBECTL_GITOPS_CONFIG),
        )
    })?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(Error::io(format!("reading {}", path.display()), error)),
    };
    let mut all = parse(&text).map_err(|why| {
        Error::usage(
            format!("cannot read the config file {}: {why}", path.display()),
            format!("fix its YAML; its `{SECTION}` section maps each cluster's API server URL to the hosts it uses"),
        )
    })?;
    let key = cluster.trim_end_matches('/').to_string();
    let bound = all.get(&key).cloned().unwrap_or_default();
    let (next, changes) = compare(&key, &bound, wanted, accept, &path)?;
    let api = wanted.api.as_ref().map(|(_, host)| host.clone());
    if changes.is_empty() {
        return Ok(Binding { line: None, api });
    }
    all.insert(key.clone(), next);
    write(&path, &replace_section(&text, &section_text(&all)?))?;
    let line = format!(
        "cluster {key} sends credentials only to {} (recorded in {}; {ACCEPT_FLAG} accepts another)",
        changes.join(" and "),
        path.display()
    );
    Ok(Binding { line: Some(line), api })
}

/// The binding after `wanted`, and what changed in words; an error for each host that differs
/// without being accepted, or that no binding names yet and may not be bound from a record.
fn compare(
    cluster: &str,
    bound: &Bound,
    wanted: &Wanted,
    accept: Accept<'_>,
    path: &Path,
) -> Result<(Bound, Vec<String>)> {
    let mut next = bound.clone();
    let mut changes = Vec::new();
    // Hosts that differ from the bound one (what, the bound one, the host), and new ones.
    let mut refused = Vec::new();
    let mut unbound = Vec::new();
    if let Some(host) = &wanted.repo_host {
        let what = format!("config repo host {host}");
        match &bound.repo_host {
            Some(old) if old == host => {}
            Some(old) if !accept.covers(host) => refused.push((what, format!("config repo host {old}"), host.clone())),
            None if !accept.binds_new(host) => unbound.push((what, host.clone())),
            old => {
                next.repo_host = Some(host.clone());
                changes.push(match old {
                    Some(old) => format!("{what} (was {old})"),
                    None => what,
                });
            }
        }
    }
    if let Some((kind, origin)) = &wanted.api {
        let host = origin.authority();
        let what = format!("{kind} API host {host}");
        let old = bound.provider.as_deref().zip(bound.api_host.as_deref());
        let old_words = old.map(|(provider, old_host)| {
            let provider = Kind::from_id(provider).map_or_else(|| provider.to_string(), |kind| kind.to_string());
            format!("{provider} API host {old_host}")
        });
        match (old, old_words) {
            (Some((provider, old_host)), _) if provider == kind.id() && old_host == host => {}
            (Some(_), Some(old_words)) if !accept.covers(&host) => refused.push((what, old_words, host)),
            (None, _) if !accept.binds_new(&host) => unbound.push((what, host)),
            (_, old_words) => {
                (next.provider, next.api_host) = (Some(kind.id().to_string()), Some(host));
                changes.push(match old_words {
                    Some(old_words) => format!("{what} (was {old_words})"),
                    None => what,
                });
            }
        }
    }
    if !refused.is_empty() {
        return Err(moved(cluster, &refused, path));
    }
    if !unbound.is_empty() {
        return Err(not_bound_yet(cluster, &unbound, path));
    }
    Ok((next, changes))
}

/// The refusal of hosts that differ from the bound ones.
fn moved(cluster: &str, refused: &[(String, String, String)], path: &Path) -> Error {
    let named = refused.iter().map(|(what, old, _)| format!("{what}, but it is bound to {old}")).collect::<Vec<_>>();
    let flags = refused.iter().map(|(_, _, host)| format!("{ACCEPT_FLAG} {host}")).collect::<Vec<_>>();
    Error::Untrusted {
        message: format!(
            "the install record of cluster {cluster} names {} (in {}); no credentials were sent there",
            named.join("; and "),
            path.display()
        ),
        hint: format!(
            "if the repository really moved, run again with {}; if not, someone who can write the config repo or \
             the cluster changed the record (the kubectl-gitops ConfigMap, the cluster's gitops.yaml): restore it",
            flags.join(" ")
        ),
    }
}

/// The refusal of hosts only a record names, in CI or without a terminal ([`FirstUse::Refuse`]).
fn not_bound_yet(cluster: &str, unbound: &[(String, String)], path: &Path) -> Error {
    let named = unbound.iter().map(|(what, _)| what.as_str()).collect::<Vec<_>>();
    let hosts = unbound.iter().map(|(_, host)| host.as_str()).collect::<Vec<_>>();
    let flags = hosts.iter().map(|host| format!("{ACCEPT_FLAG} {host}")).collect::<Vec<_>>();
    Error::Untrusted {
        message: format!(
            "the install record of cluster {cluster} names {}, and no binding in {} names it yet; in CI or without a \
             terminal a record binds nothing, so no credentials were sent there",
            named.join(" and "),
            path.display()
        ),
        hint: format!(
            "bind it from your side if it is yours: run with {}, or set {}={}, or write it under {SECTION}.{cluster} \
             in {} (as `kubectl gitops install` from this machine does)",
            flags.join(" "),
            crate::env::KUBECTL_GITOPS_ACCEPT_HOSTS,
            hosts.join(","),
            path.display()
        ),
    }
}

/// The `clusters` section of a config file's text; an empty map when it has none.
fn parse(text: &str) -> std::result::Result<BTreeMap<String, Bound>, String> {
    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        clusters: Option<BTreeMap<String, Bound>>,
    }
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let file: Option<File> = crate::yaml::from_str(text)?;
    Ok(file.and_then(|file| file.clusters).unwrap_or_default())
}

fn section_text(all: &BTreeMap<String, Bound>) -> Result<String> {
    crate::yaml::to_string(&BTreeMap::from([(SECTION, all)]))
}

/// `text` with its top-level `clusters:` block replaced by `section` (appended when it has
/// none): the rest of the file, tokens and comments included, stays as the user wrote it.
fn replace_section(text: &str, section: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let is_header = |line: &&str| line.strip_prefix(SECTION).is_some_and(|rest| rest.trim_start().starts_with(':'));
    let Some(start) = lines.iter().position(is_header) else {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(section);
        return out;
    };
    // The block goes on while lines are indented (or blank); the next top-level line ends it.
    let end = lines[start + 1..]
        .iter()
        .position(|line| !line.is_empty() && !line.starts_with([' ', '\t']))
        .map_or(lines.len(), |offset| start + 1 + offset);
    let mut out: String = lines[..start].iter().map(|line| format!("{line}\n")).collect();
    out.push_str(section);
    out.extend(lines[end..].iter().map(|line| format!("{line}\n")));
    out
}

/// Writes the file whole through a temp file beside it and a rename, so that a reader never sees
/// half of it; a new file is readable by its owner only (it may hold tokens).
fn write(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |error| Error::io(format!("writing {}", path.display()), error);
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mode = std::fs::metadata(path).map_or(0o600, |meta| meta.permissions().mode() & 0o7777);
    let temp =
        dir.join(format!(".{}.{}.tmp", path.file_name().unwrap_or_default().to_string_lossy(), std::process::id()));
    let mut file =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&temp).map_err(io)?;
    let written =
        file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).and_then(|()| std::fs::rename(&temp, path));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(io(error));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    fn record(url: &str, provider: Option<&str>, hostname: Option<&str>) -> InstallRecord {
        InstallRecord {
            url: url.into(),
            branch: "main".into(),
            path: "clusters/dev".into(),
            cluster_name: "dev".into(),
            flux_version: "v2.9.4".into(),
            components: vec!["source-controller".into()],
            provider: provider.map(str::to_string),
            repository: provider.map(|_| "acme/fleet".to_string()),
            hostname: hostname.map(str::to_string),
            platform: None,
        }
    }

    fn origin(text: &str) -> Origin {
        Origin::parse(text).unwrap()
    }

    #[test]
    fn a_record_wants_its_repo_host_and_its_providers_api_host() {
        let wanted = |record: &InstallRecord| Wanted::of_record(record, Some(&record.url)).unwrap();
        let plain = record("ssh://git@127.0.0.1:2222/srv/fleet.git", None, None);
        assert_eq!(wanted(&plain), Wanted { repo_host: Some("127.0.0.1:2222".into()), api: None });
        let github = record("git@github.com:acme/fleet.git", Some("github"), None);
        assert_eq!(
            wanted(&github),
            Wanted { repo_host: Some("github.com".into()), api: Some((Kind::GitHub, origin("github.com"))) }
        );
        let gitea =
            record("https://Git.Example.com:443/acme/fleet.git", Some("gitea"), Some("https://Git.Example.com:3000/"));
        assert_eq!(
            wanted(&gitea),
            Wanted {
                repo_host: Some("git.example.com".into()),
                api: Some((Kind::Gitea, origin("git.example.com:3000")))
            }
        );
        assert_eq!(Wanted::of_record(&github, None).unwrap().repo_host, None, "a repo the user named is theirs");
    }

    /// #56: the binding read `127.0.0.1:PORT/x@github.com` as github.com while the client sent
    /// the token to 127.0.0.1:PORT. Now the record is refused as a usage error, before any request.
    #[test]
    fn a_record_hostname_that_is_no_host_is_refused() {
        for hostname in ["127.0.0.1:8443/x@github.com", "evil.example\\@github.com", "evil.example%40github.com", ""] {
            let smuggled = record("git@github.com:acme/fleet.git", Some("github"), Some(hostname));
            let error = Wanted::of_record(&smuggled, None).unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{hostname}");
            assert!(error.to_string().starts_with("the install record's hostname "), "{error}");
        }
    }

    #[test]
    fn hosts_are_bound_on_first_use_then_a_changed_one_is_refused_until_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "# my tokens\ntokens:\n  github.com: ghp_x\n").unwrap();
        let first =
            Wanted { repo_host: Some("127.0.0.1:2222".into()), api: Some((Kind::GitHub, origin("github.com"))) };
        let cluster = "https://127.0.0.1:6443/";
        let trust = |hosts| Accept::Named(hosts, FirstUse::Trust);
        let (next, changes) = compare(cluster, &Bound::default(), &first, trust(&[]), &path).unwrap();
        assert_eq!(changes, ["config repo host 127.0.0.1:2222", "GitHub API host github.com"]);
        let moved =
            Wanted { repo_host: Some("127.0.0.1:9999".into()), api: Some((Kind::Gitea, origin("evil.example"))) };
        let Err(Error::Untrusted { message, hint }) = compare(cluster, &next, &moved, trust(&[]), &path) else {
            panic!("a moved host must be refused")
        };
        assert!(
            message
                .contains("names config repo host 127.0.0.1:9999, but it is bound to config repo host 127.0.0.1:2222"),
            "{message}"
        );
        assert!(
            message.contains("Gitea API host evil.example, but it is bound to GitHub API host github.com"),
            "{message}"
        );
        assert!(hint.contains("--accept-host 127.0.0.1:9999 --accept-host evil.example"), "{hint}");
        let accepted = [origin("127.0.0.1:9999")];
        let Err(Error::Untrusted { message, .. }) = compare(cluster, &next, &moved, trust(&accepted), &path) else {
            panic!("the API host is not accepted")
        };
        assert!(!message.contains("9999") && message.contains("evil.example"), "{message}");
        let both = [origin("127.0.0.1:9999"), origin("EVIL.example")];
        let (after, changes) = compare(cluster, &next, &moved, trust(&both), &path).unwrap();
        assert_eq!(changes[0], "config repo host 127.0.0.1:9999 (was 127.0.0.1:2222)");
        assert_eq!(after.provider.as_deref(), Some("gitea"));
        assert!(compare(cluster, &after, &moved, trust(&[]), &path).unwrap().1.is_empty());
    }

    /// #56: in CI (or without a terminal) a record binds nothing; the user's side does.
    #[test]
    fn without_a_terminal_only_the_users_side_binds_a_new_host() {
        let path = Path::new("/home/me/.config/kubectl-gitops/config.yaml");
        let wanted =
            Wanted { repo_host: Some("evil.example:2222".into()), api: Some((Kind::GitHub, origin("evil.example"))) };
        let cluster = "https://127.0.0.1:6443";
        let refuse = |hosts| Accept::Named(hosts, FirstUse::Refuse);
        let Err(Error::Untrusted { message, hint }) = compare(cluster, &Bound::default(), &wanted, refuse(&[]), path)
        else {
            panic!("a host only the record names must not be bound in CI")
        };
        assert!(
            message.contains(
                "names config repo host evil.example:2222 and GitHub API host evil.example, and no binding in"
            ),
            "{message}"
        );
        assert!(hint.contains("--accept-host evil.example:2222 --accept-host evil.example"), "{hint}");
        assert!(hint.contains("KUBECTL_GITOPS_ACCEPT_HOSTS=evil.example:2222,evil.example"), "{hint}");
        let one = [origin("evil.example:2222")];
        let Err(Error::Untrusted { message, .. }) = compare(cluster, &Bound::default(), &wanted, refuse(&one), path)
        else {
            panic!("the API host is still only the record's")
        };
        assert!(!message.contains("evil.example:2222") && message.contains("API host evil.example"), "{message}");
        let both = [origin("evil.example:2222"), origin("evil.example")];
        let (bound, changes) = compare(cluster, &Bound::default(), &wanted, refuse(&both), path).unwrap();
        assert_eq!(changes.len(), 2);
        assert!(compare(cluster, &bound, &wanted, refuse(&[]), path).unwrap().1.is_empty(), "bound: nothing new");
        assert!(compare(cluster, &Bound::default(), &wanted, Accept::Given, path).is_ok(), "install's own hosts");
    }

    #[test]
    fn the_section_is_written_back_and_the_rest_of_the_file_is_kept() {
        let text = "# my tokens\ntokens:\n  github.com: ghp_x\nclusters:\n  https://old:6443:\n    repoHost: a\n# after\nother: 1\n";
        let mut all = parse(text).unwrap();
        assert_eq!(all["https://old:6443"].repo_host.as_deref(), Some("a"));
        all.insert(
            "https://127.0.0.1:6443".into(),
            Bound { repo_host: Some("127.0.0.1:2222".into()), ..Bound::default() },
        );
        let written = replace_section(text, &section_text(&all).unwrap());
        assert!(written.starts_with("# my tokens\ntokens:\n  github.com: ghp_x\nclusters:\n"), "{written}");
        assert!(written.ends_with("# after\nother: 1\n"), "{written}");
        assert_eq!(parse(&written).unwrap(), all);
        assert_eq!(replace_section("tokens: {}", "clusters: {}\n"), "tokens: {}\nclusters: {}\n");
        assert!(parse("").unwrap().is_empty());
        assert!(parse("clusters: [").is_err());
    }

    #[test]
    fn the_file_is_written_whole_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/config.yaml");
        write(&path, "clusters: {}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "clusters: {}\n");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path().join("sub")).unwrap().count(), 1, "no temp file left");
    }
}
