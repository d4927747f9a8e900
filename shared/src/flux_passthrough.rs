//! `kubectl gitops flux ARGS…`: the real flux CLI (flux_cli.rs picks it) runs with the arguments
//! verbatim and the terminal inherited. Two things are added, only when needed:
//! - `--namespace <the cluster's Flux namespace>` when the user gave none and the command talks to
//!   the cluster (Weave GitOps #936: `flux get` looked in flux-system while Flux ran elsewhere);
//! - a CLI of the cluster's Flux version, when the cluster runs another release than the pinned
//!   one that this build pins too (or `--allow-unpinned-flux` was given) and that CLI is cached or
//!   can be downloaded; the choice is said on stderr either way. The cluster's version is a label
//!   anyone who may edit the namespace can write, so it is checked as a tag and never alone
//!   decides to download a release this build does not pin.
//!
//! Our own words come first and are few: `--flux-bin PATH`, `--allow-unpinned-flux`, and
//! `install-cli [VERSION]`, which downloads and verifies a CLI into the cache (or checks the cached
//! one again) and prints its path.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::cluster::{Cluster, Connection};
use crate::error::{Error, Result};
use crate::flux_cli::{FluxCli, Locator, Pin, Tag, verify_cached_or_warn};
use crate::output::Printer;

/// The usage `kubectl gitops flux` prints without arguments.
pub const USAGE: &str = "\
Run the flux CLI of the Flux release kubectl-gitops pins, downloaded and verified on first use.

Usage:
  kubectl gitops flux [--flux-bin PATH] FLUX-ARGS...   run flux with FLUX-ARGS, verbatim
  kubectl gitops flux install-cli [VERSION]           download, verify and cache a CLI; print its path

When FLUX-ARGS give no --namespace and the command reads the cluster, the namespace Flux runs in
is added. flux's exit code is ours. `kubectl gitops flux --help` is flux's own help.
The CLI comes from --flux-bin, KUBECTL_GITOPS_FLUX_BIN, the cache, or a verified download
(docs/dependencies.md). A release this build does not pin runs only after --allow-unpinned-flux
(before FLUX-ARGS or install-cli).
";

/// What the words after `flux` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// No words: print [`USAGE`].
    Usage,
    /// `install-cli [VERSION]`, or `install-cli --embedded` (the pinned CLI this binary embeds,
    /// written to the cache; what `install` asks of this binary before downloading).
    InstallCli {
        /// The version; the pinned one when absent.
        version: Option<Tag>,
        /// `--embedded`: only from this binary, never a download.
        embedded: bool,
        /// `--allow-unpinned-flux`.
        allow_unpinned: bool,
    },
    /// `__complete …` (`kubectl gitops flux <TAB>`): flux's own completion when a CLI is at hand,
    /// never a download in the middle of a key press.
    Complete {
        /// `--flux-bin`.
        flux_bin: Option<PathBuf>,
        /// The words, `__complete` first.
        args: Vec<OsString>,
    },
    /// Run flux with `args`.
    Run {
        /// `--flux-bin`.
        flux_bin: Option<PathBuf>,
        /// `--allow-unpinned-flux`: the cluster's release may be downloaded though not pinned.
        allow_unpinned: bool,
        /// flux's arguments, verbatim.
        args: Vec<OsString>,
    },
}

