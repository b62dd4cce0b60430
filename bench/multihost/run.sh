#!/usr/bin/env bash
# The long version of tests/integration/multihost.test.ts: four simulated hosts (hosts/netns.sh) sharing no disk,
# host C lost mid-run and brought back, then host B partitioned for 60 s, over a longer run. Every check of the test
# holds or the bench fails; the timeline (when each fault hit, when the run trained again) goes to
# bench/results/multihost.md (OUT=...). Settings: STEPS (30), BETWEEN (6: steps before the first fault and between
# faults), PARTITION_S (60), TEMPORAL (dev: the dev server on
# host A; cluster: the Temporal server on PostgreSQL there, built once by temporal/ensure-server.sh). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps="${STEPS:-30}" between="${BETWEEN:-6}" partition="${PARTITION_S:-60}" temporal="${TEMPORAL:-dev}" out="${OUT:-bench/results/multihost.md}"
[ "$temporal" != cluster ] || temporal/ensure-server.sh >/dev/null
json="${out%.md}.json"  # the test's record, kept beside the report: report.py can be run on it again
load_before="$(cut -d' ' -f1 /proc/loadavg)"
MULTIHOST_STEPS="$steps" MULTIHOST_STEPS_BETWEEN="$between" MULTIHOST_PARTITION_S="$partition" MULTIHOST_TEMPORAL="$temporal" MULTIHOST_RESTORE_C=1 MULTIHOST_REPORT="$json" \
  node_modules/.bin/vitest run tests/integration/multihost.test.ts
.venv/bin/python bench/multihost/report.py "$json" "$out" \
  --command "STEPS=$steps BETWEEN=$between PARTITION_S=$partition TEMPORAL=$temporal bench/multihost/run.sh" --load-before "$load_before" --cores "$(nproc)"
echo "report: $out"
