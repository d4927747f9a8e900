//! Where a registry may have our credentials sent. A registry answers `/v2/` with a challenge,
//! and a Bearer challenge names a token service (its `realm`) that the registry client then sends
//! the user's password to. The realm is the registry's word, so it is checked like any input: the
//! password goes only over HTTPS (plain HTTP only on this machine) and only to the registry's own
//! origin or its own site (Docker Hub's `index.docker.io` asks `auth.docker.io`).

use url::Url;

/// The `realm` of a Bearer challenge (`WWW-Authenticate: Bearer realm="…",service="…"`); `None`
/// for a Basic challenge or one without a realm.
pub(super) fn bearer_realm(challenge: &str) -> Option<String> {
    let (scheme, parameters) = challenge.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    parameters.split(',').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        key.trim().eq_ignore_ascii_case("realm").then(|| value.trim().trim_matches('"').to_string())
    })
}

/// Whether the token service at `realm` may have the credentials of the registry at `registry`
/// (`scheme://host[:port]`).
pub(super) fn may_receive_credentials(registry: &Url, realm: &Url) -> bool {
    if !crate::http::carries_credentials(realm) {
        return false;
    }
    if crate::http::same_origin(registry, realm) {
        return true;
    }
    match (registry.host(), realm.host()) {
        (Some(url::Host::Domain(registry)), Some(url::Host::Domain(realm))) => site(registry) == site(realm),
        // An address is its own site: another port on it may be another program.
        _ => false,
    }
}

/// The last two labels of a host name, lower case: `index.docker.io` and `auth.docker.io` are
/// both `docker.io`.
fn site(host: &str) -> String {
    let labels: Vec<&str> = host.trim_end_matches('.').rsplitn(3, '.').take(2).collect();
    labels.into_iter().rev().collect::<Vec<_>>().join(".").to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    fn allowed(registry: &str, realm: &str) -> bool {
        may_receive_credentials(&Url::parse(registry).unwrap(), &Url::parse(realm).unwrap())
    }

    #[test]
    fn the_realm_of_a_bearer_challenge_is_read_and_a_basic_challenge_has_none() {
        let hub = r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io""#;
        assert_eq!(bearer_realm(hub).as_deref(), Some("https://auth.docker.io/token"));
        assert_eq!(
            bearer_realm(r#"bearer service="x", realm="https://ghcr.io/token""#).unwrap(),
            "https://ghcr.io/token"
        );
        assert_eq!(bearer_realm(r#"Basic realm="registry""#), None);
        assert_eq!(bearer_realm("Bearer"), None);
    }

    #[test]
    fn credentials_go_to_the_registrys_own_origin_or_site_over_https_only() {
        assert!(allowed("https://index.docker.io", "https://auth.docker.io/token"));
        assert!(allowed("https://ghcr.io", "https://ghcr.io/token"));
        assert!(allowed("http://127.0.0.1:5000", "http://127.0.0.1:5000/token"));
        assert!(!allowed("https://ghcr.io", "https://collector.example/token"), "another site");
        assert!(!allowed("https://registry.example.com", "http://auth.example.com/token"), "plain HTTP");
        assert!(!allowed("http://127.0.0.1:5000", "http://127.0.0.1:5001/token"), "another port of an address");
        assert!(!allowed("https://10.0.0.5", "https://10.0.0.6/token"), "another address");
        assert!(!allowed("https://registry.example.com", "file:///etc/passwd"));
    }
}
