//! SSH host key verification against `known_hosts` text held in memory.
//!
//! libgit2 would read `~/.ssh/known_hosts` of whoever runs the command; a GitOps tool must
//! instead trust exactly the keys it was given (the same ones Flux gets in its Secret), so the
//! `certificate_check` callback calls [`verify`] with the server's raw host key.
//!
//! Supported, as OpenSSH reads them: `host`, `[host]:port`, comma lists, `*`/`?` wildcards,
//! `!` negations, hashed names (`|1|salt|hash`, what `ssh-keygen -H` and `HashKnownHosts yes`,
//! the Debian and Ubuntu default, write) and `@revoked`, which wins over any line accepting the
//! same key, wherever it stands. `@cert-authority` lines are not used: libssh2 does not do host
//! certificates, and the error says so when such a line names the host.

use base64::Engine;
use hmac::{Hmac, Mac};
use ssh_key::PublicKey;
use ssh_key::sha2::{Digest, Sha256};

use super::GitError;

/// What a line's leading `@` marker makes of its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// No marker: the key is accepted for the host.
    Accept,
    /// `@revoked`: the key is refused, even if another line accepts it.
    Revoked,
    /// `@cert-authority`: a host certificate authority, which we cannot check.
    CertAuthority,
}

/// One known_hosts line that names the host, read.
struct Entry {
    marker: Marker,
    /// The key in SSH wire format; `None` when the line could not be read.
    key: Option<Vec<u8>>,
}

/// Checks the key a server offered against the `known_hosts` entries for `host:port`.
///
/// `offered` is the key in SSH wire format (what libssh2 hands libgit2), so comparing bytes
/// compares key type and key material at once.
pub(super) fn verify(known_hosts: &str, host: &str, port: u16, offered: &[u8]) -> Result<(), GitError> {
    let name = host_key_name(host, port);
    let found = describe(offered);
    let entries: Vec<Entry> = known_hosts.lines().filter_map(|line| entry_for(line, &name)).collect();
    let with = |marker: Marker| entries.iter().filter(move |entry| entry.marker == marker);
    if with(Marker::Revoked).any(|entry| entry.key.as_deref() == Some(offered)) {
        return Err(GitError::HostKeyRevoked { host: name, found });
    }
    if with(Marker::Accept).any(|entry| entry.key.as_deref() == Some(offered)) {
        return Ok(());
    }
    let expected: Vec<String> = with(Marker::Accept).filter_map(|entry| entry.key.as_deref()).map(describe).collect();
    if !expected.is_empty() {
        return Err(GitError::HostKeyMismatch { host: name, expected, found });
    }
    let mut notes = Vec::new();
    let authorities = with(Marker::CertAuthority).count();
    if authorities > 0 {
        notes.push(format!(
            "{authorities} @cert-authority line{} for it not used: host certificates are not supported, list the host's own key",
            plural(authorities)
        ));
    }
    let unreadable = entries.iter().filter(|entry| entry.key.is_none()).count();
    if unreadable > 0 {
        notes.push(format!("{unreadable} line{} for this host could not be read", plural(unreadable)));
    }
    Err(GitError::UnknownHost { host: name, found, note: (!notes.is_empty()).then(|| notes.join("; ")) })
}

/// The lines of `known_hosts` that name `host:port` (markers and hashed names included), each
/// with its newline: what is pinned for Flux and later checked by [`verify`].
pub fn lines_for(known_hosts: &str, host: &str, port: u16) -> String {
    let name = host_key_name(host, port);
    known_hosts
        .lines()
        .filter(|line| entry_for(line, &name).is_some())
        .map(|line| format!("{}\n", line.trim()))
        .collect()
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// The line read, when it names the host `name` (`host` or `[host]:port`).
fn entry_for(line: &str, name: &str) -> Option<Entry> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut fields = line.split_whitespace();
    let mut patterns = fields.next()?;
    let mut marker = Marker::Accept;
    if let Some(word) = patterns.strip_prefix('@') {
        marker = match word {
            "revoked" => Marker::Revoked,
            "cert-authority" => Marker::CertAuthority,
            // An unknown marker: OpenSSH skips the line.
            _ => return None,
        };
        patterns = fields.next()?;
    }
    if !names(patterns, name) {
        return None;
    }
    let key = match (fields.next(), fields.next()) {
        (Some(key_type), Some(base64)) => {
            PublicKey::from_openssh(&format!("{key_type} {base64}")).ok().and_then(|key| key.to_bytes().ok())
        }
        _ => None,
    };
    Some(Entry { marker, key })
}

