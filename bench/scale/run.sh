#!/usr/bin/env bash
# Trajectories in flight vs throughput. Prints one JSON line per size:
# in_flight, trajectories/s, errors (run failed or timed out), the CPU seconds
# each part used per second of wall time, the machine's load, and what the
# Temporal server logged at warn level or above during the run.
#   TARGET=embedded (default): the embedded dev server (temporal/dev-server.sh)
#   TARGET=cluster: the local PostgreSQL-backed cluster (temporal/cluster.sh),
#     started if it is not running and left as found.
# The engines get free ports, so a bench can run alongside other stacks.
# EXTRA_SETS adds config overrides (see below).
# SIZES lists groups per step (in flight = 2 · groups · 4, as α = 1 and G = 4).
# Uses its own state dir, so it never touches a stack you are running.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target="${TARGET:-embedded}"
sets=()
case "$target" in
  embedded)
    export ROLLFLOW_STATE="${ROLLFLOW_STATE:-$root/.state/bench-scale}"
    server_pidfile="$ROLLFLOW_STATE/temporal/server.pid"
    server_log="$ROLLFLOW_STATE/temporal/server.log"
    ;;
  cluster)
    # The cluster keeps its own state (.state/cluster), outside the bench's.
    export TEMPORAL_CLUSTER_DIR="${TEMPORAL_CLUSTER_DIR:-$root/.state/cluster}"
    export ROLLFLOW_STATE="${ROLLFLOW_STATE:-$root/.state/bench-scale-cluster}"
    was_running=0; temporal/cluster.sh health && was_running=1
    temporal/cluster.sh start || exit 1
    sets=(--set "temporal.address=$(temporal/cluster.sh address)" --set temporal.embedded=false)
    server_pidfile="$TEMPORAL_CLUSTER_DIR/server.pid"
    server_log="$TEMPORAL_CLUSTER_DIR/server.log"
    pg_pidfile="$TEMPORAL_CLUSTER_DIR/pg/postmaster.pid"
    ;;
  *) echo "TARGET must be embedded or cluster (got $target)" >&2; exit 64 ;;
