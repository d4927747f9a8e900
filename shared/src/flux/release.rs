//! Flux releases as `upgrade` reasons about them: versions, the move from one to another, and
//! which API versions each release line still serves.
//!
//! The API tables follow `flux migrate` (flux2 cmd/flux/migrate.go, `latestAPIVersions`), the
//! source of truth for what a manifest must be rewritten to; the removals are those of the Flux
//! release notes (v2.7, v2.8, v2.9).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A Flux release, `vMAJOR.MINOR.PATCH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FluxVersion {
    /// Always 2 for Flux v2.
    pub major: u32,
    /// The release line.
    pub minor: u32,
    /// The patch release.
    pub patch: u32,
}

impl FluxVersion {
    /// The release this kubectl-gitops pins ([`super::PINNED_VERSION`]).
    pub fn pinned() -> FluxVersion {
        super::PINNED_VERSION.parse().expect("dependencies.toml pins a vX.Y.Z Flux version")
    }

    /// `v2.9`: the release line.
    pub fn line(&self) -> String {
        format!("v{}.{}", self.major, self.minor)
    }

    /// Whether this kubectl-gitops knows the release line: Flux v2, up to the pinned line. A
    /// newer line may remove API versions this build cannot know of.
    pub fn is_known(&self) -> bool {
        let pinned = FluxVersion::pinned();
        self.major == 2 && self.minor <= pinned.minor
    }
}

impl FromStr for FluxVersion {
    type Err = Error;

    fn from_str(text: &str) -> Result<FluxVersion> {
        let invalid = || {
            Error::usage(
                format!("{text:?} is not a Flux version"),
                format!("pass a release as vMAJOR.MINOR.PATCH, e.g. {}", super::PINNED_VERSION),
            )
        };
        let numbers = text.strip_prefix('v').ok_or_else(invalid)?;
        let parts: Vec<&str> = numbers.split('.').collect();
        let [major, minor, patch] = parts.as_slice() else { return Err(invalid()) };
        let number = |part: &str| {
            (!part.is_empty() && part.chars().all(|c| c.is_ascii_digit())).then(|| part.parse::<u32>().ok()).flatten()
        };
        match (number(major), number(minor), number(patch)) {
            (Some(major), Some(minor), Some(patch)) => Ok(FluxVersion { major, minor, patch }),
            _ => Err(invalid()),
        }
    }
}

impl fmt::Display for FluxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// What moving from one release to another is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// The same release.
    UpToDate,
    /// A newer patch of the same line: always allowed.
    Patch,
    /// The next release line: the supported upgrade.
    NextMinor,
    /// More than one line ahead (`lines` lines), allowed only with `--allow-skip`.
    Skip {
        /// How many lines ahead.
        lines: u32,
    },
    /// An older release: refused.
    Downgrade,
}

/// Classifies the move from `current` to `target`.
pub fn classify(current: FluxVersion, target: FluxVersion) -> Move {
    if target == current {
        Move::UpToDate
    } else if target < current {
        Move::Downgrade
    } else if target.major != current.major {
        Move::Skip { lines: u32::MAX }
    } else {
        match target.minor - current.minor {
            0 => Move::Patch,
            1 => Move::NextMinor,
            lines => Move::Skip { lines },
        }
    }
}

/// The API versions each Flux line removed: `(line, group, version)`. A line serves every
/// version of a Flux group that no line up to it removed.
const REMOVALS: [(u32, &str, &str); 10] = [
    (7, "source.toolkit.fluxcd.io", "v1beta1"),
    (7, "kustomize.toolkit.fluxcd.io", "v1beta1"),
    (7, "helm.toolkit.fluxcd.io", "v2beta1"),
    (7, "image.toolkit.fluxcd.io", "v1beta1"),
    (7, "notification.toolkit.fluxcd.io", "v1beta1"),
    (8, "source.toolkit.fluxcd.io", "v1beta2"),
    (8, "kustomize.toolkit.fluxcd.io", "v1beta2"),
    (8, "helm.toolkit.fluxcd.io", "v2beta2"),
    (9, "image.toolkit.fluxcd.io", "v1beta2"),
    (9, "notification.toolkit.fluxcd.io", "v1beta2"),
];

/// The line that removed `group/version`, when one did.
pub fn removed_in(group: &str, version: &str) -> Option<String> {
    REMOVALS.iter().find(|(_, g, v)| *g == group && *v == version).map(|(minor, _, _)| format!("v2.{minor}"))
}