/// Whether a line's host field names `name`: a hashed name, or patterns in clear.
fn names(patterns: &str, name: &str) -> bool {
    match patterns.strip_prefix("|1|") {
        Some(hashed) => hashed_name_matches(hashed, name),
        None => patterns_match(patterns, name),
    }
}

/// OpenSSH's hashed names, `|1|<base64 salt>|<base64 HMAC-SHA1(salt, name)>`: the name cannot be
/// read back, only checked (compared in constant time).
fn hashed_name_matches(salt_and_hash: &str, name: &str) -> bool {
    let base64 = base64::engine::general_purpose::STANDARD;
    let Some((salt, hash)) = salt_and_hash.split_once('|') else {
        return false;
    };
    let (Ok(salt), Ok(hash)) = (base64.decode(salt), base64.decode(hash)) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<sha1::Sha1>::new_from_slice(&salt) else {
        return false;
    };
    mac.update(name.as_bytes());
    mac.verify_slice(&hash).is_ok()
}

/// The name OpenSSH looks up: `host` on port 22, `[host]:port` elsewhere.
pub(super) fn host_key_name(host: &str, port: u16) -> String {
    let host = host.to_ascii_lowercase();
    if port == 22 { host } else { format!("[{host}]:{port}") }
}

/// OpenSSH's rule: an entry applies when a pattern matches and no negated pattern does.
fn patterns_match(patterns: &str, name: &str) -> bool {
    let mut matched = false;
    for pattern in patterns.split(',') {
        let pattern = pattern.to_ascii_lowercase();
        if let Some(negated) = pattern.strip_prefix('!') {
            if glob(negated.as_bytes(), name.as_bytes()) {
                return false;
            }
        } else if glob(pattern.as_bytes(), name.as_bytes()) {
            matched = true;
        }
    }
    matched
}

/// `*` and `?` wildcards, as in OpenSSH's `match_pattern`. The patterns come from the cluster's
/// Secret, so the match must not be exponential in its stars: on a mismatch after a `*`, only the
/// last `*` is retried one byte further (what it skipped earlier no later star needs back), which
/// bounds the work by the pattern's length times the text's.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // The last `*` seen, and where in the text its match would resume.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    star = Some((star_p, star_t + 1));
                    p = star_p + 1;
                    t = star_t + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// `ssh-ed25519 SHA256:…`: the key type and the fingerprint `ssh-keygen -l` and `ssh` print.
pub(super) fn describe(key: &[u8]) -> String {
    // The wire format starts with the type name as an SSH string (4-byte length, then bytes).
    let key_type = key
        .get(..4)
        .and_then(|len| <[u8; 4]>::try_from(len).ok())
        .map(|len| u32::from_be_bytes(len) as usize)
        .and_then(|len| key.get(4..4 + len))
        .and_then(|name| std::str::from_utf8(name).ok())
        .unwrap_or("unknown-key-type");
    format!("{key_type} {}", fingerprint(key))
}

