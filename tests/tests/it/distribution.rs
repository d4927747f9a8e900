//! Distribution, for real. `make install-files` into a temporary PREFIX: the binaries, the man
//! pages (`man -l` renders each) and the bash, zsh and fish completions (bash's loaded and asked,
//! kubectl's plugin completion through the shim), and `make uninstall` removing exactly those.
//!
//! krew: the krew v0.4.3 CLI (built from its Go module by tests/testenv/build-tools.sh)
//! installs the plugin from the archive `krew/dist.sh` packs and the manifest `krew/render.sh`
//! renders from `.krew.yaml`, downloaded over HTTP from 127.0.0.1 as from a GitHub release; the
//! real kubectl then runs it from krew's PATH directory against the local environment. Upgrade,
//! uninstall and a tampered sha256 too.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use gitops_e2e::binaries::{self, RELEASE};
use gitops_e2e::http::{self, Reply};
use gitops_e2e::snapshot::Run;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::testenv::process::run;
use gitops_e2e::tools;
use gitops_shared::dependencies::FLUX_VERSION;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// What a release ships (the one binary and the shim), stripped of debug info, with the licences
/// of what they link, in a directory of their own: what `make dist` packs from its build.
fn stage_binaries(dir: &Path) {
    for name in RELEASE {
        let to = dir.join(name);
        std::fs::copy(binaries::path(name), &to).unwrap();
        run(Command::new("strip").arg("--strip-all").arg(&to)).unwrap();
    }
    let licences =
        run(Command::new("python3").arg(repo_root().join("krew/third-party.py")).current_dir(repo_root())).unwrap();
    assert!(licences.contains("\nring "), "THIRD_PARTY_LICENSES names the crates linked in:\n{}", &licences[..500]);
    std::fs::write(dir.join("THIRD_PARTY_LICENSES"), licences).unwrap();
}

/// `krew/dist.sh VERSION …`: the archive's path.
fn dist(version: &str, bin: &Path, out: &Path) -> PathBuf {
    let script = repo_root().join("krew/dist.sh");
    let printed = run(Command::new("bash")
        .arg(script)
        .arg(version)
        .arg(bin)
        .arg(out)
        .args(["linux", "amd64"])
        .args(RELEASE)
        // A debug build, stripped: gzip -1 packs it several times faster than gzip -6.
        .env("DIST_GZIP_LEVEL", "1"))
    .unwrap();
    PathBuf::from(printed.trim())
}

/// `krew/render.sh VERSION DIST` for this platform, downloading from `origin`.
fn render(version: &str, dist: &Path, origin: &str) -> String {
    let script = repo_root().join("krew/render.sh");
    run(Command::new("bash")
        .arg(script)
        .arg(version)
        .arg(dist)
        .env("KREW_PLATFORMS", "linux/amd64")
        .env("KREW_URL_BASE", origin))
    .unwrap()
}

struct Krew {
    binary: PathBuf,
    root: tempfile::TempDir,
    /// A directory for the completion shim link, as the manifest's caveats suggest.
    shim_dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Krew {
    fn run(&self, args: &[&str]) -> Run {
        Run::of(
            Command::new(&self.binary)
                .args(args)
                .env("KREW_ROOT", self.root.path())
                .env("KUBECONFIG", &self.kubeconfig)
                .env("HOME", self.root.path())
                .env("KREW_NO_UPGRADE_CHECK", "1"),
        )
    }

    /// The real kubectl with only krew's bin directory (and the shim link) before the system's.
    fn kubectl(&self, args: &[&str]) -> Run {
        let path =
            format!("{}:{}:/usr/bin:/bin", self.root.path().join("bin").display(), self.shim_dir.path().display());
        Run::of(Command::new(binaries::kubectl()).args(args).env("PATH", path).env("KUBECONFIG", &self.kubeconfig))
    }

    /// Publishes `manifest` in the default index, a git clone as `krew update` leaves it (krew
    /// refuses to run without one); `--no-update-index` then reads it as it is.
    fn index(&self, manifest: &str) {
        let index = self.root.path().join("index/default");
        std::fs::create_dir_all(index.join("plugins")).unwrap();
        let git = |args: &[&str]| {
            run(Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
                .args(args)
                .current_dir(&index))
            .unwrap()
        };
        if !index.join(".git").exists() {
            git(&["init", "-q", "-b", "master"]);
        }
        std::fs::write(index.join("plugins/gitops.yaml"), manifest).unwrap();
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "gitops"]);
    }

    fn store(&self) -> PathBuf {
        self.root.path().join("store/gitops")
    }

    fn installed_versions(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.store()) else { return Vec::new() };
        let mut versions: Vec<String> =
            entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        versions.sort();
        versions
    }
}

