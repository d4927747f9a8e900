//! The module layers of docs/ARCHITECTURE.md, checked against the code: a module uses modules of
//! its own layer or below, never above, and no modules use each other in a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules by layer, lowest first (docs/ARCHITECTURE.md, "Dependencies").
const LAYERS: [(&str, &[&str]); 5] = [
    (
        "leaves",
        &[
            "error",
            "diagnostic",
            "manpage",
            "names",
            "duration",
            "timeouts",
            "interrupt",
            "env",
            "cli",
            "record",
            "dependencies",
        ],
    ),
    (
        "infrastructure",
        &["cluster", "git", "http", "provider", "repo_access", "retry", "config", "output", "yaml", "flux_cli", "oci"],
    ),
    ("domain", &["plan", "publish", "flux", "detect", "apply", "deploy_key", "deployments"]),
    (
        "commands",
        &[
            "app",
            "install",
            "status",
            "version",
            "plugin",
            "completion",
            "flux_passthrough",
            "artifact",
            "upgrade",
            "ui",
            "metrics",
            "tenant",
            "monitoring",
            "pr",
            "repo",
        ],
    ),
    ("edge", &["runtime"]),
];

/// `error` names the typed errors of `git` and `provider` (`Error::Git(#[from] GitError)`), whose
/// modules use leaves only.
const ALLOWED_UPWARD: [(&str, &str); 2] = [("error", "git"), ("error", "provider")];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

/// The `crate::<module>` paths each top-level module's non-test code names.
fn uses() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
            let top = relative.split('/').next().unwrap().trim_end_matches(".rs").to_string();
            let file = path.file_name().unwrap().to_string_lossy();
            if ["lib", "testing", "architecture"].contains(&top.as_str()) || file == "tests.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Test modules at the end of a file may use anything.
            let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
            let used = found.entry(top.clone()).or_default();
            for line in code.lines().map(|line| line.split("//").next().unwrap_or_default()) {
                for (_, rest) in line.match_indices("crate::").map(|(at, _)| ((), &line[at + 7..])) {
                    let name: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                    if !name.is_empty() && name != top {
                        used.insert(name);
                    }
                }
            }
        }
    }
    found
}

#[test]
fn every_module_has_a_layer() {
    for module in uses().keys() {
        assert!(layer_of(module).is_some(), "module {module} is in no layer of docs/ARCHITECTURE.md");
    }
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let mut wrong = Vec::new();
    for (module, used) in uses() {
        for dependency in used {
            let (Some(from), Some(to)) = (layer_of(&module), layer_of(&dependency)) else { continue };
            if to > from && !ALLOWED_UPWARD.contains(&(module.as_str(), dependency.as_str())) {
                wrong.push(format!("{module} ({}) uses {dependency} ({})", LAYERS[from].0, LAYERS[to].0));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn no_modules_use_each_other_in_a_circle() {
    let uses = uses();
    // Depth-first from every module; a module met again on the current path closes a circle.
    fn visit(module: &str, uses: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == module) {
            return Some(path[at..].iter().cloned().chain([module.to_string()]).collect());
        }
        path.push(module.to_string());
        for next in uses.get(module).into_iter().flatten() {
            if let Some(circle) = visit(next, uses, path) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    for module in uses.keys() {
        if let Some(circle) = visit(module, &uses, &mut Vec::new()) {
            panic!("modules use each other in a circle: {}", circle.join(" → "));
        }
    }
}
