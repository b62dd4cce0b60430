#!/usr/bin/env bash
# rollflow against the Temporal server's own mTLS: the local PostgreSQL cluster
# (temporal/cluster.sh) started with TEMPORAL_CLUSTER_TLS_DIR, certificates made
# here with openssl. A short sim run with temporal.tls (client certificate) and
# temporal.encryption goes through `rollflow dev up` (engines, worker) and
# `rollflow run --wait`; then a client without a certificate must be refused.
# Not in `make test`: the cluster builds the server from the Go module proxy on
# first use (~10 min). Its own state dir and ports; stopped at the end unless
# KEEP_CLUSTER=1. Report: bench/results/cluster-tls.md (OUT=...).
set -euo pipefail
cd "$(dirname "$0")/../.."
export ROLLFLOW_STATE="${ROLLFLOW_STATE:-$PWD/.state/cluster-tls}"
export TEMPORAL_CLUSTER_DIR="${TEMPORAL_CLUSTER_DIR:-$ROLLFLOW_STATE/cluster}"
export TEMPORAL_CLUSTER_PORT="${TEMPORAL_CLUSTER_PORT:-7533}" TEMPORAL_CLUSTER_PG_PORT="${TEMPORAL_CLUSTER_PG_PORT:-5459}"
out="${OUT:-bench/results/cluster-tls.md}"
certs="$ROLLFLOW_STATE/certs"
mkdir -p "$certs"

# A CA, a server certificate for 127.0.0.1/localhost, a client certificate.
(
  cd "$certs"
  [ -f client.pem ] && exit 0
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj /CN=rollflow-test-ca 2>/dev/null
  for leaf in server client; do
    openssl req -newkey rsa:2048 -nodes -keyout "$leaf.key" -out "$leaf.csr" -subj "/CN=$leaf" 2>/dev/null
    if [ "$leaf" = server ]; then printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'; else printf 'extendedKeyUsage=clientAuth\n'; fi >"$leaf.ext"
    openssl x509 -req -in "$leaf.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$leaf.pem" -days 30 -extfile "$leaf.ext" 2>/dev/null
  done
)
openssl rand -hex 32 >"$ROLLFLOW_STATE/payload.key"
export TEMPORAL_CLUSTER_TLS_DIR="$certs"

read -r p_inf p_tr p_env < <(python3 -c 'import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
address=$(temporal/cluster.sh address)
config=examples/sim-rlvr.yaml
sets=(--set "temporal.address=$address" --set temporal.embedded=false --set temporal.task_queue=cluster-tls
      --set "temporal.tls={ca_file: $certs/ca.pem, cert_file: $certs/client.pem, key_file: $certs/client.key}"
      --set "temporal.encryption={key_file: $ROLLFLOW_STATE/payload.key}"
      --set max_steps=4 --set exp_name=cluster-tls --set "run_dir=$ROLLFLOW_STATE/run"
      --set "engines.inference[0].url=http://127.0.0.1:$p_inf" --set "engines.trainer.url=http://127.0.0.1:$p_tr" --set "engines.env.url=http://127.0.0.1:$p_env")
stop() {
  bin/rollflow dev down "$config" "${sets[@]}" >/dev/null 2>&1 || true
  [ "${KEEP_CLUSTER:-0}" = 1 ] || temporal/cluster.sh stop
}
trap stop EXIT
temporal/cluster.sh start
bin/rollflow dev up "$config" "${sets[@]}"
run_id="tls-$(date +%s)"
start=$(date +%s)
bin/rollflow run "$config" "${sets[@]}" --run-id "$run_id" --wait
wall=$(( $(date +%s) - start ))
final=$(bin/rollflow wait "$run_id" --json --config "$config" "${sets[@]}")
# The same server without a client certificate: refused.
no_cert=$(bin/rollflow status "$run_id" --config "$config" "${sets[@]}" --set "temporal.tls={ca_file: $certs/ca.pem}" 2>&1 || true)
# What the server stores: ciphertext (the Temporal CLI, with the client certificate, reads it raw).
cli=$(temporal/ensure-cli.sh)
show=$("$cli" workflow show --address "$address" --workflow-id "$run_id/e0-p0" --output json \
  --tls-ca-path "$certs/ca.pem" --tls-cert-path "$certs/client.pem" --tls-key-path "$certs/client.key")
# Payloads by encoding, and where the plain ones are (search attributes are indexed by the server, never encoded).
read -r encrypted plain plain_where < <(python3 -c '
import base64, json, sys
counts, where = {"binary/encrypted": 0, "json/plain": 0}, set()
def walk(x, path):
    if isinstance(x, dict):
        enc = x.get("metadata", {}).get("encoding") if isinstance(x.get("metadata"), dict) else None
        if enc:
            e = base64.b64decode(enc).decode()
            counts[e] = counts.get(e, 0) + 1
            if e == "json/plain": where.add("search-attributes" if "searchAttributes" in path else path)
        for k, v in x.items(): walk(v, path + "." + k)
    elif isinstance(x, list):
        for v in x: walk(v, path)
walk(json.load(sys.stdin), "")
print(counts["binary/encrypted"], counts["json/plain"], ",".join(sorted(where)) or "-")' <<<"$show")
{
  echo "# rollflow on the Temporal server's own mTLS (local PostgreSQL cluster)"
  echo
  echo "Written by \`bench/tls/cluster-tls.sh\` on $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)."
  echo "Server: temporal/cluster.sh with TEMPORAL_CLUSTER_TLS_DIR (frontend requires a client certificate signed by the test CA)."
  echo
  echo "- run \`$run_id\` (examples/sim-rlvr.yaml, 4 steps, sim engines, worker and CLI with temporal.tls and temporal.encryption): $(echo "$final" | python3 -c 'import json,sys; s=json.load(sys.stdin); print("completed, %d/%d steps, version %d" % (s["step"], s["maxSteps"], s["version"]))'), ${wall} s"
  echo "- group \`$run_id/e0-p0\` as the server stores it (\`temporal workflow show\` with the client certificate): $encrypted payloads with encoding binary/encrypted, $plain with json/plain (where: $plain_where)"
  echo "- the same client without its certificate: \`$(echo "$no_cert" | tail -1 | cut -c1-300)\`"
} >"$out"
cat "$out"
