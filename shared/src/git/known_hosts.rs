//! SSH host key verification against `known_hosts` text held in memory.
//!
//! libgit2 would read `~/.ssh/known_hosts` of whoever runs the command; a GitOps tool must
//! instead trust exactly the keys it was given (the same ones Flux gets in its Secret), so the
//! `certificate_check` callback calls [`verify`] with the server's raw host key.
//!
//! Supported, as OpenSSH reads them: `host`, `[host]:port`, comma lists, `*`/`?` wildcards,
//! `!` negations and `@revoked`. Hashed host names (`|1|…`, from `ssh-keyscan -H`) need
//! HMAC-SHA1, which we do not carry; they are skipped and named in the error instead.
//! `@cert-authority` lines are skipped too: libssh2 does not do host certificates.

use ssh_key::PublicKey;
use ssh_key::sha2::{Digest, Sha256};

use super::GitError;

/// Checks the key a server offered against the `known_hosts` entries for `host:port`.
///
/// `offered` is the key in SSH wire format (what libssh2 hands libgit2), so comparing bytes
/// compares key type and key material at once.
pub(super) fn verify(known_hosts: &str, host: &str, port: u16, offered: &[u8]) -> Result<(), GitError> {
    let name = host_key_name(host, port);
    let found = describe(offered);
    let mut expected = Vec::new();
    let mut hashed = 0;
    let mut unreadable = 0;
    for line in known_hosts.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let Some(mut patterns) = fields.next() else {
            continue;
        };
        let mut revoked = false;
        if let Some(marker) = patterns.strip_prefix('@') {
            match marker {
                "revoked" => revoked = true,
                // Host certificates: libssh2 cannot check them, so they prove nothing here.
                _ => continue,
            }
            let Some(next) = fields.next() else {
                unreadable += 1;
                continue;
            };
            patterns = next;
        }
        if patterns.starts_with("|1|") {
            hashed += 1;
            continue;
        }
        if !patterns_match(patterns, &name) {
            continue;
        }
        let (Some(key_type), Some(base64)) = (fields.next(), fields.next()) else {
            unreadable += 1;
            continue;
        };
        let Some(key) =
            PublicKey::from_openssh(&format!("{key_type} {base64}")).ok().and_then(|key| key.to_bytes().ok())
        else {
            unreadable += 1;
            continue;
        };
        if revoked {
            if key == offered {
                return Err(GitError::HostKeyRevoked { host: name, found });
            }
            continue;
        }
        if key == offered {
            return Ok(());
        }
        expected.push(describe(&key));
    }
    if !expected.is_empty() {
        return Err(GitError::HostKeyMismatch { host: name, expected, found });
    }
    let mut notes = Vec::new();
    if hashed > 0 {
        notes.push(format!(
            "{hashed} hashed entr{} (|1|…) skipped: kubectl-gitops reads only host names in clear, as `ssh-keyscan` without -H prints them",
            if hashed == 1 { "y" } else { "ies" }
        ));
    }
    if unreadable > 0 {
        notes.push(format!(
            "{unreadable} line{} for this host could not be read",
            if unreadable == 1 { "" } else { "s" }
        ));
    }
    Err(GitError::UnknownHost { host: name, found, note: (!notes.is_empty()).then(|| notes.join("; ")) })
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

/// `*` and `?` wildcards, as in OpenSSH's `match_pattern`.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| glob(rest, &text[skip..])),
        Some((b'?', rest)) => !text.is_empty() && glob(rest, &text[1..]),
        Some((first, rest)) => text.first() == Some(first) && glob(rest, &text[1..]),
    }
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

    #[test]
    fn unknown_hashed_revoked_and_garbage_entries() {
        let a = blob(KEY_A);
        let error = verify("", "example.com", 22, &a).unwrap_err();
        assert!(matches!(&error, GitError::UnknownHost { note: None, .. }));
        assert!(
            error.to_string().contains(&fingerprint(&a)),
            "the unknown host error shows what the server offered: {error}"
        );

        let hashed = format!("|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= {KEY_A}");
        let error = verify(&hashed, "example.com", 22, &a).unwrap_err();
        let GitError::UnknownHost { note: Some(note), .. } = &error else {
            panic!("{error:?}");
        };
        assert!(note.contains("hashed"), "{note}");

        let revoked = format!("@revoked * {KEY_A}\nexample.com {KEY_A}\n");
        assert!(matches!(verify(&revoked, "example.com", 22, &a), Err(GitError::HostKeyRevoked { .. })));

        let garbage = "example.com ssh-ed25519 not-base64\n@cert-authority * ssh-ed25519 AAAA\n";
        let error = verify(garbage, "example.com", 22, &a).unwrap_err();
        let GitError::UnknownHost { note: Some(note), .. } = &error else {
            panic!("{error:?}");
        };
        assert!(note.contains("1 line for this host could not be read"), "{note}");
    }
}
