//! The app model without a cluster or a server: flags to objects, objects to repo files, plans
//! to text. End-to-end behaviour is in tests/tests/app*.rs.

use std::collections::BTreeMap;

use clap::Parser;

use super::layout;
use super::spec::AppSpec;
use super::*;
use crate::change::ConfigRepo;
use crate::change::layout::{self as repo_layout, ClusterDir, SuspendPatch};
use crate::change::plan::{self, Delivery, FileChange, Plan};
use crate::flux::api::{ServedApis, Versions};
use crate::git::{Auth, Remote};

#[derive(Parser)]
struct Add {
    #[command(flatten)]
    add: AddArgs,
}

fn spec(args: &[&str]) -> AppSpec {
    let parsed = Add::try_parse_from(std::iter::once("add").chain(args.iter().copied())).unwrap();
    parsed.add.request().unwrap().spec
}

fn kinds(spec: &AppSpec, versions: &Versions) -> (String, String) {
    let source = spec.source_object("flux-system", versions).unwrap();
    let release = spec.release_object("flux-system", versions, Vec::new()).unwrap();
    (
        format!("{} {}", source["apiVersion"].as_str().unwrap(), source["kind"].as_str().unwrap()),
        format!("{} {}", release["apiVersion"].as_str().unwrap(), release["kind"].as_str().unwrap()),
    )
}

#[test]
fn each_kind_of_url_gives_its_source_and_release() {
    let pinned = Versions::pinned();
    let cases = [
        (
            vec!["podinfo", "--url", "https://github.com/stefanprodan/podinfo", "--path", "kustomize"],
            "kustomize",
            ("source.toolkit.fluxcd.io/v1 GitRepository", "kustomize.toolkit.fluxcd.io/v1 Kustomization"),
        ),
        (
            vec!["podinfo", "--url", "git@github.com:stefanprodan/podinfo.git", "--chart-path", "./charts/podinfo"],
            "helm",
            ("source.toolkit.fluxcd.io/v1 GitRepository", "helm.toolkit.fluxcd.io/v2 HelmRelease"),
        ),
        (
            vec!["db", "--url", "https://charts.bitnami.com/bitnami", "--chart", "postgresql"],
            "helm",
            ("source.toolkit.fluxcd.io/v1 HelmRepository", "helm.toolkit.fluxcd.io/v2 HelmRelease"),
        ),
        (
            vec!["db", "--url", "oci://registry-1.docker.io/bitnamicharts", "--chart", "postgresql"],
            "helm",
            ("source.toolkit.fluxcd.io/v1 HelmRepository", "helm.toolkit.fluxcd.io/v2 HelmRelease"),
        ),
        (
            vec!["web", "--url", "oci://ghcr.io/acme/manifests/web", "--semver", ">=1.0.0"],
            "oci",
            ("source.toolkit.fluxcd.io/v1 OCIRepository", "kustomize.toolkit.fluxcd.io/v1 Kustomization"),
        ),
    ];
    for (args, kind, (source, release)) in cases {
        let spec = spec(&args);
        assert_eq!(spec.kind().word(), kind, "{args:?}");
        assert_eq!(kinds(&spec, &pinned), (source.to_string(), release.to_string()), "{args:?}");
    }
    let git = spec(&["podinfo", "--url", "git@github.com:stefanprodan/podinfo.git"]);
    let source = git.source_object("flux-system", &pinned).unwrap();
    assert_eq!(
        source["spec"]["url"], "ssh://git@github.com/stefanprodan/podinfo.git",
        "scp-like URLs as Flux takes them"
    );
    assert_eq!(source["spec"]["ref"], serde_json::json!({"branch": "main"}), "the default ref");
    let oci = spec(&["web", "--url", "oci://ghcr.io/acme/web"]);
    assert_eq!(oci.source_object("flux-system", &pinned).unwrap()["spec"]["ref"], serde_json::json!({"tag": "latest"}));
}

