//! `kubectl gitops artifact push|build|pull|list|tag|diff`: Flux OCI artifacts, made the way
//! `flux push artifact` makes them (crate::oci), for manifests and components delivered through
//! an OCIRepository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use crate::cli::OutputFormat;
use crate::error::{Error, ExitCode, Result};
use crate::oci::artifact::{self, Artifact, BuildRequest};
use crate::oci::extract::{self, Entry};
use crate::oci::limits::{self, Limits};
use crate::oci::reference::OciUrl;
use crate::oci::registry::{Access, Registry};
use crate::oci::tarball;
use crate::output::Printer;
use crate::output::table::Table;

/// Registry access flags, shared by the commands that talk to a registry.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// USER:PASSWORD for the registry; without it, the docker config file
    /// ($DOCKER_CONFIG/config.json or ~/.docker/config.json, credential helpers included).
    #[arg(long, value_name = "USER:PASSWORD", help_heading = "Registry options")]
    pub creds: Option<String>,
    /// Allow plain HTTP to an OCI registry.
    ///
    /// Allow plain HTTP to a registry that is not on this machine (localhost always may).
    #[arg(long, help_heading = "Registry options")]
    pub insecure: bool,
}

impl RegistryArgs {
    fn access(&self) -> Access {
        Access { creds: self.creds.clone(), insecure: self.insecure }
    }
}

/// How much of an artifact `pull` and `diff` read before refusing it: whoever pushed it chooses
/// what its manifest and tarball declare, and a small gzip layer can inflate to gigabytes. Past
/// a limit the command fails with exit 2 and writes nothing.
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// The largest manifest to read.
    #[arg(long, value_name = "SIZE", default_value = limits::MANIFEST_FLAG, value_parser = limits::parse_size, help_heading = "Limits")]
    pub max_manifest_size: u64,
    /// The largest layer to download, gzipped: as its manifest declares it, and as it arrives.
    #[arg(long, value_name = "SIZE", default_value = limits::LAYER_FLAG, value_parser = limits::parse_size, help_heading = "Limits")]
    pub max_layer_size: u64,
    /// The most the layer may unpack to (gunzipped, tar headers included); an entry declaring
    /// more than is left is refused before it is read.
    #[arg(long, value_name = "SIZE", default_value = limits::UNPACKED_FLAG, value_parser = limits::parse_size, help_heading = "Limits")]
    pub max_unpacked_size: u64,
    /// The most entries (files and directories) the layer may hold.
    #[arg(long, value_name = "COUNT", default_value = limits::ENTRIES_FLAG, help_heading = "Limits")]
    pub max_entries: u64,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            manifest: self.max_manifest_size,
            layer: self.max_layer_size,
            unpacked: self.max_unpacked_size,
            entries: self.max_entries,
        }
    }
}

/// `artifact push`.
#[derive(Debug, Clone, Args)]
pub struct PushArgs {
    /// Where to push: oci://REGISTRY/REPOSITORY:TAG.
    #[arg(value_name = "URL")]
    pub url: String,
    /// A directory: in a source, the one Flux applies; for an artifact, on this machine.
    ///
    /// The directory whose files become the artifact.
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
    /// The source the files came from, e.g. the git repository's URL.
    #[arg(long, value_name = "URL")]
    pub source: String,
    /// A source revision, by Flux's convention (<branch|tag>@sha1:<commit>) or a commit hash.
    ///
    /// The source revision, by Flux's convention <branch|tag>@sha1:<commit>.
    #[arg(long, value_name = "REVISION")]
    pub revision: String,
    /// More manifest annotations, KEY=VALUE (repeatable).
    #[arg(short = 'a', long = "annotations", value_name = "KEY=VALUE")]
    pub annotations: Vec<String>,
    /// Leave out files matching these gitignore patterns, relative to --path.
    ///
    /// Leave out files matching these gitignore patterns, relative to --path (comma-separated or
    /// repeated), besides Flux's defaults (.git/, images, archives).
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',')]
    pub ignore_paths: Vec<String>,
    /// Write the creation time as 1970-01-01T00:00:00Z, so the same files give the same digest.
    #[arg(long)]
    pub reproducible: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `artifact build`.
