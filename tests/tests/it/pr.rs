//! `kubectl gitops pr list|show` through the real kubectl, against the GitHub and GitLab
//! stand-in in front of the real git server: a pull request `app add --pr` opened is listed and
//! valid; a hand edit of its branch is named file by file; a number that is not a pull request,
//! and one we did not open, are refused. A reviewer approves it and it is merged for real on the
//! git server: refused for its author, for a rebase the repository does not allow and for a token
//! without write access, each leaving it open.

#![allow(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use std::process::Command;

use gitops_e2e::race::RacingPush;
use gitops_e2e::snapshot::Run;
use gitops_e2e::{binaries, flux_release, standin};
use gitops_shared::provider::Kind;

use crate::app_provider::Fixture;

const REPO: &str = "acme/fleet";
const ADD: [&str; 7] =
    ["add", "podinfo", "--url", "https://github.com/stefanprodan/podinfo", "--path", "./deploy", "--pr"];

/// The config repo installed on `kind`, with `app add podinfo --pr` opened as request 1.
fn opened(kind: Kind) -> Fixture {
    let fixture = Fixture::install_from(kind, &flux_release::components(), &[]);
    let run = fixture.pushing("kubectl-gitops-app", &ADD);
    assert_eq!(run.code, Some(0), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    fixture
}

/// `ARGS --private-key-file … --known-hosts-file …`: `pr show` clones the branch.
fn with_key(fixture: &Fixture, args: &[&str]) -> Vec<String> {
    let key = fixture.env.git.client_key.display().to_string();
    let hosts = fixture.env.git.known_hosts.display().to_string();
    args.iter()
        .map(|arg| arg.to_string())
        .chain(["--private-key-file".into(), key, "--known-hosts-file".into(), hosts])
        .collect()
}

/// `kubectl gitops pr comment NUMBER` with the key flags and the test environment's flux CLI.
fn comment(fixture: &Fixture, plugins: &std::path::Path, number: &str) -> Run {
    let args = with_key(fixture, &["pr", "comment", number]);
    let mut command = fixture.kubectl_gitops_command(plugins, &args);
    command.env("KUBECTL_GITOPS_FLUX_BIN", flux_release::cli());
    Run::of(&mut command)
}

/// Pushes a hand edit of `path` to `branch` on the git server, the way a reviewer would.
fn edit_by_hand(fixture: &Fixture, branch: &str, path: &str) {
    let work = tempfile::tempdir().unwrap();
    let bare = fixture.env.git.repos.join(format!("{REPO}.git"));
    let git = |args: &[&str]| {
        let output = Command::new("git")
            .args(["-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.invalid"])
            .args(args)
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    git(&["clone", "--branch", branch, bare.to_str().unwrap(), "."]);
    let file = work.path().join(path);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}# tuned by hand\n")).unwrap();
    git(&["commit", "-am", "tune by hand"]);
    git(&["push", "origin", branch]);
}

#[test]
fn github_pull_requests_are_listed_validated_and_hand_edits_named() {
    let fixture = opened(Kind::GitHub);
    let plugins = binaries::plugin_dir();

    let list = fixture.kubectl_gitops(plugins.path(), &["pr", "list", "-o", "json"]);
    assert_eq!(list.code, Some(0), "{}\n{}", list.stdout, list.stderr);
    let listed = gitops_e2e::schema::document("PullRequestList", &list.stdout);
    let rows = listed["items"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{listed:#}");
    let branch = rows[0]["branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with("gitops/add-podinfo-"), "{listed:#}");
    assert_eq!((rows[0]["number"].as_u64(), rows[0]["verb"].as_str()), (Some(1), Some("add")));
    assert_eq!((rows[0]["name"].as_str(), rows[0]["mergeable"].as_bool()), (Some("podinfo"), Some(true)));
    assert_eq!(rows[0]["author"], "alice");
    assert!(rows[0].get("checks").is_none(), "no statuses on its head yet: {listed:#}");
    let head = fixture.git(&["rev-parse", &format!("refs/heads/{branch}")]);
    // Its statuses passed, but a check run (GitHub Actions) still runs: pending.
    fixture.standin.set_commit_checks(head.trim(), "success");
    fixture.standin.add_check_run(head.trim(), "in_progress", None);
    let table = fixture.kubectl_gitops(plugins.path(), &["pr", "list"]);
    assert!(table.stdout.starts_with("NUMBER   CHANGE        MERGEABLE   CHECKS    AGE"), "{}", table.stdout);
    assert!(table.stdout.contains("\n1        add podinfo   yes         pending "), "{}", table.stdout);
    fixture.standin.add_check_run(head.trim(), "completed", Some("failure"));
    let list = fixture.kubectl_gitops(plugins.path(), &["pr", "list", "-o", "json"]);
    let listed = gitops_e2e::schema::document("PullRequestList", &list.stdout);
    assert_eq!(listed["items"][0]["checks"], "failure", "a failed check run: {listed:#}");

    // Valid as opened: every check passes, exit 0.
    let show = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "show", "1"]).as_slice());
    assert_eq!(show.code, Some(0), "{}\n{}", show.stdout, show.stderr);
    for line in [
        "ok    open       open\n",
        "ok    base       into main, the branch Flux follows\n",
        "ok    change     the branch holds exactly the planned change, 5 file(s): Kustomization podinfo, GitRepository podinfo\n",
        "ok    mergeable  mergeable\n",
        "#1 is valid\n",
    ] {
        assert!(show.stdout.contains(line), "{line:?} in:\n{}", show.stdout);
    }
    // The request its body records, planned again where the branch left main, gives the branch.
    let body = &fixture.standin.pull_requests(REPO)[0].body;
    assert!(
        body.contains(
            "\n### Request\n`kubectl gitops app add podinfo --url https://github.com/stefanprodan/podinfo --branch main \
             --path ./deploy --target-namespace default --interval 1m0s --prune true`\n"
        ),
        "{body}"
    );
    let main = fixture.main_head();
    let replanned = format!(
        "ok    request    `kubectl gitops app add podinfo --url https://github.com/stefanprodan/podinfo --branch main \
         --path ./deploy --target-namespace default --interval 1m0s --prune true` planned again at {}: the branch \
         holds exactly that plan\n",
        &main[..12]
    );
    assert!(show.stdout.contains(&replanned), "{replanned:?} in:\n{}", show.stdout);
    assert!(show.stdout.starts_with("#1 Add app podinfo (kustomize) to clusters/dev\n"), "{}", show.stdout);
    let head = fixture.git(&["rev-parse", &format!("refs/heads/{branch}")]);
    assert!(show.stdout.contains(&format!("branch {branch} into main at {}", &head[..12])), "{}", show.stdout);
    // What merging it would do to the cluster, posted on it as one comment.
    let posted = comment(&fixture, plugins.path(), "1");
    assert_eq!(posted.code, Some(0), "{}", posted.render());
    assert!(
        posted.stdout.starts_with("pull request #1: comment ") && posted.stdout.contains(" posted ("),
        "{}",
        posted.stdout
    );
    let comments = fixture.standin.comments(REPO, 1);
    let [(id, author, body)] = &comments[..] else { panic!("{comments:?}") };
    assert_eq!(author, "alice");
    assert!(body.starts_with("<!-- kubectl-gitops diff -->\n### kubectl gitops diff: "), "{body}");
    assert!(body.contains(&format!("at {}) with the cluster", head.trim())), "{body}");

    // A reviewer's hand edit on the branch: not valid, exit 1, the file named.
    edit_by_hand(&fixture, &branch, "apps/podinfo/release.yaml");
    // The preview follows the new head, in the same comment.
    let updated = comment(&fixture, plugins.path(), "1");
    assert_eq!(updated.code, Some(0), "{}", updated.render());
    assert!(updated.stdout.starts_with(&format!("pull request #1: comment {id} updated (")), "{}", updated.stdout);
    let new_head = fixture.git(&["rev-parse", &format!("refs/heads/{branch}")]);
    let comments = fixture.standin.comments(REPO, 1);
    let [(again, _, body)] = &comments[..] else { panic!("{comments:?}") };
    assert_eq!(again, id);
    assert!(body.contains(&format!("at {}) with the cluster", new_head.trim())), "{body}");
    let writes = fixture.standin.writes().len();
    let show =
        fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "show", "1", "-o", "json"]).as_slice());
    assert_eq!(show.code, Some(1), "{}\n{}", show.stdout, show.stderr);
    let validation = gitops_e2e::schema::document("PullRequestValidation", &show.stdout);
    assert_eq!(validation["valid"], false);
    let failed: Vec<&str> = validation["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|check| check["ok"] == false)
        .map(|check| check["detail"].as_str().unwrap())
        .collect();
    assert_eq!(failed.len(), 2, "{validation:#}");
    assert!(failed[0].starts_with("apps/podinfo/release.yaml differs from the plan: blob "), "{validation:#}");
    assert!(failed[1].starts_with("apps/podinfo/release.yaml: blob "), "{validation:#}");
    assert!(failed[1].ends_with(" as the recorded request plans it"), "{validation:#}");

    // A body whose recorded request no longer gives the branch (here: another path) is named
    // file by file, even though the branch name's hash still matches the branch.
    fixture.standin.edit_pull_request_body(REPO, 1, |body| body.replace("--path ./deploy", "--path ./other"));
    let show = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "show", "1"]).as_slice());
    assert_eq!(show.code, Some(1), "{}\n{}", show.stdout, show.stderr);
    assert!(show.stdout.contains("FAIL  request    apps/podinfo/release.yaml: blob "), "{}", show.stdout);
    fixture.standin.edit_pull_request_body(REPO, 1, |body| body.replace("--path ./other", "--path ../../etc"));
    let show = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "show", "1"]).as_slice());
    assert_eq!(show.code, Some(1), "{}\n{}", show.stdout, show.stderr);
    assert!(show.stdout.contains("FAIL  request    "), "{}", show.stdout);
    // A recorded command that opens no pull requests: the edge's planner, handed to `pr` by the
    // binary, names it instead of planning anything.
    fixture.standin.edit_pull_request_body(REPO, 1, |body| {
        body.replace("`kubectl gitops app add ", "`kubectl gitops repo create ")
    });
    let show = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "show", "1"]).as_slice());
    assert_eq!(show.code, Some(1), "{}\n{}", show.stdout, show.stderr);
    assert!(show.stdout.contains("it is not a command kubectl gitops opens pull requests for"), "{}", show.stdout);
    assert_eq!(fixture.standin.writes().len(), writes, "pr list and pr show write nothing");

    // A number that is no pull request, and a pull request we did not open: usage errors, found
    // before the config repo is reached (so without an SSH key: HOME has no ~/.ssh here).
    let missing = fixture.kubectl_gitops(plugins.path(), &["pr", "show", "99"]);
    assert_eq!(missing.code, Some(2), "{}\n{}", missing.stdout, missing.stderr);
    assert!(missing.stderr.starts_with("error: acme/fleet has no pull request #99\nhint: "), "{}", missing.stderr);
    fixture.standin.add_branch(REPO, "feature/typo", &fixture.main_head());
    let theirs = fixture.standin.add_pull_request(REPO, "feature/typo", "main", "Fix a typo");
    let other = fixture.kubectl_gitops(plugins.path(), &["pr", "show", &theirs.to_string()]);
    assert_eq!(other.code, Some(2), "{}\n{}", other.stdout, other.stderr);
    assert!(
        other
            .stderr
            .contains(&format!("#{theirs} of acme/fleet was not opened by kubectl gitops (branch \"feature/typo\")")),
        "{}",
        other.stderr
    );
    let list = fixture.kubectl_gitops(plugins.path(), &["pr", "list", "-o", "json"]);
    let listed = gitops_e2e::schema::document("PullRequestList", &list.stdout);
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "only ours: {listed:#}");
    let bad = fixture.kubectl_gitops(plugins.path(), &["pr", "show", "web"]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
}