#[test]
fn an_older_flux_gets_the_versions_it_serves_and_a_missing_kind_is_refused() {
    let flux_2_3 = Versions::served(ServedApis::from_pairs([
        ("GitRepository", "v1"),
        ("HelmRepository", "v1beta2"),
        ("Kustomization", "v1"),
        ("HelmRelease", "v2beta2"),
    ]));
    let helm = spec(&["db", "--url", "https://charts.bitnami.com/bitnami", "--chart", "postgresql"]);
    assert_eq!(
        kinds(&helm, &flux_2_3),
        (
            "source.toolkit.fluxcd.io/v1beta2 HelmRepository".to_string(),
            "helm.toolkit.fluxcd.io/v2beta2 HelmRelease".to_string()
        )
    );
    let oci = spec(&["web", "--url", "oci://ghcr.io/acme/web"]);
    let error = oci.source_object("flux-system", &flux_2_3).unwrap_err();
    assert_eq!(error.to_string(), "this cluster's Flux does not serve OCIRepository (source.toolkit.fluxcd.io)");
}

fn render_files(files: &BTreeMap<String, String>) -> String {
    files.iter().map(|(path, contents)| format!("# {path}\n{contents}")).collect()
}

#[test]
fn a_helm_app_is_one_shared_definition_plus_a_cluster_overlay_with_its_values() {
    let values = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(values.path(), "database:\n  type: sqlite\n").unwrap();
    let mut app = spec(&["mccp", "--url", "https://charts.example.com", "--chart", "mccp", "--chart-version", "1.x"]);
    let shared = layout::app_files(&app, "flux-system", &Versions::pinned()).unwrap();
    app.values = vec![spec::ValuesFile {
        name: "dev.yaml".into(),
        contents: "database:\n  type: sqlite\n".into(),
        parsed: serde_json::json!({"database": {"type": "sqlite"}}),
    }];
    let dev = ClusterDir { name: "dev".into(), path: "clusters/eu/dev".into() };
    let overlay = layout::cluster_files(&app, &dev, "flux-system", &app.values).unwrap();
    insta::assert_snapshot!(render_files(&shared) + &render_files(&overlay));
}

#[test]
fn the_app_list_keeps_other_entries_sorted_and_the_rest_of_the_file() {
    let existing = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: apps\nresources:\n- zeta\n- ./alpha/\n";
    let added = repo_layout::app_list(Some(existing), "mid", true).unwrap();
    assert_eq!(
        added,
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: apps\nresources:\n- ./alpha/\n- mid\n- zeta\n"
    );
    assert_eq!(repo_layout::listed_apps(&added), ["alpha", "mid", "zeta"]);
    let removed = repo_layout::app_list(Some(&added), "alpha", false).unwrap();
    assert_eq!(repo_layout::listed_apps(&removed), ["mid", "zeta"]);
    assert_eq!(
        repo_layout::app_list(None, "one", true).unwrap(),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- one\n"
    );
    assert!(repo_layout::app_list(Some("resources: [\n"), "x", true).is_err());
}

#[test]
fn suspend_patches_come_and_go_leaving_other_patches() {
    let overlay = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\npatches:\n- patch: |\n    - op: add\n      path: /spec/valuesFrom/-\n      value: {}\n  target:\n    kind: HelmRelease\n    name: web\nresources:\n- ../../../apps/web\n";
    let patch = SuspendPatch {
        kind: &crate::flux::api::HELM_RELEASE,
        version: "v2".into(),
        namespace: "flux-system".into(),
        name: "web".into(),
        suspend: true,
    };
    let suspended = repo_layout::with_suspend_patches(overlay, std::slice::from_ref(&patch), true).unwrap();
    assert_eq!(suspended.matches("path: /spec/suspend").count(), 1, "{suspended}");
    assert!(suspended.contains("path: /spec/valuesFrom/-"), "{suspended}");
    let again = repo_layout::with_suspend_patches(&suspended, std::slice::from_ref(&patch), true).unwrap();
    assert_eq!(again, suspended, "suspending twice changes nothing");
    let resumed = repo_layout::with_suspend_patches(&suspended, &[patch], false).unwrap();
    assert!(!resumed.contains("/spec/suspend"), "{resumed}");
    assert!(resumed.contains("path: /spec/valuesFrom/-"), "{resumed}");
}

fn plan(files: Vec<FileChange>, delivery: Delivery) -> Plan {
    Plan {
        message: "Add app web (kustomize) to clusters/dev".into(),
        repo: "ssh://git@example.com/fleet.git".into(),
        branch: "main".into(),
        files,
        delivery,
        patches: Vec::new(),
        migrations: Vec::new(),
        objects: vec!["GitRepository flux-system/web".into()],
        wait: Some("wait until Kustomization flux-system/web is Ready at the pushed commit".into()),
        notes: Vec::new(),
        new_repo: None,
        request: Vec::new(),
    }
}

