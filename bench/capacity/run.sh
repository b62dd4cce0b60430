#!/usr/bin/env bash
# What a trajectory, a turn and a train step cost Temporal on the PostgreSQL cluster: history events, state
# transitions (each one a persistence write of the workflow's state), PostgreSQL transactions, row writes and
# WAL bytes, and CPU seconds of the server, PostgreSQL and the worker. Four runs of capacity.yaml that differ in
# steps, batch or turns (capacity.py), on a cluster of this script's own (own directory and ports, created fresh,
# stopped and removed at the end unless KEEP=1), with free engine ports. Then the projection of
# docs/scaling.md from those figures. Report: bench/results/capacity.md and capacity.json (OUT_DIR=...).
# SHARDS: the cluster's history shards (4).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export ROLLFLOW_STATE="$root/.state/bench-capacity"
export TEMPORAL_CLUSTER_DIR="$ROLLFLOW_STATE/cluster" TEMPORAL_CLUSTER_PORT="${TEMPORAL_CLUSTER_PORT:-7353}"
export TEMPORAL_CLUSTER_PG_PORT="${TEMPORAL_CLUSTER_PG_PORT:-5449}" TEMPORAL_CLUSTER_SHARDS="${SHARDS:-4}"
temporal/cluster.sh stop >/dev/null 2>&1 || true
rm -rf "$ROLLFLOW_STATE" && mkdir -p "$ROLLFLOW_STATE"
sets_file="$ROLLFLOW_STATE/sets"
cleanup() {
  bin/rollflow dev down bench/capacity/capacity.yaml $(sed 's/^/--set /' "$sets_file" 2>/dev/null) >/dev/null 2>&1 || true
  [ -n "${KEEP:-}" ] || { temporal/cluster.sh stop; rm -rf "$ROLLFLOW_STATE"; }
}
trap cleanup EXIT
temporal/cluster.sh start
# Engines on ports free right now (another stack's engine would answer our runs).
read -r p_inf p_tr p_env < <(python3 bench/costs.py free-ports 3)
printf '%s\n' "temporal.address=$(temporal/cluster.sh address)" "engines.inference[0].url=http://127.0.0.1:$p_inf" \
  "engines.trainer.url=http://127.0.0.1:$p_tr" "engines.env.url=http://127.0.0.1:$p_env" >"$sets_file"
bin/rollflow dev up bench/capacity/capacity.yaml $(sed 's/^/--set /' "$sets_file") >&2
.venv/bin/python bench/capacity/capacity.py --sets "$sets_file" --out-dir "${OUT_DIR:-bench/results}" \
  --command "${COMMAND:-bench/capacity/run.sh}"
