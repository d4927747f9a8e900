//! A host as a record, a flag, the environment or a file names it, parsed once and strictly into
//! an [`Origin`]: the URL a credential goes to is built from that value, and the binding of
//! [`crate::config::hosts`] compares that same value.
//!
//! Two parsers reading one text two ways is how a host gets smuggled: a record's
//! `127.0.0.1:8443/x@github.com` was `github.com` to the binding (it kept what follows the last
//! `@`) and `127.0.0.1:8443` to the URL (whose authority ends at the first `/`). So a host is
//! `host[:port]` and nothing else: no user, path, query, fragment, backslash, percent-escape or
//! whitespace, ASCII only (an internationalised name in punycode, `xn--…`), an IPv6 address in
//! brackets. A pasted `https://host/` is tolerated: it is the scheme we use anyway.

use std::fmt;
use std::net::Ipv6Addr;

use reqwest::Url;

/// How an [`Origin`] is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// TLS: what every host named by text is reached over.
    Https,
    /// Plain HTTP: only an API URL the user gives (`KUBECTL_GITOPS_*_API_URL`) says so.
    Http,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Scheme::Https => "https",
            Scheme::Http => "http",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Https => 443,
            Scheme::Http => 80,
        }
    }
}

/// A scheme, a host (lower case; an IPv6 address in brackets) and a port: where requests go.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    scheme: Scheme,
    host: String,
    port: u16,
}

/// What makes a text no `host[:port]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaw {
    Empty,
    Scheme,
    Userinfo,
    Path,
    Backslash,
    Query,
    Fragment,
    Percent,
    Whitespace,
    NonAscii,
    Character(char),
    Label,
    Ipv6,
    Port,
}

impl fmt::Display for Flaw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Flaw::Empty => f.write_str("it is empty"),
            Flaw::Scheme => f.write_str("it names a scheme other than https://"),
            Flaw::Userinfo => f.write_str("it has a user part (`@`)"),
            Flaw::Path => f.write_str("it has a path (`/`)"),
            Flaw::Backslash => f.write_str("it has a backslash"),
            Flaw::Query => f.write_str("it has a query (`?`)"),
            Flaw::Fragment => f.write_str("it has a fragment (`#`)"),
            Flaw::Percent => f.write_str("it has a percent-escape (`%`)"),
            Flaw::Whitespace => f.write_str("it has whitespace or control characters"),
            Flaw::NonAscii => f.write_str("it has characters that are not ASCII"),
            Flaw::Character(c) => write!(f, "it has the character {c:?}"),
            Flaw::Label => f.write_str("it has an empty label (a leading, trailing or doubled `.`)"),
            Flaw::Ipv6 => f.write_str("it is not an IPv6 address in brackets"),
            Flaw::Port => f.write_str("its port is not a number from 1 to 65535"),
        }
    }
}

/// A text refused as a host, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a host[:port]: {flaw}")]
pub struct OriginError {
    /// The text as given (shown escaped: it may come from anyone).
    pub text: String,
    /// What is wrong with it.
    pub flaw: Flaw,
}

impl OriginError {
    /// What to write instead.
    pub fn hint(&self) -> String {
        match self.flaw {
            Flaw::NonAscii => "write an internationalised host name in punycode (xn--…), as `idn2` prints it".into(),
            _ => "write it as host[:port] (git.example.com, git.example.com:8443, [::1]:3000), without a user, path or query"
                .into(),
        }
    }
}

impl Origin {
    /// `host[:port]` (a pasted `https://host/` tolerated), over https: the one constructor from
    /// text. Refused with its [`Flaw`] before anything is sent anywhere.
    pub fn parse(text: &str) -> Result<Origin, OriginError> {
        let refuse = |flaw| OriginError { text: text.to_string(), flaw };
        let rest = match text.get(..8) {
            Some(prefix) if prefix.eq_ignore_ascii_case("https://") => &text[8..],
            _ => text,
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains("://") {
            return Err(refuse(Flaw::Scheme));
        }
        if let Some(flaw) = rest.chars().find_map(flaw_of) {
            return Err(refuse(flaw));
        }
        let (host, port) = split_port(rest).ok_or_else(|| refuse(Flaw::Ipv6))?;
        let host = host_name(host).map_err(refuse)?;
        let port = match port {
            None => Scheme::Https.default_port(),
            Some(port) => parse_port(port).ok_or_else(|| refuse(Flaw::Port))?,
        };
        Ok(Origin { scheme: Scheme::Https, host, port })
    }

    /// The origin of a URL the user gave (an API URL from the environment), its host checked as
    /// [`Origin::parse`] checks one; only http and https.
    pub fn of_url(url: &Url) -> Result<Origin, OriginError> {
        let scheme = match url.scheme() {
            "https" => Scheme::Https,
            "http" => Scheme::Http,
            _ => return Err(OriginError { text: url.origin().ascii_serialization(), flaw: Flaw::Scheme }),
        };
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(scheme.default_port());
        let parsed = Origin::parse(&format!("{host}:{port}"))?;
        Ok(Origin { scheme, ..parsed })
    }

    /// `host[:port]`, without the scheme's default port: how the config file and messages name it.
    pub fn authority(&self) -> String {
        if self.port == self.scheme.default_port() { self.host.clone() } else { format!("{}:{}", self.host, self.port) }
    }

    /// `https` or `http`.
    pub fn scheme_name(&self) -> &'static str {
        self.scheme.name()
    }