esac
mkdir -p "$ROLLFLOW_STATE"
# Engines on ports free right now: on a shared machine a fixed port may be held by
# someone else's engine, which would answer our health checks and our runs.
read -r p_inf p_tr p_env < <(python3 -c 'import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
sets+=(--set "engines.inference[0].url=http://127.0.0.1:$p_inf" --set "engines.trainer.url=http://127.0.0.1:$p_tr"
       --set "engines.env.url=http://127.0.0.1:$p_env")
# EXTRA_SETS="k=v k2=v2": more config overrides, e.g. other ports for the embedded
# server and engines (temporal.address=127.0.0.1:7283 temporal.ui_url=http://127.0.0.1:8283).
for kv in ${EXTRA_SETS:-}; do sets+=(--set "$kv"); done
# The stack first (`rollflow run` would start it only for the embedded server),
# so wall times and CPU figures cover the runs alone.
bin/rollflow dev up bench/scale/scale.yaml "${sets[@]}" >&2 || exit 1
address=$(bin/rollflow validate bench/scale/scale.yaml "${sets[@]}" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["temporal"]["address"])')

hz=$(getconf CLK_TCK)
# CPU ticks used by a process (utime + stime, plus its reaped children's).
ticks() { [ -n "${1:-}" ] && awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# PostgreSQL: the postmaster (its reaped backends included) and the live backends.
pg_ticks() {
  local pm; pm=$(head -1 "${pg_pidfile:-/nonexistent}" 2>/dev/null) || { echo 0; return; }
  { ticks "$pm"; for c in $(ps -o pid= --ppid "$pm" 2>/dev/null); do ticks "$c"; done; } | awk '{ s += $1 } END { print s + 0 }'
}
pid_of() { head -1 "$1" 2>/dev/null; }   # rollflow pid files: pid, then a fingerprint
engine_ticks() { for f in "$ROLLFLOW_STATE"/pids/engine-*.pid; do ticks "$(pid_of "$f")"; done | awk '{ s += $1 } END { print s + 0 }'; }
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }   # user nice system irq softirq
snapshot() {  # server worker postgres engines machine
  echo "$(ticks "$(pid_of "$server_pidfile")") $(ticks "$(pid_of "$ROLLFLOW_STATE/pids/worker-rollflow.pid")") $(pg_ticks) $(engine_ticks) $(busy_ticks)"
}
calc() { echo "scale=$1; $2" | bc | sed 's/^\(-\{0,1\}\)\./\10./'; }   # bc, with the 0 JSON needs in 0.5
secs() { calc 1 "($2 - $1) / $hz"; }             # CPU seconds used during the run
cpu() { calc 2 "($2 - $1) / $hz / $wall"; }      # cores used on average
# A `top` snapshot every 20 s while a run goes, for the record.
sample_top() { while :; do { date +%T; top -b -n1 -w 200 | sed -n '1,5p;7,16p'; echo; } >>"$1"; sleep 20; done; }

for groups in ${SIZES:-64 128 256 512}; do
  in_flight=$(( 2 * groups * 4 ))
  log_from=$(stat -c %s "$server_log" 2>/dev/null || echo 0)
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  top_log="$ROLLFLOW_STATE/top-$target-$in_flight.log"; : >"$top_log"
  sample_top "$top_log" & sampler=$!
  read -r s0 w0 p0 e0 m0 < <(snapshot)
  start=$(date +%s.%N)
  run_id="scale-$groups-$(date +%s)"
  out=$(timeout "${RUN_TIMEOUT:-1800}" bin/rollflow run bench/scale/scale.yaml --json --run-id "$run_id" \
        --set train_env_manager.num_env_groups="$groups" "${sets[@]}" 2>"$ROLLFLOW_STATE/scale-$groups.err" | tail -1)
  rc=$?
  if [ $rc -ne 0 ]; then  # a run left behind would keep loading the server during the next sizes
    "$("temporal/ensure-cli.sh")" workflow terminate --address "$address" --yes --reason "scale bench: run failed or timed out" \
      --query "RollflowRunId = '$run_id' AND ExecutionStatus = 'Running'" >&2 || true
  fi
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  read -r s1 w1 p1 e1 m1 < <(snapshot)
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  logged=$(tail -c +"$((log_from + 1))" "$server_log" 2>/dev/null | python3 -c '
import json, re, sys
counts = {}
for line in sys.stdin:
    try: level = str(json.loads(line).get("level", "")).lower()   # the dev server logs WARN, the server warn
    except ValueError: level = "unparsed"
    if level in ("warn", "error", "fatal", "unparsed"): counts[level] = counts.get(level, 0) + 1
    for k in ("resource exhausted", "ResourceExhausted", "deadline exceeded", "timeout"):
        if k.lower() in line.lower(): counts[k] = counts.get(k, 0) + 1
print(json.dumps(counts))')
  common="\"target\": \"$target\", \"run_id\": \"$run_id\", \"in_flight\": $in_flight, \"wall_s\": $wall, \"cpu_s\": {\"server\": $(secs "$s0" "$s1"), \"worker\": $(secs "$w0" "$w1"), \"postgres\": $(secs "$p0" "$p1"), \"engines\": $(secs "$e0" "$e1"), \"machine\": $(secs "$m0" "$m1")}, \"cpu_per_s\": {\"server\": $(cpu "$s0" "$s1"), \"worker\": $(cpu "$w0" "$w1"), \"postgres\": $(cpu "$p0" "$p1"), \"engines\": $(cpu "$e0" "$e1"), \"machine\": $(cpu "$m0" "$m1")}, \"nproc\": $(nproc), \"mem_avail_gib\": $(awk '/MemAvailable/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo), \"load1_before\": $load_before, \"load1_after\": $(cut -d' ' -f1 /proc/loadavg), \"server_log\": $logged"
  if [ $rc -eq 0 ]; then
    samples=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_consumed"])')
    per() { calc 1 "1000 * ($2 - $1) / $hz / $samples"; }
    echo "{$common, \"samples\": $samples, \"trajectories_per_s\": $(calc 1 "$samples / $wall"), \"cpu_ms_per_trajectory\": {\"server\": $(per "$s0" "$s1"), \"postgres\": $(per "$p0" "$p1"), \"worker\": $(per "$w0" "$w1")}, \"errors\": 0}"
  else
    echo "{$common, \"exit\": $rc, \"errors\": 1, \"stderr_tail\": $(tail -c 300 "$ROLLFLOW_STATE/scale-$groups.err" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}"
  fi
done
bin/rollflow dev down bench/scale/scale.yaml "${sets[@]}" >/dev/null 2>&1
if [ "$target" = cluster ] && [ "$was_running" = 0 ] && [ -z "${KEEP_CLUSTER:-}" ]; then temporal/cluster.sh stop; fi
