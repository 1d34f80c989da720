#!/usr/bin/env bash
# Print a registration kubeconfig for one MEMBER cluster, authenticating as its omectl-member ServiceAccount
# (deploy/member must be applied there first: it creates the account, its ClusterRole and a token Secret).
#
#   scripts/member-kubeconfig.sh --context MEMBER_CTX --name NAME [--server URL] > NAME.kubeconfig
#
# --server: the API server address as the HUB's controller pod reaches it (default: the address in your own
# kubeconfig for that context; kind clusters need their internal address, see scripts/kind/up.sh).
set -euo pipefail

context=""
name=""
server=""
namespace=omectl-system
while [[ $# -gt 0 ]]; do
  case "$1" in
    --context) context=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --namespace) namespace=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "member-kubeconfig.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$context" && -n "$name" ]] || { echo "member-kubeconfig.sh: --context and --name are required" >&2; exit 2; }

k() { kubectl --context "$context" "$@"; }
if [[ -z "$server" ]]; then
  cluster=$(k config view -o jsonpath="{.contexts[?(@.name==\"$context\")].context.cluster}")
  server=$(k config view -o jsonpath="{.clusters[?(@.name==\"$cluster\")].cluster.server}")
fi
# The token controller fills the Secret asynchronously after it is created.
token=""
for _ in $(seq 1 30); do
  token=$(k -n "$namespace" get secret omectl-member-token -o jsonpath='{.data.token}' 2>/dev/null || true)
  [[ -n "$token" ]] && break
  sleep 1
done
[[ -n "$token" ]] || { echo "member-kubeconfig.sh: $context has no token in $namespace/omectl-member-token" >&2; exit 1; }
ca=$(k -n "$namespace" get secret omectl-member-token -o jsonpath='{.data.ca\.crt}')
token=$(printf '%s' "$token" | base64 -d)

cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: $name
    cluster:
      server: $server
      certificate-authority-data: $ca
users:
  - name: omectl-member
    user:
      token: $token
contexts:
  - name: $name
    context:
      cluster: $name
      user: omectl-member
current-context: $name
KUBECONFIG
