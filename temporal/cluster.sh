#!/usr/bin/env bash
# The local Temporal cluster: start | stop | status | health | address | config | sql.
# The Temporal server binary (temporal/ensure-server.sh, the version the dev
# server embeds) with frontend, history, matching and worker services in one
# process, on its own PostgreSQL instance (Debian's binaries, a private data
# directory, its own port; not the system's cluster). No UI in this mode: use
# the CLI, or point a Temporal UI server at the address.
# Idempotent like dev-server.sh: start with a live cluster does nothing, stop
# with none does nothing; the databases persist across restarts under
# $TEMPORAL_CLUSTER_DIR (.state/cluster), delete it after a stop to start over.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/env.sh"

dir="$TEMPORAL_CLUSTER_DIR"
pgdata="$dir/pg"
pglog="$dir/postgres.log"
pwfile="$dir/pg-password"
shards_stamp="$dir/num-history-shards"
conf_dir="$dir/config"
server_pidfile="$dir/server.pid"
server_log="$dir/server.log"
address="$TEMPORAL_CLUSTER_IP:$TEMPORAL_CLUSTER_PORT"
namespace="${TEMPORAL_CLUSTER_NAMESPACE:-default}"
db_user="temporal"   # the instance's superuser, password in $pwfile
p=$TEMPORAL_CLUSTER_PORT
# frontend, history, matching, worker: gRPC p..p+3, membership p+4..p+7; metrics p+8.
cluster_ports=("$p" $((p + 1)) $((p + 2)) $((p + 3)) $((p + 4)) $((p + 5)) $((p + 6)) $((p + 7)) $((p + 8)))
server_args=(--root "$dir" --config config --env rollflow)
server_marker="--root $dir --config config"

say_phase() { rf_say "cluster: $*"; }

# TLS (optional): TEMPORAL_CLUSTER_TLS_DIR holds ca.pem, server.pem, server.key, client.pem and client.key;
# server.pem must name "localhost" (the server's own clients check that name).
# The frontend then serves mTLS only: clients need a certificate the CA signed. The server's own system
# worker uses client.pem, and so do this script's CLI calls (health, namespace set-up: RF_CLI_TLS_ARGS).
# Internode traffic (one process here) stays plaintext on loopback.
tls_dir="${TEMPORAL_CLUSTER_TLS_DIR:-}"
if [ -n "$tls_dir" ]; then
  for f in ca.pem server.pem server.key client.pem client.key; do
    [ -r "$tls_dir/$f" ] || rf_die "TEMPORAL_CLUSTER_TLS_DIR=$tls_dir has no readable $f (needs ca.pem, server.pem, server.key, client.pem, client.key)"
  done
  [[ "$tls_dir" != *" "* ]] || rf_die "TEMPORAL_CLUSTER_TLS_DIR must not contain spaces: $tls_dir"
  RF_CLI_TLS_ARGS="--tls-ca-path $tls_dir/ca.pem --tls-cert-path $tls_dir/client.pem --tls-key-path $tls_dir/client.key"
fi

render_tls() {
  [ -n "$tls_dir" ] || return 0
  cat <<EOF
  tls:
    frontend:
      server:
        certFile: "$tls_dir/server.pem"
        keyFile: "$tls_dir/server.key"
        requireClientAuth: true
        clientCaFiles: ["$tls_dir/ca.pem"]
      client:
        serverName: localhost
        rootCaFiles: ["$tls_dir/ca.pem"]
    systemWorker:
      certFile: "$tls_dir/client.pem"
      keyFile: "$tls_dir/client.key"
      client:
        serverName: localhost
        rootCaFiles: ["$tls_dir/ca.pem"]
EOF
}

# ---- PostgreSQL -------------------------------------------------------------

