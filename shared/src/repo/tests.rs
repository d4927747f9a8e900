#![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

use clap::Parser;

use super::*;
use crate::change::new_repo::{Source, app_layout};
use crate::provider::RepoRef;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    create: CreateArgs,
    #[command(flatten)]
    global: GlobalArgs,
}

fn request(args: &[&str]) -> Result<CreateRequest> {
    let cli = Cli::try_parse_from([&["repo-create"][..], args].concat()).unwrap();
    cli.create.request(&cli.global)
}

#[test]
fn each_source_is_resolved_from_its_flags() {
    assert_eq!(request(&["hello"]).unwrap().repository.source, Source::Layout);
    assert_eq!(
        request(&["acme/hello", "--from-template", "acme/app-template"]).unwrap().repository.source,
        Source::Template(RepoRef::new("acme", "app-template"))
    );
    assert_eq!(
        request(&["hello", "--from-template", "acme/upstream", "--fork"]).unwrap().repository.source,
        Source::Fork(RepoRef::new("acme", "upstream"))
    );
    assert_eq!(
        request(&["hello", "--from-url", "https://git.example.com/t.git", "--from-branch", "stable"])
            .unwrap()
            .repository
            .source,
        Source::Url { url: "https://git.example.com/t.git".into(), branch: "stable".into() }
    );
    let created = request(&["hello", "--public", "--dry-run"]).unwrap();
    assert!(!created.repository.private && created.dry_run);
    assert!(request(&["hello"]).unwrap().repository.private, "private unless --public");
}

#[test]
fn bad_names_and_sources_are_refused_before_anything_is_asked() {
    for name in ["a/b/c", "bad name", "", "acme//x"] {
        let error = request(&[name]).unwrap_err();
        assert_eq!(error.exit_code(), crate::error::ExitCode::Usage, "{name:?}: {error}");
    }
    let error = request(&["hello", "--from-url", "not a url"]).unwrap_err();
    assert!(error.to_string().contains("unsupported repository URL"), "{error}");
    let error = request(&["hello", "--from-template", "no-owner"]).unwrap_err();
    assert!(error.to_string().contains("expected owner/name"), "{error}");
    assert!(Cli::try_parse_from(["repo-create", "hello", "--fork"]).is_err(), "--fork needs --from-template");
    assert!(
        Cli::try_parse_from(["repo-create", "hello", "--from-template", "a/b", "--from-url", "https://x/y"]).is_err(),
        "one source"
    );
}

#[test]
fn the_app_layout_is_a_kustomization_app_add_can_apply() {
    let layout = app_layout();
    assert_eq!(layout.keys().collect::<Vec<_>>(), ["README.md", "deploy/kustomization.yaml"]);
    let kustomization = String::from_utf8(layout["deploy/kustomization.yaml"].clone()).unwrap();
    assert!(kustomization.contains("kind: Kustomization\nresources: []\n"), "{kustomization}");
}
