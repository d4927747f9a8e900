//! One Kustomization built from the checkout as kustomize-controller builds it: by the pinned
//! flux CLI (`flux build kustomization --dry-run`: Flux's own kustomize and post-build
//! substitution), given the Kustomization as the cluster holds it, with the variables of its
//! `substituteFrom` ConfigMaps and Secrets read here, so the CLI never reaches the cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::error::{Error, Result};
use crate::flux_cli::FluxCli;
use crate::interrupt::ScratchDir;
use crate::secret_value::SecretValues;

/// The directory a Kustomization's `spec.path` names in the checkout `root`: relative to the
/// root whether written `./app`, `app` or `/app`, and never outside it.
pub(crate) fn source_dir(root: &Path, spec_path: &str) -> std::result::Result<PathBuf, String> {
    let mut dir = root.to_path_buf();
    for part in Path::new(spec_path.trim_start_matches('/')).components() {
        match part {
            std::path::Component::Normal(part) => dir.push(part),
            std::path::Component::CurDir => {}
            _ => return Err(format!("its path {spec_path:?} leaves the repository")),
        }
    }
    Ok(dir)
}

/// Whether a build may read the Secrets its Kustomization's `substituteFrom` names.
#[derive(Clone, Copy)]
pub(crate) enum SecretReads<'a> {
    /// The Kustomization as the cluster holds it: its controller reads them already. Each value
    /// is recorded, to be masked in whatever is shown.
    Recorded(&'a SecretValues),
    /// A Kustomization the compared state adds: whoever wrote the change chose the Secrets, so
    /// none is read, and each variable they would give is a visible placeholder.
    Withheld,
}

/// Why the variables of a withheld Secret are placeholders.
pub(crate) const WITHHELD_ADDED: &str =
    "the change adds this Kustomization, and a preview never reads a Secret a change asks for";

/// The Kustomization as the build reads it (its spec as the cluster holds it, with the variables
/// its `substituteFrom` names merged under its own `substitute`, which wins as in the controller,
/// and no `substituteFrom` left for the CLI to look up), and the Secrets not read.
pub(crate) struct Resolved {
    pub kustomization: Value,
    /// `NAMESPACE/NAME` of each Secret [`SecretReads::Withheld`] left unread.
    pub withheld: Vec<String>,
}

/// `kustomization` resolved as [`Resolved`] says, reading its Secrets as `reads` allows.
pub(crate) async fn resolved(cluster: &Cluster, kustomization: &Value, reads: SecretReads<'_>) -> Result<Resolved> {
    let namespace = kustomization["metadata"]["namespace"].as_str().unwrap_or_default();
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut withheld = Vec::new();
    let post_build = &kustomization["spec"]["postBuild"];
    for reference in post_build["substituteFrom"].as_array().into_iter().flatten() {
        let name = reference["name"].as_str().unwrap_or_default();
        let optional = reference["optional"].as_bool().unwrap_or(false);
        let read = match (reference["kind"].as_str(), reads) {
            (Some("ConfigMap"), _) => {
                let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
                api.get_opt(name).await.map(|found| found.map(|map| map.data.unwrap_or_default()))
            }
            (Some("Secret"), SecretReads::Withheld) => {
                withheld.push(format!("{namespace}/{name}"));
                continue;
            }
            (Some("Secret"), SecretReads::Recorded(secrets)) => {
                let api: Api<Secret> = Api::namespaced(cluster.client.clone(), namespace);
                api.get_opt(name)
                    .await
                    .map(|found| found.map(|secret| secret_strings(secret, namespace, name, secrets)))
            }
            (other, _) => {
                return Err(Error::Negative {
                    message: format!("substituteFrom names a {other:?}, not a ConfigMap or Secret"),
                    hint: None,
                });
            }
        };
        match read.map_err(|error| cluster.error(error))? {
            Some(data) => vars.extend(data),
            None if optional => {}
            None => {
                return Err(Error::Negative {
                    message: format!(
                        "substituteFrom {} {namespace}/{name} is not found",
                        reference["kind"].as_str().unwrap_or_default()
                    ),
                    hint: Some("create it, or mark it optional".into()),
                });
            }
        }
    }
    for (key, value) in post_build["substitute"].as_object().into_iter().flatten() {
        vars.insert(key.clone(), value.as_str().unwrap_or_default().to_string());
    }
    let mut resolved = json!({
        "apiVersion": kustomization["apiVersion"],
        "kind": "Kustomization",
        "metadata": {"name": kustomization["metadata"]["name"], "namespace": namespace},
        "spec": kustomization["spec"],
    });
    if let Some(post_build) = resolved["spec"]["postBuild"].as_object_mut() {
        post_build.remove("substituteFrom");
        if !vars.is_empty() {
            post_build.insert("substitute".into(), json!(vars));
        }
    }
    Ok(Resolved { kustomization: resolved, withheld })
}

