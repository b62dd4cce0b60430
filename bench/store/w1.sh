#!/usr/bin/env bash
# W1 with the sample store in a bucket against the same runs with it in the run's directory: what the object
# store adds to the rollout makespan (target: at most 10 % at B = 64). Every sample, batch, run record and
# trainer state of the s3 runs goes to a versitygw of this script's own (object-store/versitygw.sh, its own port
# and directory under the state dir, stopped and removed at the end), reached through the standard AWS files
# that versitygw.sh writes. Report: bench/results/w1-b64-store.json (OUT=...), and w1.md regenerated.
# More `rollflow bench w1` options: SETS (e.g. SETS="--set 'latencies=[[10,1]]'").
set -euo pipefail
cd "$(dirname "$0")/../.."
state="${ROLLFLOW_STATE:-$PWD/.state}/bench-store"
export ROLLFLOW_S3_DIR="$state/object-store" ROLLFLOW_S3_ADDRESS="${ROLLFLOW_S3_ADDRESS:-127.0.0.1:7478}" ROLLFLOW_S3_BUCKETS=rollflow
rm -rf "$state" && mkdir -p "$state"
trap 'object-store/versitygw.sh stop; rm -rf "$state"' EXIT
# The store's root key is made at its first start: the user's own AWS settings must not become it.
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY object-store/versitygw.sh start
eval "$(object-store/versitygw.sh env)"
unset AWS_PROFILE AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
out="${OUT:-bench/results/w1-b64-store.json}"
eval "node dist/cli/index.js bench w1 --set 'batches=[64]' --set 'stores=[dir,s3]' ${SETS:-} --out \"\$out\""
.venv/bin/python bench/report.py w1 "$(dirname "$out")"/w1*.json