    /// The host alone (an IPv6 address in brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// `scheme://host[:port]`.
    pub fn serialization(&self) -> String {
        format!("{}://{}", self.scheme.name(), self.authority())
    }

    /// The URL of `path` (`/api/v3`) on this origin.
    pub fn url(&self, path: &str) -> Result<Url, url::ParseError> {
        Url::parse(&format!("{}{path}", self.serialization()))
    }

    /// Whether `url` is on this origin: the same scheme, host and port.
    pub fn contains(&self, url: &Url) -> bool {
        Origin::of_url(url).is_ok_and(|origin| origin == *self)
    }

    /// Whether credentials may go here: over https, or plain http to this machine
    /// ([`super::carries_credentials`]).
    pub fn carries_credentials(&self) -> bool {
        self.url("/").is_ok_and(|url| super::carries_credentials(&url))
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.authority())
    }
}

/// The flaw a character of a host is, if it is one; a character a name may hold is judged later.
fn flaw_of(c: char) -> Option<Flaw> {
    match c {
        _ if !c.is_ascii() => Some(Flaw::NonAscii),
        _ if c.is_ascii_whitespace() || c.is_ascii_control() => Some(Flaw::Whitespace),
        '@' => Some(Flaw::Userinfo),
        '/' => Some(Flaw::Path),
        '\\' => Some(Flaw::Backslash),
        '?' => Some(Flaw::Query),
        '#' => Some(Flaw::Fragment),
        '%' => Some(Flaw::Percent),
        _ => None,
    }
}

/// `host` and the text after its `:`; `None` for a bracket that does not close an address, or
/// an address without brackets.
fn split_port(text: &str) -> Option<(&str, Option<&str>)> {
    if text.starts_with('[') {
        let end = text.find(']')?;
        return match &text[end + 1..] {
            "" => Some((&text[..=end], None)),
            rest => Some((&text[..=end], Some(rest.strip_prefix(':')?))),
        };
    }
    match text.split_once(':') {
        // A second `:` is an IPv6 address without its brackets (or a port of two parts).
        Some((_, port)) if port.contains(':') => None,
        Some((host, port)) => Some((host, Some(port))),
        None => Some((text, None)),
    }
}

/// The host, lower case: an IPv6 address in brackets, or dot-separated labels of letters,
/// digits, `-` and `_` (an IPv4 address is such a name).
fn host_name(host: &str) -> Result<String, Flaw> {
    if let Some(inner) = host.strip_prefix('[') {
        let address = inner.strip_suffix(']').and_then(|inner| inner.parse::<Ipv6Addr>().ok()).ok_or(Flaw::Ipv6)?;
        return Ok(format!("[{address}]"));
    }
    if host.is_empty() {
        return Err(Flaw::Empty);
    }
    if let Some(c) = host.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        return Err(if c == ']' || c == '[' || c == ':' { Flaw::Ipv6 } else { Flaw::Character(c) });
    }
    if host.split('.').any(str::is_empty) {
        return Err(Flaw::Label);
    }
    Ok(host.to_ascii_lowercase())
}