#[test]
fn gitlab_merge_requests_are_validated_by_their_iid() {
    let fixture = opened(Kind::GitLab);
    let plugins = binaries::plugin_dir();
    let list = fixture.kubectl_gitops(plugins.path(), &["pr", "list", "-o", "json"]);
    let listed = gitops_e2e::schema::document("PullRequestList", &list.stdout);
    let url = listed["items"][0]["url"].as_str().unwrap().to_string();
    assert!(url.ends_with("/-/merge_requests/1"), "{listed:#}");
    assert!(listed["items"][0].get("checks").is_none(), "no pipeline yet: {listed:#}");
    let branch = listed["items"][0]["branch"].as_str().unwrap().to_string();
    let head = fixture.git(&["rev-parse", &format!("refs/heads/{branch}")]);
    fixture.standin.set_commit_checks(head.trim(), "running");
    let list = fixture.kubectl_gitops(plugins.path(), &["pr", "list", "-o", "json"]);
    let listed = gitops_e2e::schema::document("PullRequestList", &list.stdout);
    assert_eq!(listed["items"][0]["checks"], "running", "its head pipeline: {listed:#}");
    let elsewhere = fixture.kubectl_gitops(
        plugins.path(),
        with_key(&fixture, &["pr", "show", "https://gitlab.example.com/other/repo/-/merge_requests/1"]).as_slice(),
    );
    assert_eq!(elsewhere.code, Some(2), "another repo's address: {}", elsewhere.stderr);
    assert!(
        elsewhere.stderr.starts_with(
            "error: https://gitlab.example.com/other/repo/-/merge_requests/1 is not merge request !1 of acme/fleet, which is "
        ),
        "{}",
        elsewhere.stderr
    );
    let show = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "show", &url]).as_slice());
    assert_eq!(show.code, Some(0), "{}\n{}", show.stdout, show.stderr);
    assert!(show.stdout.starts_with("!1 Add app podinfo (kustomize) to clusters/dev\n"), "{}", show.stdout);
    assert!(show.stdout.contains("ok    mergeable  mergeable\n"), "{}", show.stdout);
    assert!(show.stdout.ends_with("!1 is valid\n"), "{}", show.stdout);
    // The preview as a merge request note, posted once and then edited in place.
    for verb in ["posted", "updated"] {
        let run = comment(&fixture, plugins.path(), "1");
        assert_eq!(run.code, Some(0), "{}", run.render());
        assert!(
            run.stdout.starts_with("merge request !1: comment ") && run.stdout.contains(&format!(" {verb} (")),
            "{}",
            run.stdout
        );
    }
    let notes = fixture.standin.comments(REPO, 1);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].1, "alice");
    assert!(notes[0].2.contains("Comparing merge request !1 (branch "), "{}", notes[0].2);
}