/// Splits our leading `--flux-bin` and `--allow-unpinned-flux` off the words, and recognises
/// `install-cli`.
pub fn parse(words: &[OsString]) -> Result<Request> {
    let mut flux_bin = None;
    let mut allow_unpinned = false;
    let mut rest = words;
    while let Some(word) = rest.first() {
        let text = word.to_string_lossy();
        if text == "--allow-unpinned-flux" {
            allow_unpinned = true;
            rest = &rest[1..];
        } else if let Some(value) = text.strip_prefix("--flux-bin=") {
            flux_bin = Some(PathBuf::from(value));
            rest = &rest[1..];
        } else if text == "--flux-bin" {
            let value =
                rest.get(1).ok_or_else(|| Error::usage("--flux-bin needs a path", "--flux-bin /path/to/flux"))?;
            flux_bin = Some(PathBuf::from(value));
            rest = &rest[2..];
        } else {
            break;
        }
    }
    match rest.first().map(|word| word.to_string_lossy()) {
        None if flux_bin.is_none() && !allow_unpinned => Ok(Request::Usage),
        Some(word) if word == "install-cli" => {
            let embedded = rest[1..].iter().any(|word| word == "--embedded");
            let version = match &rest[1..] {
                [] => None,
                [word] if word == "--embedded" => None,
                [version] => Some(version.to_string_lossy().parse::<Tag>()?),
                _ => {
                    return Err(Error::usage(
                        "install-cli takes one version at most",
                        "kubectl gitops flux install-cli v2.9.4",
                    ));
                }
            };
            if flux_bin.is_some() {
                return Err(Error::usage(
                    "install-cli caches a release; --flux-bin names a CLI that needs no install",
                    "drop --flux-bin",
                ));
            }
            Ok(Request::InstallCli { version, embedded, allow_unpinned })
        }
        Some(word) if word.starts_with(crate::plugin::COMPLETE_ARG) => {
            Ok(Request::Complete { flux_bin, args: rest.to_vec() })
        }
        _ => Ok(Request::Run { flux_bin, allow_unpinned, args: rest.to_vec() }),
    }
}

/// The flags flux reads that we read too: where the cluster is, and whether a namespace is given.
#[derive(Debug, Default, PartialEq, Eq)]
struct ClusterFlags {
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    namespace_given: bool,
    /// A command that does not read the cluster, or help.
    local: bool,
}

/// flux commands that never read the cluster (`flux <command> --help`, `flux version --client`
/// and the OCI artifact commands among them), for which no namespace is looked up.
const LOCAL_COMMANDS: [&str; 8] = ["completion", "help", "envsubst", "push", "pull", "tag", "list", "plugin"];

fn cluster_flags(args: &[OsString]) -> ClusterFlags {
    let mut flags = ClusterFlags::default();
    let mut positional = Vec::new();
    let mut words = args.iter().map(|word| word.to_string_lossy().into_owned());
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name.to_string(), Some(value.to_string())),
            _ => (word.clone(), None),
        };
        match name.as_str() {
            "--kubeconfig" => flags.kubeconfig = inline.or_else(|| words.next()).map(PathBuf::from),
            "--context" => flags.context = inline.or_else(|| words.next()),
            "-n" | "--namespace" | "-A" | "--all-namespaces" => flags.namespace_given = true,
            "-h" | "--help" | "--client" | "--version" => flags.local = true,
            _ if name.starts_with("-n") && name.len() > 2 && !name.starts_with("--") => flags.namespace_given = true,
            _ if !name.starts_with('-') => positional.push(name),
            _ => {}
        }
    }
    let command = positional.first().map(String::as_str).unwrap_or("help");
    let artifact = positional.get(1).is_some_and(|noun| noun == "artifact");
    flags.local |= LOCAL_COMMANDS.contains(&command) || artifact;
    flags
}

/// What the cluster says: its Flux namespace and version (its label as written), when it runs Flux.
async fn cluster_flux(flags: &ClusterFlags, printer: &Printer) -> Option<(String, Option<String>)> {
    let connection = Connection {
        kubeconfig: flags.kubeconfig.clone(),
        context: flags.context.clone(),
        namespace: None,
        request_timeout: Some(crate::timeouts::PROBE),
        overrides: Default::default(),
    };
    let cluster = Cluster::connect(&connection, printer).await.ok()?;
    let detection = crate::detect::detect(&cluster).await.ok()?;
    let flux = detection.flux?;
    let version = flux.version.filter(|_| !flux.guessed);
    Some((flux.namespace, version))
}