/// A port: digits only (no sign), 1 to 65535.
fn parse_port(text: &str) -> Option<u16> {
    let digits = !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    digits.then(|| text.parse::<u16>().ok()).flatten().filter(|port| *port != 0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    fn flaw(text: &str) -> Flaw {
        Origin::parse(text).unwrap_err().flaw
    }

    #[test]
    fn a_host_and_a_port_are_read_lower_case_without_the_default_port() {
        for (text, authority) in [
            ("github.com", "github.com"),
            ("GitHub.COM", "github.com"),
            ("https://Git.Example.com:3000/", "git.example.com:3000"),
            ("HTTPS://ghe.example.com", "ghe.example.com"),
            ("git.example.com:443", "git.example.com"),
            ("127.0.0.1:8443", "127.0.0.1:8443"),
            ("[::1]:3000", "[::1]:3000"),
            ("[0:0::1]", "[::1]"),
            ("[2001:DB8::1]:8443", "[2001:db8::1]:8443"),
            ("xn--bcher-kva.example", "xn--bcher-kva.example"),
            ("git_internal.corp:65535", "git_internal.corp:65535"),
        ] {
            assert_eq!(Origin::parse(text).unwrap().authority(), authority, "{text}");
        }
        let origin = Origin::parse("[::1]:3000").unwrap();
        assert_eq!(origin.url("/api/v1").unwrap().as_str(), "https://[::1]:3000/api/v1");
        assert!(origin.contains(&Url::parse("https://[0::1]:3000/x").unwrap()));
    }

    /// Every way of hiding another host, or a path, in a host: the attack of #56 and its
    /// neighbours, each at the start, the middle and the end of a host that would otherwise pass.
    #[test]
    fn a_user_path_query_escape_or_other_script_is_refused_wherever_it_stands() {
        let marks = [
            ("/x@github.com", Flaw::Path),
            ("@github.com", Flaw::Userinfo),
            ("\\@github.com", Flaw::Backslash),
            ("%40github.com", Flaw::Percent),
            ("?github.com", Flaw::Query),
            ("#github.com", Flaw::Fragment),
            (" github.com", Flaw::Whitespace),
            ("\tx", Flaw::Whitespace),
            ("\u{1b}[31m", Flaw::Whitespace),
            ("bücher", Flaw::NonAscii),
            ("\u{ff0e}com", Flaw::NonAscii),
        ];
        let bases = ["127.0.0.1:8443", "evil.example", "[::1]:3000"];
        for (mark, expected) in marks {
            for base in bases {
                for text in [format!("{mark}{base}"), format!("{base}{mark}"), format!("https://{base}{mark}")] {
                    let refused = Origin::parse(&text).unwrap_err();
                    assert_eq!(refused.flaw, expected, "{text:?}: {refused}");
                    assert!(refused.to_string().starts_with(&format!("{text:?} is not a host[:port]: ")));
                }
            }
        }
        assert_eq!(flaw("127.0.0.1:8443/x@github.com"), Flaw::Path);
        assert_eq!(flaw("user@github.com"), Flaw::Userinfo);
        assert_eq!(flaw("user:pass@github.com"), Flaw::Userinfo);
        assert_eq!(flaw("github.com@127.0.0.1"), Flaw::Userinfo);
        assert!(Origin::parse("münchen.example").unwrap_err().hint().contains("punycode"));
    }

    #[test]
    fn empty_labels_bad_ports_schemes_and_loose_addresses_are_refused() {
        for (text, expected) in [
            ("", Flaw::Empty),
            ("https://", Flaw::Empty),
            (":443", Flaw::Empty),
            ("github.com.", Flaw::Label),
            (".github.com", Flaw::Label),
            ("git..example", Flaw::Label),
            ("github.com:", Flaw::Port),
            ("github.com:0", Flaw::Port),
            ("github.com:65536", Flaw::Port),
            ("github.com:+443", Flaw::Port),
            ("github.com:4a", Flaw::Port),
            ("github.com:1:2", Flaw::Ipv6),
            ("http://github.com", Flaw::Scheme),
            ("ssh://git@github.com", Flaw::Scheme),
            ("::1", Flaw::Ipv6),
            ("::1:3000", Flaw::Ipv6),
            ("[::1", Flaw::Ipv6),
            ("[::1]x", Flaw::Ipv6),
            ("[not:an:address]", Flaw::Ipv6),
            ("[127.0.0.1]", Flaw::Ipv6),
            ("git*hub.com", Flaw::Character('*')),
            ("github.com//", Flaw::Path),
        ] {
            assert_eq!(flaw(text), expected, "{text:?}");
        }
    }

    #[test]
    fn the_origin_of_a_url_keeps_its_scheme_and_contains_only_its_own_urls() {
        let api = Origin::of_url(&Url::parse("http://127.0.0.1:8080/api/v4").unwrap()).unwrap();
        assert_eq!(api.serialization(), "http://127.0.0.1:8080");
        assert!(api.carries_credentials(), "plain http to this machine");
        assert!(api.contains(&Url::parse("http://127.0.0.1:8080/api/v4/user").unwrap()));
        for other in ["https://127.0.0.1:8080/", "http://127.0.0.1:8081/", "http://localhost:8080/"] {
            assert!(!api.contains(&Url::parse(other).unwrap()), "{other}");
        }
        let plain = Origin::of_url(&Url::parse("http://git.example.com:443/").unwrap()).unwrap();
        assert_eq!(plain.serialization(), "http://git.example.com:443");
        assert!(!plain.carries_credentials());
        assert!(Origin::of_url(&Url::parse("ftp://host/").unwrap()).is_err());
        assert!(Origin::of_url(&Url::parse("http://localhost:3000/").unwrap()).unwrap().carries_credentials());
        assert!(Origin::parse("git.example.com").unwrap().carries_credentials(), "https");
    }
}
