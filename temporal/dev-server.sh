#!/usr/bin/env bash
# The embedded Temporal dev server: start | stop | status | health | address.
# Idempotent: start with a live server does nothing; stop with none does nothing.
# State (SQLite db, pid, log) lives under $TEMPORAL_DIR, so workflows survive restarts.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"

# dynamic-config.yaml ("key:" then "  - value: v") -> key=v lines
dynamic_config_pairs() {
  awk '/^[[:space:]]*#/ || NF == 0 { next }
       /^[^[:space:]-].*:[[:space:]]*$/ { sub(/:[[:space:]]*$/, ""); key = $0; next }
       /^[[:space:]]*- value:/ { sub(/^[[:space:]]*- value:[[:space:]]*/, ""); print key "=" $0 }' "$1"
}

healthy() { rf_healthy "$TEMPORAL_IP:$TEMPORAL_PORT"; }

start() {
  local pid; pid=$(rf_live_pid)
  if [ -n "$pid" ]; then
    rf_say "already running (pid $pid) at $TEMPORAL_IP:$TEMPORAL_PORT, UI http://$TEMPORAL_IP:$TEMPORAL_UI_PORT"
    return 0
  fi
  if [ -f "$TEMPORAL_PIDFILE" ]; then
    rf_say "removing stale pid file $TEMPORAL_PIDFILE (pid $(cat "$TEMPORAL_PIDFILE") is not a running dev server)"
    rm -f "$TEMPORAL_PIDFILE"
  fi
  for port in "$TEMPORAL_PORT" "$TEMPORAL_UI_PORT"; do
    if rf_port_open "$TEMPORAL_IP" "$port"; then
      rf_die "port $port on $TEMPORAL_IP is taken by another process (not a dev server started from $TEMPORAL_DIR).
  Stop that process, or choose other ports: TEMPORAL_PORT=... TEMPORAL_UI_PORT=..."
    fi
  done

  local cli; cli=$("$here/ensure-cli.sh")
  mkdir -p "$TEMPORAL_DIR"
  local args=(server start-dev --db-filename "$TEMPORAL_DB" --ip "$TEMPORAL_IP"
              --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT" --log-format json --log-level warn
              --sqlite-pragma journal_mode=wal --sqlite-pragma "synchronous=$TEMPORAL_SQLITE_SYNC")
  # The UI shows payloads through rollflow's codec server when one is configured (temporal.codec_url).
  if [ -n "${TEMPORAL_CODEC_ENDPOINT:-}" ]; then args+=(--ui-codec-endpoint "$TEMPORAL_CODEC_ENDPOINT"); fi
  # The server's Prometheus metrics on this port (/metrics), off unless set: benches read its persistence counters.
  if [ -n "${TEMPORAL_METRICS_PORT:-}" ]; then args+=(--metrics-port "$TEMPORAL_METRICS_PORT"); fi
  local kv
  # TEMPORAL_DYNAMIC_CONFIG: another file of the same format in place of dynamic-config.yaml (benches compare settings).
  while read -r kv; do args+=(--dynamic-config-value "$kv"); done < <(dynamic_config_pairs "${TEMPORAL_DYNAMIC_CONFIG:-$here/dynamic-config.yaml}")
  while read -r kv; do args+=(--search-attribute "$kv"); done < <(rf_read_list "$here/search-attributes.txt")

  # setsid: the server outlives the shell (and the make target) that started it.
  setsid "$cli" "${args[@]}" >>"$TEMPORAL_LOG" 2>&1 </dev/null &
  echo $! >"$TEMPORAL_PIDFILE"
  local deadline=$(( $(date +%s) + TEMPORAL_START_TIMEOUT ))
  until healthy; do
    if ! rf_running "$(cat "$TEMPORAL_PIDFILE")"; then
      rm -f "$TEMPORAL_PIDFILE"
      rf_die "the dev server exited during start; last lines of $TEMPORAL_LOG:
$(tail -n 20 "$TEMPORAL_LOG")"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || rf_die "not healthy after ${TEMPORAL_START_TIMEOUT}s; see $TEMPORAL_LOG"
    sleep 0.3
  done
  rf_say "started (pid $(cat "$TEMPORAL_PIDFILE")) at $TEMPORAL_IP:$TEMPORAL_PORT, db $TEMPORAL_DB, UI http://$TEMPORAL_IP:$TEMPORAL_UI_PORT"
}

stop() {
  local pid; pid=$(rf_live_pid)
  if [ -z "$pid" ]; then
    rm -f "$TEMPORAL_PIDFILE"; rf_say "not running"; return 0
  fi
  rf_stop_pid "$pid"
  # A supervisor that saw this server exit may have started another meanwhile, which wrote its own pid here:
  # removing that would leave the new server running with nothing to stop it by.
  if [ "$(cat "$TEMPORAL_PIDFILE" 2>/dev/null)" = "$pid" ]; then rm -f "$TEMPORAL_PIDFILE"; fi
  rf_say "stopped (pid $pid)"
}

status() {
  local pid; pid=$(rf_live_pid)
  if [ -z "$pid" ]; then echo "temporal: stopped"; return 3; fi
  if healthy; then
    echo "temporal: running pid=$pid address=$TEMPORAL_IP:$TEMPORAL_PORT ui=http://$TEMPORAL_IP:$TEMPORAL_UI_PORT db=$TEMPORAL_DB"
  else
    echo "temporal: unhealthy pid=$pid (see $TEMPORAL_LOG)"; return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  health) healthy ;;
  address) echo "$TEMPORAL_IP:$TEMPORAL_PORT" ;;
  *) echo "usage: $0 start|stop|status|health|address" >&2; exit 64 ;;
esac