#[test]
fn github_pull_request_is_approved_by_a_reviewer_and_merged_into_the_config_branch() {
    let fixture = opened(Kind::GitHub);
    let plugins = binaries::plugin_dir();
    let main_before = fixture.main_head();
    let branch = fixture.standin.pull_requests(REPO)[0].head.clone();
    let head = fixture.git(&["rev-parse", &format!("refs/heads/{branch}")]).trim().to_string();

    // Its author may not approve it (GitHub's rule); a reviewer may, at the validated head.
    let own = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "approve", "1"]).as_slice());
    assert_eq!(own.code, Some(4), "{}\n{}", own.stdout, own.stderr);
    assert!(own.stderr.contains("Can not approve your own pull request"), "{}", own.stderr);
    fixture.standin.add_token("reviewer-token", "bob", false);
    let approve = Run::of(
        fixture
            .kubectl_gitops_command(
                plugins.path(),
                with_key(&fixture, &["pr", "approve", "1", "--opened-by", standin::USER]).as_slice(),
            )
            .env("GITHUB_TOKEN", "reviewer-token"),
    );
    assert_eq!(approve.code, Some(0), "{}\n{}", approve.stdout, approve.stderr);
    assert_eq!(approve.stdout, format!("approved #1 at {}\n", &head[..12]));
    assert_eq!(fixture.standin.pull_requests(REPO)[0].approved_by, ["bob"]);

    // Refused merges leave it open and main where it was.
    let rebase = fixture
        .kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "merge", "1", "--method", "rebase"]).as_slice());
    assert_eq!(rebase.code, Some(4), "{}\n{}", rebase.stdout, rebase.stderr);
    assert!(rebase.stderr.contains("Rebase merges are not allowed on this repository."), "{}", rebase.stderr);
    fixture.standin.set_token_can_push(false);
    let forbidden = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "merge", "1"]).as_slice());
    fixture.standin.set_token_can_push(true);
    assert_eq!(forbidden.code, Some(4), "{}\n{}", forbidden.stdout, forbidden.stderr);
    assert!(forbidden.stderr.starts_with("error: forbidden: "), "{}", forbidden.stderr);
    assert!(forbidden.stderr.contains("hint: merging needs write access to acme/fleet"), "{}", forbidden.stderr);
    assert_eq!(fixture.main_head(), main_before, "nothing merged");
    assert!(fixture.standin.pull_requests(REPO)[0].open);

    // Merged: a merge commit on main with the branch as its second parent, holding the app.
    let merge = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "merge", "1"]).as_slice());
    assert_eq!(merge.code, Some(0), "{}\n{}", merge.stdout, merge.stderr);
    assert_eq!(merge.stdout, format!("merged #1 (merge) into main at {}\n", &head[..12]));
    let parents = fixture.git(&["rev-list", "--parents", "-n", "1", "refs/heads/main"]);
    assert_eq!(parents.split_whitespace().skip(1).collect::<Vec<_>>(), [main_before.as_str(), head.as_str()]);
    let list = fixture.show("main:clusters/dev/apps/kustomization.yaml");
    assert!(list.contains("- podinfo\n"), "{list}");
    let pull = &fixture.standin.pull_requests(REPO)[0];
    assert!(pull.merged && !pull.open, "{pull:?}");

    // Merged already: no longer valid, and not merged twice.
    let show = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "show", "1"]).as_slice());
    assert_eq!(show.code, Some(1), "{}\n{}", show.stdout, show.stderr);
    assert!(show.stdout.contains("FAIL  open       merged already\n"), "{}", show.stdout);
    let again = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "merge", "1"]).as_slice());
    assert_eq!(again.code, Some(1), "{}\n{}", again.stdout, again.stderr);
    assert!(again.stdout.ends_with("#1 was not merged\n"), "{}", again.stdout);
    let refused =
        fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "merge", "1", "-o", "json"]).as_slice());
    assert_eq!(refused.code, Some(1), "{}\n{}", refused.stdout, refused.stderr);
    let refused = gitops_e2e::schema::document("PullRequestAction", &refused.stdout);
    assert_eq!((refused["outcome"].as_str(), refused["validation"]["valid"].as_bool()), (Some("notDone"), Some(false)));
    let list = fixture.kubectl_gitops(plugins.path(), &["pr", "list", "-o", "json"]);
    let listed = gitops_e2e::schema::document("PullRequestList", &list.stdout);
    assert_eq!(listed["items"], serde_json::json!([]), "merged: no longer open");
}