/// A Secret's `data` and `stringData` as variables, each value recorded in `secrets` and exposed
/// here only for the file the flux CLI reads.
fn secret_strings(secret: Secret, namespace: &str, name: &str, secrets: &SecretValues) -> BTreeMap<String, String> {
    let mut strings: BTreeMap<String, String> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(key, bytes)| (key, String::from_utf8_lossy(&bytes.0).into_owned()))
        .collect();
    strings.extend(secret.string_data.unwrap_or_default());
    strings
        .into_iter()
        .map(|(key, value)| {
            let value = secrets.record(namespace, name, &key, value);
            (key, value.expose_secret().to_string())
        })
        .collect()
}

/// The variables a build of `resolved` substitutes that nothing defines, when it withheld a
/// Secret: found in a build without substitution (`${NAME}`, `${NAME:=default}`, ...), each
/// given a placeholder that names the Secrets, so that what they would give shows as withheld
/// instead of as an empty string. Returns their names.
pub(crate) async fn withheld_placeholders(
    flux: &FluxCli,
    resolved: &mut Resolved,
    root: &Path,
    dir: &Path,
) -> Result<Vec<String>> {
    if resolved.withheld.is_empty() {
        return Ok(Vec::new());
    }
    let mut raw = resolved.kustomization.clone();
    if let Some(spec) = raw["spec"].as_object_mut() {
        spec.remove("postBuild");
    }
    let Ok(documents) = build(flux, &raw, root, dir).await? else {
        // The build with the variables says why it fails.
        return Ok(Vec::new());
    };
    let defined = &resolved.kustomization["spec"]["postBuild"]["substitute"];
    let text: String = documents.iter().map(Value::to_string).collect();
    let names: BTreeSet<String> =
        variable_names(&text).into_iter().filter(|name| defined.get(name.as_str()).is_none()).collect();
    // Substituted into the YAML text as Flux does: a plain scalar wherever it lands (no `[`,
    // `{` or `: ` that would make it a list or a map).
    let placeholder = format!("WITHHELD(Secret {})", resolved.withheld.join(", Secret "));
    let spec = &mut resolved.kustomization["spec"];
    for name in &names {
        spec["postBuild"]["substitute"][name] = json!(placeholder);
    }
    Ok(names.into_iter().collect())
}

/// The names of the variables `${NAME...}` in `text`, as Flux's post-build substitution reads
/// them (a letter or `_`, then letters, digits and `_`).
fn variable_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        rest = &rest[start + 2..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') {
            names.push(name);
        }
    }
    names
}