# The directory with initdb, pg_ctl and postgres: $TEMPORAL_CLUSTER_PG_BIN, the
# initdb on PATH, or Debian's newest /usr/lib/postgresql/<v>/bin. Installs
# Debian's postgresql when there is none.
pg_bin() {
  if [ -n "${TEMPORAL_CLUSTER_PG_BIN:-}" ]; then
    [ -x "$TEMPORAL_CLUSTER_PG_BIN/initdb" ] || rf_die "TEMPORAL_CLUSTER_PG_BIN=$TEMPORAL_CLUSTER_PG_BIN has no initdb"
    echo "$TEMPORAL_CLUSTER_PG_BIN"; return
  fi
  local found
  find_it() {
    local i
    if i=$(command -v initdb 2>/dev/null); then dirname "$(readlink -f "$i")"; return; fi
    for i in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
      [ -x "$i/initdb" ] && { echo "$i"; return; }
    done
  }
  found=$(find_it || true)
  if [ -z "$found" ]; then
    # Debian keeps initdb off PATH, so this installs only when no version is found at all.
    "$ROLLFLOW_ROOT/scripts/ensure-system-packages.sh" initdb=postgresql >&2
    found=$(find_it || true)
  fi
  [ -n "$found" ] && [ -x "$found/pg_ctl" ] && [ -x "$found/postgres" ] \
    || rf_die "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found; install Debian's 'postgresql' or set TEMPORAL_CLUSTER_PG_BIN"
  echo "$found"
}

# PostgreSQL refuses to run as root: as root, run it as $TEMPORAL_CLUSTER_PG_OS_USER
# (created as a system user if missing); as anyone else, run it as ourselves.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$TEMPORAL_CLUSTER_PG_OS_USER" -- "$@"; else "$@"; fi
}

pg_owner_ready() {
  [ "$(id -u)" -eq 0 ] || return 0
  local u=$TEMPORAL_CLUSTER_PG_OS_USER
  if ! id "$u" >/dev/null 2>&1; then
    say_phase "creating the system user '$u' to run PostgreSQL (it refuses to run as root)"
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$u"
  fi
  runuser -u "$u" -- test -x "$dir" || rf_die "user '$u' cannot reach $dir (a parent directory is not world-searchable).
  Put the state elsewhere (ROLLFLOW_STATE=... or TEMPORAL_CLUSTER_DIR=...), or choose another user: TEMPORAL_CLUSTER_PG_OS_USER=..."
}

pg_running() { as_pg "$PG_BIN/pg_ctl" status -D "$pgdata" >/dev/null 2>&1; }
pg_pid() { head -1 "$pgdata/postmaster.pid" 2>/dev/null || true; }

# psql as the superuser, over TCP (the instance has no Unix socket).
pg_sql() {
  local db=$1; shift
  PGPASSWORD="$(cat "$pwfile")" "$PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
    -h "$TEMPORAL_CLUSTER_IP" -p "$TEMPORAL_CLUSTER_PG_PORT" -U "$db_user" -d "$db" "$@"
}

pg_init() {
  [ -f "$pgdata/PG_VERSION" ] && return 0
  say_phase "creating a PostgreSQL instance in $pgdata ($("$PG_BIN/postgres" --version))"
  mkdir -p "$dir" && chmod 755 "$dir"
  umask 077
  [ -f "$pwfile" ] || head -c 24 /dev/urandom | base64 | tr -d '/+=\n' >"$pwfile"
  umask 022
  mkdir -p "$pgdata"
  local pw_for_initdb="$pgdata.initpw"
  install -m 600 "$pwfile" "$pw_for_initdb"
  if [ "$(id -u)" -eq 0 ]; then chown "$TEMPORAL_CLUSTER_PG_OS_USER:" "$pgdata" "$pw_for_initdb"; fi
  chmod 700 "$pgdata"
  # Passwords for every connection (scram); the instance listens on loopback only.
  if ! as_pg "$PG_BIN/initdb" -D "$pgdata" -U "$db_user" --pwfile="$pw_for_initdb" -E UTF8 --no-locale \
        --auth-local=scram-sha-256 --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1; then
    rm -f "$pw_for_initdb"
    rf_die "initdb failed; see $dir/initdb.log:
$(tail -n 20 "$dir/initdb.log")"
  fi
  rm -f "$pw_for_initdb"
  echo "include_if_exists = 'rollflow.conf'" >>"$pgdata/postgresql.conf"
}