#[test]
fn gitlab_merge_request_is_squashed_into_the_config_branch() {
    let fixture = opened(Kind::GitLab);
    let plugins = binaries::plugin_dir();
    let main_before = fixture.main_head();
    let approve = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "approve", "!1"]).as_slice());
    assert_eq!(approve.code, Some(0), "{}\n{}", approve.stdout, approve.stderr);
    let merge = fixture.kubectl_gitops(
        plugins.path(),
        with_key(&fixture, &["pr", "merge", "1", "--method", "squash", "-o", "json"]).as_slice(),
    );
    assert_eq!(merge.code, Some(0), "{}\n{}", merge.stdout, merge.stderr);
    let merged = gitops_e2e::schema::document("PullRequestAction", &merge.stdout);
    assert_eq!((merged["outcome"].as_str(), merged["method"].as_str()), (Some("merged"), Some("squash")), "{merged:#}");
    assert_eq!(merged["head"], merged["validation"]["head"], "merged at the head it validated: {merged:#}");
    let parents = fixture.git(&["rev-list", "--parents", "-n", "1", "refs/heads/main"]);
    assert_eq!(parents.split_whitespace().skip(1).collect::<Vec<_>>(), [main_before.as_str()], "one commit on main");
    assert!(fixture.show("main:apps/podinfo/source.yaml").contains("url: https://github.com/stefanprodan/podinfo"));
}