/// `SHA256:<base64 without padding>` of a key in wire format, as OpenSSH prints it.
fn fingerprint(key: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let digest = Sha256::digest(key);
    let mut out = String::from("SHA256:");
    for chunk in digest.chunks(3) {
        let bytes = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]);
        for index in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * index)) as usize & 63]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two real ed25519 host keys (public halves only).
    const KEY_A: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILM+rvN+ot98qgEN796jTiQfZfG1KaT0PtFDJ/XFSqti";
    const KEY_B: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKYUTgzix1A0vPziK4WAAkQGDmOyn2P19Ctu5Rdr/BEx";

    fn blob(line: &str) -> Vec<u8> {
        PublicKey::from_openssh(line).unwrap().to_bytes().unwrap()
    }

    #[test]
    fn fingerprints_read_like_ssh_keygen() {
        let key = PublicKey::from_openssh(KEY_A).unwrap();
        let ours = fingerprint(&blob(KEY_A));
        assert_eq!(ours, key.fingerprint(ssh_key::HashAlg::Sha256).to_string());
        assert!(describe(&blob(KEY_A)).starts_with("ssh-ed25519 SHA256:"));
        // What `ssh-keygen -lf` printed for KEY_B.
        assert_eq!(describe(&blob(KEY_B)), "ssh-ed25519 SHA256:HwbEYIu/+E6NqgMa0dPi8b/vknVHYRL4kMsAU6RcTrc");
    }

    #[test]
    fn plain_bracketed_and_listed_hosts_match() {
        let a = blob(KEY_A);
        assert!(verify(&format!("example.com {KEY_A}\n"), "example.com", 22, &a).is_ok());
        assert!(verify(&format!("Example.COM {KEY_A}"), "example.com", 22, &a).is_ok());
        assert!(verify(&format!("[127.0.0.1]:2222 {KEY_A} comment"), "127.0.0.1", 2222, &a).is_ok());
        assert!(verify(&format!("other,[git.example.com]:2222,x {KEY_A}"), "git.example.com", 2222, &a).is_ok());
        assert!(verify(&format!("*.example.com {KEY_A}"), "git.example.com", 22, &a).is_ok());
        assert!(verify(&format!("git.example.co? {KEY_A}"), "git.example.com", 22, &a).is_ok());
        // A non-standard port needs the bracketed form, as in OpenSSH.
        assert!(matches!(
            verify(&format!("127.0.0.1 {KEY_A}"), "127.0.0.1", 2222, &a),
            Err(GitError::UnknownHost { .. })
        ));
        // A negation excludes the host from the whole line.
        assert!(matches!(
            verify(&format!("*.example.com,!git.example.com {KEY_A}"), "git.example.com", 22, &a),
            Err(GitError::UnknownHost { .. })
        ));
    }

    #[test]
    fn wildcards_match_as_openssh_and_in_linear_time() {
        for (pattern, text, expected) in [
            ("", "", true),
            ("", "a", false),
            ("*", "", true),
            ("a*", "a", true),
            ("?", "", false),
            ("a*c", "abbbc", true),
            ("a*c", "abbbcd", false),
            ("*.example.com", "git.example.com", true),
            ("*.example.com", "example.com", false),
            ("g?t.*.com", "git.example.com", true),
            ("*a*b", "aaab", true),
            ("*ab*cd", "xabyabcd", true),
        ] {
            assert_eq!(glob(pattern.as_bytes(), text.as_bytes()), expected, "{pattern} against {text}");
        }
        // The recursive matcher took exponential time on this (a pattern from a cluster's Secret).
        let started = std::time::Instant::now();
        let pattern = "*a".repeat(13) + "*b";
        assert!(!glob(pattern.as_bytes(), "a".repeat(60).as_bytes()));
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "took {:?}", started.elapsed());
    }

    #[test]
    fn a_different_key_is_a_mismatch_naming_both_fingerprints() {
        let text = format!("# comment\n\nexample.com {KEY_B}\nelsewhere {KEY_A}\n");
        let error = verify(&text, "example.com", 22, &blob(KEY_A)).unwrap_err();
        let GitError::HostKeyMismatch { host, expected, found } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(host, "example.com");
        assert_eq!(expected, &[describe(&blob(KEY_B))]);
        assert_eq!(found, &describe(&blob(KEY_A)));
        let message = error.to_string();
        assert!(message.contains(&fingerprint(&blob(KEY_A))), "{message}");
        assert!(message.contains(&fingerprint(&blob(KEY_B))), "{message}");
    }

    #[test]
    fn another_entry_with_the_right_key_wins_over_a_stale_one() {
        let text = format!("example.com {KEY_B}\nexample.com {KEY_A}\n");
        assert!(verify(&text, "example.com", 22, &blob(KEY_A)).is_ok());
    }

    /// Hashed names as `ssh-keygen -H` writes them: HMAC-SHA1 keyed by the salt (these two were
    /// made with Python's hmac module, independently of our code).
    const HASHED_EXAMPLE: &str = "|1|MDEyMzQ1Njc4OWFiY2RlZmdoaWo=|jaHXoMQTU/+rEgquOJTQzPGCF4I=";
    const HASHED_LOCAL_2222: &str = "|1|c2FsdHNhbHRzYWx0c2FsdHNhbHQ=|iebyi1cfsh9nkBkSyjb/Fnl3o2M=";

    #[test]
    fn hashed_names_match_their_host_and_port_only() {
        let a = blob(KEY_A);
        assert!(verify(&format!("{HASHED_EXAMPLE} {KEY_A}\n"), "example.com", 22, &a).is_ok());
        assert!(verify(&format!("{HASHED_EXAMPLE} {KEY_A}"), "EXAMPLE.com", 22, &a).is_ok());
        assert!(verify(&format!("{HASHED_LOCAL_2222} {KEY_A}"), "127.0.0.1", 2222, &a).is_ok());
        for (host, port) in [("example.org", 22), ("example.com", 2222), ("127.0.0.1", 22)] {
            let text = format!("{HASHED_EXAMPLE} {KEY_A}\n{HASHED_LOCAL_2222} {KEY_A}\n");
            assert!(matches!(verify(&text, host, port, &a), Err(GitError::UnknownHost { note: None, .. })), "{host}");
        }
        let mismatch = verify(&format!("{HASHED_EXAMPLE} {KEY_B}"), "example.com", 22, &a).unwrap_err();
        assert!(matches!(mismatch, GitError::HostKeyMismatch { .. }), "{mismatch:?}");
        // A broken hash or salt names no host.
        for broken in ["|1|%%%|jaHXoMQTU/+rEgquOJTQzPGCF4I=", "|1|MDEy", "|1|MDEyMzQ1Njc4OWFiY2RlZmdoaWo=|AAAA"] {
            assert!(verify(&format!("{broken} {KEY_A}"), "example.com", 22, &a).is_err(), "{broken}");
        }
        let lines = format!("{HASHED_EXAMPLE} {KEY_A}\nother {KEY_B}\n@revoked {HASHED_EXAMPLE} {KEY_B}\n");
        assert_eq!(
            lines_for(&lines, "example.com", 22),
            format!("{HASHED_EXAMPLE} {KEY_A}\n@revoked {HASHED_EXAMPLE} {KEY_B}\n")
        );
    }

    #[test]
    fn a_revoked_key_is_refused_wherever_its_line_stands() {
        let a = blob(KEY_A);
        for text in [
            format!("@revoked * {KEY_A}\nexample.com {KEY_A}\n"),
            format!("example.com {KEY_A}\n@revoked * {KEY_A}\n"),
            format!("{HASHED_EXAMPLE} {KEY_A}\n@revoked {HASHED_EXAMPLE} {KEY_A}\n"),
        ] {
            assert!(matches!(verify(&text, "example.com", 22, &a), Err(GitError::HostKeyRevoked { .. })), "{text}");
        }
        // Revoking another key leaves this one accepted.
        assert!(verify(&format!("@revoked * {KEY_B}\nexample.com {KEY_A}\n"), "example.com", 22, &a).is_ok());
    }

    #[test]
    fn unknown_cert_authority_and_garbage_entries() {
        let a = blob(KEY_A);
        let error = verify("", "example.com", 22, &a).unwrap_err();
        assert!(matches!(&error, GitError::UnknownHost { note: None, .. }));
        assert!(
            error.to_string().contains(&fingerprint(&a)),
            "the unknown host error shows what the server offered: {error}"
        );

        // A certificate authority is not a key of the host: it is not used, and the error says so.
        let error = verify(&format!("@cert-authority *.example.com {KEY_A}\n"), "git.example.com", 22, &a).unwrap_err();
        let GitError::UnknownHost { note: Some(note), .. } = &error else {
            panic!("{error:?}");
        };
        assert!(note.contains("1 @cert-authority line for it not used: host certificates are not supported"), "{note}");

        let garbage = "example.com ssh-ed25519 not-base64\n@future-marker * ssh-ed25519 AAAA\nexample.com\n";
        let error = verify(garbage, "example.com", 22, &a).unwrap_err();
        let GitError::UnknownHost { note: Some(note), .. } = &error else {
            panic!("{error:?}");
        };
        assert!(note.contains("2 lines for this host could not be read"), "{note}");
    }
}
