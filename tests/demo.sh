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
log=${DEMO_LOG:-$PWD/target/demo.log}
mkdir -p "$(dirname "$log")"
exec > >(tee "$log") 2> >(tee -a "$log" >&2)
current_step="setting up"
step() {
  current_step="$*"
  if [[ -t 2 && -z ${NO_COLOR:-} ]]; then printf '\n\033[1m$ %s\033[0m\n' "$*" >&2; else printf '\n$ %s\n' "$*" >&2; fi
}
failed() { echo "demo: error: \`$current_step\` failed (exit $1); full log: $log" >&2; }
trap 'failed $?' ERR
components=../shared/fixtures/flux/gotk-components.yaml

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
  repo_url="ssh://root@127.0.0.1:$(field sshPort)$repos/demo-fleet.git"
  install_flags=(--private-key-file "$(field gitClientKey)" --known-hosts-file "$(field knownHosts)")
  # The app's own repo: podinfo's kustomize manifests on the same git server; Flux pulls it
  # with the deploy key install stores in the flux-system Secret.
  podinfo=../shared/fixtures/apps/podinfo/kustomize
  app_url="ssh://root@127.0.0.1:$(field sshPort)$repos/demo-podinfo.git"
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
  if [[ -f $components ]]; then
    install_flags+=(--components-file "$components")
  else
    echo "demo: $components is absent; install needs the flux CLI on PATH instead" >&2
  fi
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

step "kubectl gitops install (again: nothing to do)"
kubectl gitops install --url "$repo_url" --path clusters/demo --cluster-name demo "${install_flags[@]}" --yes

step 'kubectl gitops status'
kubectl gitops status || true

step "kubectl gitops app add podinfo --url $app_url --path ./kustomize --dry-run"
kubectl gitops app add podinfo --url "$app_url" --path ./kustomize "${app_flags[@]}" --dry-run

step "kubectl gitops app add podinfo --url $app_url --path ./kustomize --wait"
kubectl gitops app add podinfo --url "$app_url" --path ./kustomize "${app_flags[@]}" --wait

step 'kubectl gitops app list'
kubectl gitops app list

step 'kubectl gitops app status podinfo'
kubectl gitops app status podinfo

step 'kubectl gitops status'
kubectl gitops status

step 'kubectl gitops app suspend podinfo; kubectl gitops app list'
kubectl gitops app suspend podinfo
kubectl gitops app list
kubectl gitops app resume podinfo

step 'kubectl gitops app list --repo'
kubectl gitops app list --repo "${app_flags[@]:2}"

step 'kubectl gitops app remove podinfo --wait'
kubectl gitops app remove podinfo "${app_flags[@]:2}" --wait
