#!/usr/bin/env bash
# Records the workflow histories that tests/replay/replay.test.ts replays, from
# one checkout's workflow code, on a stack of its own (a Temporal dev server,
# the sim engines and a worker on free ports, a throw-away state dir), then
# stops that stack. docs/versioning.md says when to run it.
#
#   tests/replay/record.sh [repo dir] [case...]   # repo dir: the checkout whose code runs (default: this repo)
#
# The checkout is built first (tsc -> its dist/); it needs node_modules and
# .venv (a worktree can symlink them). Each history is written to this
# script's histories/ folder (REPLAY_OUT overrides) as <name>.<commit>.json,
# <commit> being the checkout's short HEAD ("+wip" appended when its src/ has
# uncommitted changes): a recording under new code adds files beside the old
# ones instead of replacing them; one at the same commit replaces its own.
#
# Cases (config in configs/, run id, histories):
#   run          replay-run          run-first          first execution: validation, step 0, ends in continue-as-new
#                                    run-last           last execution: from a snapshot, step 2, validation, checkpoint, completes
#                                    group-replicated   a group with prompt replication on: G trajectory children
#                                    train-step         the trainStep of step 1
#                                    validate           the validation after step 2
#   one-request  replay-one-request  group-one-request  a group with replication off: one request, local activities
#   agentic      replay-agentic      trajectory-partial a multi-turn trajectory one of whose generations a weight
#                                                       sync aborted (continued under the new weights): versionsSpanned > 1
#   lockstep     replay-lockstep     lockstep-rollout   rollout_mode lockstep
#   spares       replay-spares       run-spares         a spare group started at the last step: the new branch of
#                                                       patched('spares-in-last-steps')
#   routed       replay-routed       run-routed         temporal.route_by_role: the trainer's calls on <tq>-trainer
#                                    group-routed       a one-request group's generation on <tq>-inference, its env
#                                                       calls activities on <tq>-env (not local activities)
#                                    train-step-routed  the trainStep of step 1, its trainer calls on <tq>-trainer
#   inline       replay-inline      group-inline       trajectory_workflows false: a group running its 2 multi-turn
#                                                       trajectories itself (playTurn activities, no children)
#
# NEVER re-recorded: histories/run-prepatch*.7587f21.json, recorded once from
# commit 7587f21, whose run.ts predates the `spares-in-last-steps` rule (its
# last step starts no spare group: one group where the new rule starts two).
# They are what the patch's old branch must keep replaying; recorded under
# newer code they would prove nothing. Two runs of configs/spares.yaml, both
# on a 7587f21 worker:
#   run-prepatch         started by 7587f21's CLI: a run as it was started then. Its
#                        plan has no spareGroups, so it replays under either rule.
#   run-prepatch-newplan started by a newer CLI (the plan carries spareGroups: 1) on the
#                        same 7587f21 worker: it replays only while the old branch exists
#                        (with the patched() check replaced by `true` it fails at the
#                        last step's group start).
# They were made with
#   tests/replay/record.sh --prepatch <clean checkout of 7587f21> [client checkout, default: this repo]
# which refuses any other commit and existing files. They go when the patch is
# deprecated (deprecatePatch), with the other histories recorded before it
# (docs/versioning.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
self_root="$(cd "$here/../.." && pwd)"
prepatch_commit=7587f21
out="${REPLAY_OUT:-$here/histories}"
say() { echo "record: $*" >&2; }

prepatch=false
if [ "${1:-}" = "--prepatch" ]; then
  prepatch=true
  repo="$(cd "${2:?--prepatch needs a checkout of $prepatch_commit}" && pwd)"
  client_repo="$(cd "${3:-$self_root}" && pwd)"
  cases=(prepatch)
