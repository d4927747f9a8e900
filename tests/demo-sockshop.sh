#!/usr/bin/env bash
# `make demo-sockshop`: the sock shop (docs/examples/sock-shop.md) deployed the way a user types it,
# through the real kubectl, against the local environment with a real Gitea as the forge: a repo
# from the upstream project, app add with --pr, pr merge, a wait, and status. It ends when every
# sock shop Deployment is Available (kwok runs the pods).
#
# Needs ../shared/fixtures/apps/sock-shop (the upstream chart; github.com cannot be reached here,
# so the upstream repository is pushed to the local Gitea first, where the doc reads github.com).
# Everything it prints also goes to a log file; a failure ends with one line naming the step.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

export PATH="$PWD/target/debug:$PATH"
demo=demo-sockshop
log=${DEMO_LOG:-$PWD/target/demo-sockshop.log}
# shellcheck source=tests/demo-steps.sh
source tests/demo-steps.sh

upstream=../shared/fixtures/apps/sock-shop
if [[ ! -f $upstream/helm-chart/Chart.yaml ]]; then
  echo "demo-sockshop: error: $upstream/helm-chart/Chart.yaml is absent (the upstream sock shop chart, from ../shared)" >&2
  exit 2
fi
flux_cli=${GITOPS_FLUX_CLI_DIR:?make demo-sockshop passes GITOPS_FLUX_CLI_DIR}/bin/flux

current_step="start the local environment with Gitea (gitops-testenv up --gitea)"
eval "$(gitops-testenv up --gitea)"
work=$(mktemp -d)
trap 'gitops-testenv down; rm -rf "$work"' EXIT
field() { gitops-testenv status "$1"; }
gitea=$(field giteaUrl)
export GITEA_TOKEN KUBECTL_GITOPS_GITEA_API_URL
GITEA_TOKEN=$(field giteaToken)
KUBECTL_GITOPS_GITEA_API_URL=$(field giteaApiUrl)
keys=(--private-key-file "$(field giteaClientKey)" --known-hosts-file "$(field giteaKnownHosts)")
export GIT_SSH_COMMAND="ssh -i $(field giteaClientKey) -o IdentitiesOnly=yes -o UserKnownHostsFile=$(field giteaKnownHosts)"
git_as_demo() { git -c user.name=demo -c user.email=demo@example.invalid "$@"; }
api() {
  curl -sSf -o /dev/null -H "Authorization: token $GITEA_TOKEN" -H 'Content-Type: application/json' \
    -X POST -d "$2" "$KUBECTL_GITOPS_GITEA_API_URL$1"
}

# The forge as it would be: the team's organization, and the upstream project's public repository
# (here on the local Gitea, standing in for github.com/microservices-demo/microservices-demo).
current_step="publish the upstream sock shop on the local Gitea"
api /orgs '{"username": "acme"}'
api /orgs '{"username": "microservices-demo"}'
api /orgs/microservices-demo/repos '{"name": "microservices-demo", "private": false}'
mkdir -p "$work/upstream/deploy/kubernetes"
cp -r "$upstream/helm-chart" "$upstream/complete-demo.yaml" "$work/upstream/deploy/kubernetes/"
# ../shared is read-only: the copy is ours to change and to delete at the end, as any user.
chmod -R u+w "$work/upstream"
cp "$upstream/LICENSE" "$work/upstream/"
git -C "$work/upstream" init -q -b master
git -C "$work/upstream" add .
git_as_demo -C "$work/upstream" commit -q -m "microservices-demo (deploy/kubernetes only)"
git -C "$work/upstream" push -q "ssh://git@127.0.0.1:$(field giteaSshPort)/microservices-demo/microservices-demo.git" master
# install fetches the flux CLI from Flux's release page, which cannot be reached here: it is given
# the components that CLI exports instead.
"$flux_cli" install --export >"$work/gotk-components.yaml"

step "kubectl gitops install --provider gitea --hostname ${gitea#http://} --owner acme --repository fleet --path clusters/dev"
kubectl gitops install --provider gitea --hostname "${gitea#http://}" --owner acme --repository fleet \
  --path clusters/dev --components-file "$work/gotk-components.yaml" --known-hosts-file "$(field giteaKnownHosts)"

step "kubectl gitops repo create sock-shop --public --from-url $gitea/microservices-demo/microservices-demo.git --from-branch master"
kubectl gitops repo create sock-shop --public \
  --from-url "$gitea/microservices-demo/microservices-demo.git" --from-branch master

# The chart lists nginx-ingress (helm.nginx.com) in requirements.yaml without a condition: Helm
# and Flux fetch every listed dependency when they build a chart, so no value can leave it out.
# An ingress controller serves the whole cluster (kubectl gitops platform add), not one app.
step "git rm deploy/kubernetes/helm-chart/requirements.yaml && git commit && git push   # in acme/sock-shop"
git clone -q "ssh://git@127.0.0.1:$(field giteaSshPort)/acme/sock-shop.git" "$work/sock-shop"
git -C "$work/sock-shop" rm -q deploy/kubernetes/helm-chart/requirements.yaml
git_as_demo -C "$work/sock-shop" commit -q -m "Drop the nginx-ingress dependency: the ingress controller is a platform service"
git -C "$work/sock-shop" push -q origin main

step "kubectl gitops app add sock-shop --url $gitea/acme/sock-shop.git --chart-path ./deploy/kubernetes/helm-chart --target-namespace sock-shop --create-namespace --pr"
kubectl gitops app add sock-shop --url "$gitea/acme/sock-shop.git" \
  --chart-path ./deploy/kubernetes/helm-chart --target-namespace sock-shop --create-namespace --pr "${keys[@]}"

step "kubectl gitops pr list"
kubectl gitops pr list

step "kubectl gitops pr show 1"
kubectl gitops pr show 1 "${keys[@]}"

step "kubectl gitops pr merge 1"
kubectl gitops pr merge 1 "${keys[@]}"

# Flux would fetch the merge at its next interval (a minute); the flux CLI asks it now.
step "kubectl gitops flux reconcile source git flux-system"
kubectl gitops flux --flux-bin "$flux_cli" reconcile source git flux-system

step "kubectl gitops app status sock-shop --wait --timeout 5m"
kubectl gitops app status sock-shop --wait --timeout 5m

step "kubectl gitops status"
kubectl gitops status

step "kubectl -n sock-shop wait --for=condition=Available deployment --all --timeout=3m"
kubectl -n sock-shop wait --for=condition=Available deployment --all --timeout=3m
kubectl -n sock-shop get deployments
available=$(kubectl -n sock-shop get deployments -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Available")].status}{"\n"}{end}' | grep -c True)
echo "demo-sockshop: $available sock shop Deployments Available"