/// A repo on the git server holding one ConfigMap, the app `name` deploys.
fn app_repo(fixture: &Fixture, name: &str) -> String {
    let source = tempfile::tempdir().unwrap();
    std::fs::write(
        source.path().join("configmap.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  via: a pull request\n"),
    )
    .unwrap();
    crate::app::push_dir(&fixture.env, name, source.path(), "deploy");
    fixture.env.git.ssh_url(name)
}

/// `app add NAME --url URL --path ./deploy --secret-ref flux-system --pr --wait EXTRA…`, started.
fn add_and_wait(fixture: &Fixture, name: &str, url: &str, extra: &[&str]) -> std::process::Child {
    let mut command = fixture.command("kubectl-gitops-app");
    command
        .args(["add", name, "--url", url, "--path", "./deploy", "--secret-ref", "flux-system", "--pr", "--wait"])
        .args(["--timeout", "3m"])
        .args(extra)
        .arg("--private-key-file")
        .arg(&fixture.env.git.client_key)
        .arg("--known-hosts-file")
        .arg(&fixture.env.git.known_hosts)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command.spawn().unwrap()
}

/// A running `app add … --wait` whose stderr is read as it comes.
struct Waiting {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: String,
}

impl Waiting {
    fn start(mut child: std::process::Child) -> Waiting {
        use std::io::BufRead;
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Waiting { child, lines, stderr: String::new() }
    }