const ZERO: Duration = Duration::ZERO;

#[test]
fn krew_installs_upgrades_and_uninstalls_the_plugin_from_our_archive_and_manifest() {
    let env = TestEnv::shared();
    let work = tempfile::tempdir().unwrap();
    let (bin, out) = (work.path().join("bin"), work.path().join("dist"));
    std::fs::create_dir_all(&bin).unwrap();
    stage_binaries(&bin);
    let first = dist("v0.1.0", &bin, &out);
    let second = dist("v0.1.1", &bin, &out);
    let checksums = std::fs::read_to_string(out.join("checksums.txt")).unwrap();
    assert_eq!(checksums.lines().count(), 2, "{checksums}");
    let listing = run(Command::new("tar").arg("-tzf").arg(&first)).unwrap();
    let mut listed: Vec<&str> = listing.lines().collect();
    listed.sort();
    let mut expected: Vec<&str> = RELEASE.iter().copied().chain(["LICENSE", "THIRD_PARTY_LICENSES"]).collect();
    expected.sort();
    assert_eq!(listed, expected, "the archive is flat: the one binary, the shim and the licences");
    assert_eq!(dist("v0.1.0", &bin, &out), first);
    assert_eq!(std::fs::read_to_string(out.join("checksums.txt")).unwrap(), checksums, "packing again is reproducible");

    let served = out.clone();
    let server = http::serve(move |request| match std::fs::read(served.join(request.path.trim_start_matches('/'))) {
        Ok(body) => Reply { status: 200, headers: Vec::new(), body, content_type: "application/gzip", delay: ZERO },
        Err(_) => Reply { status: 404, headers: Vec::new(), body: Vec::new(), content_type: "text/plain", delay: ZERO },
    });
    let (manifest_1, manifest_2) = (render("v0.1.0", &out, &server.origin), render("v0.1.1", &out, &server.origin));
    let krew = Krew {
        binary: tools::path("krew"),
        root: tempfile::tempdir().unwrap(),
        shim_dir: tempfile::tempdir().unwrap(),
        kubeconfig: env.kubeconfig.clone(),
    };

    krew.index(&manifest_1);

    // A manifest whose sha256 does not match the archive is refused, and nothing is installed.
    let sum = checksums.lines().next().unwrap().split_whitespace().next().unwrap();
    let tampered = work.path().join("tampered.yaml");
    std::fs::write(&tampered, manifest_1.replace(sum, &"ab".repeat(32))).unwrap();
    let refused = krew.run(&["install", "--no-update-index", &format!("--manifest={}", tampered.display())]);
    assert_ne!(refused.code, Some(0), "{}", refused.render());
    assert!(refused.stderr.to_lowercase().contains("checksum"), "{}", refused.stderr);
    assert!(krew.installed_versions().is_empty());

    // `krew install --manifest --archive`, as the issue's development flow does it.
    let manifest_file = work.path().join("gitops.yaml");
    std::fs::write(&manifest_file, &manifest_1).unwrap();
    let detached = krew.run(&[
        "install",
        "--no-update-index",
        &format!("--manifest={}", manifest_file.display()),
        &format!("--archive={}", first.display()),
    ]);
    assert_eq!(detached.code, Some(0), "{}", detached.render());
    assert_eq!(krew.installed_versions(), ["v0.1.0"]);
    let removed = krew.run(&["uninstall", "gitops"]);
    assert_eq!(removed.code, Some(0), "{}", removed.render());

    // From the index, downloaded over HTTP: krew links only kubectl-gitops onto its PATH.
    let installed = krew.run(&["install", "gitops", "--no-update-index"]);
    assert_eq!(installed.code, Some(0), "{}", installed.render());
    let linked: Vec<String> = std::fs::read_dir(krew.root.path().join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(linked, ["kubectl-gitops"]);

    // The one binary runs every command itself; every answer is the command's own binary's.
    let version = krew.kubectl(&["gitops", "version"]);
    assert_eq!(version.code, Some(0), "{}", version.render());
    assert!(version.stdout.starts_with("Client Version: v"), "{}", version.stdout);
    for args in [&["status"][..], &["app", "list"], &["detect"]] {
        let through_krew = krew.kubectl(&[&["gitops"][..], args].concat());
        let (binary, rest) = match args[0] {
            "app" => ("kubectl-gitops-app", &args[1..]),
            command => (command, &args[1..]),
        };
        let binary =
            if binary.starts_with("kubectl-") { binary.to_string() } else { format!("kubectl-gitops-{binary}") };
        let direct = Run::of(Command::new(binaries::path(&binary)).args(rest).env("KUBECONFIG", &env.kubeconfig));
        assert!(!through_krew.stderr.contains("unknown command"), "{args:?}: {}", through_krew.render());
        assert_eq!(through_krew.code, direct.code, "{args:?}: {}\n---\n{}", through_krew.render(), direct.render());
        assert_eq!(through_krew.stdout.lines().next(), direct.stdout.lines().next(), "{args:?}");
    }

    // Completion through the shim, linked onto PATH as the caveats say.
    let shim = krew.store().join("v0.1.0/kubectl_complete-gitops");
    std::os::unix::fs::symlink(&shim, krew.shim_dir.path().join("kubectl_complete-gitops")).unwrap();
    let completed = krew.kubectl(&["__complete", "gitops", ""]);
    assert_eq!(completed.code, Some(0), "{}", completed.render());
    for command in ["app", "install", "status", "upgrade"] {
        assert!(completed.stdout.lines().any(|line| line.starts_with(command)), "{command}: {}", completed.stdout);
    }

    // A newer version in the index: krew upgrade moves to it and keeps nothing of the old one.
    krew.index(&manifest_2);
    let upgraded = krew.run(&["upgrade", "gitops", "--no-update-index"]);
    assert_eq!(upgraded.code, Some(0), "{}", upgraded.render());
    assert_eq!(krew.installed_versions(), ["v0.1.1"], "{}", upgraded.render());
    assert_eq!(krew.kubectl(&["gitops", "version"]).code, Some(0));
    drop(second);

    // Uninstall leaves nothing behind.
    let uninstalled = krew.run(&["uninstall", "gitops"]);
    assert_eq!(uninstalled.code, Some(0), "{}", uninstalled.render());
    assert!(!krew.store().exists());
    assert!(!krew.root.path().join("bin/kubectl-gitops").exists());
    assert!(!krew.root.path().join("receipts/gitops.yaml").exists());
    let gone = krew.kubectl(&["gitops", "version"]);
    assert_ne!(gone.code, Some(0), "{}", gone.render());
}

/// `make TARGET PREFIX=… PROFILE=<this build>` in the repository.
fn make(target: &str, prefix: &Path) -> String {
    let profile = binaries::target_dir().file_name().unwrap().to_string_lossy().into_owned();
    // The pages `make man` builds: beside the build, which the tests may not write to.
    let pages = tempfile::tempdir().unwrap();
    run(Command::new("make")
        .arg("--no-print-directory")
        .arg("-C")
        .arg(repo_root())
        .arg(target)
        .arg(format!("PREFIX={}", prefix.display()))
        .arg(format!("MAN_BUILD_DIR={}", pages.path().display()))
        .arg(format!("PROFILE={profile}")))
    .unwrap()
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    binaries::files_in(dir).into_keys().collect()
}

/// bash with the installed completion loaded, completing `words` (the last one being typed).
fn bash_complete(prefix: &Path, words: &[&str]) -> Vec<String> {
    let script = prefix.join("share/bash-completion/completions/kubectl-gitops");
    let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _kubectl_gitops; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let path = format!("{}:/usr/bin:/bin", prefix.join("bin").display());
    let output = run(Command::new("bash").arg("-c").arg(program).env("PATH", path)).unwrap();
    output.lines().map(String::from).collect()
}

#[test]
fn make_install_lays_out_binaries_completions_and_man_pages_and_uninstall_removes_exactly_them() {
    let prefix = tempfile::tempdir().unwrap();
    make("install-files", prefix.path());
    let mut expected: Vec<String> = RELEASE.iter().map(|name| format!("bin/{name}")).collect();
    let pages = ["kubectl-gitops", "kubectl-gitops-app", "kubectl-gitops-artifact", "kubectl-gitops-component"]
        .into_iter()
        .chain(["kubectl-gitops-detect", "kubectl-gitops-install", "kubectl-gitops-status", "kubectl-gitops-upgrade"])
        .chain(["kubectl-gitops-ui", "kubectl-gitops-metrics", "kubectl-gitops-tenant", "kubectl-gitops-monitoring"])
        .chain([
            "kubectl-gitops-platform",
            "kubectl-gitops-pr",
            "kubectl-gitops-repo",
            "kubectl-gitops-diff",
            "kubectl-gitops-drift",
            "kubectl-gitops-fleet",
            "kubectl-gitops-promote",
            "kubectl-gitops-mcp",
        ]);
    expected.extend(pages.clone().map(|page| format!("share/man/man1/{page}.1")));
    expected.extend([
        "share/bash-completion/completions/kubectl-gitops".to_string(),
        "share/fish/vendor_completions.d/kubectl-gitops.fish".to_string(),
        "share/zsh/site-functions/_kubectl-gitops".to_string(),
    ]);
    expected.sort();
    assert_eq!(files_under(prefix.path()), expected);

    for page in pages {
        let path = prefix.path().join(format!("share/man/man1/{page}.1"));
        let shown =
            run(Command::new("man").arg("-l").arg(&path).env("MANPAGER", "cat").env("MANWIDTH", "100")).unwrap();
        assert!(shown.contains("NAME") && shown.contains("SYNOPSIS") && shown.contains("OPTIONS"), "{page}: {shown}");
        assert!(shown.contains("--color"), "{page} documents the shared flags: {shown}");
    }
    let upgrade = std::fs::read_to_string(prefix.path().join("share/man/man1/kubectl-gitops-upgrade.1")).unwrap();
    assert!(upgrade.contains("allow\\-skip"), "a command's own flags are on its page");

    let commands = bash_complete(prefix.path(), &["kubectl-gitops", ""]);
    for command in ["app", "install", "status", "upgrade", "version"] {
        assert!(commands.iter().any(|c| c == command), "{command} in {commands:?}");
    }
    let verbs = bash_complete(prefix.path(), &["kubectl-gitops", "app", ""]);
    for verb in ["add", "list", "remove", "status"] {
        assert!(verbs.iter().any(|v| v == verb), "{verb} in {verbs:?}");
    }
    let path = format!("{}:/usr/bin:/bin", prefix.path().join("bin").display());
    // kubectl runs `gitops app` as the plugin kubectl-gitops with `app`, completed by the shim.
    let plugin =
        run(Command::new(binaries::kubectl()).args(["__complete", "gitops", "app", ""]).env("PATH", &path)).unwrap();
    assert!(plugin.lines().any(|line| line.starts_with("add")), "{plugin}");
    let top = run(Command::new(binaries::kubectl()).args(["__complete", "gitops", ""]).env("PATH", &path)).unwrap();
    assert!(top.lines().any(|line| line.starts_with("upgrade")), "{top}");

    make("uninstall", prefix.path());
    assert_eq!(files_under(prefix.path()), Vec::<String>::new(), "nothing of ours is left");
}

/// Flux 2.9 runs `flux-<name>` executables in ~/.fluxcd/plugins (or $FLUXCD_PLUGINS) as
/// `flux <name>`: a `flux-gitops` link to our dispatcher makes `flux gitops …` work, completion
/// included, with the real flux CLI.
#[test]
fn the_real_flux_cli_runs_us_as_its_gitops_plugin() {
    let env = TestEnv::shared();
    let plugins = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(binaries::path("kubectl-gitops"), plugins.path().join("flux-gitops")).unwrap();
    let flux = |args: &[&str]| {
        Run::of(
            Command::new(gitops_e2e::flux_release::cli())
                .args(args)
                .env("FLUXCD_PLUGINS", plugins.path())
                .env("KUBECONFIG", &env.kubeconfig)
                .env("NO_COLOR", "1"),
        )
    };
    let help = flux(&["--help"]);
    assert!(help.stdout.contains("Plugin Commands:") && help.stdout.contains("gitops"), "{}", help.render());
    let through_flux = flux(&["gitops", "status"]);
    let direct = Run::of(
        Command::new(binaries::path("kubectl-gitops-status")).env("KUBECONFIG", &env.kubeconfig).env("NO_COLOR", "1"),
    );
    assert_eq!(through_flux.code, direct.code, "{}\n---\n{}", through_flux.render(), direct.render());
    assert_eq!(through_flux.stdout.lines().next(), direct.stdout.lines().next());
    let completed = flux(&["__complete", "gitops", ""]);
    for command in ["app", "status", "upgrade"] {
        assert!(completed.stdout.lines().any(|line| line.starts_with(command)), "{command}: {}", completed.render());
    }
}

/// The GitHub Actions workflow docs/pull-requests.md gives for `pr comment` is one actionlint
/// (built from its Go module) accepts, as `make lint` accepts ours.
#[test]
fn the_documented_preview_workflow_passes_actionlint() {
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/pull-requests.md")).unwrap();
    let at = docs.find("A GitHub Actions\nworkflow in the config repo:").expect("the workflow's introduction");
    let start = at + docs[at..].find("```yaml\n").expect("its yaml block") + "```yaml\n".len();
    let workflow = &docs[start..start + docs[start..].find("```\n").expect("the block's end")];
    assert!(workflow.contains("kubectl gitops pr comment"), "{workflow}");
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".github/workflows")).unwrap();
    std::fs::write(repo.path().join(".github/workflows/preview.yml"), workflow).unwrap();
    run(Command::new("git").args(["init", "-q"]).current_dir(repo.path())).unwrap();
    let lint = Run::of(Command::new(tools::path("actionlint")).arg("-no-color").current_dir(repo.path()));
    assert_eq!(lint.code, Some(0), "{}", lint.render());
}

