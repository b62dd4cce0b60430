#!/usr/bin/env bash
# Chaos v2 (docs/unattended.md): `rollflow chaos` with every fault kind the harness injects, recovered by the
# stack's supervisor alone, on three seeds of the sim workload and one of the multi-turn torch workload.
#   - examples/chaos-sim.yaml, MAX_STEPS steps (150), seeds SEEDS (1 2 3): a fault about every EVERY s (60),
#     drawn over a SIGKILL or SIGSTOP (30-120 s) of worker, temporal, inference, trainer and env, a damaged newest
#     trainer state (corrupt), an engine cut off from the run for 30-120 s (partition, by the harness's proxy)
#     and, as root, a full disk for 30-120 s (a 256 MiB tmpfs over the run directory);
#   - examples/chaos-lake.yaml (FrozenLake, env calls as activities, two torch inference servers, the torch
#     trainer) with the same faults, seed 1, unless LAKE=0;
#   - hang detection, unless STOPS=0: examples/chaos-sim.yaml with one SIGSTOP of each of worker, inference,
#     trainer and env in turn (every 45 s), each timed from the stop until the supervisor had it running again.
# Reports: OUT_DIR (bench/results)/chaos-v2-sim-s<seed>.md, chaos-v2-lake-s1.md and chaos-v2-stops-s1.md; each
# run its own state dir.
# Exit 1 when any run broke an invariant. Needs `make build`.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR="${OUT_DIR:-bench/results}"
faults=worker,temporal,inference,trainer,env,corrupt,partition
disk=()
if [ "$(id -u)" = 0 ]; then faults+=,disk; disk=(--disk-mb 256); fi
status=0
run() { # config name seed [chaos args]
  local config=$1 name=$2 seed=$3; shift 3
  export ROLLFLOW_STATE="$PWD/.state/chaos-v2-$name-s$seed"
  bin/rollflow chaos "$config" "$@" --seed "$seed" --out "$OUT_DIR/chaos-v2-$name-s$seed.md" || status=1
  bin/rollflow dev down "$config" >/dev/null
}
every_kind=(--faults "$faults" "${disk[@]}" --signals kill,stop --every "${EVERY:-60}")
for seed in ${SEEDS:-1 2 3}; do run examples/chaos-sim.yaml sim "$seed" --set "max_steps=${MAX_STEPS:-150}" "${every_kind[@]}"; done
[ "${LAKE:-1}" = 0 ] || run examples/chaos-lake.yaml lake 1 "${every_kind[@]}"
[ "${STOPS:-1}" = 0 ] || run examples/chaos-sim.yaml stops 1 --set max_steps=120 --faults worker,inference,trainer,env --signals stop --every 45 --max-faults 4
exit $status