    /// Reads stderr until a line contains `text` (the command reached that point).
    fn until(&mut self, text: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line =
                self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("never said {text:?}:\n{}", self.stderr));
            self.stderr.push_str(&line);
            self.stderr.push('\n');
            if line.contains(text) {
                return;
            }
        }
    }

    /// Its exit code, stdout and whole stderr.
    fn finish(mut self) -> (Option<i32>, String, String) {
        let output = self.child.wait_with_output().unwrap();
        self.stderr.extend(self.lines.iter().map(|line| line + "\n"));
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), self.stderr)
    }
}

#[test]
fn app_add_pr_wait_follows_the_pull_request_to_the_cluster() {
    let fixture = Fixture::install_with_flux(Kind::GitHub);
    let plugins = binaries::plugin_dir();

    // A reviewer merges it while the command waits: it then waits for the app to be Ready.
    let url = app_repo(&fixture, "reviewed");
    let mut waiting = Waiting::start(add_and_wait(&fixture, "reviewed", &url, &[]));
    waiting.until("waiting for pull request #1 to be merged");
    let merge = fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "merge", "1"]).as_slice());
    assert_eq!(merge.code, Some(0), "{}\n{}", merge.stdout, merge.stderr);
    let (code, stdout, stderr) = waiting.finish();
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let merged = fixture.main_head();
    assert_eq!(
        stdout,
        format!(
            "pull request opened: http://127.0.0.1:{}/acme/fleet/pull/1\napp reviewed added at {}\n",
            fixture.env.git.http_port,
            &merged[..12]
        )
    );
    fixture.env.kubectl_ok(&["-n", "default", "get", "configmap", "reviewed"]).unwrap();

    // --merge: the command merges its own request, then waits.
    let url = app_repo(&fixture, "merged");
    let run = add_and_wait(&fixture, "merged", &url, &["--merge"]).wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("merged #2 into main"), "{stderr}");
    assert!(stdout.ends_with(&format!("app merged added at {}\n", &fixture.main_head()[..12])), "{stdout}");
    fixture.env.kubectl_ok(&["-n", "default", "get", "configmap", "merged"]).unwrap();

    // Closed without merging: exit 1, and nothing deployed.
    let url = app_repo(&fixture, "declined");
    let mut waiting = Waiting::start(add_and_wait(&fixture, "declined", &url, &[]));
    waiting.until("waiting for pull request #3 to be merged");
    fixture.standin.close_pull_request(REPO, 3);
    let (code, _, stderr) = waiting.finish();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("error: pull request #3 was closed without merging: nothing was deployed\n"), "{stderr}");
    assert!(!fixture.show("main:clusters/dev/apps/kustomization.yaml").contains("declined"));
}