/// Whether `target` serves `group/version` (a Flux group; other groups are not ours to judge).
pub fn serves(target: FluxVersion, group: &str, version: &str) -> bool {
    !REMOVALS.iter().any(|(minor, g, v)| *g == group && *v == version && *minor <= target.minor)
}

/// The latest API version of each Flux kind since Flux v2.7: flux migrate's
/// `flux27LatestAPIVersions`, `(group, kind, version)`.
const LATEST: [(&str, &str, &str); 15] = [
    ("source.toolkit.fluxcd.io", "Bucket", "v1"),
    ("source.toolkit.fluxcd.io", "GitRepository", "v1"),
    ("source.toolkit.fluxcd.io", "OCIRepository", "v1"),
    ("source.toolkit.fluxcd.io", "HelmRepository", "v1"),
    ("source.toolkit.fluxcd.io", "HelmChart", "v1"),
    ("source.toolkit.fluxcd.io", "ExternalArtifact", "v1"),
    ("kustomize.toolkit.fluxcd.io", "Kustomization", "v1"),
    ("helm.toolkit.fluxcd.io", "HelmRelease", "v2"),
    ("notification.toolkit.fluxcd.io", "Receiver", "v1"),
    ("notification.toolkit.fluxcd.io", "Alert", "v1beta3"),
    ("notification.toolkit.fluxcd.io", "Provider", "v1beta3"),
    ("image.toolkit.fluxcd.io", "ImageRepository", "v1"),
    ("image.toolkit.fluxcd.io", "ImagePolicy", "v1"),
    ("image.toolkit.fluxcd.io", "ImageUpdateAutomation", "v1"),
    ("source.extensions.fluxcd.io", "ArtifactGenerator", "v1beta1"),
];

/// The version a manifest of `group`/`kind` is migrated to; `None` for kinds that are not Flux's.
pub fn latest_version(group: &str, kind: &str) -> Option<&'static str> {
    LATEST.iter().find(|(g, k, _)| *g == group && *k == kind).map(|(_, _, version)| *version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> FluxVersion {
        text.parse().unwrap()
    }

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(v("v2.9.4"), FluxVersion { major: 2, minor: 9, patch: 4 });
        assert_eq!(v("v2.10.0").to_string(), "v2.10.0");
        assert!(v("v2.10.0") > v("v2.9.4"), "numeric, not text, order");
        for bad in ["2.9.4", "v2.9", "v2.9.x", "latest", "v2.9.4-rc.1", "v2..1", ""] {
            let error = bad.parse::<FluxVersion>().unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{bad}");
        }
    }

    #[test]
    fn moves_are_classified() {
        assert_eq!(classify(v("v2.8.3"), v("v2.9.4")), Move::NextMinor);
        assert_eq!(classify(v("v2.9.3"), v("v2.9.4")), Move::Patch);
        assert_eq!(classify(v("v2.9.4"), v("v2.9.4")), Move::UpToDate);
        assert_eq!(classify(v("v2.7.0"), v("v2.9.4")), Move::Skip { lines: 2 });
        assert_eq!(classify(v("v2.9.4"), v("v2.8.3")), Move::Downgrade);
        assert_eq!(classify(v("v2.9.4"), v("v2.9.3")), Move::Downgrade);
    }

    #[test]
    fn removals_follow_the_release_notes() {
        assert!(serves(v("v2.8.3"), "notification.toolkit.fluxcd.io", "v1beta2"));
        assert!(!serves(v("v2.9.0"), "notification.toolkit.fluxcd.io", "v1beta2"));
        assert!(serves(v("v2.9.4"), "notification.toolkit.fluxcd.io", "v1beta3"), "Alert and Provider stay");
        assert!(!serves(v("v2.8.0"), "source.toolkit.fluxcd.io", "v1beta2"));
        assert!(serves(v("v2.7.5"), "helm.toolkit.fluxcd.io", "v2beta2"));
        assert!(!serves(v("v2.7.5"), "helm.toolkit.fluxcd.io", "v2beta1"));
        assert_eq!(removed_in("kustomize.toolkit.fluxcd.io", "v1beta2").as_deref(), Some("v2.8"));
        assert_eq!(latest_version("notification.toolkit.fluxcd.io", "Alert"), Some("v1beta3"));
        assert_eq!(latest_version("apps", "Deployment"), None);
    }

    #[test]
    fn only_lines_up_to_the_pinned_one_are_known() {
        let pinned = FluxVersion::pinned();
        assert!(pinned.is_known());
        assert!(!FluxVersion { minor: pinned.minor + 1, patch: 0, ..pinned }.is_known());
        assert!(!v("v3.0.0").is_known());
    }
}
