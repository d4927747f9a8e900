//! The images a Kustomization overrides (its `spec.images`, kustomize's images transformer): what
//! promote carries of a Kustomization app beside its source's tag, the way Flux users set an
//! environment's image (by hand, or image automation writing the overlay). A HelmRelease's images
//! are its values, which `--with-values` carries.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::flux::api::KUSTOMIZATION;

/// The field of a Kustomization that lists its image overrides.
const IMAGES: &str = "/spec/images";

/// One entry of a Kustomization's `spec.images`: the image `name` the manifests use, and what
/// replaces it (another name, a tag, a digest; at least one).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Image {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    new_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    new_tag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digest: Option<String>,
}

impl std::fmt::Display for Image {
    /// `NAME[=NEW_NAME][:TAG][@DIGEST]`: the words a pull request records (`--expect-image`).
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(out, "{}", self.name)?;
        if let Some(new_name) = &self.new_name {
            write!(out, "={new_name}")?;
        }
        if let Some(tag) = &self.new_tag {
            write!(out, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(out, "@{digest}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Image {
    type Err = Error;

    /// The form [`Image`]'s `Display` writes, checked field by field.
    fn from_str(words: &str) -> Result<Image> {
        let (rest, digest) = match words.rsplit_once('@') {
            Some((rest, digest)) => (rest, Some(digest.to_string())),
            None => (words, None),
        };
        let (name, replaced) = match rest.split_once('=') {
            Some((name, replaced)) => (name, Some(replaced)),
            None => (rest, None),
        };
        let (named, new_tag) = split_tag(replaced.unwrap_or(name));
        let image = match replaced {
            Some(_) => Image { name: name.to_string(), new_name: Some(named.to_string()), new_tag, digest },
            None => Image { name: named.to_string(), new_name: None, new_tag, digest },
        };
        image.checked().map_err(|why| {
            Error::usage(
                format!("--expect-image {words:?} is not an image override: {why}"),
                "write it as NAME[=NEW_NAME][:TAG][@sha256:DIGEST], as the pull request recorded it",
            )
        })
    }
}

/// `reference` cut at its tag: the last `:` after the last `/` (a registry's port is not a tag).
fn split_tag(reference: &str) -> (&str, Option<String>) {
    let path_start = reference.rfind('/').map_or(0, |slash| slash + 1);
    match reference[path_start..].rfind(':') {
        Some(colon) => (&reference[..path_start + colon], Some(reference[path_start + colon + 1..].to_string())),
        None => (reference, None),
    }
}

impl Image {
    /// The image when every field is what an image reference allows (it came from a cluster or
    /// a pull request's words, and becomes a YAML patch and a pull request's words in turn);
    /// why not otherwise.
    fn checked(self) -> std::result::Result<Image, String> {
        let repository = |name: &str| -> bool {
            !name.is_empty()
                && name.len() <= 255
                && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_' | '/' | ':'))
        };
        let tag = |tag: &str| {
            !tag.is_empty()
                && tag.len() <= 128
                && !tag.starts_with(['.', '-'])
                && tag.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        };
        let digest = |digest: &str| {
            digest.split_once(':').is_some_and(|(algorithm, hex)| {
                matches!((algorithm, hex.len()), ("sha256", 64) | ("sha512", 128))
                    && hex.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
            })
        };
        if !repository(&self.name) {
            return Err(format!("the name {:?} is not an image repository", self.name));
        }
        if let Some(new_name) = self.new_name.as_deref().filter(|new_name| !repository(new_name)) {
            return Err(format!("the new name {new_name:?} is not an image repository"));
        }
        if let Some(new_tag) = self.new_tag.as_deref().filter(|new_tag| !tag(new_tag)) {
            return Err(format!("the tag {new_tag:?} is not an image tag"));
        }
        if let Some(value) = self.digest.as_deref().filter(|value| !digest(value)) {
            return Err(format!("the digest {value:?} is not sha256:<64 hex> or sha512:<128 hex>"));
        }
        if self.new_name.is_none() && self.new_tag.is_none() && self.digest.is_none() {
            return Err(format!("it changes nothing of {}", self.name));
        }
        Ok(self)
    }
}

/// The images Kustomization `kustomization` (as read from `cluster_name`) overrides, sorted,
/// each checked; refused when its spec is newer than what it applied (the images it runs are
/// not yet those).
pub(crate) fn overridden(kustomization: &Value, cluster_name: &str) -> Result<Vec<Image>> {
    let Some(listed) = kustomization.pointer(IMAGES).filter(|listed| !listed.is_null()) else {
        return Ok(Vec::new());
    };
    let generation = kustomization.pointer("/metadata/generation").and_then(Value::as_i64);
    let observed = kustomization.pointer("/status/observedGeneration").and_then(Value::as_i64);
    if generation.is_none() || generation != observed {
        return Err(Error::Negative {
            message: format!(
                "its Kustomization in {cluster_name} has a change it has not applied yet: the images it runs are not proven"
            ),
            hint: Some("wait until it is applied, then promote".into()),
        });
    }
    let unreadable = |why: String| Error::Negative {
        message: format!("its Kustomization in {cluster_name} overrides images promote does not carry: {why}"),
        hint: Some(format!("look at its spec.images in {cluster_name} (kubectl get kustomization -o yaml)")),
    };
    let mut images: Vec<Image> =
        serde_json::from_value(listed.clone()).map_err(|error| unreadable(error.to_string()))?;
    images = images.into_iter().map(Image::checked).collect::<std::result::Result<_, _>>().map_err(unreadable)?;
    images.sort();
    Ok(images)
}

/// The overlay's patch entry that sets `images` on Kustomization `name`.
pub(crate) fn patch(name: &str, images: &[Image]) -> Result<Value> {
    let operation = json!([{"op": "add", "path": IMAGES, "value": images}]);
    Ok(json!({
        "patch": crate::yaml::to_string(&operation)?,
        "target": {"group": KUSTOMIZATION.group, "kind": KUSTOMIZATION.kind, "name": name},
    }))
}

/// Whether an overlay's patch entry is the one [`patch`] writes for `name`.
pub(crate) fn is_patch(entry: &Value, name: &str) -> bool {
    entry["target"]["kind"] == KUSTOMIZATION.kind
        && entry["target"]["name"] == name
        && entry["patch"].as_str().is_some_and(|text| text.contains(IMAGES))
}

/// The images as one line: `web:1.1.0, api=registry.local/api@sha256:…`.
pub(crate) fn listed(images: &[Image]) -> String {
    images.iter().map(Image::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn an_override_is_read_and_written_as_the_words_a_pull_request_records() {
        for words in [
            "ghcr.io/acme/web:1.1.0".to_string(),
            "web=localhost:5000/acme/web:1.1.0".to_string(),
            "localhost:5000/web=registry.local/web".to_string(),
            format!("web@{DIGEST}"),
            format!("web=ghcr.io/acme/web:1.1.0@{DIGEST}"),
        ] {
            let image: Image = words.parse().unwrap();
            assert_eq!(image.to_string(), words);
        }
        // A registry's port is not a tag, and a name alone changes nothing.
        assert!("localhost:5000/web".parse::<Image>().unwrap_err().to_string().contains("changes nothing"));
    }

    #[test]
    fn what_a_cluster_reports_is_checked_and_a_change_not_yet_applied_is_refused() {
        let kustomization = |images: Value, observed: i64| json!({"metadata": {"generation": 2}, "spec": {"images": images}, "status": {"observedGeneration": observed}});
        let images = json!([{"name": "web", "newTag": "1.1.0"}, {"name": "api", "digest": DIGEST}]);
        let read = overridden(&kustomization(images.clone(), 2), "dev").unwrap();
        assert_eq!(listed(&read), format!("api@{DIGEST}, web:1.1.0"));
        let pending = overridden(&kustomization(images, 1), "dev").unwrap_err().to_string();
        assert!(pending.contains("has a change it has not applied yet"), "{pending}");
        assert!(overridden(&json!({"spec": {}}), "dev").unwrap().is_empty());
        for bad in [
            json!([{"name": "web", "newTag": "1.1\n- op: remove"}]),
            json!([{"name": "web", "newTag": "--to prod"}]),
            json!([{"name": "Web", "newTag": "1"}]),
            json!([{"name": "web", "digest": "sha256:abc"}]),
            json!([{"name": "web"}]),
            json!([{"name": "web", "newTag": "1", "command": "x"}]),
        ] {
            let refused = overridden(&kustomization(bad.clone(), 2), "dev").unwrap_err().to_string();
            assert!(refused.contains("overrides images promote does not carry"), "{bad}: {refused}");
        }
        for words in ["web", "web:", "web=:1", &format!("web@{}", &DIGEST[..20]), "web:1 --to prod"] {
            let refused = words.parse::<Image>().unwrap_err().to_string();
            assert!(refused.contains("is not an image override"), "{words}: {refused}");
        }
    }

    #[test]
    fn the_patch_sets_the_kustomizations_images_and_is_known_again() {
        let images = vec!["web:1.1.0".parse::<Image>().unwrap()];
        let entry = patch("web", &images).unwrap();
        assert_eq!(
            entry["target"],
            json!({"group": "kustomize.toolkit.fluxcd.io", "kind": "Kustomization", "name": "web"})
        );
        assert_eq!(entry["patch"], "- op: add\n  path: /spec/images\n  value:\n  - name: web\n    newTag: \"1.1.0\"\n");
        assert!(is_patch(&entry, "web") && !is_patch(&entry, "api"));
    }
}
