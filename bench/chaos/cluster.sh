#!/usr/bin/env bash
# The Temporal server of the local PostgreSQL cluster (temporal/cluster.sh)
# killed with SIGKILL mid-run and restarted by cluster.sh start, through
# `rollflow chaos --faults temporal`: the same invariants as on the embedded
# dev server. Not in `make test`: the cluster builds the server from the Go
# module proxy on first use (~10 min). Its own state dir, cluster ports and
# engine ports; the cluster is stopped at the end unless KEEP_CLUSTER=1.
#   KILLS (default 2) kills, about EVERY (default 20) s apart; MAX_STEPS (default 40).
# Report: bench/results/chaos-cluster.md (OUT=...).
set -euo pipefail
cd "$(dirname "$0")/../.."
export ROLLFLOW_STATE="${ROLLFLOW_STATE:-$PWD/.state/chaos-cluster}"
export TEMPORAL_CLUSTER_DIR="${TEMPORAL_CLUSTER_DIR:-$ROLLFLOW_STATE/cluster}"
# Away from the default cluster (7333-7341, 5439), so it runs beside one.
export TEMPORAL_CLUSTER_PORT="${TEMPORAL_CLUSTER_PORT:-7433}" TEMPORAL_CLUSTER_PG_PORT="${TEMPORAL_CLUSTER_PG_PORT:-5449}"
mkdir -p "$ROLLFLOW_STATE"
read -r p_inf p_tr p_env < <(python3 -c 'import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
sets=(--set "temporal.address=$(temporal/cluster.sh address)" --set temporal.embedded=false --set temporal.task_queue=chaos-cluster
      --set "max_steps=${MAX_STEPS:-40}" --set exp_name=chaos-cluster --set "run_dir=$ROLLFLOW_STATE/run"
      --set "engines.inference[0].url=http://127.0.0.1:$p_inf" --set "engines.trainer.url=http://127.0.0.1:$p_tr" --set "engines.env.url=http://127.0.0.1:$p_env")
config=examples/chaos-sim.yaml
stop() {
  bin/rollflow dev down "$config" "${sets[@]}" || true
  [ "${KEEP_CLUSTER:-0}" = 1 ] || temporal/cluster.sh stop
}
trap stop EXIT
temporal/cluster.sh start
bin/rollflow chaos "$config" "${sets[@]}" --faults temporal --every "${EVERY:-20}" --kills "${KILLS:-2}" --seed "${SEED:-1}" \
  --run-id "chaos-cluster-$(date +%s)" --out "${OUT:-bench/results/chaos-cluster.md}"