/// The objects `kustomization` (as [`resolved`] makes it) builds from `dir` of the checkout
/// `root`, or the CLI's own
/// words when the build fails. The Kustomization goes to the CLI in a file in a scratch directory
/// only this user may read (it may hold a Secret's variables), removed when the build ends, or is
/// interrupted.
pub(crate) async fn build(
    flux: &FluxCli,
    kustomization: &Value,
    root: &Path,
    dir: &Path,
) -> Result<std::result::Result<Vec<Value>, String>> {
    let io = |error: std::io::Error| Error::Io {
        context: "writing the Kustomization for the flux CLI".into(),
        source: error,
    };
    let scratch = ScratchDir::new("kubectl-gitops-diff-").map_err(io)?;
    let file = scratch.path().join("kustomization.yaml");
    std::fs::write(&file, crate::yaml::to_string(kustomization)?).map_err(io)?;
    let name = kustomization["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = kustomization["metadata"]["namespace"].as_str().unwrap_or_default();
    let mut command = tokio::process::Command::from(flux.command());
    command
        // In memory: a directory without a kustomization.yaml gets one generated, which the
        // CLI would otherwise write into the user's checkout while it builds.
        .args(["build", "kustomization", name, "--namespace", namespace, "--dry-run", "--in-memory-build", "--path"])
        .arg(dir)
        .arg("--kustomization-file")
        .arg(&file)
        // The CLI builds only below its working directory: the checkout's root, which a
        // kustomization may reach into (`../../apps/web`) but not out of.
        .current_dir(root)
        // Many short builds run side by side: one thread each and a lighter collector make each
        // some 15% quicker (docs/performance.md), and a build's heap is small.
        .env("GOMAXPROCS", "1")
        .env("GOGC", "400");
    let output = match bounded(command, "the flux CLI", &flux.path).await? {
        Ok(output) => output,
        Err(words) => return Ok(Err(words.trim_start_matches("✗ ").to_string())),
    };
    let text = String::from_utf8_lossy(&output);
    Ok(crate::yaml::documents_from_str(&text)
        .map(|documents| documents.into_iter().map(secret_strings_restored).collect())
        .map_err(|error| format!("the flux CLI printed YAML we cannot read: {error}")))
}

/// What `command` (a CLI diff runs: flux, helm, named `what`, at `path`) prints on stdout, or
/// its own words (stderr's lines joined) when it fails or is still running after
/// [`crate::timeouts::BUILD`]; an error only when it cannot be started.
pub(super) async fn bounded(
    mut command: tokio::process::Command,
    what: &str,
    path: &Path,
) -> Result<std::result::Result<Vec<u8>, String>> {
    command.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let Ok(output) = tokio::time::timeout(crate::timeouts::BUILD, command.output()).await else {
        return Ok(Err(format!("{what} did not finish within {:?}", crate::timeouts::BUILD)));
    };
    let output = output.map_err(|error| Error::Io { context: format!("running {}", path.display()), source: error })?;
    if !output.status.success() {
        let words = String::from_utf8_lossy(&output.stderr);
        return Ok(Err(words.lines().filter(|line| !line.trim().is_empty()).collect::<Vec<_>>().join("; ")));
    }
    Ok(Ok(output.stdout))
}

/// The flux CLI prints a Secret's `stringData` without the quotes a number-like value had
/// (`replicas: "1"` comes out as `replicas: 1`), though the controller applies the string: every
/// value of a Secret's `stringData` and `data` is a string, so a number or a boolean read there
/// is turned back into its text.
fn secret_strings_restored(mut document: Value) -> Value {
    if document["kind"] != "Secret" || document["apiVersion"] != "v1" {
        return document;
    }
    for field in ["stringData", "data"] {
        // `get_mut`, not `[field]`: indexing would add the field, as null, where there is none.
        let values = document.get_mut(field).and_then(Value::as_object_mut);
        for value in values.into_iter().flat_map(|map| map.values_mut()) {
            if let Value::Number(_) | Value::Bool(_) = value {
                *value = Value::String(value.to_string());
            }
        }
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_s_number_like_strings_come_back_as_strings() {
        let printed =
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  replicas: 1\n  on: true\n  name: web\n";
        let document = crate::yaml::documents_from_str(printed).unwrap().remove(0);
        let restored = secret_strings_restored(document);
        assert_eq!(restored["stringData"], json!({"replicas": "1", "on": "true", "name": "web"}));
        assert!(restored.get("data").is_none(), "no field added: {restored}");
        let map = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": 1}});
        assert_eq!(secret_strings_restored(map.clone()), map, "only Secrets");
    }

    #[test]
    fn variables_are_named_as_flux_reads_them() {
        let text = r#"{"a":"${password}","b":"${host:=x} $${not} ${1x} ${_under_score}-${password}"}"#;
        assert_eq!(variable_names(text), ["password", "host", "not", "_under_score", "password"]);
    }

    #[test]
    fn a_spec_path_stays_inside_the_checkout() {
        let root = Path::new("/repo");
        assert_eq!(source_dir(root, "./apps/web").unwrap(), Path::new("/repo/apps/web"));
        assert_eq!(source_dir(root, "apps/web").unwrap(), Path::new("/repo/apps/web"));
        assert_eq!(source_dir(root, "/apps/web").unwrap(), Path::new("/repo/apps/web"));
        assert_eq!(source_dir(root, "").unwrap(), Path::new("/repo"));
        assert!(source_dir(root, "./apps/../../etc").is_err());
    }
}
