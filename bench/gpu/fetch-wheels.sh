#!/usr/bin/env bash
# Downloads, into .whl/ at the repository root, the wheels the GPU check (bench/gpu/run.sh) installs on the
# lent GPU machine: the engine servers' Python stack that machine lacks (it has torch, transformers, peft,
# accelerate, safetensors, tokenizers, numpy, httpx and pyyaml, on Python 3.12, and no network).
# Versions are python-engines/requirements.txt's pins; each is checked against it below. Every wheel is for
# CPython 3.12 on manylinux x86-64 (pure-Python ones are py3-none-any, which fit any platform).
# .whl/ is git-ignored; the device tool brings it along with `carry: [".whl"]` (about 3 MiB; the limit is 64 MiB).
#
#   bash bench/gpu/fetch-wheels.sh          (needs PyPI; run it here, not on the GPU machine)
set -euo pipefail
cd "$(dirname "$0")/../.."
# What `serve --role inference|trainer --backend torch` imports beyond the machine's packages, found by
# importing both servers after torch/transformers/peft/httpx/yaml and listing the new distributions
# (docs/gpu.md), plus their install requirements for Python 3.12.
NAMES=(fastapi starlette pydantic pydantic_core annotated-types annotated-doc typing-inspection typing_extensions
       opentelemetry-api uvicorn click h11 anyio idna prometheus_client)
PIP=${PIP:-python3 -m pip}
norm() { tr 'A-Z_.' 'a-z--' <<<"$1"; }
rm -rf .whl && mkdir .whl
for name in "${NAMES[@]}"; do
  pin=$(grep -i "^$(norm "$name" | sed 's/-/[-_.]/g')==" python-engines/requirements.txt || true)
  [ -n "$pin" ] || { echo "fetch-wheels: $name is not pinned in python-engines/requirements.txt" >&2; exit 1; }
  $PIP download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "$pin"
done
ls -l .whl
du -sh .whl
