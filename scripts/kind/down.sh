#!/usr/bin/env bash
# make kind-down: delete the kind clusters made by `make kind-up`.
set -euo pipefail
source "$(dirname "$0")/common.sh"
require_tools kind
for cluster in "$HUB" "${MEMBERS[@]}"; do
  kind delete cluster --name "$cluster"
done
rm -rf "$STATE_DIR"