else
  repo="$(cd "${1:-$self_root}" && pwd)"
  [ $# -gt 0 ] && shift
  cases=("$@")
  [ ${#cases[@]} -gt 0 ] || cases=(run one-request agentic lockstep spares routed inline)
fi

head=$(git -C "$repo" rev-parse --short=7 HEAD)
recorded_from="$head"
if [ -n "$(git -C "$repo" status --porcelain -- src)" ]; then
  recorded_from="$head+wip"
  say "warning: $repo has uncommitted changes in src/; the histories are named *.$recorded_from.json"
fi
if $prepatch; then
  [ "$(git -C "$repo" rev-parse HEAD)" = "$(git -C "$repo" rev-parse "$prepatch_commit^{commit}")" ] && [ "$recorded_from" = "$head" ] \
    || { say "--prepatch records from a clean checkout of $prepatch_commit only (this is $recorded_from)"; exit 2; }
  for f in "$out"/run-prepatch*."$prepatch_commit".json; do
    [ ! -e "$f" ] || { say "$f exists and is never re-recorded"; exit 2; }
  done
fi

# ---- the checkouts' code, built
build() {
  [ -x "$1/node_modules/.bin/tsc" ] && [ -x "$1/.venv/bin/python" ] || { say "$1 needs node_modules and .venv (make setup, or symlinks)"; exit 2; }
  say "building $1 ($(git -C "$1" rev-parse --short=7 HEAD))"
  (cd "$1" && node_modules/.bin/tsc -p tsconfig.build.json)
}
build "$repo"
if $prepatch; then
  build "$client_repo"
  grep -q spareGroups "$client_repo/dist/client/plan.js" || { say "$client_repo's client puts no spareGroups in the plan"; exit 2; }
fi

# ---- a stack of its own: state dir, free ports, the Temporal CLI already built by either repo
export ROLLFLOW_STATE="${REPLAY_STATE:-$(mktemp -d "${TMPDIR:-/tmp}/rollflow-replay.XXXXXX")}"
if [ -z "${ROLLFLOW_CACHE:-}" ]; then
  ROLLFLOW_CACHE="$repo/.cache"
  [ -x "$ROLLFLOW_CACHE/go/bin/temporal" ] || ROLLFLOW_CACHE="$self_root/.cache"
fi
export ROLLFLOW_CACHE ROLLFLOW_LOG_FORMAT=json
cli=$("$repo/temporal/ensure-cli.sh")
read -r tport uiport iport trport eport < <(node -e '
  const net = require("node:net");
  const servers = Array.from({ length: 5 }, () => net.createServer());
  Promise.all(servers.map((s) => new Promise((ok) => s.listen(0, "127.0.0.1", () => ok(s.address().port)))))
    .then((ports) => { console.log(ports.join(" ")); servers.forEach((s) => s.close()); });')
address="127.0.0.1:$tport"
sets=(--set "temporal.address=$address" --set "temporal.ui_url=http://127.0.0.1:$uiport" --set temporal.task_queue=replay
      --set "engines.inference[0].url=http://127.0.0.1:$iport" --set "engines.trainer.url=http://127.0.0.1:$trport"
      --set "engines.env.url=http://127.0.0.1:$eport" --set "run_dir=$ROLLFLOW_STATE/runs")
say "state $ROLLFLOW_STATE, temporal $address, engines $iport/$trport/$eport"

last_config=""
teardown() {
  if [ -n "$last_config" ]; then "$repo/bin/rollflow" dev down "$last_config" "${sets[@]}" >&2 || say "dev down failed; the stack's pids are in $ROLLFLOW_STATE/pids"; fi
  if [ -z "${REPLAY_STATE:-}" ] && [ "${REPLAY_KEEP_STATE:-0}" != 1 ]; then rm -rf "$ROLLFLOW_STATE"; fi
}
trap teardown EXIT

# run <config stem> <run id> [--set …]: the checkout's CLI runs the config to its end (bringing the stack up).
run() {
  local config="$here/configs/$1.yaml" run_id=$2; shift 2
  last_config=$config
  say "$run_id: $(basename "$config")"
  "$repo/bin/rollflow" run "$config" --json --run-id "$run_id" "${sets[@]}" "$@" >&2
}
# keep <run id> <history name>...: writes the named histories of a finished run.
keep() {
  mkdir -p "$out"
  node "$here/fetch-histories.mjs" "$address" "$cli" "$out" "$@"
}
keep_from() { local run_id=$1; shift; keep "$run_id" "$recorded_from" "$@"; }

for c in "${cases[@]}"; do
  case "$c" in
    run) run run replay-run; keep_from replay-run run-first run-last group-replicated train-step validate ;;
    one-request) run one-request replay-one-request; keep_from replay-one-request group-one-request ;;
    agentic) run agentic replay-agentic; keep_from replay-agentic trajectory-partial ;;
    lockstep) run lockstep replay-lockstep; keep_from replay-lockstep lockstep-rollout ;;
    spares) run spares replay-spares; keep_from replay-spares run-spares ;;
    inline) run inline replay-inline; keep_from replay-inline group-inline ;;
    routed) run routed replay-routed; keep_from replay-routed run-routed group-routed train-step-routed ;;
    prepatch)
      $prepatch || { say "the prepatch histories are recorded only with --prepatch"; exit 2; }
      run spares replay-spares
      keep_from replay-spares run-prepatch
      # The same config started by the newer client, on the 7587f21 worker already polling (embedded=false: its CLI
      # starts nothing, so it does not replace that worker with its own).
      say "replay-spares-newplan: spares.yaml, started by $client_repo's CLI"
      "$client_repo/bin/rollflow" run "$here/configs/spares.yaml" --json --run-id replay-spares-newplan "${sets[@]}" --set temporal.embedded=false >&2
      keep_from replay-spares-newplan run-prepatch-newplan ;;
    *) say "unknown case $c (run, one-request, agentic, lockstep, spares, routed, inline)"; exit 2 ;;
  esac
done