/// #56: a release build refuses an empty pin of anything it would execute (the previous Flux
/// line, helm on each platform), not only the current flux CLI's. The build script cargo compiled
/// for this very build runs as a release build runs it, over a dependencies.toml whose current
/// Flux pin is given and whose others are left empty, as this machine's are (no internet).
#[test]
fn a_release_build_refuses_any_empty_pin_it_would_execute() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("shared")).unwrap();
    let real = std::fs::read_to_string(repo_root().join("dependencies.toml")).unwrap();
    let current = format!("\"{FLUX_VERSION}\" = \"\"");
    assert!(real.contains(&current), "dependencies.toml leaves {FLUX_VERSION} empty here: {real}");
    let given = real.replace(&current, &format!("\"{FLUX_VERSION}\" = \"{}\"", "a".repeat(64)));
    std::fs::write(root.path().join("dependencies.toml"), given).unwrap();
    let build = |release: bool| {
        let out = root.path().join(if release { "release" } else { "dev" });
        std::fs::create_dir_all(&out).unwrap();
        let mut command = Command::new(build_script());
        command.env("CARGO_MANIFEST_DIR", root.path().join("shared")).env("OUT_DIR", &out);
        command.env_remove("KUBECTL_GITOPS_RELEASE_BUILD");
        if release {
            command.env("KUBECTL_GITOPS_RELEASE_BUILD", "1");
        }
        (command.output().unwrap(), out)
    };
    let (refused, _) = build(true);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("dependencies.toml: a release build needs every pin, and "), "{said}");
    for platform in ["linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64"] {
        assert!(said.contains(&format!("[helm.checksums_sha256] \"{platform}\"")), "{platform}: {said}");
    }
    assert!(said.contains("[flux.checksums_sha256] \""), "the previous Flux line: {said}");
    assert!(!said.contains(&format!("\"{FLUX_VERSION}\"")), "the current Flux pin is given: {said}");
    // A development build takes the same file, and writes what the crate includes.
    let (built, out) = build(false);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    assert!(out.join("dependencies.rs").is_file());
}

/// The build script cargo compiled for gitops-shared in this target directory: the newest, as
/// cargo keeps older ones beside it.
fn build_script() -> PathBuf {
    let build = binaries::target_dir().join("build");
    let mut scripts: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&build)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("gitops-shared-"))
        .map(|entry| entry.path().join(format!("build-script-build{}", std::env::consts::EXE_SUFFIX)))
        .filter(|path| path.is_file())
        .map(|path| (path.metadata().unwrap().modified().unwrap(), path))
        .collect();
    scripts.sort();
    scripts.pop().map(|(_, path)| path).expect("cargo compiled gitops-shared's build script")
}
