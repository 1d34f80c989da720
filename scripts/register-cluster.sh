#!/usr/bin/env bash
# Register (or re-register, e.g. after rotating its credentials) a member cluster in the HUB: a Secret
# omectl-cluster-NAME labelled omectl.io/cluster=true in omectl-system with the kubeconfig as data.kubeconfig.
# The running controller picks the change up without a restart. Remove: kubectl delete secret omectl-cluster-NAME.
#
#   scripts/register-cluster.sh --hub-context HUB_CTX --name NAME --kubeconfig FILE [--label key=value]...
set -euo pipefail

hub_context=""
name=""
kubeconfig=""
namespace=omectl-system
annotations=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --hub-context) hub_context=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --kubeconfig) kubeconfig=$2; shift 2 ;;
    --namespace) namespace=$2; shift 2 ;;
    --label) annotations+=("omectl.io/label.$2"); shift 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "register-cluster.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$hub_context" && -n "$name" && -f "$kubeconfig" ]] || {
  echo "register-cluster.sh: --hub-context, --name and an existing --kubeconfig file are required" >&2
  exit 2
}

secret=$(kubectl --context "$hub_context" -n "$namespace" create secret generic "omectl-cluster-$name" \
  --from-file=kubeconfig="$kubeconfig" --dry-run=client -o yaml)
secret=$(printf '%s\n' "$secret" | kubectl label --local -f - -o yaml \
  omectl.io/cluster=true "omectl.io/cluster-name=$name")
if [[ ${#annotations[@]} -gt 0 ]]; then
  secret=$(printf '%s\n' "$secret" | kubectl annotate --local -f - -o yaml "${annotations[@]}")
fi
printf '%s\n' "$secret" | kubectl --context "$hub_context" apply -f -