#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    /// A directory: in a source, the one Flux applies; for an artifact, on this machine.
    ///
    /// The directory whose files become the tarball.
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
    /// The .tgz file to write (flux build artifact's --output; -o is the output format, as everywhere).
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    /// Leave out files matching these gitignore patterns, relative to --path.
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',')]
    pub ignore_paths: Vec<String>,
}

/// `artifact pull`.
#[derive(Debug, Clone, Args)]
pub struct PullArgs {
    /// What to pull: oci://REGISTRY/REPOSITORY:TAG or …@sha256:DIGEST.
    #[arg(value_name = "URL")]
    pub url: String,
    /// A directory on this machine, for the files to write or to read.
    ///
    /// The directory to write the files to, created if missing (flux pull artifact's --output; -o
    /// is the output format, as everywhere).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `artifact list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// The repository: oci://REGISTRY/REPOSITORY.
    #[arg(value_name = "URL")]
    pub url: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `artifact tag`.
#[derive(Debug, Clone, Args)]
pub struct TagArgs {
    /// The artifact to tag: oci://REGISTRY/REPOSITORY:TAG or …@sha256:DIGEST.
    #[arg(value_name = "URL")]
    pub url: String,
    /// A tag: of a git or OCI source, or of an artifact.
    ///
    /// The new tag (repeatable).
    #[arg(long = "tag", value_name = "TAG", required = true)]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `artifact diff`.
#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The artifact to compare with: oci://REGISTRY/REPOSITORY:TAG or …@sha256:DIGEST.
    #[arg(value_name = "URL")]
    pub url: String,
    /// A directory: in a source, the one Flux applies; for an artifact, on this machine.
    ///
    /// The local directory.
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
    /// Leave out files matching these gitignore patterns, relative to --path.
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',')]
    pub ignore_paths: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// What an artifact is, as `push -o json`, `pull -o json` and `list -o json` print it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ArtifactInfo {
    /// `oci://registry/repository`.
    pub repository: String,
    /// The tag, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The manifest digest.
    pub digest: String,
    /// `oci://registry/repository@digest`, the reference that cannot move.
    pub reference: String,
    /// `org.opencontainers.image.source`.
    pub source: String,
    /// `org.opencontainers.image.revision`.
    pub revision: String,
    /// `org.opencontainers.image.created`.
    pub created: String,
    /// Every annotation of the manifest.
    pub annotations: BTreeMap<String, String>,
}

impl crate::output::Kind for ArtifactInfo {
    const KIND: &'static str = "Artifact";
}

impl ArtifactInfo {
    fn new(url: &OciUrl, tag: Option<String>, digest: String, annotations: BTreeMap<String, String>) -> ArtifactInfo {
        let get = |key: &str| annotations.get(key).cloned().unwrap_or_default();
        ArtifactInfo {
            repository: url.repository_url(),
            tag,
            reference: format!("{}@{digest}", url.repository_url()),
            digest,
            source: get(artifact::SOURCE),
            revision: get(artifact::REVISION),
            created: get(artifact::CREATED),
            annotations,
        }
    }
}

fn required_path(path: &Option<PathBuf>) -> Result<&Path> {
    path.as_deref().ok_or_else(|| {
        Error::usage("--path is required", "name the directory whose files make the artifact, e.g. --path ./config")
    })
}

fn print_info(info: &ArtifactInfo, format: OutputFormat, printer: &Printer) -> Result<()> {
    match format {
        OutputFormat::Json | OutputFormat::Yaml => printer.structured(&crate::output::document(info), format),
        _ => printer.data(&format!("{}\n", info.digest)),
    }
}

