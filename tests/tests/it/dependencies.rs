//! dependencies.toml is the one place versions are named: the test environment's Go modules must
//! pin what it says, so the two cannot drift apart.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::Path;

use gitops_shared::dependencies::{FLUX_VERSION, HELM_VERSION, TESTENV};

fn testenv_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/testenv"))
}

/// Whether go.mod requires `module` at `version`, as a one-line `require` or in a block.
fn requires(go_mod: &str, module: &str, version: &str) -> bool {
    go_mod.lines().map(str::trim).any(|line| {
        let line = line.strip_prefix("require ").unwrap_or(line);
        let mut words = line.split_whitespace();
        words.next() == Some(module) && words.next() == Some(version)
    })
}

#[test]
fn the_test_environment_s_go_modules_pin_the_versions_in_dependencies_toml() {
    for (dir, module, version) in TESTENV {
        let path = testenv_dir().join("go").join(dir).join("go.mod");
        let go_mod = std::fs::read_to_string(&path).unwrap();
        assert!(requires(&go_mod, module, version), "{} does not require {module} {version}", path.display());
    }
    let listed: Vec<&str> = TESTENV.iter().map(|(dir, _, _)| *dir).collect();
    for entry in std::fs::read_dir(testenv_dir().join("go")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(listed.contains(&name.as_str()), "tests/testenv/go/{name} is not in dependencies.toml's [[testenv]]");
    }
    let flux_cli = std::fs::read_to_string(testenv_dir().join("flux-cli/go.mod")).unwrap();
    assert!(
        requires(&flux_cli, "github.com/fluxcd/flux2/v2", FLUX_VERSION),
        "tests/testenv/flux-cli/go.mod does not build the flux CLI {FLUX_VERSION} of dependencies.toml"
    );
    let helm = std::fs::read_to_string(testenv_dir().join("tools/helm/go.mod")).unwrap();
    assert!(
        requires(&helm, "helm.sh/helm/v4", HELM_VERSION),
        "tests/testenv/tools/helm/go.mod does not build the helm CLI {HELM_VERSION} of dependencies.toml"
    );
}

#[test]
fn a_go_mod_that_pins_another_version_is_caught() {
    let go_mod = "module x\n\nrequire github.com/fluxcd/source-controller v1.9.3\n\nrequire (\n\tk8s.io/api v0.36.2 // indirect\n)\n";
    assert!(requires(go_mod, "github.com/fluxcd/source-controller", "v1.9.3"));
    assert!(requires(go_mod, "k8s.io/api", "v0.36.2"));
    assert!(!requires(go_mod, "github.com/fluxcd/source-controller", "v1.9.4"));
    assert!(!requires(go_mod, "github.com/fluxcd/source-controller/api", "v1.9.3"));
}
