//! The fleet test's assistant session: `kubectl gitops mcp` finds why web fails in dev and fixes it
//! through a pull request, previewed, validated and merged, with nothing applied before the merge.

use std::path::Path;
use std::time::Duration;

use gitops_e2e::flux_release;
use gitops_e2e::testenv::TestEnv;
use gitops_e2e::testenv::gitea::Gitea;
use serde_json::{Value, json};

use super::{REPO, keys, wire};

/// The "why is it failing, fix it" session of an assistant over MCP (the official Python SDK
/// driving `kubectl gitops mcp --context dev --allow-writes` through the real kubectl): dev's web
/// is broken by hand (its overlay asks for tag v1.2.0, which its repository does not have);
/// `app_status` names the missing tag; the fix is uat's version promoted back to dev, previewed
/// (`dryRun`: the plan and its diff), opened as a pull request (the default), listed by
/// `pr_list` and validated by `pr_show`, with nothing applied: main does not move until
/// `merge_pr` merges it, and then dev's web is Ready again.
pub(super) fn an_assistant_finds_why_web_fails_in_dev_and_fixes_it_through_a_pull_request(
    dev: &TestEnv,
    gitea: &Gitea,
    kubeconfig: &Path,
    clone: &Path,
) {
    gitea.git(clone, &["pull", "-q", "origin", "main"]).unwrap();
    let overlay = clone.join("clusters/dev/apps/web/kustomization.yaml");
    let broken = std::fs::read_to_string(&overlay).unwrap().replace("tag: v1.1.0", "tag: v1.2.0");
    std::fs::write(&overlay, broken).unwrap();
    gitea.git(clone, &["commit", "-q", "-am", "dev: web at v1.2.0 (there is no such tag)"]).unwrap();
    gitea.git(clone, &["push", "-q", "origin", "main"]).unwrap();
    let head = gitea.head(REPO, "main").unwrap();
    dev.request_reconcile("flux-system", &["gitrepository/flux-system", "kustomization/flux-system"]).unwrap();
    let sync = ["-n", "flux-system", "kustomization", "flux-system"];
    let applied = format!("main@sha1:{head}");
    dev.wait_for_jsonpath(&sync, "{.status.lastAppliedRevision}", &applied, Duration::from_secs(120)).unwrap();
    dev.request_reconcile("flux-system", &["kustomization/apps"]).unwrap();
    let source = ["-n", "flux-system", "gitrepository", "web"];
    dev.wait_for_jsonpath(&source, "{.spec.ref.tag}", "v1.2.0", Duration::from_secs(120)).unwrap();
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    dev.wait_for_jsonpath(&source, ready, "False", Duration::from_secs(120)).unwrap();

    let assistant = |calls: Value| {
        let (mut server, _plugins) = crate::mcp::kubectl_gitops_mcp(
            kubeconfig,
            &[&["--context", "dev", "--allow-writes"][..], &keys(gitea)].concat(),
        );
        // The preview builds with the environment's flux CLI.
        server.env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli());
        server.env("KUBECTL_GITOPS_HELM_BIN", gitops_e2e::tools::path("helm"));
        let _home = wire(&mut server, gitea, kubeconfig);
        let answer = crate::mcp::session(&server, &calls);
        for call in answer["calls"].as_array().unwrap() {
            assert_eq!(call["schemaErrors"], json!([]), "{call:#}");
        }
        // The server acts with the user's forge token (pushes, pull requests, the merge); no
        // result carries it.
        assert!(!answer.to_string().contains(&gitea.token), "the forge token reached a tool result");
        answer
    };
    // A read writes nothing: not even web's ledger, which app_status would have made again.
    dev.kubectl_ok(&[
        "-n",
        "flux-system",
        "delete",
        "configmap",
        "kubectl-gitops-history-ks-web",
        "--ignore-not-found",
    ])
    .unwrap();
    let before = dev.our_requests().unwrap().len();
    let answer = assistant(json!([
        {"tool": "app_status", "arguments": {"name": "web"}},
        {"tool": "promote", "arguments": {"name": "web", "from": "uat", "to": "dev", "dryRun": true}},
        {"tool": "promote", "arguments": {"name": "web", "from": "uat", "to": "dev"}},
        {"tool": "pr_list", "arguments": {}},
        {"tool": "flux_upgrade_check", "arguments": {}},
        {"tool": "rollback_app", "arguments": {"name": "mccp", "dryRun": true}},
        // The pull request it just opened, merged by the same session: refused.
        {"tool": "merge_pr", "arguments": {"number": {"$from": [3, "structured", "items", 0, "number"]}}},
        {"tool": "fleet_status", "arguments": {"contexts": ["uat"]}},
    ]));
    let written: Vec<String> = dev.our_requests().unwrap()[before..]
        .iter()
        .filter(|request| {
            // The previews' server-side dry runs (`dryRun=All`) write nothing.
            request.resource == "configmaps"
                && ["create", "update", "patch"].contains(&request.verb.as_str())
                && !request.uri.contains("dryRun=All")
        })
        .map(|request| format!("{} {}", request.verb, request.uri))
        .collect();
    assert_eq!(written, Vec::<String>::new(), "the session's reads and dry runs wrote ConfigMaps");
    let ledger = dev.kubectl_ok(&["-n", "flux-system", "get", "configmap", "kubectl-gitops-history-ks-web"]);
    assert!(ledger.is_err(), "app_status made web's ledger again: {ledger:?}");
    let tools = answer["tools"].to_string();
    assert!(tools.contains("\"merge_pr\"") && tools.contains("\"add_app\""), "writes are served: {tools}");
    let calls = answer["calls"].as_array().unwrap();
    let status = &calls[0];
    assert_eq!(status["isError"], false, "{status:#}");
    assert!(status["structured"].to_string().contains("v1.2.0"), "the cause names the missing tag: {status:#}");
    let planned = &calls[1];
    assert_eq!(
        (planned["isError"].clone(), planned["structured"]["dryRun"].clone()),
        (json!(false), json!(true)),
        "{planned:#}"
    );
    let plan = planned["structured"]["output"].as_str().unwrap();
    for line in ["Plan:", "+++ b/clusters/dev/apps/web/kustomization.yaml", "+        tag: v1.1.0"] {
        assert!(plan.contains(line), "{line} in {plan}");
    }
    assert_eq!(gitea.head(REPO, "main").unwrap(), head, "a dry run changes nothing");
    let opened = &calls[2];
    assert_eq!(opened["isError"], false, "{opened:#}");
    let listed = &calls[3]["structured"]["items"];
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed:#}");
    assert_eq!((listed[0]["verb"].as_str(), listed[0]["name"].as_str()), (Some("promote"), Some("web")), "{listed:#}");
    let number = listed[0]["number"].as_u64().unwrap();
    // Flux as dev runs it: the release installed there, which this kubectl-gitops pins.
    let flux = &calls[4]["structured"];
    assert_eq!((flux["upToDate"].as_bool(), flux["running"].clone()), (Some(true), flux["target"].clone()), "{flux:#}");
    // mccp rolled back in dev (a dry run): dev's overlay as it was when dev last ran 0.1.0.
    let rollback = &calls[5];
    assert_eq!(rollback["isError"], false, "{rollback:#}");
    let plan = rollback["structured"]["output"].as_str().unwrap();
    assert!(plan.contains("Plan:") && plan.contains("clusters/dev/apps/mccp/kustomization.yaml"), "{plan}");
    assert!(opened["structured"]["output"].as_str().unwrap().contains(&format!("/pulls/{number}")), "{opened:#}");
    let merged_by_itself = &calls[6];
    assert_eq!(merged_by_itself["isError"], true, "{merged_by_itself:#}");
    assert!(merged_by_itself["text"].as_str().unwrap().contains("was opened by this server"), "{merged_by_itself:#}");
    let other_cluster = &calls[7];
    assert_eq!(other_cluster["isError"], true, "started for dev only: {other_cluster:#}");
    // Opened, not applied: main is where it was, dev still asks for v1.2.0.
    assert_eq!(gitea.head(REPO, "main").unwrap(), head, "nothing lands until the pull request merges");
    assert_eq!(dev.jsonpath(&source, "{.spec.ref.tag}").unwrap(), "v1.2.0");

    let answer = assistant(json!([
        {"tool": "pr_show", "arguments": {"number": number}},
        {"tool": "diff", "arguments": {"pullRequest": number}},
        {"tool": "merge_pr", "arguments": {"number": number}},
        {"tool": "reconcile_app", "arguments": {"name": "web"}},
    ]));
    let mut calls = answer["calls"].as_array().unwrap().clone();
    // What the pull request would do to dev: web's source back at v1.1.0.
    let preview = calls.remove(1);
    assert_eq!(preview["isError"], false, "{preview:#}");
    assert!(preview["structured"].to_string().contains("v1.1.0"), "{preview:#}");
    let shown = &calls[0]["structured"];
    assert_eq!(shown["valid"], true, "{shown:#}");
    let title = "Promote web (tag v1.1.0 and image registry.invalid/acme/web:1.1.0) from uat to dev";
    assert_eq!(shown["title"], title, "{shown:#}");
    assert_eq!(calls[1]["isError"], false, "{:#}", calls[1]);
    assert!(calls[2]["structured"]["output"].as_str().unwrap().starts_with("reconcile requested"), "{:#}", calls[2]);
    let merged = gitea.head(REPO, "main").unwrap();
    assert_ne!(merged, head, "merged");
    dev.request_reconcile("flux-system", &["gitrepository/flux-system", "kustomization/flux-system"]).unwrap();
    let applied = format!("main@sha1:{merged}");
    dev.wait_for_jsonpath(&sync, "{.status.lastAppliedRevision}", &applied, Duration::from_secs(120)).unwrap();
    dev.request_reconcile("flux-system", &["kustomization/apps"]).unwrap();
    dev.wait_for_jsonpath(&source, "{.spec.ref.tag}", "v1.1.0", Duration::from_secs(120)).unwrap();
    dev.wait_ready(&["gitrepository/web", "kustomization/web"], Duration::from_secs(120)).unwrap();
}