pg_start() {
  if pg_running; then return 0; fi
  if rf_port_open "$TEMPORAL_CLUSTER_IP" "$TEMPORAL_CLUSTER_PG_PORT"; then
    rf_die "port $TEMPORAL_CLUSTER_PG_PORT on $TEMPORAL_CLUSTER_IP is taken by another process (not this cluster's PostgreSQL).
  Stop that process, or choose another port: TEMPORAL_CLUSTER_PG_PORT=..."
  fi
  # Rewritten on every start, so port and settings follow the environment.
  cat >"$pgdata/rollflow.conf" <<EOF
# Written by temporal/cluster.sh on each start.
listen_addresses = '$TEMPORAL_CLUSTER_IP'
port = $TEMPORAL_CLUSTER_PG_PORT
unix_socket_directories = ''
max_connections = 100
shared_buffers = 256MB
synchronous_commit = $TEMPORAL_CLUSTER_PG_SYNC_COMMIT
EOF
  [ "$(id -u)" -ne 0 ] || chown "$TEMPORAL_CLUSTER_PG_OS_USER:" "$pgdata/rollflow.conf"
  # initdb lets host connections in from loopback only; on another address (TEMPORAL_CLUSTER_IP: a host's own, as
  # in tests/integration/multihost.test.ts) the server connects from that address, with a password like any other.
  local hba="host all all $TEMPORAL_CLUSTER_IP/32 scram-sha-256"
  grep -qxF "$hba" "$pgdata/pg_hba.conf" || echo "$hba" >>"$pgdata/pg_hba.conf"
  touch "$pglog"; [ "$(id -u)" -ne 0 ] || chown "$TEMPORAL_CLUSTER_PG_OS_USER:" "$pglog"
  # setsid: PostgreSQL outlives the shell (and the make target) that started it.
  as_pg setsid "$PG_BIN/pg_ctl" start -D "$pgdata" -l "$pglog" -w -t 60 >/dev/null \
    || rf_die "PostgreSQL did not start; last lines of $pglog:
$(tail -n 20 "$pglog")"
  say_phase "PostgreSQL up (pid $(pg_pid)) on $TEMPORAL_CLUSTER_IP:$TEMPORAL_CLUSTER_PG_PORT, synchronous_commit=$TEMPORAL_CLUSTER_PG_SYNC_COMMIT"
}

pg_stop() {
  pg_running || return 0
  local pid; pid=$(pg_pid)
  as_pg "$PG_BIN/pg_ctl" stop -D "$pgdata" -m fast -w -t 60 >/dev/null
  say_phase "PostgreSQL stopped (pid $pid)"
}

# ---- databases and schemas (the server's own SQL tool) ----------------------

sql_tool() {
  SQL_HOST="$TEMPORAL_CLUSTER_IP" SQL_PORT="$TEMPORAL_CLUSTER_PG_PORT" SQL_USER="$db_user" \
  SQL_PASSWORD="$(cat "$pwfile")" SQL_PLUGIN=postgres12 "$SERVER_BIN/sql" "$@"
}

check_shards() {
  if [ -f "$shards_stamp" ] && [ "$(cat "$shards_stamp")" != "$TEMPORAL_CLUSTER_SHARDS" ]; then
    rf_die "this cluster was created with numHistoryShards=$(cat "$shards_stamp"); Temporal cannot change it (asked: $TEMPORAL_CLUSTER_SHARDS).
  Keep TEMPORAL_CLUSTER_SHARDS=$(cat "$shards_stamp"), or stop the cluster and delete $dir to start over."
  fi
}

