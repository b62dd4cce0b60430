#!/usr/bin/env bash
# The GPU check in one go (docs/gpu.md): installs the engines' missing Python stack from .whl/ into a private
# directory (never over the machine's torch), then runs bench/gpu/check.py, which starts the real torch
# inference and trainer servers on the device and writes its figures to --out.
#
#   bash bench/gpu/run.sh --device cuda --out "$OUT"     the lent GPU machine (wheels from bench/gpu/fetch-wheels.sh)
#   bash bench/gpu/run.sh --device cpu --out DIR         its CPU rehearsal (with a Python that has the stack already)
#
# Every flag goes to check.py (--help lists them). Exit status: check.py's (0 passed, 1 a part failed, naming it),
# or 1 with "part install-wheels" / "part imports" when the set-up fails first; 124 past the time limit.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
SITE=${ROLLFLOW_GPU_SITE:-/tmp/rollflow-gpu-site}
LIMIT_S=${ROLLFLOW_GPU_CHECK_LIMIT_S:-450}  # the check's own limit, inside the 8 minutes the machine allows
fail() { echo "run.sh: part $1 FAILED: $2" >&2; exit 1; }

# A Python that already imports the servers' stack (the CPU rehearsal's .venv) uses its own; set ROLLFLOW_GPU_WHEELS=1 to install anyway.
if [ "${ROLLFLOW_GPU_WHEELS:-}" != 1 ] && "$PY" -c 'import fastapi, pydantic, prometheus_client, uvicorn' 2>/dev/null; then
  echo "run.sh: $PY has the servers' stack already; .whl/ not installed" >&2
elif compgen -G ".whl/*.whl" >/dev/null; then
  rm -rf "$SITE"
  if "$PY" -m pip --version >/dev/null 2>&1; then
    "$PY" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$SITE" .whl/*.whl \
      || fail install-wheels "pip install --target $SITE .whl/*.whl failed"
  else  # no pip on the machine: a wheel is a zip laid out for site-packages
    "$PY" -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' "$SITE" .whl/*.whl \
      || fail install-wheels "unzipping .whl/*.whl into $SITE failed"
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  echo "run.sh: installed $(ls .whl/*.whl | wc -l) wheels into $SITE" >&2
fi
"$PY" - <<'PY' || fail imports "the servers' stack does not import (bring .whl/ with bench/gpu/fetch-wheels.sh and carry: [\".whl\"])"
import fastapi, pydantic, prometheus_client, uvicorn, yaml  # the servers' stack
import httpx, peft, safetensors, torch, transformers  # the machine's own
print(f"run.sh: torch {torch.__version__}, CUDA {torch.version.cuda}, GPU {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none'}; "
      f"fastapi {fastapi.__version__}, pydantic {pydantic.__version__}", flush=True)
PY
export ROLLFLOW_MODEL_CACHE=${ROLLFLOW_MODEL_CACHE:-/tmp/rollflow-gpu-models}  # the 0.5B build (~2 GB) stays out of --out
exec timeout --kill-after=20 "$LIMIT_S" "$PY" bench/gpu/check.py "$@"
