#!/usr/bin/env bash
# The cost of a turn, per part (issue #26 item 1), for five kinds of turn (env calls as activities, a turn as one activity, as local
# activities, a one-request group, lockstep) on two targets: the PostgreSQL cluster (temporal/cluster.sh) and the
# embedded dev server (temporal/dev-server.sh, SQLite inside the server process). Per target: a stack of this
# script's own (own state directory, ports free right now, the dev server with its Prometheus metrics on), the
# runs of turn_cost.py, then the stack is stopped before the next target starts. Then bench/results/turn-cost.md
# and turn-cost.json (OUT_DIR=..., NAME=... for <name>.md). Everything it starts is stopped and its state removed at the end, on failure
# too, unless KEEP=1.
#   TARGETS (default "cluster dev")  KINDS (default activity,turn,local,group,lockstep)  TURNS (default 1,5)
#   STEPS (default 4)  ENV_GROUPS (groups of 4 a step, default 16): N = STEPS·4·ENV_GROUPS trajectories a run
#   SETS: more config overrides, key=value separated by spaces (e.g. SETS=temporal.worker.max_cached_workflows=6000)
set -euo pipefail
cd "$(dirname "$0")/../.."
base="$PWD/.state/bench-turn-cost"
config=bench/capacity/capacity.yaml
targets="${TARGETS:-cluster dev}"

# A target's environment: its state directory and, on the cluster, its own directory and ports (away from
# bench/capacity's 7353/5449 and the default cluster's 7333/5439).
target_env() {
  export ROLLFLOW_STATE="$base/$1"
  if [ "$1" = cluster ]; then
    export TEMPORAL_CLUSTER_DIR="$ROLLFLOW_STATE/cluster" TEMPORAL_CLUSTER_PORT="${TEMPORAL_CLUSTER_PORT:-7373}"
    export TEMPORAL_CLUSTER_PG_PORT="${TEMPORAL_CLUSTER_PG_PORT:-5469}" TEMPORAL_CLUSTER_SHARDS=4
  fi
}

# Stops whatever of a target's stack is up (each step is a no-op when its part is not running).
down() (
  target_env "$1"
  [ -d "$ROLLFLOW_STATE" ] || exit 0
  bin/rollflow dev down "$config" $(sed 's/^/--set /' "$ROLLFLOW_STATE/sets" 2>/dev/null) >/dev/null 2>&1 || true
  if [ "$1" = cluster ]; then temporal/cluster.sh stop || true; else temporal/dev-server.sh stop || true; fi
)

cleanup() {
  local t
  for t in $targets; do down "$t"; done
  [ -n "${KEEP:-}" ] || rm -rf "$base"
}
trap cleanup EXIT

# Brings a target's stack up, writes its overrides to $ROLLFLOW_STATE/sets and runs its measurements.
measure() (
  target_env "$1"
  mkdir -p "$ROLLFLOW_STATE"
  read -r p_inf p_tr p_env p_dev p_ui p_metrics < <(python3 bench/costs.py free-ports 6)
  # The run's data under the state directory (removed at the end), the worker's metrics endpoint off (a fixed
  # port another stack's worker may hold).
  local sets=("engines.inference[0].url=http://127.0.0.1:$p_inf" "engines.trainer.url=http://127.0.0.1:$p_tr"
              "engines.env.url=http://127.0.0.1:$p_env" "exp_name=turn-cost" "temporal.task_queue=turn-cost"
              "run_dir=$ROLLFLOW_STATE/runs" "temporal.worker.metrics_address=off")
  local server_pid metrics pgdata=()
  if [ "$1" = cluster ]; then
    temporal/cluster.sh start
    sets+=("temporal.address=$(temporal/cluster.sh address)")
    server_pid="$TEMPORAL_CLUSTER_DIR/server.pid" metrics=$((TEMPORAL_CLUSTER_PORT + 8)) pgdata=(--pgdata "$TEMPORAL_CLUSTER_DIR/pg")
  else
    # Started here, with its metrics on: `rollflow dev up` (temporal.embedded) finds it running and leaves it be,
    # and `dev down` stops it (same state directory and pid file).
    TEMPORAL_PORT=$p_dev TEMPORAL_UI_PORT=$p_ui TEMPORAL_METRICS_PORT=$p_metrics temporal/dev-server.sh start
    sets+=("temporal.address=127.0.0.1:$p_dev" "temporal.ui_url=http://127.0.0.1:$p_ui" "temporal.embedded=true")
    server_pid="$ROLLFLOW_STATE/temporal/server.pid" metrics=$p_metrics
  fi
  # shellcheck disable=SC2206  # SETS is split on spaces on purpose: one override a word
  sets+=(${SETS:-})
  printf '%s\n' "${sets[@]}" >"$ROLLFLOW_STATE/sets"
  bin/rollflow dev up "$config" $(sed 's/^/--set /' "$ROLLFLOW_STATE/sets") >&2
  .venv/bin/python bench/turn-cost/turn_cost.py measure --target "$1" --sets "$ROLLFLOW_STATE/sets" \
    --server-pid-file "$server_pid" --metrics-port "$metrics" "${pgdata[@]}" --kinds "${KINDS:-activity,turn,local,group,lockstep}" \
    --turns "${TURNS:-1,5}" --steps "${STEPS:-4}" --groups "${ENV_GROUPS:-16}" --sizes "${SIZES:-}" --out "$base/$1.json"
)

for t in $targets; do down "$t"; done  # a stack left by an earlier, killed invocation
rm -rf "$base" && mkdir -p "$base"
for t in $targets; do
  measure "$t"
  down "$t"
done
.venv/bin/python bench/turn-cost/turn_cost.py report "$base"/*.json --out-dir "${OUT_DIR:-bench/results}" --name "${NAME:-turn-cost}" \
  --command "${COMMAND:-bench/turn-cost/run.sh}"