/// The CLI to run and its arguments: the namespace added, and the cluster's version preferred.
pub async fn prepare(
    flux_bin: Option<PathBuf>,
    allow_unpinned: bool,
    args: Vec<OsString>,
    printer: &Printer,
) -> Result<(FluxCli, Vec<OsString>)> {
    let locator = Locator::new(flux_bin).allowing_unpinned(allow_unpinned);
    let explicit = locator.explicit()?;
    let flags = cluster_flags(&args);
    // The cluster is asked only when its answer matters: for the namespace, or for the version
    // when no CLI was named.
    let asks = !flags.local && (!flags.namespace_given || explicit.is_none());
    let cluster = if asks { cluster_flux(&flags, printer).await } else { None };
    let mut args = args;
    if let Some((namespace, _)) = cluster.as_ref().filter(|_| !flags.namespace_given) {
        // At the end of flux's flags (before any `--`): `flux get ks --namespace x`.
        let at = args.iter().position(|word| word == OsStr::new("--")).unwrap_or(args.len());
        args.splice(at..at, [OsString::from("--namespace"), OsString::from(namespace)]);
    }
    if let Some(cli) = explicit {
        return Ok((cli, args));
    }
    let pinned = Tag::pinned();
    if let Some(label) = cluster.and_then(|(_, version)| version).filter(|version| *version != pinned.as_str())
        && let Some(cli) = cluster_release_cli(&locator, &label, &pinned, printer).await
    {
        return Ok((cli, args));
    }
    Ok((locator.locate(&pinned, printer).await?, args))
}

/// The CLI of the release the cluster's label names, when it is a release this run may use and
/// it can be had; otherwise a warning saying why the pinned CLI runs instead.
async fn cluster_release_cli(locator: &Locator, label: &str, pinned: &Tag, printer: &Printer) -> Option<FluxCli> {
    let why_not = match label.parse::<Tag>() {
        Err(_) => "its version label is not a release tag".to_string(),
        Ok(tag) if tag.pin() == Pin::Unpinned && !locator.allow_unpinned => {
            format!("this kubectl-gitops does not pin {tag} (--allow-unpinned-flux downloads it)")
        }
        Ok(tag) => match locator.locate(&tag, printer).await {
            Ok(cli) => {
                printer.progress(&format!("using the flux {tag} CLI: the cluster runs Flux {tag}"));
                return Some(cli);
            }
            Err(_) => format!("no flux {tag} CLI is cached or downloadable"),
        },
    };
    printer.warning(&format!("the cluster runs Flux {}, and {why_not}; using flux {pinned}", label.escape_debug()));
    None
}

/// The answer to `__complete …`: flux's, from a CLI already here (given, cached or on PATH), else
/// no candidates (cobra's "no file completion" directive).
pub fn complete(flux_bin: Option<PathBuf>, args: &[OsString], printer: &Printer) -> Result<i32> {
    match Locator::new(flux_bin).find_local(&Tag::pinned())? {
        Some(cli) => run(&cli, args),
        None => printer.data(":4\n").map(|()| 0),
    }
}

/// Runs flux and returns its exit code: on Unix it replaces this process (so signals and the
/// exit code are flux's own), elsewhere it waits and hands the code back.
pub fn run(cli: &FluxCli, args: &[OsString]) -> Result<i32> {
    let mut command = cli.command();
    command.args(args);
    crate::plugin::exec(command)
}

