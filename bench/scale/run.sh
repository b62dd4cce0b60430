#!/usr/bin/env bash
# Trajectories in flight vs throughput on the embedded dev server. Prints one
# JSON line per size: in_flight, trajectories/s, errors (run failed or timed out).
# Uses its own state dir, so it never touches a stack you are running.
set -uo pipefail
cd "$(dirname "$0")/../.."
export ROLLFLOW_STATE="${ROLLFLOW_STATE:-$PWD/.state/bench-scale}"
for groups in ${SIZES:-64 128 256 512}; do
  in_flight=$(( 2 * groups * 4 ))
  start=$(date +%s.%N)
  out=$(timeout "${RUN_TIMEOUT:-900}" bin/rollflow run bench/scale/scale.yaml --json --run-id "scale-$groups-$(date +%s)" \
        --set train_env_manager.num_env_groups="$groups" 2>/tmp/scale-$groups.err | tail -1)
  rc=$?
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  if [ $rc -eq 0 ]; then
    samples=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_consumed"])')
    echo "{\"in_flight\": $in_flight, \"samples\": $samples, \"wall_s\": $wall, \"trajectories_per_s\": $(echo "scale=1; $samples / $wall" | bc), \"errors\": 0}"
  else
    echo "{\"in_flight\": $in_flight, \"exit\": $rc, \"wall_s\": $wall, \"errors\": 1, \"stderr_tail\": $(tail -c 300 /tmp/scale-$groups.err | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}"
  fi
done
bin/rollflow dev down bench/scale/scale.yaml >/dev/null 2>&1
