#!/usr/bin/env bash
# The learning runs of bench/results/learning.md, one after the other, each
# alone on the machine, through the whole system (embedded Temporal, torch
# engines, `rollflow run`). Appends one JSON line per run to
# bench/results/learning-runs.jsonl (the run's --json summary plus command,
# load and date); the curves are read from runs/<exp>/<run id>/{metrics,validation}.jsonl
# by bench/learning/report.py. RUNS picks a subset, e.g. RUNS="arith-sync lake";
# EXTRA_SETS adds --set flags to each, e.g. EXTRA_SETS="--set seed=2".
set -uo pipefail
cd "$(dirname "$0")/../.."
out=bench/results/learning-runs.jsonl
longtail=(--set 'actor_train.model_args.model_name_or_path=tiny:small+warm:add-longtail'
          --set actor_infer.generating_args.max_new_tokens=128 --set custom_envs.add.max_tokens_per_step=128
          --set rollout_batch_size=16 --set max_steps=100 --set eval_steps=20 --set exp_name=learn-longtail)

run() {  # name config args...
  local name=$1 config=$2; shift 2
  # shellcheck disable=SC2206  # EXTRA_SETS is a list of words on purpose
  set -- "$@" ${EXTRA_SETS:-}
  local run_id="$name-$(date +%Y%m%d-%H%M%S)"
  local cmd="bin/rollflow run $config --run-id $run_id --json $*"
  bin/rollflow dev up "$config" "$@" >&2 || return 1
  local load_before; load_before=$(cut -d' ' -f1 /proc/loadavg)
  echo "== $name: $cmd" >&2
  local summary; summary=$(bin/rollflow run "$config" --run-id "$run_id" --json "$@" | tail -1)
  python3 - "$name" "$config" "$cmd" "$load_before" "$summary" >>"$out" <<'PY'
import json, os, sys, time
name, config, cmd, load_before, summary = sys.argv[1:]
print(json.dumps({"name": name, "config": config, "command": cmd, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "nproc": os.cpu_count(), "load1_before": float(load_before), "load1_after": os.getloadavg()[0],
                  "summary": json.loads(summary) if summary.startswith("{") else {"error": summary}}))
PY
  tail -1 "$out" >&2
}

for r in ${RUNS:-arith-sync arith-async2 longtail-sync longtail-async2 lake swe swe-mined}; do
  case $r in
    arith-sync)      run "$r" examples/learn-arith.yaml --set async_generation_ratio=0 ;;
    arith-async2)    run "$r" examples/learn-arith.yaml --set async_generation_ratio=2 ;;
    longtail-sync)   run "$r" examples/learn-arith.yaml "${longtail[@]}" --set async_generation_ratio=0 ;;
    longtail-async2) run "$r" examples/learn-arith.yaml "${longtail[@]}" --set async_generation_ratio=2 ;;
    # The long-tail study (learning.notes.md): α = 2 with one change each against longtail-async2.
    longtail-async2-accept)    run "$r" examples/learn-arith.yaml "${longtail[@]}" --set async_generation_ratio=2 --set stale_policy=accept ;;
    longtail-async2-decoupled) run "$r" examples/learn-arith.yaml "${longtail[@]}" --set async_generation_ratio=2 --set stale_policy=accept --set pg_variant=decoupled_ppo ;;
    longtail-async2-tis)       run "$r" examples/learn-arith.yaml "${longtail[@]}" --set async_generation_ratio=2 --set stale_policy=accept --set pg_variant=tis ;;
    longtail-async2-seqmean)   run "$r" examples/learn-arith.yaml "${longtail[@]}" --set async_generation_ratio=2 --set loss_agg_mode=seq_mean_token_mean ;;
    longtail-async2-nopartial) run "$r" examples/learn-arith.yaml "${longtail[@]}" --set async_generation_ratio=2 --set partial_rollout=false ;;
    lake)            run "$r" examples/learn-lake.yaml ;;
    swe)             run "$r" examples/learn-swe.yaml ;;
    swe-mined)       run "$r" examples/learn-swe-mined.yaml ;;  # needs `make swe-tasks` (.cache/swe-mined)
    *) echo "unknown run $r" >&2; exit 64 ;;
  esac
done
