#!/usr/bin/env bash
# One weight sync through the object store against the same through a local directory (weights_sync.py), for
# synthetic weights of 1 MB, 10 MB, 100 MB and 1 GB (SIZES). A versitygw of its own (object-store/versitygw.sh) on
# its own port and directory under the state dir, stopped and removed at the end with the exports.
# Report: bench/results/weights-sync.md (OUT=...). REPEATS: syncs per size and path (3; the median is reported).
# STAGES_MB: the size whose stages stages.py times one by one, appended to the report (100; 0: none).
# PYTHON: the interpreter (.venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/../.."
state="${ROLLFLOW_STATE:-$PWD/.state}/bench-weights-sync"
export ROLLFLOW_S3_DIR="$state/object-store" ROLLFLOW_S3_ADDRESS="${ROLLFLOW_S3_ADDRESS:-127.0.0.1:7479}" ROLLFLOW_S3_BUCKETS=rollflow
python="${PYTHON:-.venv/bin/python}"
rm -rf "$state" && mkdir -p "$state"
trap 'object-store/versitygw.sh stop; rm -rf "$state"' EXIT
# The store's root key is made at its first start: the user's own AWS settings must not become it.
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY object-store/versitygw.sh start
eval "$(object-store/versitygw.sh env)"
unset AWS_PROFILE AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
sizes="${SIZES:-1,10,100,1000}" repeats="${REPEATS:-3}" stages="${STAGES_MB:-100}" out="${OUT:-bench/results/weights-sync.md}"
"$python" bench/weights-sync/weights_sync.py --sizes "$sizes" --repeats "$repeats" --work "$state/work" \
  --out "$out" --command "SIZES=$sizes REPEATS=$repeats bench/weights-sync/run.sh"
if [ "$stages" != 0 ]; then
  "$python" bench/weights-sync/stages.py --size "$stages" --repeats "$repeats" --work "$state/stages" \
    --server-pid "$(cut -d' ' -f1 "$ROLLFLOW_S3_DIR/versitygw.pid")" | tee -a "$out"
fi
