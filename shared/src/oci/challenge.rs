//! Where a registry may have our credentials sent. A registry answers `/v2/` with a challenge,
//! and a Bearer challenge names a token service (its `realm`) that the registry client then sends
//! the user's password to. The realm is the registry's word, so it is checked like any input, by
//! the gate ([`crate::http::admit_token_service`]): the password goes only over HTTPS (plain HTTP
//! only on this machine) and only to the registry's own origin or its own site.

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

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
}