/// `pr merge --auto`: while checks run, the provider is told to merge once they pass (GitHub's
/// GraphQL `enablePullRequestAutoMerge` at the validated head, GitLab's `auto_merge`, asked again
/// after the 405 GitLab answers right after a request opens) and nothing merges yet; with nothing
/// pending it merges at once (GitHub refuses auto-merge for a request in clean status).
#[test]
fn pr_merge_auto_waits_for_running_checks_and_merges_at_once_when_none_run() {
    for kind in [Kind::GitHub, Kind::GitLab] {
        let fixture = opened(kind);
        let plugins = binaries::plugin_dir();
        let sign = kind.pull_request_sign();
        let main_before = fixture.main_head();
        let branch = fixture.standin.pull_requests(REPO)[0].head.clone();
        let head = fixture.git(&["rev-parse", &format!("refs/heads/{branch}")]).trim().to_string();
        let merge_path = "/api/v4/projects/acme%2Ffleet/merge_requests/1/merge";

        fixture.standin.set_checks_pending(true);
        if kind == Kind::GitLab {
            fixture.standin.fail_next(
                "PUT",
                merge_path,
                405,
                serde_json::json!({ "message": "405 Method Not Allowed" }),
            );
        }
        fixture.standin.clear_requests();
        let auto =
            fixture.kubectl_gitops(plugins.path(), with_key(&fixture, &["pr", "merge", "1", "--auto"]).as_slice());
        assert_eq!(auto.code, Some(0), "{kind}: {}\n{}", auto.stdout, auto.stderr);
        assert_eq!(
            auto.stdout,
            format!(
                "auto-merge enabled on {sign}1 (merge) at {}: {kind} merges it into main once its checks pass\n",
                &head[..12]
            )
        );
        let pull = &fixture.standin.pull_requests(REPO)[0];
        assert!(pull.open && !pull.merged, "{kind}: {pull:?}");
        assert_eq!(pull.auto_merge.as_deref(), Some("merge"), "{kind}");
        assert_eq!(fixture.main_head(), main_before, "{kind}: nothing merged yet");
        let writes = fixture.standin.writes();
        match kind {
            Kind::GitHub => {
                let graphql: Vec<_> = writes.iter().filter(|write| write.path == "/graphql").collect();
                assert_eq!(graphql.len(), 1, "{writes:?}");
                let variables = &graphql[0].body.as_ref().unwrap()["variables"];
                assert_eq!(
                    (variables["method"].as_str(), variables["head"].as_str()),
                    (Some("MERGE"), Some(head.as_str()))
                );
            }
            _ => {
                let merges: Vec<_> = writes.iter().filter(|write| write.path == merge_path).collect();
                assert_eq!(merges.len(), 2, "the 405, then asked again: {writes:?}");
                let body = merges[1].body.as_ref().unwrap();
                assert_eq!((body["auto_merge"].as_bool(), body["sha"].as_str()), (Some(true), Some(head.as_str())));
            }
        }

        // Nothing running: merged now.
        fixture.standin.set_checks_pending(false);
        let now = fixture.kubectl_gitops(
            plugins.path(),
            with_key(&fixture, &["pr", "merge", "1", "--auto", "--method", "squash"]).as_slice(),
        );
        assert_eq!(now.code, Some(0), "{kind}: {}\n{}", now.stdout, now.stderr);
        assert_eq!(now.stdout, format!("merged {sign}1 (squash) into main at {}\n", &head[..12]));
        assert!(fixture.standin.pull_requests(REPO)[0].merged, "{kind}");
        assert_ne!(fixture.main_head(), main_before, "{kind}");
    }
}

