//! The module layers of docs/ARCHITECTURE.md, checked against the code: a module uses modules of
//! its own layer or below, never above; no modules use each other in a circle; and no files do
//! either. Every file is read whole, without its comments, string literals and `#[cfg(test)]`
//! items (test code may use anything). And a credential is put on a request only by the gate
//! (`http/gate.rs`) or the few places named with their own checks ([`CREDENTIAL_CALLS`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod credentials;

/// Top-level modules by layer, lowest first (docs/ARCHITECTURE.md, "Layers").
const LAYERS: [(&str, &[&str]); 7] = [
    (
        "leaves",
        &[
            "error",
            "diagnostic",
            "manpage",
            "names",
            "label_selector",
            "duration",
            "timeouts",
            "interrupt",
            "secret_value",
            "env",
            "cli",
            "record",
            "dependencies",
            "git_error",
            "provider_error",
            "provider_kind",
        ],
    ),
    (
        "infrastructure",
        &[
            "cluster",
            "git",
            "http",
            "provider",
            "repo_access",
            "retry",
            "config",
            "contexts",
            "output",
            "yaml",
            "flux_cli",
            "helm_cli",
            "oci",
            "local_server",
            "plugin",
        ],
    ),
    (
        "domain",
        &[
            "plan",
            "publish",
            "flux",
            "detect",
            "apply",
            "deploy_key",
            "deployments",
            "wait",
            "readers",
            "preview",
            "drift",
            "change",
        ],
    ),
    (
        "commands",
        &[
            "app",
            "component",
            "install",
            "status",
            "version",
            "diff",
            "fleet",
            "flux_passthrough",
            "artifact",
            "upgrade",
            "metrics",
            "tenant",
            "monitoring",
            "pr",
            "repo",
        ],
    ),
    ("catalogue", &["schemas"]),
    ("faces", &["ui", "mcp", "completion"]),
    ("edge", &["runtime", "recorded_commands"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

/// A source file: its path under `src/` and its text.
struct Source {
    path: String,
    text: String,
}

/// The module a file is (`app/mod.rs` and `app.rs`: `["app"]`; `app/spec.rs`: `["app", "spec"]`).
fn module_of(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path.trim_end_matches(".rs").split('/').map(String::from).collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    parts
}

/// Every `.rs` file of `src/`, test files too, read whole.
fn all_files() -> Vec<Source> {
    rust_files_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// Every `.rs` file under `root`, its path relative to `root`, read whole.
fn rust_files_under(root: &Path) -> Vec<Source> {
    let root = root.to_path_buf();
    let mut found = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for path in std::fs::read_dir(&dir).unwrap().flatten().map(|entry| entry.path()) {
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let relative = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                found.push(Source { path: relative, text: std::fs::read_to_string(&path).unwrap() });
            }
        }
    }
    found
}

/// The files of the library that are not test code, read whole.
fn sources() -> Vec<Source> {
    let mut found: Vec<Source> = all_files()
        .into_iter()
        .filter(|source| {
            let top = module_of(&source.path)[0].clone();
            !["lib", "testing", "architecture"].contains(&top.as_str()) && !source.path.ends_with("tests.rs")
        })
        .collect();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// `text` without comments, without the contents of string and char literals, and without the
/// items marked `#[cfg(test)]`.
fn code_of(text: &str) -> String {
    let blanked = blank_comments_and_literals(text);
    let mut code = String::with_capacity(blanked.len());
    let mut rest = blanked.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        code.push_str(&rest[..at]);
        rest = skip_item(&rest[at + "#[cfg(test)]".len()..]);
    }
    code.push_str(rest);
    code
}

/// What follows the item at the start of `text`: after its `;`, or after the `}` that closes its
/// first `{` (the literals are blank, so every brace left is the code's).
fn skip_item(text: &str) -> &str {
    let mut depth = 0usize;
    for (at, c) in text.char_indices() {
        match c {
            ';' if depth == 0 => return &text[at + 1..],
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &text[at + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// `text` with comments removed and string and char literals emptied (`""`, `' '`), so that a
/// path or a brace inside them is not read as code.
fn blank_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !is_ident(chars.get(i.wrapping_sub(1))) {
            // A raw string: r"…", r#"…"#, and so on.
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            i += 2 + hashes;
            while i < chars.len()
                && !(chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes)
            {
                i += 1;
            }
            i += 1 + hashes;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&chars[i..]) {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Whether the `'` at the start of `chars` opens a char literal (`'a'`, `'\n'`, `'\u{7f}'`)
/// rather than a lifetime or a label (`'a`, `'static`).
fn is_char_literal(chars: &[char]) -> bool {
    match chars.get(1) {
        Some('\\') => true,
        Some(_) => chars.get(2) == Some(&'\''),
        None => false,
    }
}

/// Every path the code names that starts at `crate::`, `super::` or `self::`, made absolute
/// (`["app", "spec", "AppSpec"]`), with `use` groups (`super::{a::B, c}`) expanded.
fn paths_named(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = !is_ident(i.checked_sub(1).and_then(|before| chars.get(before)))
            && chars.get(i.wrapping_sub(1)) != Some(&':');
        if starts_word {
            for root in ["crate", "super", "self"] {
                let word: Vec<char> = root.chars().collect();
                if chars[i..].starts_with(&word) && chars[i + word.len()..].starts_with(&[':', ':']) {
                    // `app/mod.rs` and `app/spec.rs` are the modules `app` and `app::spec`: `self`
                    // is the module, `super` the one above it.
                    let base = match root {
                        "crate" => Vec::new(),
                        "super" => module[..module.len().saturating_sub(1)].to_vec(),
                        _ => module.to_vec(),
                    };
                    let (expanded, end) = expand(&chars, i + word.len() + 2, base);
                    paths.extend(expanded);
                    i = end;
                    break;
                }
            }
        }
        i += 1;
    }
    paths
}

/// The paths that `chars[i..]` names after a `prefix::` (a name, more `::` segments, or a
/// `{…}` group), and where they end.
fn expand(chars: &[char], mut i: usize, mut prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    loop {
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        if chars.get(i) == Some(&'{') {
            let mut paths = Vec::new();
            i += 1;
            loop {
                while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    i += 1;
                }
                match chars.get(i) {
                    None => return (paths, i),
                    Some('}') => return (paths, i + 1),
                    _ => {}
                }
                let (inner, end) = expand(chars, i, prefix.clone());
                paths.extend(inner);
                // Skip what follows the item (`as name`) up to the next item.
                i = end;
                while chars.get(i).is_some_and(|c| *c != ',' && *c != '}') {
                    i += 1;
                }
            }
        }
        let name: String = chars[i..].iter().take_while(|c| is_ident(Some(c))).collect();
        if name.is_empty() {
            return (vec![prefix], i);
        }
        i += name.chars().count();
        match name.as_str() {
            "super" => {
                prefix.pop();
            }
            "self" => {}
            _ => prefix.push(name),
        }
        if chars[i..].starts_with(&[':', ':']) {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// The file a path lands in: the deepest module of `modules` it goes through.
fn file_of<'a>(path: &[String], modules: &'a BTreeMap<Vec<String>, String>) -> Option<&'a String> {
    (1..=path.len()).rev().find_map(|length| modules.get(&path[..length]))
}

/// What each file uses of the others (a file's use of a module above it in its own tree, such as
/// a child's `super::Name`, is the module's own business and not counted).
fn file_uses(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<Vec<String>, String> =
        sources.iter().map(|source| (module_of(&source.path), source.path.clone())).collect();
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        let module = module_of(&source.path);
        let used = uses.entry(source.path.clone()).or_default();
        for path in paths_named(&module, &code_of(&source.text)) {
            let Some(file) = file_of(&path, &modules) else { continue };
            let target = module_of(file);
            let above_in_own_tree = module.starts_with(&target);
            if *file != source.path && !above_in_own_tree {
                used.insert(file.clone());
            }
        }
    }
    uses
}

/// What each top-level module uses of the others.
fn module_uses(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, used) in file_uses(sources) {
        let top = module_of(&file)[0].clone();
        let entry = uses.entry(top.clone()).or_default();
        entry.extend(used.iter().map(|other| module_of(other)[0].clone()).filter(|other| *other != top));
    }
    uses
}

/// A circle of `uses`, when there is one: the nodes in order, the first repeated at the end.
fn circle(uses: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Depth-first from every node; a node met again on the current path closes a circle.
    fn visit(
        node: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == node) {
            return Some(path[at..].iter().cloned().chain([node.to_string()]).collect());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in uses.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, uses, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    uses.keys().find_map(|node| visit(node, uses, &mut Vec::new(), &mut done))
}

#[test]
fn every_module_has_a_layer() {
    for module in module_uses(&sources()).keys() {
        assert!(layer_of(module).is_some(), "module {module} is in no layer of docs/ARCHITECTURE.md");
    }
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let mut wrong = Vec::new();
    for (module, used) in module_uses(&sources()) {
        for dependency in used {
            let (Some(from), Some(to)) = (layer_of(&module), layer_of(&dependency)) else { continue };
            if to > from {
                wrong.push(format!("{module} ({}) uses {dependency} ({})", LAYERS[from].0, LAYERS[to].0));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn no_modules_use_each_other_in_a_circle() {
    if let Some(circle) = circle(&module_uses(&sources())) {
        panic!("modules use each other in a circle: {}", circle.join(" → "));
    }
}

#[test]
fn no_files_use_each_other_in_a_circle() {
    if let Some(circle) = circle(&file_uses(&sources())) {
        panic!("files use each other in a circle: {}", circle.join(" → "));
    }
}

/// The longest a file of `src/` may be (test files too): past it, split it by concern.
const MAX_LINES: usize = 800;

#[test]
fn no_file_is_longer_than_max_lines() {
    let long: Vec<String> = all_files()
        .into_iter()
        .map(|file| (file.text.lines().count(), file.path))
        .filter(|(lines, _)| *lines > MAX_LINES)
        .map(|(lines, path)| format!("{path} has {lines} lines"))
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:#?}");
}

/// The test crate gets the same care (#57): its files split by the capability they prove.
#[test]
fn no_file_of_the_test_crate_is_longer_than_max_lines() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let long: Vec<String> = ["src", "tests"]
        .iter()
        .flat_map(|dir| rust_files_under(&tests.join(dir)).into_iter().map(move |file| (dir, file)))
        .map(|(dir, file)| (file.text.lines().count(), format!("tests/{dir}/{}", file.path)))
        .filter(|(lines, _)| *lines > MAX_LINES)
        .map(|(lines, path)| format!("{path} has {lines} lines"))
        .collect();
    assert!(long.is_empty(), "files of tests/ over {MAX_LINES} lines: {long:#?}");
}

/// The longest a function of the library may be, from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 120;

/// Each function in `code` (comments and literals blank) longer than `max` lines: its name and
/// length.
fn long_functions(code: &str, max: usize) -> Vec<(String, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut long = Vec::new();
    let mut i = 0;
    while i + 3 < chars.len() {
        let starts_fn = chars[i..].starts_with(&['f', 'n', ' ']) && !is_ident(i.checked_sub(1).map(|j| &chars[j]));
        if !starts_fn {
            i += 1;
            continue;
        }
        let name: String = chars[i + 3..].iter().take_while(|c| is_ident(Some(c))).collect();
        let Some(open) = chars[i..].iter().position(|c| *c == '{' || *c == ';').map(|at| i + at) else { break };
        if name.is_empty() || chars[open] == ';' {
            i = open + 1;
            continue;
        }
        let mut depth = 0;
        let mut close = open;
        for (at, c) in chars.iter().enumerate().skip(open) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                close = at;
                break;
            }
        }
        let lines = chars[i..=close].iter().filter(|c| **c == '\n').count() + 1;
        if lines > max {
            long.push((name, lines));
        }
        // Functions nested in this one are counted within it.
        i = close + 1;
    }
    long
}

#[test]
fn no_function_is_longer_than_max_function_lines() {
    let long: Vec<String> = sources()
        .iter()
        .flat_map(|source| {
            let functions = long_functions(&code_of(&source.text), MAX_FUNCTION_LINES);
            functions.into_iter().map(move |(name, lines)| format!("{}: {name} has {lines} lines", source.path))
        })
        .collect();
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines: {long:#?}");
}

#[test]
fn docs_modules_names_every_module_and_file() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/modules.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let mut missing = Vec::new();
    for source in sources() {
        let module = module_of(&source.path);
        let named = if module.len() == 1 && !source.path.contains('/') {
            format!("`{}`", module[0])
        } else {
            format!("`{}`", source.path)
        };
        // A folder module's `mod.rs` is its row in the table.
        let named =
            if source.path.ends_with("/mod.rs") && module.len() == 1 { format!("`{}`", module[0]) } else { named };
        if !doc.contains(&named) {
            missing.push(named);
        }
    }
    // Test-only files are no module of the product.
    missing.retain(|name| name != "`provider/published_examples.rs`");
    assert!(missing.is_empty(), "docs/modules.md does not name {missing:?}");
}

/// Where the modules start on a line of docs/ARCHITECTURE.md's drawing, after the layer's name.
const DRAWING_COLUMN: usize = 22;

/// docs/ARCHITECTURE.md draws the layers: every module stands in the drawing, in its own layer.
#[test]
fn docs_architecture_draws_every_module_in_its_layer() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let drawing = doc.split("```").nth(1).unwrap_or_default();
    let mut layer = None;
    let mut misplaced = Vec::new();
    let mut drawn = Vec::new();
    // A line: the layer's name (on its first line), the modules, then after a wider gap what
    // they are; the binaries' line names no layer and draws no module.
    for line in drawing.lines().filter(|line| line.len() > DRAWING_COLUMN) {
        if !line.starts_with(' ') {
            let name = line.split_whitespace().next().unwrap_or_default();
            layer = LAYERS.iter().position(|(layer, _)| *layer == name);
        }
        let Some(layer) = layer else { continue };
        let modules = line[DRAWING_COLUMN..].trim_start().split("  ").next().unwrap_or_default();
        for word in modules.split_whitespace() {
            if !LAYERS[layer].1.contains(&word) {
                misplaced.push(word.to_string());
            }
            drawn.push(word.to_string());
        }
    }
    let absent: Vec<&str> = LAYERS
        .iter()
        .flat_map(|(_, modules)| modules.iter().copied())
        .filter(|module| !drawn.iter().any(|word| word == module))
        .collect();
    assert!(absent.is_empty() && misplaced.is_empty(), "not drawn: {absent:?}; not of the layer drawn: {misplaced:?}");
}

#[test]
fn the_checks_see_the_files_uses() {
    let uses = file_uses(&sources());
    // A use near the top, and one past the first test module of a long file.
    assert!(uses["ui/pages.rs"].contains("ui/api.rs"), "{:?}", uses["ui/pages.rs"]);
    assert!(uses["app/spec.rs"].contains("app/definition.rs"), "{:?}", uses["app/spec.rs"]);
    let edges: usize = uses.values().map(BTreeSet::len).sum();
    assert!(edges > 300, "only {edges} uses between files were found");
}

/// A tree of planted files, for the checks' own tests.
#[cfg(test)]
fn tree(files: &[(&str, &str)]) -> Vec<Source> {
    files.iter().map(|(path, text)| Source { path: path.to_string(), text: text.to_string() }).collect()
}

#[cfg(test)]
mod checks {
    use super::*;

    #[test]
    fn a_planted_face_or_command_using_another_is_found() {
        let files = tree(&[
            ("mcp/tools.rs", "use crate::ui::api::Snapshot;\nuse crate::readers::collect;\n"),
            ("ui/api.rs", "pub struct Snapshot;\n"),
            ("tenant/mod.rs", "fn f() { crate::app::layout::write(); }\nuse crate::change::drive;\n"),
            ("app/layout.rs", "pub fn write() {}\n"),
        ]);
        let uses = module_uses(&files);
        assert_eq!(uses_within(&uses, "faces"), ["mcp uses ui"]);
        assert_eq!(uses_within(&uses, "commands"), ["tenant uses app"]);
    }

    #[test]
    fn the_longest_chain_is_found() {
        let files = tree(&[
            ("ui/mod.rs", "use crate::readers::x;\nuse crate::error::E;\n"),
            ("readers/mod.rs", "use crate::cluster::c;\n"),
            ("cluster.rs", "use crate::error::E;\n"),
            ("error.rs", "pub struct E;\n"),
        ]);
        assert_eq!(longest_chain(&module_uses(&files)), ["ui", "readers", "cluster", "error"]);
    }

    #[test]
    fn a_planted_circle_of_two_files_is_found() {
        let files = tree(&[
            ("app/mod.rs", "mod spec;\nmod layout;\npub struct Context;\n"),
            ("app/spec.rs", "use super::layout::APPS_DIR;\nuse super::Context;\n"),
            ("app/layout.rs", "pub const APPS_DIR: &str = \"apps\";\nfn f() { super::spec::read(); }\n"),
        ]);
        assert_eq!(circle(&file_uses(&files)).unwrap(), ["app/layout.rs", "app/spec.rs", "app/layout.rs"]);
    }

    #[test]
    fn a_circle_through_a_use_group_and_crate_paths_is_found() {
        let files = tree(&[
            ("ui/api.rs", "use super::{Server, query::{Snapshot, page}};\n"),
            ("ui/query.rs", "use crate::ui::api::ApiError;\n"),
            ("ui/mod.rs", "pub struct Server;\n"),
        ]);
        assert_eq!(circle(&file_uses(&files)).unwrap(), ["ui/api.rs", "ui/query.rs", "ui/api.rs"]);
    }

    #[test]
    fn the_whole_file_is_read_but_test_items_comments_and_strings_are_not() {
        let text = "use super::b::B;\n\
                    #[cfg(test)]\nmod tests {\n    use super::super::c::C;\n    fn f() { let _ = \"}\"; }\n}\n\
                    // super::d::D in a comment\n\
                    const URL: &str = \"crate::e::E\";\n\
                    fn late() { crate::a::f::F; }\n";
        let files =
            tree(&[("a/x.rs", text), ("a/b.rs", ""), ("a/c.rs", ""), ("d.rs", ""), ("e.rs", ""), ("a/f.rs", "")]);
        let uses = file_uses(&files);
        assert_eq!(uses["a/x.rs"], BTreeSet::from(["a/b.rs".to_string(), "a/f.rs".to_string()]));
    }

    #[test]
    fn a_long_function_is_found_and_a_declaration_or_fn_type_is_not() {
        let body = "    let x = 1;\n".repeat(5);
        let code = format!(
            "trait T {{ fn declared(&self); }}\nfn short(f: fn(u8)) {{\n}}\npub async fn long() {{\n{body}}}\n"
        );
        assert_eq!(long_functions(&code, 6), vec![("long".to_string(), 7)]);
        assert!(long_functions(&code, 7).is_empty());
    }

    #[test]
    fn a_child_using_its_parent_closes_no_circle() {
        let files = tree(&[("app/mod.rs", "use self::spec::AppSpec;\n"), ("app/spec.rs", "use super::Context;\n")]);
        assert_eq!(circle(&file_uses(&files)), None);
        assert_eq!(file_uses(&files)["app/mod.rs"], BTreeSet::from(["app/spec.rs".to_string()]));
    }

    #[test]
    fn a_planted_circle_of_modules_is_found() {
        let files =
            tree(&[("git.rs", "use crate::output::Printer;\n"), ("output/mod.rs", "fn f(_: crate::git::Remote) {}\n")]);
        assert_eq!(circle(&module_uses(&files)).unwrap(), ["git", "output", "git"]);
    }
}

/// The longest chain of uses between top-level modules, the user first: its length is how many
/// floors the house has (the test's failure names the chain).
fn longest_chain(uses: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn from(
        node: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        memo: &mut BTreeMap<String, Vec<String>>,
    ) -> Vec<String> {
        if let Some(known) = memo.get(node) {
            return known.clone();
        }
        let mut best = Vec::new();
        for next in uses.get(node).into_iter().flatten() {
            let chain = from(next, uses, memo);
            if chain.len() > best.len() {
                best = chain;
            }
        }
        let chain: Vec<String> = std::iter::once(node.to_string()).chain(best).collect();
        memo.insert(node.to_string(), chain.clone());
        chain
    }
    let mut memo = BTreeMap::new();
    uses.keys().map(|node| from(node, uses, &mut memo)).max_by_key(Vec::len).unwrap_or_default()
}

/// The most floors the house may have: the longest chain of uses between top-level modules
/// ([`longest_chain`]). #57 started at 19 by this measure: the preview engine, the cluster
/// readers, the drift engine and the values overlay moved below the commands, the recorded
/// replans above them, the ledger's storage into the readers and label selectors out of `names`
/// (14). It only comes down.
const MAX_FLOORS: usize = 14;

#[test]
fn the_house_has_at_most_max_floors() {
    let chain = longest_chain(&module_uses(&sources()));
    assert!(chain.len() <= MAX_FLOORS, "{} floors: {}", chain.len(), chain.join(" → "));
}

/// The uses between two modules of the layer `layer`.
fn uses_within(uses: &BTreeMap<String, BTreeSet<String>>, layer: &str) -> Vec<String> {
    let members = LAYERS.iter().find(|(name, _)| *name == layer).map(|(_, members)| *members).unwrap_or_default();
    let mut found = Vec::new();
    for (module, used) in uses {
        if !members.contains(&module.as_str()) {
            continue;
        }
        for other in used.iter().filter(|other| members.contains(&other.as_str())) {
            found.push(format!("{module} uses {other}"));
        }
    }
    found
}

/// A command never uses another command: what two share belongs below both (#57 began with 23
/// such uses; a recorded request is re-planned by the edge's `recorded_commands`, handed down).
#[test]
fn no_command_uses_another_command() {
    let found = uses_within(&module_uses(&sources()), "commands");
    assert!(found.is_empty(), "a command uses another: move what they share below both {found:#?}");
}

/// How code commits or pushes with git: only `git` itself and `publish`, the one git write path,
/// may.
const GIT_WRITES: [&str; 4] = [".push()", "push_to_branch(", "files.commit(", "checkout.commit("];

/// The files outside `git` and `publish.rs` that commit or push ([`GIT_WRITES`]).
fn git_writes_outside_publish(sources: &[Source]) -> Vec<String> {
    sources
        .iter()
        .filter(|source| !source.path.starts_with("git") && source.path != "publish.rs")
        .filter(|source| GIT_WRITES.iter().any(|write| code_of(&source.text).contains(write)))
        .map(|source| source.path.clone())
        .collect()
}

#[test]
fn every_commit_goes_through_publish() {
    let found = git_writes_outside_publish(&sources());
    assert!(found.is_empty(), "commits or pushes outside publish.rs: {found:?}");
    let planted = tree(&[
        ("change/deliver.rs", "fn f(c: &Workspace) { c.push_to_branch(b); }\n"),
        ("publish.rs", "fn f(c: &mut Checkout) { c.push(); checkout.commit(m, a); }\n"),
        ("readers/app_reads.rs", "fn f(&self) { self.commit(&gathered); }\n"),
    ]);
    assert_eq!(git_writes_outside_publish(&planted), ["change/deliver.rs"]);
}

/// One way to reach a forge's API: outside `provider`, a provider client is made by
/// `config::forge` alone, which looks the token up by the host and reads the API base override.
#[test]
fn a_forge_is_reached_one_way() {
    let makers: Vec<String> = sources()
        .into_iter()
        .filter(|source| !source.path.starts_with("provider/") && code_of(&source.text).contains("Provider::new("))
        .map(|source| source.path)
        .collect();
    assert_eq!(makers, ["config.rs"], "a provider client made outside config::forge");
}

#[test]
fn no_face_uses_another_face() {
    let found = uses_within(&module_uses(&sources()), "faces");
    assert!(found.is_empty(), "a face uses another: what they share belongs below both {found:#?}");
}
