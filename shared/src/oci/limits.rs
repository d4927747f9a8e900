//! How much of an artifact we read before refusing it. A registry, or whoever pushed to it,
//! chooses what a manifest and a tarball declare; a gzip layer of a few kilobytes can inflate to
//! gigabytes. Every size is checked against a limit before it is allocated or written, and
//! counted while it streams, so a crafted artifact is refused (exit 2) with nothing written.
//!
//! The defaults (`artifact pull --help`): a 4 MiB manifest (what the OCI distribution spec asks
//! registries to accept at least, and containerd's own limit), a 100 MiB layer and 100 MiB
//! unpacked (Flux's own untar limit, fluxcd/pkg/tar's `DefaultMaxUntarSize`), 10 000 entries.

/// `--max-manifest-size`'s default.
pub const MANIFEST_FLAG: &str = "4MiB";
/// `--max-layer-size`'s default.
pub const LAYER_FLAG: &str = "100MiB";
/// `--max-unpacked-size`'s default.
pub const UNPACKED_FLAG: &str = "100MiB";
/// `--max-entries`' default.
pub const ENTRIES_FLAG: &str = "10000";

/// The limits one pull reads under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The manifest's bytes.
    pub manifest: u64,
    /// The layer's bytes, as the registry sends them (gzipped).
    pub layer: u64,
    /// The tarball's bytes once gunzipped, headers included: every entry's declared size is
    /// checked against what is left of it before the entry is read.
    pub unpacked: u64,
    /// Files, directories and other entries of the tarball.
    pub entries: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        let size = |text: &str| parse_size(text).unwrap_or(u64::MAX);
        Limits {
            manifest: size(MANIFEST_FLAG),
            layer: size(LAYER_FLAG),
            unpacked: size(UNPACKED_FLAG),
            entries: ENTRIES_FLAG.parse().unwrap_or(u64::MAX),
        }
    }
}

impl Limits {
    /// No limit: for our own tarball of a local directory, which nobody else wrote.
    pub const NONE: Limits = Limits { manifest: u64::MAX, layer: u64::MAX, unpacked: u64::MAX, entries: u64::MAX };
}

/// Parses a size: bytes, or a number with `KiB`, `MiB` or `GiB` (`k`, `M`, `G` and `KB`, `MB`,
/// `GB` read as the same powers of two).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("{text:?} is not a size: write bytes, or a number with KiB, MiB or GiB")),
    };
    let number: u64 = number.parse().map_err(|_| format!("{text:?} is not a size: it needs a number, e.g. 100MiB"))?;
    number.checked_mul(1 << shift).ok_or_else(|| format!("{text:?} is too large"))
}

/// A size as a person reads it: `100 MiB`, `512 KiB`, `300 bytes`.
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{:.0} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.0} KiB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_powers_of_two() {
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("100 MB"), Ok(100 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1234"), Ok(1234));
        for bad in ["", "MiB", "1.5MiB", "10 TiB", "-1", "99999999999999999999GiB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let limits = Limits::default();
        assert_eq!(limits, Limits { manifest: 4 << 20, layer: 100 << 20, unpacked: 100 << 20, entries: 10_000 });
        assert_eq!(size_text(limits.unpacked), "100 MiB");
        assert_eq!(size_text(4 << 30), "4 GiB");
        assert_eq!(size_text(1536), "2 KiB");
        assert_eq!(size_text(300), "300 bytes");
    }
}