/// `install-cli`: the verified CLI of `version` in the cache, downloaded when missing or when
/// its bytes changed since they were verified. Returns the path to print.
pub async fn install_cli(
    version: Option<Tag>,
    embedded: bool,
    allow_unpinned: bool,
    printer: &Printer,
) -> Result<String> {
    let version = version.unwrap_or_else(Tag::pinned);
    let release = Locator::new(None).allowing_unpinned(allow_unpinned).release(&version)?;
    if embedded {
        let path = crate::flux_cli::embedded::extract(&release)?.ok_or_else(|| Error::Negative {
            message: "this kubectl-gitops-flux carries no flux CLI (it was built without embed-flux)".into(),
            hint: Some("run `kubectl gitops flux install-cli` to download the pinned release".into()),
        })?;
        return Ok(format!("{}\n", path.display()));
    }
    if let Some(path) = verify_cached_or_warn(&release, printer)? {
        printer.done(&format!("flux {version} is cached and verified"));
        return Ok(format!("{}\n", path.display()));
    }
    let path = release.install(crate::timeouts::FLUX_DOWNLOAD, printer).await?;
    Ok(format!("{}\n", path.display()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    fn words(text: &str) -> Vec<OsString> {
        text.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn our_words_come_first_and_the_rest_is_flux_s() {
        assert_eq!(parse(&[]).unwrap(), Request::Usage);
        assert_eq!(
            parse(&words("--flux-bin /x/flux get ks -n apps")).unwrap(),
            Request::Run { flux_bin: Some("/x/flux".into()), allow_unpinned: false, args: words("get ks -n apps") }
        );
        assert_eq!(
            parse(&words("--flux-bin=/x/flux")).unwrap(),
            Request::Run { flux_bin: Some("/x/flux".into()), allow_unpinned: false, args: vec![] }
        );
        // A --flux-bin after flux's first word is flux's (it has none, and says so).
        assert_eq!(
            parse(&words("get --flux-bin /x")).unwrap(),
            Request::Run { flux_bin: None, allow_unpinned: false, args: words("get --flux-bin /x") }
        );
        assert_eq!(
            parse(&words("--allow-unpinned-flux get ks")).unwrap(),
            Request::Run { flux_bin: None, allow_unpinned: true, args: words("get ks") }
        );
        assert_eq!(
            parse(&words("install-cli v2.8.1")).unwrap(),
            Request::InstallCli { version: Some("v2.8.1".parse().unwrap()), embedded: false, allow_unpinned: false }
        );
        assert_eq!(
            parse(&words("--allow-unpinned-flux install-cli v2.8.1")).unwrap(),
            Request::InstallCli { version: Some("v2.8.1".parse().unwrap()), embedded: false, allow_unpinned: true }
        );
        assert!(parse(&words("install-cli 2.8")).unwrap_err().to_string().contains("not a Flux release tag"));
        assert!(
            parse(&words("install-cli v2.9.4/../../../../evil/x"))
                .unwrap_err()
                .to_string()
                .contains("not a Flux release tag")
        );
        assert!(
            parse(&words("--flux-bin /x install-cli"))
                .unwrap_err()
                .to_string()
                .starts_with("install-cli caches a release")
        );
        assert_eq!(
            parse(&words("install-cli --embedded")).unwrap(),
            Request::InstallCli { version: None, embedded: true, allow_unpinned: false }
        );
        assert_eq!(
            parse(&words("__complete get ks fl")).unwrap(),
            Request::Complete { flux_bin: None, args: words("__complete get ks fl") }
        );
        assert!(parse(&words("--flux-bin")).unwrap_err().to_string().contains("--flux-bin needs a path"));
    }

    #[test]
    fn the_namespace_is_looked_up_only_for_cluster_commands_without_one() {
        let flags = cluster_flags(&words("get kustomizations --context dev --kubeconfig=/k"));
        assert_eq!(
            flags,
            ClusterFlags {
                kubeconfig: Some("/k".into()),
                context: Some("dev".into()),
                namespace_given: false,
                local: false
            }
        );
        for given in
            ["get ks -n apps", "get ks -napps", "get ks --namespace=apps", "get ks -A", "get ks --all-namespaces"]
        {
            assert!(cluster_flags(&words(given)).namespace_given, "{given}");
        }
        for local in
            ["version --client", "completion bash", "push artifact oci://x", "build artifact -p .", "get ks -h", ""]
        {
            assert!(cluster_flags(&words(local)).local, "{local}");
        }
        for remote in ["version", "build kustomization x", "reconcile ks flux-system --with-source", "check"] {
            assert!(!cluster_flags(&words(remote)).local, "{remote}");
        }
    }
}
