//! #56, "one gate for credentials", checked against the code: a credential is put on a request
//! only by the gate (`http/gate.rs`), or handed to a library that sends it itself only where the
//! gate decided first.

use super::{Source, code_of, sources};

/// The code that puts a credential on a request, and the only files that may hold it: the HTTP
/// gate (`http/gate.rs`, bound to one origin, https or loopback, redirects within the origin);
/// the two places that hand one to a library that sends it itself, each after asking the gate
/// ([`LIBRARY_HANDOFFS`]): git's credential callback (`git/session.rs`) and the registry client
/// (`oci/registry.rs`). `mcp/http.rs` reads the header of the requests it serves.
const CREDENTIAL_CALLS: [(&str, &[&str]); 9] = [
    ("bearer_auth(", &[]),
    ("basic_auth(", &[]),
    ("AUTHORIZATION", &["http/gate.rs", "mcp/http.rs"]),
    ("set_sensitive(", &["http/gate.rs"]),
    ("default_headers(", &["http/gate.rs", "oci/registry.rs"]),
    ("Carries::Credentials", &["http.rs", "http/gate.rs"]),
    ("Cred::userpass_plaintext(", &["git/session.rs"]),
    ("Cred::ssh_key_from_memory(", &["git/session.rs"]),
    ("RegistryAuth::Basic(", &["oci/registry.rs"]),
];

/// The files that hand a credential to a library, and the gate's decision each asks first.
const LIBRARY_HANDOFFS: [(&str, &str); 2] =
    [("git/session.rs", "http::admit("), ("oci/registry.rs", "http::admit_token_service(")];

/// The header names that carry a credential, as string literals (which [`code_of`] empties).
const CREDENTIAL_HEADERS: [&str; 2] = ["\"authorization\"", "\"private-token\""];

/// Each place of `sources` that attaches a credential outside the files allowed to.
fn credentials_outside_the_gate(sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources {
        let code = code_of(&source.text);
        for (call, allowed) in CREDENTIAL_CALLS {
            if code.contains(call) && !allowed.contains(&source.path.as_str()) {
                found.push(format!("{}: {call}", source.path));
            }
        }
        let literals: String = source
            .text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .map(str::to_ascii_lowercase)
            .collect::<Vec<_>>()
            .join("\n");
        for header in CREDENTIAL_HEADERS {
            if literals.contains(header) && source.path != "http/gate.rs" {
                found.push(format!("{}: {header}", source.path));
            }
        }
    }
    found
}

/// Each file allowed a credential call outside `http/` that is not a hand-off to a library, or
/// a hand-off that does not ask the gate first.
fn handoffs_without_the_gate(sources: &[Source]) -> Vec<String> {
    let allowed = CREDENTIAL_CALLS.iter().flat_map(|(_, files)| files.iter());
    let outside_http = allowed.filter(|file| !file.starts_with("http") && **file != "mcp/http.rs");
    let mut found: Vec<String> = outside_http
        .filter(|file| !LIBRARY_HANDOFFS.iter().any(|(handoff, _)| handoff == *file))
        .map(|file| format!("{file} is allowed a credential call and is no hand-off"))
        .collect();
    for (file, asks) in LIBRARY_HANDOFFS {
        let code = sources.iter().find(|source| source.path == file).map(|source| code_of(&source.text));
        if !code.is_some_and(|code| code.contains(asks)) {
            found.push(format!("{file} hands a credential to a library without {asks}"));
        }
    }
    found
}

/// #56, "one gate for credentials": a request carries a credential only through the gate, and a
/// credential goes to a library only where the gate decided where it may go.
#[test]
fn credentials_are_attached_only_through_the_gate() {
    let found = credentials_outside_the_gate(&sources());
    assert!(found.is_empty(), "credentials attached outside http/gate.rs (docs/security.md): {found:#?}");
    let found = handoffs_without_the_gate(&sources());
    assert!(found.is_empty(), "{found:#?}");
}

#[cfg(test)]
mod checks {
    use super::super::tree;
    use super::*;

    #[test]
    fn a_credential_attached_outside_the_gate_is_found_naming_its_file() {
        let files = tree(&[
            ("http/gate.rs", "fn f(r: R) { r.header(AUTHORIZATION, v); h.set_sensitive(true); }\n"),
            ("provider/client.rs", "fn f(r: R) -> R {\n    r.bearer_auth(token)\n}\n"),
            ("pr/mod.rs", "fn f(r: R) -> R { r.header(\"Private-Token\", t) }\n"),
            ("ui/mod.rs", "// bearer_auth( in a comment\nconst A: &str = \"basic_auth(\";\n"),
            ("oci/registry.rs", "fn f(r: R) -> R { r.basic_auth(u, p) }\n"),
        ]);
        assert_eq!(
            credentials_outside_the_gate(&files),
            ["provider/client.rs: bearer_auth(", "pr/mod.rs: \"private-token\"", "oci/registry.rs: basic_auth("]
        );
    }

    #[test]
    fn a_hand_off_to_a_library_that_does_not_ask_the_gate_is_found() {
        let files = tree(&[
            (
                "git/session.rs",
                "fn f() -> C { Cred::userpass_plaintext(u, p) }
",
            ),
            (
                "oci/registry.rs",
                "fn f() { crate::http::admit_token_service(&o, &r)?; RegistryAuth::Basic(u, p) }
",
            ),
        ]);
        assert_eq!(
            handoffs_without_the_gate(&files),
            ["git/session.rs hands a credential to a library without http::admit("]
        );
    }
}