#[test]
fn dry_run_text_is_numbered_steps_and_a_unified_diff() {
    let files = vec![
        FileChange { path: "apps/web/source.yaml".into(), before: None, after: Some("kind: GitRepository\n".into()) },
        FileChange {
            path: "clusters/dev/apps/kustomization.yaml".into(),
            before: Some("resources: []\n".into()),
            after: Some("resources:\n- web\n".into()),
        },
        FileChange { path: "old.yaml".into(), before: Some("gone\n".into()), after: None },
    ];
    let pull = Delivery::PullRequest {
        branch: plan::pull_request_branch("add", "web", &files),
        noun: "pull request",
        merge: false,
    };
    insta::assert_snapshot!(plan(files.clone(), Delivery::Push).render());
    let text = plan(files.clone(), pull.clone()).render();
    assert!(text.contains("  2. open a pull request from gitops/add-web-"), "{text}");
    assert!(
        text.contains(
            "  3. check that the pull request is open and its branch holds exactly the 3 planned file change(s)"
        ),
        "{text}"
    );
    // --merge --wait: merged once read back, then followed to the cluster.
    let Delivery::PullRequest { branch, .. } = pull else { unreachable!() };
    let merged = plan(files.clone(), Delivery::PullRequest { branch, noun: "pull request", merge: true }).render();
    assert!(
        merged
            .contains("  4. merge the pull request into main (a merge commit, guarded by the head of gitops/add-web-"),
        "{merged}"
    );
    assert!(
        merged.contains(
            "  5. wait until the pull request is merged, then wait until Kustomization flux-system/web is Ready at the merge\n"
        ),
        "{merged}"
    );
    let body = plan(files.clone(), Delivery::Push).pull_request_body();
    let (source_blob, list_blob) = (plan::blob_id(b"kind: GitRepository\n"), plan::blob_id(b"resources:\n- web\n"));
    assert!(
        body.contains(&format!(
            "- add `apps/web/source.yaml` (blob {source_blob})\n- update `clusters/dev/apps/kustomization.yaml` (blob {list_blob})\n- delete `old.yaml`\n"
        )),
        "{body}"
    );
    // `pr show` reads the list back.
    let listed = plan::listed_files(&body);
    assert_eq!(
        listed.iter().map(|file| (file.verb.as_str(), file.path.as_str(), file.blob.clone())).collect::<Vec<_>>(),
        [
            ("add", "apps/web/source.yaml", Some(source_blob)),
            ("update", "clusters/dev/apps/kustomization.yaml", Some(list_blob)),
            ("delete", "old.yaml", None)
        ]
    );
    assert_eq!(plan::blob_id(b"hello\n"), "ce013625030b", "git hash-object of hello");
    assert!(plan(Vec::new(), Delivery::Push).render().starts_with("Nothing to change"));
}

#[test]
fn the_branch_hash_follows_the_change() {
    let change = |contents: &str| vec![FileChange { path: "a".into(), before: None, after: Some(contents.into()) }];
    assert_eq!(plan::change_hash(&change("x")), plan::change_hash(&change("x")), "a re-run finds its branch");
    assert_ne!(plan::change_hash(&change("x")), plan::change_hash(&change("y")));
    // A whole SHA-256, not a prefix a forger could grind to.
    // `printf 'a\0001:x' | sha256sum`
    assert_eq!(plan::change_hash(&change("x")), "82d03bd32b01749f8d4f4f1ef996828daac4ceb33c0697eb46f1eb8a669204bf");
    let deleted = vec![FileChange { path: "a".into(), before: Some("x".into()), after: None }];
    assert_ne!(plan::change_hash(&deleted), plan::change_hash(&change("")), "a deletion is not an empty file");
    assert_ne!(plan::change_hash(&deleted), plan::change_hash(&change("-")));
    let two = |first: &str, second: &str| {
        [first, second].map(|path| FileChange { path: path.into(), before: None, after: Some("x".into()) }).to_vec()
    };
    assert_eq!(plan::change_hash(&two("a", "b")), plan::change_hash(&two("b", "a")), "in path order");
    // A file's contents cannot pass for a further file: each is preceded by its length.
    assert_ne!(plan::change_hash(&change("x\0z\0x")), plan::change_hash(&two("a", "z")));
}

