#!/usr/bin/env bash
# `make demo`: the main job end to end, the way a user types it, through the real kubectl.
#
# Against the local environment (started here, stopped at the end), or against your own cluster
# when KUBECONFIG is set and DEMO_CLUSTER=current (then pass DEMO_REPO_URL, and the flags your git
# server needs in DEMO_INSTALL_FLAGS; the app comes from DEMO_APP_URL, default the public podinfo).
#
# Everything it prints also goes to a log file; a failure ends with one line naming the step that
# failed and that file.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

export PATH="$PWD/target/debug:$PATH"
demo=demo
log=${DEMO_LOG:-$PWD/target/demo.log}
# shellcheck source=tests/demo-steps.sh
source tests/demo-steps.sh

if [[ ${DEMO_CLUSTER:-} == current && -n ${KUBECONFIG:-} ]]; then
  echo "demo: using your cluster (KUBECONFIG=$KUBECONFIG)" >&2
  repo_url=${DEMO_REPO_URL:?set DEMO_REPO_URL to the config repo to install from}
  read -r -a install_flags <<<"${DEMO_INSTALL_FLAGS:-}"
  app_url=${DEMO_APP_URL:-https://github.com/stefanprodan/podinfo}
  app_flags=()
else
  cargo build -q -p gitops-e2e --bin gitops-testenv
  current_step="start the local environment (gitops-testenv up)"
  environment=$(target/debug/gitops-testenv up)
  eval "$environment"
  trap 'target/debug/gitops-testenv down' EXIT
  field() { target/debug/gitops-testenv status "$1"; }
  repos=$(field gitRepos)
  git init -q --bare -b main "$repos/demo-fleet.git"
  repo_url="ssh://$(id -un)@127.0.0.1:$(field sshPort)$repos/demo-fleet.git"
  install_flags=(--private-key-file "$(field gitClientKey)" --known-hosts-file "$(field knownHosts)")
  # The app's own repo: podinfo's kustomize manifests on the same git server; Flux pulls it
  # with the deploy key install stores in the flux-system Secret.
  podinfo=../shared/fixtures/apps/podinfo/kustomize
  app_url="ssh://$(id -un)@127.0.0.1:$(field sshPort)$repos/demo-podinfo.git"
  app_flags=(--secret-ref flux-system --private-key-file "$(field gitClientKey)")
  git init -q --bare -b main "$repos/demo-podinfo.git"
  work=$(mktemp -d)
  mkdir -p "$work/kustomize"
  if [[ -d $podinfo ]]; then
    cp "$podinfo"/* "$work/kustomize/"
  else
    echo "demo: $podinfo is absent; the demo app is a single ConfigMap" >&2
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\ndata:\n  demo: "yes"\n' >"$work/kustomize/configmap.yaml"
  fi
  git -C "$work" init -q -b main
  git -C "$work" add .
  git -C "$work" -c user.name=demo -c user.email=demo@example.invalid commit -q -m podinfo
  GIT_SSH_COMMAND="ssh -i $(field gitClientKey) -o IdentitiesOnly=yes -o UserKnownHostsFile=$(field knownHosts)" \
    git -C "$work" push -q "$app_url" main
  rm -rf "$work"
  # install gets the flux CLI itself: here from a release directory on 127.0.0.1 shaped like
  # Flux's release page (the CLI the test environment builds, packed and checksummed as Flux
  # packs its releases), into an empty cache, so that the download and its verification run.
  flux_cli=${GITOPS_FLUX_CLI_DIR:?make demo passes GITOPS_FLUX_CLI_DIR}/bin/flux
  version=$(sed -n '/^\[flux\]/,/^\[/ s/^version = "\(.*\)"/\1/p' dependencies.toml)
  release=$(mktemp -d)
  mkdir -p "$release/www/$version" "$release/cache"
  archive=flux_${version#v}_linux_amd64.tar.gz
  tar -C "$(dirname "$flux_cli")" -czf "$release/www/$version/$archive" flux
  (cd "$release/www/$version" && sha256sum "$archive" >"flux_${version#v}_checksums.txt")
  python3 -u -m http.server --bind 127.0.0.1 --directory "$release/www" 0 >"$release/server.log" 2>&1 &
  server=$!
  trap 'kill $server; rm -rf "$release"; target/debug/gitops-testenv down' EXIT
  until port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$release/server.log") && [[ -n $port ]]; do sleep 0.1; done
  export KUBECTL_GITOPS_FLUX_RELEASE_URL="http://127.0.0.1:$port/{version}" XDG_CACHE_HOME=$release/cache
  PATH=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r dir; do [[ -x $dir/flux ]] || printf '%s:' "$dir"; done)
  export PATH=${PATH%:}
fi

step kubectl gitops version
kubectl gitops version

step 'kubectl gitops detect'
kubectl gitops detect || true

step "kubectl gitops install --url $repo_url --path clusters/demo --dry-run"
kubectl gitops install --url "$repo_url" --path clusters/demo --cluster-name demo "${install_flags[@]}" --dry-run | sed -n '1,20p'

step "kubectl gitops install --url $repo_url --path clusters/demo"
kubectl gitops install --url "$repo_url" --path clusters/demo --cluster-name demo "${install_flags[@]}" --yes

step 'kubectl gitops detect -o yaml'
kubectl gitops detect -o yaml

step 'kubectl gitops version (the flux CLI is cached now)'
kubectl gitops version

step "kubectl gitops install (again: nothing to do)"
kubectl gitops install --url "$repo_url" --path clusters/demo --cluster-name demo "${install_flags[@]}" --yes

step 'kubectl gitops status'
kubectl gitops status || true

step 'kubectl gitops upgrade --check (exit 0: Flux and the repo are at the pinned release)'
kubectl gitops upgrade --check "${app_flags[@]:2}"

step 'kubectl gitops flux get kustomizations'
kubectl gitops flux get kustomizations

step "kubectl gitops app add podinfo --url $app_url --path ./kustomize --dry-run"
kubectl gitops app add podinfo --url "$app_url" --path ./kustomize "${app_flags[@]}" --dry-run

step "kubectl gitops app add podinfo --url $app_url --path ./kustomize --wait"
kubectl gitops app add podinfo --url "$app_url" --path ./kustomize "${app_flags[@]}" --wait

step 'kubectl gitops app list'
kubectl gitops app list

step 'kubectl gitops app status podinfo'
kubectl gitops app status podinfo

step 'kubectl gitops diff --ref main (the config repo at its head against the cluster: nothing would change, exit 0)'
kubectl gitops diff --ref main "${install_flags[@]}"

step 'kubectl gitops ui (its API lists the app; Ctrl-C stops it)'
ui_dir=$(mktemp -d)
kubectl gitops ui --no-browser >"$ui_dir/url" 2>"$ui_dir/log" &
ui_pid=$!
until [[ -s $ui_dir/url ]]; do kill -0 $ui_pid; sleep 0.1; done
url=$(head -n1 "$ui_dir/url")
curl -fsS -c "$ui_dir/jar" -o /dev/null "$url"
curl -fsS -b "$ui_dir/jar" "${url%%/?token=*}/api/v1/apps?q=podinfo" | python3 -c 'import json, sys
page = json.load(sys.stdin)
for row in page["items"]: print(row["namespace"], row["name"], row["state"], row["appliedRevision"])'
kill -INT $ui_pid
wait $ui_pid
rm -rf "$ui_dir"

# --wait: the layers Flux applies the last commit with may still be catching up (a layer waits
# for the platform layer at the same commit); the table shows once everything is Ready.
step 'kubectl gitops status --wait'
kubectl gitops status --wait --timeout 2m

step 'kubectl gitops app history podinfo; kubectl gitops metrics dora (docs/history.md)'
kubectl gitops app history podinfo
kubectl gitops metrics dora

step 'kubectl gitops app suspend podinfo; kubectl gitops app list'
kubectl gitops app suspend podinfo
kubectl gitops app list
kubectl gitops app resume podinfo

step 'kubectl gitops app list --in-repo'
kubectl gitops app list --in-repo "${app_flags[@]:2}"

step 'kubectl gitops app remove podinfo --wait'
kubectl gitops app remove podinfo "${app_flags[@]:2}" --wait