/// `app add --pr --merge` while someone pushes to the branch right after us (a hook on the git
/// server puts a commit of theirs on top of ours at once): the read-back finds a head that is not
/// the commit we pushed, holding a file nobody planned, and nothing is merged. Without the race,
/// the merge is guarded by the very head the read-back checked (GitHub `sha`, GitLab `sha`).
#[test]
fn a_branch_someone_pushed_to_right_after_us_is_not_merged() {
    for kind in [Kind::GitHub, Kind::GitLab] {
        let fixture = Fixture::install_from(kind, &flux_release::components(), &[]);
        let main_before = fixture.main_head();
        let bare = fixture.env.git.repos.join(format!("{REPO}.git"));
        let racing = RacingPush::install(&bare, "gitops/add-raced-", "apps/raced/extra.yaml").unwrap();
        let add = |name: &str| {
            let url = "https://github.com/stefanprodan/podinfo";
            fixture.pushing("kubectl-gitops-app", &["add", name, "--url", url, "--path", "./deploy", "--pr", "--merge"])
        };
        let raced = add("raced");
        assert_eq!(raced.code, Some(4), "{kind}: {}\n{}", raced.stdout, raced.stderr);
        let [(ours, theirs)] = racing.raced().try_into().unwrap();
        assert!(
            raced.stderr.contains(&format!(
                "does not hold the planned change: its head is {theirs}, not the commit we pushed, {ours}\n"
            )),
            "{kind}: {}",
            raced.stderr
        );
        assert!(raced.stderr.contains("hint: someone pushed to gitops/add-raced-"), "{kind}: {}", raced.stderr);
        let merges = |writes: Vec<gitops_e2e::standin::Recorded>| {
            writes.into_iter().filter(|write| write.path.ends_with("/merge")).collect::<Vec<_>>()
        };
        assert!(merges(fixture.standin.writes()).is_empty(), "{kind}: no merge was asked for");
        let pull = &fixture.standin.pull_requests(REPO)[0];
        assert!(pull.open && !pull.merged, "{kind}: {pull:?}");
        assert_eq!(fixture.main_head(), main_before, "{kind}: nothing merged");
        drop(racing);

        let clean = add("clean");
        assert_eq!(clean.code, Some(0), "{kind}: {}\n{}", clean.stdout, clean.stderr);
        let branch = fixture.standin.pull_requests(REPO)[1].head.clone();
        let head = fixture.git(&["rev-parse", &format!("refs/heads/{branch}")]).trim().to_string();
        let merge = merges(fixture.standin.writes()).pop().unwrap();
        let expected = match kind {
            Kind::GitHub => serde_json::json!({ "merge_method": "merge", "sha": head }),
            _ => serde_json::json!({ "sha": head, "squash": false }),
        };
        assert_eq!(merge.body, Some(expected), "{kind}");
        let parents = fixture.git(&["rev-list", "--parents", "-n", "1", "refs/heads/main"]);
        assert_eq!(parents.split_whitespace().skip(1).collect::<Vec<_>>(), [main_before.as_str(), head.as_str()]);
    }
}