/// `push`: builds the artifact, uploads its blobs, then tags the manifest.
pub async fn push(args: &PushArgs, format: OutputFormat, printer: &Printer) -> Result<ExitCode> {
    let url = OciUrl::parse_tagged(&args.url)?;
    let path = required_path(&args.path)?;
    let annotations = artifact::parse_annotations(&args.annotations)?;
    let registry = Registry::connect(&url, &args.registry.access()).await?;
    let built = Artifact::build(&BuildRequest {
        path,
        ignore_paths: &args.ignore_paths,
        source: &args.source,
        revision: &args.revision,
        annotations: &annotations,
        reproducible: args.reproducible,
    })?;
    printer.step(&format!("pushing {} ({} bytes) to {url}", path.display(), built.layer.len()));
    let digest = registry.push(&url, &built).await?;
    printer.done(&format!("pushed {url}@{digest}"));
    print_info(&ArtifactInfo::new(&url, url.tag.clone(), digest, built.annotations), format, printer)?;
    Ok(ExitCode::Ok)
}

/// `build`: the tarball alone, written through a temporary file and a rename.
pub fn build(args: &BuildArgs, printer: &Printer) -> Result<ExitCode> {
    let path = required_path(&args.path)?;
    let layer = tarball::tar_gz(path, &args.ignore_paths)?;
    let dir = match args.file.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .map_err(|source| Error::io(format!("cannot write in {}", dir.display()), source))?;
    std::io::Write::write_all(&mut file, &layer)
        .map_err(|source| Error::io(format!("cannot write {}", args.file.display()), source))?;
    file.persist(&args.file)
        .map_err(|error| Error::io(format!("cannot write {}", args.file.display()), error.error))?;
    printer.done(&format!("wrote {} ({} bytes, {})", args.file.display(), layer.len(), artifact::digest_of(&layer)));
    Ok(ExitCode::Ok)
}

/// The artifact at `url` ([`crate::oci::pull::unpack`]), with what its manifest says.
async fn fetch(
    url: &OciUrl,
    registry: &Registry,
    limits: &Limits,
    output: Option<&Path>,
) -> Result<(ArtifactInfo, Vec<Entry>)> {
    let (manifest, entries) = crate::oci::pull::unpack(url, registry, limits, output).await?;
    Ok((ArtifactInfo::new(url, url.tag.clone(), manifest.digest.clone(), manifest.annotations()), entries))
}

/// `pull`: verifies the layer's digest, checks every entry, then writes the files.
pub async fn pull(args: &PullArgs, printer: &Printer) -> Result<ExitCode> {
    let url = OciUrl::parse_pinned(&args.url)?;
    let registry = Registry::connect(&url, &args.registry.access()).await?;
    printer.step(&format!("pulling {url}"));
    let (info, entries) = fetch(&url, &registry, &args.limits.limits(), Some(&args.dir)).await?;
    let count = entries.iter().filter(|entry| entry.file).count();
    printer.done(&format!("pulled {url}@{} into {} ({count} files)", info.digest, args.dir.display()));
    printer.data(&format!("{}\n", info.digest))?;
    Ok(ExitCode::Ok)
}

/// `list`: every tag, newest name last, with what its manifest says.
pub async fn list(args: &ListArgs, format: OutputFormat, headers: bool, printer: &Printer) -> Result<ExitCode> {
    let url = OciUrl::parse(&args.url)?;
    let registry = Registry::connect(&url, &args.registry.access()).await?;
    let mut rows = Vec::new();
    for tag in registry.tags(&url).await? {
        let tagged = url.with_tag(&tag);
        let manifest = registry.manifest(&tagged, Limits::default().manifest).await?;
        rows.push(ArtifactInfo::new(&url, Some(tag), manifest.digest.clone(), manifest.annotations()));
    }
    match format {
        OutputFormat::Json | OutputFormat::Yaml => printer.structured(&crate::output::list(&rows), format)?,
        _ => {
            let mut table = Table::new(["TAG", "SOURCE", "REVISION", "DIGEST", "CREATED"]);
            for row in &rows {
                table.push([
                    row.tag.clone().unwrap_or_default(),
                    row.source.clone(),
                    row.revision.clone(),
                    row.digest.clone(),
                    row.created.clone(),
                ]);
            }
            if rows.is_empty() {
                printer.warning(&format!("{} has no tags", url.repository_url()));
            } else {
                printer.data(&table.render(headers))?;
            }
        }
    }
    Ok(ExitCode::Ok)
}