db_setup() {
  local schema_root; schema_root=$("$here/ensure-server.sh" --schema-dir)
  local db kind
  for db in temporal temporal_visibility; do
    kind=$([ "$db" = temporal ] && echo temporal || echo visibility)
    if [ -z "$(pg_sql postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
      say_phase "creating database $db"
      sql_tool --db "$db" create-database >>"$dir/schema.log" 2>&1 || rf_die "creating database $db failed; see $dir/schema.log"
    fi
    if [ -z "$(pg_sql "$db" -c "SELECT 1 FROM pg_tables WHERE tablename = 'schema_version'")" ]; then
      sql_tool --db "$db" setup-schema -v 0.0 >>"$dir/schema.log" 2>&1 || rf_die "setup-schema on $db failed; see $dir/schema.log"
    fi
    # Applies only the versions newer than the database's (a no-op when current).
    sql_tool --db "$db" update-schema -d "$schema_root/$kind/versioned" >>"$dir/schema.log" 2>&1 \
      || rf_die "update-schema on $db failed; see $dir/schema.log"
  done
  [ -f "$shards_stamp" ] || echo "$TEMPORAL_CLUSTER_SHARDS" >"$shards_stamp"
  say_phase "schemas: temporal $(pg_sql temporal -c 'SELECT curr_version FROM schema_version'), temporal_visibility $(pg_sql temporal_visibility -c 'SELECT curr_version FROM schema_version')"
}

# ---- the Temporal server ----------------------------------------------------

# The server's config. numHistoryShards: each shard owns its workflows' state
# and runs its own task processors and database transactions; 4 lets history
# work proceed on both cores (and a few outstanding database round trips)
# without the per-shard overhead of production counts (512+) on a 2-core
# machine. Temporal cannot change it once the databases exist.
render_config() {
  local password=$1
  cat <<EOF
# Written by temporal/cluster.sh on each start (edit the script, not this file).
log:
  stdout: true
  level: $TEMPORAL_CLUSTER_LOG_LEVEL
  format: json
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: $TEMPORAL_CLUSTER_SHARDS
  datastores:
    postgres-default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "$TEMPORAL_CLUSTER_IP:$TEMPORAL_CLUSTER_PG_PORT"
        connectProtocol: tcp
        user: $db_user
        password: "$password"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    postgres-visibility:
      sql:
        pluginName: postgres12
        databaseName: temporal_visibility
        connectAddr: "$TEMPORAL_CLUSTER_IP:$TEMPORAL_CLUSTER_PG_PORT"
        connectProtocol: tcp
        user: $db_user
        password: "$password"
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "$TEMPORAL_CLUSTER_IP"
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: "$TEMPORAL_CLUSTER_IP:${cluster_ports[8]}"
$(render_tls)
services:
  frontend:
    rpc: { grpcPort: ${cluster_ports[0]}, membershipPort: ${cluster_ports[4]}, bindOnIP: "$TEMPORAL_CLUSTER_IP" }
  history:
    rpc: { grpcPort: ${cluster_ports[1]}, membershipPort: ${cluster_ports[5]}, bindOnIP: "$TEMPORAL_CLUSTER_IP" }
  matching:
    rpc: { grpcPort: ${cluster_ports[2]}, membershipPort: ${cluster_ports[6]}, bindOnIP: "$TEMPORAL_CLUSTER_IP" }
  worker:
    rpc: { grpcPort: ${cluster_ports[3]}, membershipPort: ${cluster_ports[7]}, bindOnIP: "$TEMPORAL_CLUSTER_IP" }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "$address"
dcRedirectionPolicy:
  policy: noop
# The same dynamic config the dev server gets as --dynamic-config-value pairs (TEMPORAL_DYNAMIC_CONFIG: another file).
dynamicConfigClient:
  filepath: "${TEMPORAL_DYNAMIC_CONFIG:-$here/dynamic-config.yaml}"
  pollInterval: 10s
EOF
}

write_config() {
  mkdir -p "$conf_dir"
  (umask 077; render_config "$(cat "$pwfile")" >"$conf_dir/rollflow.yaml")
}

server_pid() { rf_pid_from "$server_pidfile" "$server_marker"; }

server_start() {
  local pid; pid=$(server_pid)
  if [ -n "$pid" ]; then return 0; fi
  if [ -f "$server_pidfile" ]; then
    say_phase "removing stale pid file $server_pidfile (pid $(cat "$server_pidfile") is not this cluster's server)"
    rm -f "$server_pidfile"
  fi
  local port
  for port in "${cluster_ports[@]}"; do
    if rf_port_open "$TEMPORAL_CLUSTER_IP" "$port"; then
      rf_die "port $port on $TEMPORAL_CLUSTER_IP is taken by another process (not this cluster's server).
  The cluster uses ports $p-$((p + 8)); stop that process, or choose another base: TEMPORAL_CLUSTER_PORT=..."
    fi
  done
  setsid "$SERVER_BIN/server" "${server_args[@]}" --allow-no-auth start >>"$server_log" 2>&1 </dev/null &
  echo $! >"$server_pidfile"
  local deadline=$(( $(date +%s) + TEMPORAL_CLUSTER_START_TIMEOUT ))
  until rf_healthy "$address"; do
    if ! rf_running "$(cat "$server_pidfile")"; then
      rm -f "$server_pidfile"
      rf_die "the Temporal server exited during start; last lines of $server_log:
$(tail -n 20 "$server_log")"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || rf_die "the Temporal server is not healthy after ${TEMPORAL_CLUSTER_START_TIMEOUT}s; see $server_log"
    sleep 0.5
  done
}

# The namespace and the search attributes of search-attributes.txt, then a
# query naming one of them, so a caller may start workflows as soon as we return.
namespace_setup() {
  local cli; cli=$("$here/ensure-cli.sh")
  local ns=(--address "$address" --namespace "$namespace")
  # shellcheck disable=SC2206  # the TLS flags, split on spaces (no spaces in the path, checked above)
  [ -z "${RF_CLI_TLS_ARGS:-}" ] || ns+=($RF_CLI_TLS_ARGS)
  if ! "$cli" operator namespace describe "${ns[@]}" >/dev/null 2>&1; then
    "$cli" operator namespace create "${ns[@]}" --retention 72h >/dev/null \
      || rf_die "could not create namespace $namespace at $address"
    say_phase "namespace $namespace created"
  fi
  local args=() kv first=""
  while read -r kv; do
    args+=(--name "${kv%%=*}" --type "${kv#*=}")
    [ -n "$first" ] || first=${kv%%=*}
  done < <(rf_read_list "$here/search-attributes.txt")
  local deadline=$(( $(date +%s) + 60 )) err
  # A new namespace reaches the frontend's cache within ~10 s; retry until then.
  until err=$("$cli" operator search-attribute create "${ns[@]}" "${args[@]}" 2>&1 >/dev/null); do
    [ "$(date +%s)" -lt "$deadline" ] || rf_die "registering search attributes failed: $err"
    sleep 1
  done
  until err=$("$cli" workflow list "${ns[@]}" --limit 1 --query "$first = 'rollflow-probe'" 2>&1 >/dev/null); do
    [ "$(date +%s)" -lt "$deadline" ] || rf_die "search attribute $first is not queryable after 60s: $err"
    sleep 1
  done
}

# ---- commands ---------------------------------------------------------------

start() {
  if [ -n "$(server_pid)" ] && rf_healthy "$address"; then
    say_phase "already running (server pid $(server_pid)) at $address"
    return 0
  fi
  check_shards
  SERVER_BIN=$("$here/ensure-server.sh")
  PG_BIN=$(pg_bin)
  mkdir -p "$dir"
  pg_owner_ready
  pg_init
  pg_start
  db_setup
  write_config
  server_start
  namespace_setup
  say_phase "started: Temporal server $TEMPORAL_SERVER_VERSION (pid $(server_pid)) at $address, namespace $namespace, $TEMPORAL_CLUSTER_SHARDS history shards;" \
    "PostgreSQL (pid $(pg_pid)) on $TEMPORAL_CLUSTER_IP:$TEMPORAL_CLUSTER_PG_PORT; logs $server_log, $pglog; no UI in cluster mode"
}

stop() {
  local pid; pid=$(server_pid)
  if [ -n "$pid" ]; then
    rf_stop_pid "$pid"
    say_phase "Temporal server stopped (pid $pid)"
  fi
  rm -f "$server_pidfile"
  if [ -f "$pgdata/PG_VERSION" ]; then
    PG_BIN=$(pg_bin)
    pg_stop
  fi
  [ -n "$pid" ] || say_phase "server not running"
}

status() {
  local pid pg="stopped"; pid=$(server_pid)
  if [ -f "$pgdata/postmaster.pid" ] && kill -0 "$(pg_pid)" 2>/dev/null; then pg="pid=$(pg_pid) port=$TEMPORAL_CLUSTER_PG_PORT"; fi
  if [ -z "$pid" ]; then
    echo "temporal-cluster: stopped (postgres: $pg)"
    [ "$pg" = stopped ] && return 3 || return 1
  fi
  if rf_healthy "$address" && [ "$pg" != stopped ]; then
    echo "temporal-cluster: running pid=$pid address=$address namespace=$namespace shards=$(cat "$shards_stamp" 2>/dev/null) postgres: $pg dir=$dir"
  else
    echo "temporal-cluster: unhealthy pid=$pid (postgres: $pg; see $server_log)"; return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  health) rf_healthy "$address" ;;
  address) echo "$address" ;;
  config) render_config "$( [ -f "$pwfile" ] && cat "$pwfile" || echo '<generated at first start>')" ;;
  # sql DB [psql args...]: psql on one of the cluster's databases (temporal, temporal_visibility), unaligned and
  # tuples only, e.g. `cluster.sh sql temporal -c 'SELECT 1'`; benches read PostgreSQL's statistics this way.
  sql) shift; [ $# -ge 1 ] || rf_die "usage: $0 sql DB [psql args...]"; PG_BIN=$(pg_bin); pg_sql "$@" ;;
  *) echo "usage: $0 start|stop|status|health|address|config|sql" >&2; exit 64 ;;
esac