#[test]
fn a_pull_request_branch_names_its_verb_name_and_hash() {
    let files = vec![FileChange { path: "a".into(), before: None, after: Some("x".into()) }];
    let branch = plan::pull_request_branch("add", "my-web-app", &files);
    let parsed = plan::BranchName::parse(&branch).unwrap();
    assert_eq!((parsed.verb.as_str(), parsed.name.as_str()), ("add", "my-web-app"));
    assert_eq!(parsed.hash, plan::change_hash(&files));
    assert!(!parsed.is_older());
    // An older kubectl-gitops' branch, 7 digits of SHA-1: read, and told apart.
    let older = plan::BranchName::parse("gitops/add-web-1234abc").unwrap();
    assert_eq!((older.name.as_str(), older.is_older()), ("web", true));
    let long = format!("gitops/add-web-{}", "a".repeat(63));
    let upper = format!("gitops/add-web-{}", "A".repeat(64));
    for other in
        ["feature/x", "gitops/add", "gitops/add-web", "gitops/add-web-xyz1234", "gitops/-web-1234567", &long, &upper]
    {
        assert_eq!(plan::BranchName::parse(other), None, "{other}");
    }
}

#[test]
fn authors_are_name_and_email() {
    let delivery = |author: &str| {
        let parsed = Add::try_parse_from(["add", "web", "--url", "https://example.com/x", "--author", author]).unwrap();
        parsed.add.request().map(|request| request.delivery.author)
    };
    let jo = delivery("Jo Doe <jo@example.com>").unwrap();
    assert_eq!((jo.name.as_str(), jo.email.as_str()), ("Jo Doe", "jo@example.com"));
    assert!(delivery("jo@example.com").is_err());
    assert!(delivery("<jo@example.com>").is_err());
}

/// `flux create helmrelease podinfo --source=HelmRepository/podinfo --chart=podinfo
/// --values=./a.yaml --values=./empty.yaml --values=./b.yaml --target-namespace=default
/// --label app.kubernetes.io/managed-by=kubectl-gitops --label kubectl-gitops.io/app=podinfo
/// --export`, as flux v2.9.4 printed it for these files (the fixtures hold no golden with
/// values): later files win, mappings merge key by key, lists are replaced, an empty file adds
/// nothing, a null stays.
const FLUX_HELMRELEASE_WITH_VALUES: &str = r#"---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  labels:
    app.kubernetes.io/managed-by: kubectl-gitops
    kubectl-gitops.io/app: podinfo
  name: podinfo
  namespace: flux-system
spec:
  chart:
    spec:
      chart: podinfo
      reconcileStrategy: ChartVersion
      sourceRef:
        kind: HelmRepository
        name: podinfo
  interval: 1m0s
  storageNamespace: default
  targetNamespace: default
  values:
    image:
      repository: ghcr.io/stefanprodan/podinfo
      tag: "6.7"
    ingress:
      enabled: true
      hosts:
      - podinfo.example.com
    replicaCount: 2
    resources: null
    ui:
      message: "true"
"#;

#[test]
fn export_merges_the_values_files_into_the_release_as_flux_does() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let a = file(
        "a.yaml",
        "replicaCount: 2\nimage:\n  repository: ghcr.io/stefanprodan/podinfo\n  tag: \"6.5\"\ningress:\n  enabled: true\n  hosts:\n  - podinfo.local\nui:\n  message: \"true\"\n",
    );
    let empty = file("empty.yaml", "");
    let b = file("b.yaml", "image:\n  tag: \"6.7\"\ningress:\n  hosts:\n  - podinfo.example.com\nresources: null\n");
    let url = "https://stefanprodan.github.io/podinfo";
    let args = ["podinfo", "--url", url, "--chart", "podinfo", "--values", &a, "--values", &empty, "--values", &b];
    let exported = spec(&args).export("flux-system").unwrap();
    let release = exported.split_inclusive("---\n").skip(2).collect::<String>();
    assert_eq!(format!("---\n{release}"), FLUX_HELMRELEASE_WITH_VALUES);
    assert!(exported.starts_with("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\n"), "{exported}");
    // With --cluster-name the files are that cluster's values: the export shows what it gets.
    let per_cluster = spec(&[&args[..], &["--cluster-name", "dev"]].concat()).export("flux-system").unwrap();
    assert_eq!(per_cluster, exported);
    let only_empty = spec(&["podinfo", "--url", url, "--chart", "podinfo", "--values", &empty]);
    assert!(only_empty.export("flux-system").unwrap().ends_with("  values: {}\n"), "flux prints an empty mapping");
    let none = spec(&["podinfo", "--url", url, "--chart", "podinfo"]).export("flux-system").unwrap();
    assert!(!none.contains("values"), "{none}");
}

