#!/usr/bin/env bash
# make kind-e2e: the end-to-end suite against the kind fleet made by `make kind-up`.
# The suite gets the fleet's merged kubeconfig in OMECTL_E2E_KUBECONFIG and the hub's context in
# OMECTL_E2E_HUB_CONTEXT: tests/e2e/conftest.py aliases the member contexts to the names the tests use.
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_tools kind kubectl
cd "$ROOT"
[[ -f "$E2E_KUBECONFIG" ]] || { echo "no kind fleet found ($E2E_KUBECONFIG is missing); run make kind-up" >&2; exit 2; }
kubectl --kubeconfig "$E2E_KUBECONFIG" --context "kind-$HUB" -n omectl-system \
  rollout status deploy/omectl-controller --timeout=120s
OMECTL_E2E_KUBECONFIG=$E2E_KUBECONFIG OMECTL_E2E_HUB_CONTEXT="kind-$HUB" \
  "${PYTEST:-$ROOT/.venv/bin/pytest}" tests/e2e "$@"