/// `tag`: more tags for the same manifest (the digest does not change).
pub async fn tag(args: &TagArgs, printer: &Printer) -> Result<ExitCode> {
    let url = OciUrl::parse_pinned(&args.url)?;
    // Check every new tag before the first is written.
    let targets: Vec<OciUrl> =
        args.tags.iter().map(|tag| OciUrl::parse_tagged(&url.with_tag(tag).to_string())).collect::<Result<_>>()?;
    let registry = Registry::connect(&url, &args.registry.access()).await?;
    let mut digest = String::new();
    for target in &targets {
        digest = registry.tag(&url, target.tag.as_deref().unwrap_or_default(), Limits::default().manifest).await?;
        printer.done(&format!("tagged {target}"));
    }
    printer.data(&format!("{digest}\n"))?;
    Ok(ExitCode::Ok)
}

/// One difference between a directory and an artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Difference {
    /// The file's relative path.
    pub path: String,
    /// `changed`, `only-local` or `only-artifact`.
    pub change: &'static str,
}

impl crate::output::Kind for Difference {
    const KIND: &'static str = "ArtifactDifference";
}

/// The files that differ, by path and contents' digest (directories are compared by presence
/// only).
pub fn differences(local: &[Entry], remote: &[Entry]) -> Vec<Difference> {
    let index = |entries: &[Entry]| -> BTreeMap<String, Option<String>> {
        entries
            .iter()
            .filter(|entry| entry.path != ".")
            .map(|entry| (entry.path.clone(), entry.digest.clone()))
            .collect()
    };
    let (local, remote) = (index(local), index(remote));
    let mut found = Vec::new();
    for (path, contents) in &local {
        match remote.get(path) {
            None => found.push(Difference { path: path.clone(), change: "only-local" }),
            Some(theirs) if theirs != contents => found.push(Difference { path: path.clone(), change: "changed" }),
            Some(_) => {}
        }
    }
    for path in remote.keys().filter(|path| !local.contains_key(*path)) {
        found.push(Difference { path: path.clone(), change: "only-artifact" });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// `diff`: exit 0 when the directory holds what the artifact holds, 1 (naming the files) when not.
pub async fn diff(args: &DiffArgs, format: OutputFormat, printer: &Printer) -> Result<ExitCode> {
    let url = OciUrl::parse_pinned(&args.url)?;
    let path = required_path(&args.path)?;
    // Our own tar stream, read back unpacked: no gzip and gunzip in between.
    let local = extract::list(tarball::tar(path, &args.ignore_paths)?.as_slice(), &Limits::NONE)?;
    let registry = Registry::connect(&url, &args.registry.access()).await?;
    let (_, remote) = fetch(&url, &registry, &args.limits.limits(), None).await?;
    let found = differences(&local, &remote);
    match format {
        OutputFormat::Json | OutputFormat::Yaml => printer.structured(&crate::output::list(&found), format)?,
        _ => {
            let text: String = found.iter().map(|d| format!("{}\t{}\n", d.change, d.path)).collect();
            printer.data(&text)?;
        }
    }
    if found.is_empty() {
        printer.done(&format!("{} holds what {url} holds", path.display()));
        Ok(ExitCode::Ok)
    } else {
        printer.warning(&format!("{} file(s) differ between {} and {url}", found.len(), path.display()));
        Ok(ExitCode::No)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, contents: Option<&str>) -> Entry {
        Entry {
            path: path.into(),
            file: contents.is_some(),
            digest: contents.map(|c| crate::flux_cli::sha256_hex(c.as_bytes())),
        }
    }

    #[test]
    fn differences_name_each_file() {
        let local = [file(".", None), file("a", Some("1")), file("b", Some("2")), file("c", Some("3"))];
        let remote = [file(".", None), file("a", Some("1")), file("b", Some("two")), file("d", Some("4"))];
        let found = differences(&local, &remote);
        let summary: Vec<_> = found.iter().map(|d| (d.path.as_str(), d.change)).collect();
        assert_eq!(summary, [("b", "changed"), ("c", "only-local"), ("d", "only-artifact")]);
        assert!(differences(&local, &local).is_empty());
    }
}