fn refused(args: &[&str]) -> crate::error::Error {
    let parsed = Add::try_parse_from(std::iter::once("add").chain(args.iter().copied())).unwrap();
    parsed.add.request().unwrap_err()
}

#[test]
fn semver_ranges_and_chart_versions_are_checked_with_the_flags() {
    let git = "https://github.com/acme/app";
    let charts = "https://charts.example.com";
    for range in [">=1.0.0 <2.0.0", "1.2.3 || 2.x", "~1.2", "^1", "v1.x", "1.0 - 2.0"] {
        spec(&["web", "--url", git, "--semver", range]);
        spec(&["web", "--url", "oci://ghcr.io/acme/web", "--semver", range]);
        spec(&["web", "--url", charts, "--chart", "web", "--chart-version", range]);
    }
    let error = refused(&["web", "--url", git, "--semver", "~~x"]);
    assert_eq!(
        error.to_string(),
        r#"--semver "~~x" is not a semver range: "~" must be followed by a version, not "~x""#
    );
    assert_eq!(error.exit_code(), crate::error::ExitCode::Usage);
    assert!(error.hint().is_some_and(|hint| hint.contains(">=1.0.0 <2.0.0")));
    let error = refused(&["web", "--url", charts, "--chart", "web", "--chart-version", ">>1"]);
    assert_eq!(
        error.to_string(),
        r#"--chart-version ">>1" is not a chart version or semver range: ">" must be followed by a version, not ">1""#
    );
    assert!(refused(&["web", "--url", "oci://ghcr.io/acme/web", "--semver", "latest"]).to_string().contains("latest"));
}

