#!/usr/bin/env bash
# make kind-up: a kind hub and two GPU-labelled members with omectl installed and the members registered.
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_tools kind kubectl openssl
mkdir -p "$STATE_DIR"
cd "$ROOT"

echo "== image $IMAGE"
docker build -t "$IMAGE" .

echo "== clusters"
for cluster in "$HUB" "${MEMBERS[@]}"; do
  config=clusters/kind/${cluster#omectl-}.yaml
  if kind get clusters 2>/dev/null | grep -qx "$cluster"; then
    echo "$cluster exists"
  else
    kind create cluster --config "$config" --kubeconfig "$STATE_DIR/$cluster.kubeconfig" --wait 120s
  fi
  kind get kubeconfig --name "$cluster" > "$STATE_DIR/$cluster.kubeconfig"
done
KUBECONFIG=$(printf '%s:' "$STATE_DIR"/omectl-*.kubeconfig)
KUBECONFIG=${KUBECONFIG%:} kubectl config view --flatten > "$E2E_KUBECONFIG"
export KUBECONFIG=$E2E_KUBECONFIG

echo "== hub: image, certificate, controller"
kind load docker-image "$IMAGE" --name "$HUB"
kubectl --context "kind-$HUB" apply -f deploy/base/controller/namespace.yaml
scripts/webhook-certs.sh --apply --context "kind-$HUB" --host "$HUB-control-plane"
kubectl --context "kind-$HUB" apply --server-side -k deploy/overlays/kind

echo "== members: CRDs, RBAC, registration"
for member in "${MEMBERS[@]}"; do
  kubectl --context "kind-$member" apply --server-side -k deploy/member
  kubectl --context "kind-$member" apply -k deploy/thirdparty-crds
  kubectl --context "kind-$member" wait --for=condition=Established crd --all --timeout=60s
  # The controller pod reaches a member's API server at its control-plane container on the kind network.
  internal=$(kind get kubeconfig --internal --name "$member" | sed -n 's/^ *server: //p' | head -1)
  scripts/member-kubeconfig.sh --context "kind-$member" --name "${member#omectl-}" --server "$internal" \
    > "$STATE_DIR/${member#omectl-}.registration.kubeconfig"
  scripts/register-cluster.sh --hub-context "kind-$HUB" --name "${member#omectl-}" \
    --kubeconfig "$STATE_DIR/${member#omectl-}.registration.kubeconfig" --label "kind=true"
done

kubectl --context "kind-$HUB" -n omectl-system rollout status deploy/omectl-controller --timeout=180s
echo "kind fleet ready; KUBECONFIG=$E2E_KUBECONFIG (contexts kind-$HUB, ${MEMBERS[*]/#/kind-})"
