//! A Flux release tag, checked before it reaches a URL, a path or a process, and whether this
//! build pins it. A tag comes from flags, from a repo's `gitops.yaml` and from the cluster's
//! labels, so it is input like any other: only `vMAJOR.MINOR.PATCH[-PRERELEASE]` names a
//! release directory on the release server or in the cache (the url crate would resolve `..`
//! and `\` in anything looser to a path of the server's choosing).

use std::fmt;
use std::str::FromStr;

use crate::dependencies;
use crate::env;
use crate::error::{Error, Result};

/// The longest tag accepted; Flux's are about ten characters.
const MAX_LEN: usize = 64;

/// `vMAJOR.MINOR.PATCH`, optionally followed by `-` and dot-separated alphanumeric identifiers
/// (`v2.9.0-rc.1`), with no leading zeros: nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tag(String);

impl Tag {
    /// The release this build installs, [`dependencies::FLUX_VERSION`].
    pub fn pinned() -> Tag {
        // dependencies.toml is compiled in and a unit test parses it: this cannot fail at run time.
        Tag(dependencies::FLUX_VERSION.to_string())
    }

    /// The tag as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What dependencies.toml pins for this tag.
    pub fn pin(&self) -> Pin {
        match dependencies::FLUX_PINNED_RELEASES.iter().find(|(tag, _)| *tag == self.0) {
            Some((_, Some(sha))) => Pin::Checksums((*sha).to_string()),
            Some((_, None)) => Pin::DevelopmentBuild,
            None => Pin::Unpinned,
        }
    }
}

/// How far this build vouches for a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    /// The sha256 of the release's checksums file is compiled in: the whole release is pinned.
    Checksums(String),
    /// Listed, but this development build has no sha256 for it: the archive is checked against
    /// the release's own checksums file alone.
    DevelopmentBuild,
    /// Not listed: runs only with `--allow-unpinned-flux`.
    Unpinned,
}

impl Pin {
    /// The warning a development build gives on every download and in `version`, if any.
    /// `tool` names the CLI (`flux`, `helm`).
    pub fn development_warning(&self, tool: &str, tag: &Tag) -> Option<String> {
        (*self == Pin::DevelopmentBuild).then(|| {
            format!(
                "this is a development build: it pins no sha256 for {tool} {tag}'s checksums file, so the download is checked against that file alone"
            )
        })
    }
}

/// The releases this build pins, for messages: `v2.9.4, v2.9.3`.
pub fn pinned_list() -> String {
    dependencies::FLUX_PINNED_RELEASES.iter().map(|(tag, _)| *tag).collect::<Vec<_>>().join(", ")
}

/// The refusal of a release this build does not pin.
pub fn unpinned(tag: &Tag) -> Error {
    Error::Usage {
        message: format!("flux {tag} is not a release this kubectl-gitops pins ({})", pinned_list()),
        hint: Some(format!(
            "use {}, or pass --allow-unpinned-flux to run {tag} checked only against its own checksums file",
            dependencies::FLUX_VERSION
        )),
    }
}

impl FromStr for Tag {
    type Err = Error;

    fn from_str(text: &str) -> Result<Tag> {
        let shown: String = text.chars().take(MAX_LEN).flat_map(char::escape_default).collect();
        let invalid = || {
            Error::usage(
                format!("\"{shown}\" is not a Flux release tag"),
                format!(
                    "give a release as vMAJOR.MINOR.PATCH, e.g. {}; for a CLI of your own, pass --flux-bin (or {})",
                    dependencies::FLUX_VERSION,
                    env::KUBECTL_GITOPS_FLUX_BIN
                ),
            )
        };
        if text.len() > MAX_LEN {
            return Err(invalid());
        }
        let numbers = text.strip_prefix('v').ok_or_else(invalid)?;
        let (core, prerelease) = match numbers.split_once('-') {
            Some((core, prerelease)) => (core, Some(prerelease)),
            None => (numbers, None),
        };
        let number = |part: &str| {
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) && (part == "0" || !part.starts_with('0'))
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() != 3 || !parts.iter().all(|part| number(part)) {
            return Err(invalid());
        }
        let identifier = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric());
        if prerelease.is_some_and(|prerelease| !prerelease.split('.').all(identifier)) {
            return Err(invalid());
        }
        Ok(Tag(text.to_string()))
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    #[test]
    fn only_release_tags_parse() {
        for good in ["v2.9.4", "v0.0.0", "v10.20.30", "v2.9.0-rc.1", "v2.10.0-beta1"] {
            assert_eq!(good.parse::<Tag>().unwrap().as_str(), good);
        }
        for bad in [
            "",
            "2.9.4",
            "v2.9",
            "v2.9.4.1",
            "v02.9.4",
            "v2.9.4-",
            "v2.9.4-rc..1",
            "v2.9.4-rc_1",
            "v2.9.4+build",
            "v2.9.4/../../../../evil/x",
            "..\\..\\..\\..\\evil\\repo\\releases\\download\\t1\\x",
            "v2.9.4%2F..",
            "v2.9.4\n",
            " v2.9.4",
        ] {
            let error = bad.parse::<Tag>().unwrap_err();
            assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{bad:?}");
            assert!(error.to_string().ends_with("is not a Flux release tag"), "{error}");
            assert!(!error.to_string().contains('\n'), "control characters are escaped: {error}");
        }
        let long = format!("v2.9.4-{}", "a".repeat(MAX_LEN));
        assert!(long.parse::<Tag>().is_err());
    }

    #[test]
    fn every_pinned_release_is_a_tag_and_the_installed_version_is_pinned() {
        for (tag, sha) in dependencies::FLUX_PINNED_RELEASES {
            tag.parse::<Tag>().unwrap();
            assert!(sha.is_none_or(|sha| sha.len() == 64), "{tag}");
        }
        let pinned: Tag = dependencies::FLUX_VERSION.parse().unwrap();
        assert_eq!(pinned, Tag::pinned());
        assert_ne!(pinned.pin(), Pin::Unpinned);
        assert_eq!("v1.0.0".parse::<Tag>().unwrap().pin(), Pin::Unpinned);
    }

    #[test]
    fn an_unpinned_release_is_refused_with_the_flag_that_allows_it() {
        let tag: Tag = "v2.8.0".parse().unwrap();
        let error = unpinned(&tag);
        assert_eq!(error.exit_code(), crate::error::ExitCode::Usage);
        assert!(error.to_string().starts_with("flux v2.8.0 is not a release this kubectl-gitops pins ("), "{error}");
        assert!(error.hint().unwrap().contains("--allow-unpinned-flux"));
        let warning = Pin::DevelopmentBuild.development_warning("flux", &tag).unwrap();
        assert!(warning.contains("development build") && warning.contains("flux v"), "{warning}");
        assert_eq!(Pin::Checksums("0".repeat(64)).development_warning("flux", &tag), None);
    }
}
