#!/usr/bin/env bash
# The S3-compatible object store of rollflow's data plane (docs/object-store.md): the Versity S3 Gateway
# (versitygw, Apache-2.0), built from the Go module proxy, serving a directory through its posix backend.
#
#   object-store/versitygw.sh path     build it once into the project cache; print the binary's path
#   object-store/versitygw.sh start    start it in the background (idempotent), create the bucket(s), and write
#                                      the AWS shared credentials and config files clients read
#   object-store/versitygw.sh stop | status | env
#
# Clients never get credentials from a run config: they read the standard AWS variables and files. `env` prints
# the two lines that point them at this store's (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE: the config file
# carries endpoint_url and the region). The root key is AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when they are
# set at the first start, else a random one generated then and kept in the credentials file.
# Settings (environment): ROLLFLOW_S3_ADDRESS (127.0.0.1:7470), ROLLFLOW_S3_DIR (<state>/object-store),
# ROLLFLOW_S3_BUCKETS (rollflow; space-separated), ROLLFLOW_S3_CERT and ROLLFLOW_S3_KEY (serve TLS with them),
# ROLLFLOW_S3_CA (the CA that signed the certificate, default the certificate itself): with TLS the config file
# names it (ca_bundle, which boto3 reads) and `env` adds NODE_EXTRA_CA_CERTS (what Node's TLS trusts besides its
# own roots; the AWS SDK for JavaScript reads no CA setting of its own).
set -euo pipefail
RF_WHO=object-store
source "$(dirname "$0")/../temporal/env.sh"

VERSITYGW_VERSION="v1.8.0"
address="${ROLLFLOW_S3_ADDRESS:-127.0.0.1:7470}"
dir="${ROLLFLOW_S3_DIR:-$ROLLFLOW_STATE/object-store}"
buckets="${ROLLFLOW_S3_BUCKETS:-rollflow}"
data="$dir/data" pidfile="$dir/versitygw.pid" log="$dir/versitygw.log"
credentials="$dir/aws/credentials" config="$dir/aws/config"
scheme=http ca=
if [ -n "${ROLLFLOW_S3_CERT:-}" ]; then scheme=https ca="${ROLLFLOW_S3_CA:-$ROLLFLOW_S3_CERT}"; fi
endpoint="$scheme://$address"

EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  # of the empty body S3 wants named

binary() { rf_go_install github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION" versitygw; }
live_pid() { rf_pid_from "$pidfile" versitygw; }

# The root key: kept in the credentials file from the first start on.
key_of() { sed -n "s/^$1 *= *//p" "$credentials" | head -1; }
write_client_files() {
  mkdir -p "$dir/aws" && chmod 700 "$dir/aws"
  if [ ! -s "$credentials" ]; then
    local id="${AWS_ACCESS_KEY_ID:-rollflow$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}"
    local secret="${AWS_SECRET_ACCESS_KEY:-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')}"
    (umask 077; printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$id" "$secret" >"$credentials")
  fi
  printf '[default]\nregion = us-east-1\nendpoint_url = %s\n' "$endpoint" >"$config"
  [ -z "$ca" ] || printf 'ca_bundle = %s\n' "$ca" >>"$config"
}

create_buckets() {
  local id secret b code
  id=$(key_of aws_access_key_id) secret=$(key_of aws_secret_access_key)
  for b in $buckets; do
    code=$(curl -s -o /dev/null -w '%{http_code}' ${ca:+--cacert "$ca"} \
      --aws-sigv4 "aws:amz:us-east-1:s3" --user "$id:$secret" -H "x-amz-content-sha256: $EMPTY_SHA256" -X PUT "$endpoint/$b")
    case "$code" in
      200|409) ;;  # created, or there already (BucketAlreadyOwnedByYou)
      *) rf_die "creating bucket $b at $endpoint answered HTTP $code (see $log)" ;;
    esac
  done
}

start() {
  local bin; bin=$(binary)
  write_client_files
  if [ -z "$(live_pid)" ]; then
    mkdir -p "$data"
    local tls=()
    [ -n "${ROLLFLOW_S3_CERT:-}" ] && tls=(--cert "$ROLLFLOW_S3_CERT" --key "${ROLLFLOW_S3_KEY:?ROLLFLOW_S3_KEY: the key of ROLLFLOW_S3_CERT}")
    ROOT_ACCESS_KEY_ID=$(key_of aws_access_key_id) ROOT_SECRET_ACCESS_KEY=$(key_of aws_secret_access_key) \
      setsid "$bin" --port "$address" --quiet "${tls[@]}" posix "$data" >>"$log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$pidfile"
    local deadline=$(( $(date +%s) + 30 ))
    until rf_port_open "${address%:*}" "${address##*:}"; do
      rf_running "$pid" || rf_die "versitygw exited at start: $(tail -5 "$log")"
      [ "$(date +%s)" -lt "$deadline" ] || rf_die "versitygw did not listen on $address within 30 s (see $log)"
      sleep 0.2
    done
    rf_say "versitygw started (pid $pid) at $endpoint, data in $data"
  else
    rf_say "versitygw already running (pid $(live_pid)) at $endpoint"
  fi
  create_buckets
}

case "${1:-}" in
  path) binary ;;
  start) start ;;
  stop) pid=$(live_pid); if [ -n "$pid" ]; then rf_stop_pid "$pid"; rf_say "versitygw stopped (pid $pid)"; else rf_say "versitygw not running"; fi; rm -f "$pidfile" ;;
  status) pid=$(live_pid); if [ -n "$pid" ]; then echo "versitygw running (pid $pid) at $endpoint, data in $data"; else echo "versitygw stopped"; exit 1; fi ;;
  env) printf 'export AWS_SHARED_CREDENTIALS_FILE=%q\nexport AWS_CONFIG_FILE=%q\n' "$credentials" "$config"
       [ -z "$ca" ] || printf 'export NODE_EXTRA_CA_CERTS=%q\n' "$ca" ;;
  *) echo "usage: $0 path|start|stop|status|env" >&2; exit 2 ;;
esac
