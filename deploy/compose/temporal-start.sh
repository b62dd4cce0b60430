#!/bin/bash
# The compose Temporal server, from the environment temporalio/auto-setup reads (docker-compose.yml sets it):
# POSTGRES_SEEDS, DB_PORT, POSTGRES_USER, POSTGRES_PWD, NUM_HISTORY_SHARDS, DYNAMIC_CONFIG_FILE_PATH.
# Like auto-setup: creates the two databases and their schemas with the server's SQL tool (as
# temporal/cluster.sh does), writes the server's config, starts it, creates the namespace `default`.
set -euo pipefail
cd /etc/temporal
host=${POSTGRES_SEEDS:?} port=${DB_PORT:-5432} user=${POSTGRES_USER:?} pw=${POSTGRES_PWD:?}
say() { echo "temporal-start: $*" >&2; }

# PostgreSQL may still be starting (podman-compose does not wait for its health check).
for _ in $(seq 120); do (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && break; sleep 1; done
pg() { PGPASSWORD=$pw psql -X -q -A -t -h "$host" -p "$port" -U "$user" "$@"; }
for _ in $(seq 60); do pg -d postgres -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done
sql_tool() { SQL_HOST=$host SQL_PORT=$port SQL_USER=$user SQL_PASSWORD=$pw SQL_PLUGIN=postgres12 sql "$@"; }
for db in temporal temporal_visibility; do
  kind=$([ "$db" = temporal ] && echo temporal || echo visibility)
  [ -n "$(pg -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" ] || sql_tool --db "$db" create-database
  [ -n "$(pg -d "$db" -c "SELECT 1 FROM pg_tables WHERE tablename = 'schema_version'")" ] || sql_tool --db "$db" setup-schema -v 0.0
  sql_tool --db "$db" update-schema -d "schema/postgresql/v12/$kind/versioned"
done

# Other containers reach this one at its own address; membership must broadcast it, not 0.0.0.0.
ip=$(hostname -i | awk '{print $1}')
mkdir -p config
datastore() {
  cat <<YAML
      sql:
        pluginName: postgres12
        databaseName: $1
        connectAddr: "$host:$port"
        connectProtocol: tcp
        user: $user
        password: "$pw"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
YAML
}
cat >config/rollflow.yaml <<YAML
log: { stdout: true, level: warn, format: json }
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: ${NUM_HISTORY_SHARDS:-4}
  datastores:
    postgres-default:
$(datastore temporal)
    postgres-visibility:
$(datastore temporal_visibility)
global:
  membership: { maxJoinDuration: 30s, broadcastAddress: "$ip" }
services:
  frontend: { rpc: { grpcPort: 7233, membershipPort: 6933, bindOnIP: 0.0.0.0 } }
  history: { rpc: { grpcPort: 7234, membershipPort: 6934, bindOnIP: 0.0.0.0 } }
  matching: { rpc: { grpcPort: 7235, membershipPort: 6935, bindOnIP: 0.0.0.0 } }
  worker: { rpc: { grpcPort: 7239, membershipPort: 6939, bindOnIP: 0.0.0.0 } }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active: { enabled: true, initialFailoverVersion: 1, rpcName: frontend, rpcAddress: "127.0.0.1:7233" }
dcRedirectionPolicy: { policy: noop }
dynamicConfigClient: { filepath: "/etc/temporal/${DYNAMIC_CONFIG_FILE_PATH:-config/dynamicconfig/rollflow.yaml}", pollInterval: 10s }
YAML

server --root /etc/temporal --config config --env rollflow --allow-no-auth start &
pid=$!
trap 'kill -TERM $pid' TERM INT
until temporal operator cluster health --address 127.0.0.1:7233 2>/dev/null | grep -q SERVING; do
  kill -0 $pid 2>/dev/null || { say "the server exited during start"; wait $pid; exit 1; }
  sleep 1
done
temporal operator namespace describe --address 127.0.0.1:7233 --namespace default >/dev/null 2>&1 \
  || temporal operator namespace create --address 127.0.0.1:7233 --namespace default --retention 72h
say "serving on $ip:7233, namespace default"
wait $pid
