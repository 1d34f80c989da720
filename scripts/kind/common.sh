# Sourced by scripts/kind/*.sh. The Docker check runs first, before anything else is touched: without a Docker
# engine kind cannot start clusters, and the kind targets are never simulated.
require_docker() {
  if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
    echo "kind targets need a Docker engine; none is available here" >&2
    exit 2
  fi
}
require_docker

require_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "kind targets need $tool on PATH" >&2; exit 2; }
  done
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMAGE=${OMECTL_IMAGE:-omectl:dev}
HUB=omectl-hub
MEMBERS=(omectl-member-1 omectl-member-2)
STATE_DIR=${OMECTL_KIND_STATE:-$ROOT/.omectl/kind}
E2E_KUBECONFIG=$STATE_DIR/kubeconfig