#[test]
fn names_and_refs_are_checked_with_the_flags() {
    let git = "https://github.com/acme/app";
    spec(&["web", "--url", git, "--secret-ref", "git.credentials", "--cluster-name", "dev", "--branch", "release/1.x"]);
    spec(&["web", "--url", "oci://ghcr.io/acme/web", "--tag", "v1.2.3_build-5"]);
    let cases: [(&[&str], &str); 5] = [
        (&["--url", git, "--cluster-name", "Dev"], r#"--cluster-name "Dev" is not a valid name"#),
        (&["--url", git, "--secret-ref", "Git_Creds"], r#"--secret-ref "Git_Creds" is not a valid name"#),
        (&["--url", git, "--branch", "a..b"], r#"--branch "a..b" is not a valid git branch name"#),
        (&["--url", git, "--tag", "v1 beta"], r#"--tag "v1 beta" is not a valid git tag name"#),
        (&["--url", "oci://ghcr.io/acme/web", "--tag", ".hidden"], r#"--tag ".hidden" is not a valid OCI tag"#),
    ];
    for (flags, message) in cases {
        let args = [&["web"][..], flags].concat();
        assert_eq!(refused(&args).to_string(), message, "{flags:?}");
    }
}

#[test]
fn a_platform_app_lives_in_platform_and_says_so_in_its_labels() {
    let mut platform = spec(&["ingress", "--url", "https://charts.example.com", "--chart", "ingress"]);
    platform.tier = spec::Tier::Platform;
    let files = layout::app_files(&platform, "flux-system", &Versions::pinned()).unwrap();
    assert!(files.keys().all(|path| path.starts_with("platform/ingress/")), "{:?}", files.keys());
    assert!(files["platform/ingress/release.yaml"].contains("kubectl-gitops.io/tier: platform"));
    let dev = ClusterDir { name: "dev".into(), path: "clusters/dev".into() };
    let overlay = layout::cluster_files(&platform, &dev, "flux-system", &[]).unwrap();
    let (path, text) = overlay.iter().next().unwrap();
    assert_eq!(path, "clusters/dev/platform/ingress/kustomization.yaml");
    assert!(text.contains("- ../../../../platform/ingress"), "{text}");
    let app = spec(&["web", "--url", "https://charts.example.com", "--chart", "web"]);
    assert!(
        !layout::app_files(&app, "flux-system", &Versions::pinned()).unwrap()["apps/web/release.yaml"].contains("tier")
    );
}

fn add_request(args: &[&str]) -> Result<settings::AddRequest> {
    Add::try_parse_from(std::iter::once("add").chain(args.iter().copied())).unwrap().add.request()
}

#[test]
fn create_repo_names_the_new_repository_and_deploys_its_layout() {
    let request = add_request(&["hello", "--create-repo"]).unwrap();
    let new = request.new_repo.unwrap();
    assert_eq!((new.name.as_str(), &new.source, new.private), ("hello", &new_repo::Source::Layout, true));
    assert_eq!(request.spec.deploy, spec::Deploy::Kustomize { path: "./deploy".into() }, "the layout's manifests");
    let request =
        add_request(&["shop", "--create-repo", "acme/shop-app", "--from-template", "acme/t", "--public"]).unwrap();
    let new = request.new_repo.unwrap();
    assert_eq!(new.name, "acme/shop-app");
    assert_eq!(new.source, new_repo::Source::Template(crate::provider::RepoRef::new("acme", "t")));
    assert!(!new.private);
    assert_eq!(request.spec.deploy, spec::Deploy::Kustomize { path: "./".into() }, "a template decides its layout");
    let chart = add_request(&["shop", "--create-repo", "--from-url", "https://x.example/a.git", "--chart-path", "c"]);
    assert_eq!(chart.unwrap().spec.deploy, spec::Deploy::Helm { chart: "./c".into(), version: None });
    // Once planned, the app follows the new repository with the key's Secret.
    let planned = add_request(&["hello", "--create-repo"]).unwrap().spec.from_new_repo(
        "ssh://git@127.0.0.1:2222/acme/hello.git".into(),
        "main".into(),
        "hello".into(),
    );
    let source = planned.source_object("flux-system", &Versions::pinned()).unwrap();
    assert_eq!(source["spec"]["url"], "ssh://git@127.0.0.1:2222/acme/hello.git");
    assert_eq!(source["spec"]["ref"]["branch"], "main");
    assert_eq!(source["spec"]["secretRef"]["name"], "hello");
}

#[test]
fn create_repo_flags_are_checked_before_anything_is_asked() {
    let error = add_request(&["hello", "--url", "https://x.example/a.git", "--from-template", "acme/t"]).unwrap_err();
    assert!(error.to_string().contains("describe a new repository"), "{error}");
    assert!(error.hint().unwrap_or_default().contains("--create-repo"), "{error:?}");
    let error = add_request(&["hello", "--create-repo", "a/b/c"]).unwrap_err();
    assert!(error.to_string().contains("is not a repository name"), "{error}");
    for conflicting in [&["--url", "https://x.example/a.git"][..], &["--secret-ref", "s"], &["--tag", "v1"]] {
        let args = [&["add", "hello", "--create-repo"][..], conflicting].concat();
        assert!(Add::try_parse_from(args).is_err(), "{conflicting:?}");
    }
    assert!(Add::try_parse_from(["add", "hello"]).is_err(), "--url or --create-repo");
}

#[test]
fn a_new_repository_is_reached_like_the_config_repo() {
    let target = crate::provider::RepoRef::new("acme", "hello");
    for (config, expected) in [
        ("ssh://git@127.0.0.1:2222/acme/fleet.git", "ssh://git@127.0.0.1:2222/acme/hello.git"),
        ("git@github.com:acme/fleet.git", "ssh://git@github.com/acme/hello.git"),
        ("https://gitlab.example.com/acme/fleet", "https://gitlab.example.com/acme/hello"),
    ] {
        assert_eq!(new_repo::sibling_url(config, &target).unwrap(), expected, "{config}");
    }
}

#[test]
fn an_apps_words_give_the_same_app_again() {
    let cases: [&[&str]; 6] = [
        &["web", "--url", "https://github.com/acme/web", "--path", "kustomize", "--depends-on", "db"],
        &["web", "--url", "ssh://git@example.com/acme/web.git", "--commit", "0123456789abcdef0123456789abcdef01234567"],
        &["web", "--url", "git@example.com:acme/web.git", "--tag", "v1.2.0", "--chart-path", "./charts/web"],
        &["db", "--url", "https://charts.example.com", "--chart", "postgresql", "--chart-version", ">=1.0.0 <2.0.0"],
        &["web", "--url", "oci://registry.local:5000/web", "--semver", "1.x", "--insecure", "--prune", "false"],
        &[
            "web",
            "--url",
            "https://github.com/acme/web",
            "--secret-ref",
            "creds",
            "--interval",
            "90s",
            "--create-namespace",
            "--target-namespace",
            "shop",
        ],
    ];
    for args in cases {
        let original = spec(args);
        let words = original.words();
        let again = spec(&words.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(again, original, "{args:?} -> {words:?}");
    }
}

#[test]
fn the_recorded_request_is_one_quoted_line_under_its_heading() {
    let spec = spec(&[
        "db",
        "--url",
        "https://charts.example.com",
        "--chart",
        "postgresql",
        "--chart-version",
        ">=1.0.0 <2.0.0",
    ]);
    let words = recorded::add_words(&spec, &["dev".into(), "prod".into()], true);
    let section = plan::body_section(&words).unwrap();
    assert!(
        section.starts_with(
            "\n### Request\n`kubectl gitops app add db --url https://charts.example.com --chart postgresql --chart-version '>=1.0.0 <2.0.0' "
        ),
        "{section}"
    );
    assert!(section.ends_with(" --cluster-name dev --cluster-name prod --update`\n"), "{section}");
    let body = format!("{}\n\n### Files\n- add `x`\n{section}\n### Notes\n- n\n", plan::PULL_REQUEST_MARK);
    assert_eq!(plan::parse(&body), Some(words));
    assert_eq!(plan::parse("no request here"), None);
    assert_eq!(plan::parse("### Request\nkubectl gitops app add x (no backticks)\n"), None);
    let removal = recorded::remove_words(spec::Tier::Platform, "db", &[]);
    assert_eq!(removal, ["platform", "remove", "db"]);
}

#[test]
fn the_sync_secret_reads_only_sources_on_the_config_repos_server() {
    let config = "ssh://git@git.example.com:2222/acme/fleet.git";
    let context = Context {
        cluster: None,
        namespace: "flux-system".into(),
        versions: Versions::pinned(),
        detection: None,
        repo: Some(ConfigRepo {
            remote: Remote { url: config.into(), auth: Auth::Anonymous },
            branch: "main".into(),
            hosted: None,
            platform: false,
        }),
        printer: crate::output::Printer::new(crate::cli::ColorChoice::Never, 0, 0),
    };
    let with_secret = |url: &str, secret: &str| spec(&["web", "--url", url, "--secret-ref", secret]);
    check_secret_ref(&with_secret("ssh://git@git.example.com:2222/acme/web.git", "flux-system"), &context).unwrap();
    check_secret_ref(&with_secret("https://evil.example/acme/web.git", "web-credentials"), &context).unwrap();
    for foreign in [
        "https://evil.example/acme/web.git",
        "ssh://git@git.example.com:2223/acme/web.git",
        "ssh://root@git.example.com:2222/acme/web.git",
        "oci://git.example.com:2222/acme/web",
    ] {
        let error = check_secret_ref(&with_secret(foreign, "flux-system"), &context).unwrap_err();
        assert!(error.to_string().contains("not on the config repo's server"), "{foreign}: {error}");
        assert_eq!(error.exit_code(), crate::error::ExitCode::Usage);
    }
}

#[test]
fn a_token_in_the_source_url_is_refused_and_not_shown() {
    for url in ["https://ci:s3cret@github.com/acme/web", "oci://robot:s3cret@ghcr.io/acme/web"] {
        let parsed = Add::try_parse_from(["add", "web", "--url", url]).unwrap();
        let error = parsed.add.request().unwrap_err();
        let text = format!("{error} {}", error.hint().unwrap_or_default());
        assert!(!text.contains("s3cret") && text.contains("***@") && text.contains("--secret-ref"), "{text}");
    }
}
