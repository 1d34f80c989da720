#!/usr/bin/env bash
# Make the omectl webhook serving certificate with openssl: a private CA and a server certificate for the
# omectl-webhook Service names (plus any --host), as tls.crt, tls.key and ca.crt in OUT_DIR; with --apply, store
# them as Secret omectl-webhook-tls in the hub (the Deployment mounts it; ca.crt becomes the caBundle omectl
# installs into every member's ValidatingWebhookConfiguration).
#
#   scripts/webhook-certs.sh [--out DIR] [--namespace NS] [--host NAME]... [--days N] [--apply [--context CTX]]
#
# Re-running issues a new CA and certificate; restart the controller afterwards (it reads them at start and
# re-installs the webhook configurations with the new caBundle).
set -euo pipefail

out_dir=""
namespace=omectl-system
days=365
apply=false
context=""
hosts=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out_dir=$2; shift 2 ;;
    --namespace) namespace=$2; shift 2 ;;
    --host) hosts+=("$2"); shift 2 ;;
    --days) days=$2; shift 2 ;;
    --apply) apply=true; shift ;;
    --context) context=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "webhook-certs.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v openssl >/dev/null || { echo "webhook-certs.sh: openssl is not installed" >&2; exit 2; }
if [[ -z "$out_dir" ]]; then
  out_dir=$(mktemp -d)
  trap 'rm -rf "$out_dir"' EXIT
fi
mkdir -p "$out_dir"

service=omectl-webhook
names=("$service" "$service.$namespace" "$service.$namespace.svc" "$service.$namespace.svc.cluster.local" ${hosts[@]+"${hosts[@]}"})
san=""
for name in "${names[@]}"; do
  if [[ "$name" =~ ^[0-9.]+$ || "$name" == *:* ]]; then san+="IP:$name,"; else san+="DNS:$name,"; fi
done
san=${san%,}

umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$days" \
  -subj "/CN=omectl-webhook-ca" -keyout "$out_dir/ca.key" -out "$out_dir/ca.crt" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/CN=$service.$namespace.svc" -keyout "$out_dir/tls.key" -out "$out_dir/tls.csr" 2>/dev/null
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' \
  "$san" > "$out_dir/tls.ext"
openssl x509 -req -in "$out_dir/tls.csr" -CA "$out_dir/ca.crt" -CAkey "$out_dir/ca.key" -CAcreateserial \
  -days "$days" -extfile "$out_dir/tls.ext" -out "$out_dir/tls.crt" 2>/dev/null
rm -f "$out_dir/tls.csr" "$out_dir/tls.ext" "$out_dir/ca.srl"
openssl verify -CAfile "$out_dir/ca.crt" "$out_dir/tls.crt" >/dev/null

if $apply; then
  kubectl_args=()
  [[ -n "$context" ]] && kubectl_args+=(--context "$context")
  kubectl ${kubectl_args[@]+"${kubectl_args[@]}"} -n "$namespace" create secret generic omectl-webhook-tls \
    --from-file=tls.crt="$out_dir/tls.crt" --from-file=tls.key="$out_dir/tls.key" --from-file=ca.crt="$out_dir/ca.crt" \
    --dry-run=client -o yaml | kubectl ${kubectl_args[@]+"${kubectl_args[@]}"} apply -f -
else
  echo "webhook certificate for: ${names[*]}"
  echo "written to $out_dir: tls.crt tls.key ca.crt (ca.key: keep it private or delete it)"
fi
