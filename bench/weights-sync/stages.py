"""Where a weight sync's time goes: the stages of weights_sync.py's two paths, one at a time, at one size.

The same calls the trainer's /export_weights and the inference side's pull make, run here one by one so each can be
timed (weights_sync.py times only their sum): the safetensors file written to a directory; then, locally, the fsync
and rename of that directory (replace_dir), or, through the store, the manifest's file digests (one SHA-256 pass),
the upload (upload_export: each file, the manifest last) and the pull (WeightsCache.pull: download, verify,
rename); then the load (safetensors' load_file and the copy into the model). For the upload and the pull, the CPU
seconds this process spent (all its threads) and, with ``--server-pid``, those the store's process spent: it runs
beside the client on the same cores, and CPU seconds move less with the machine's load than wall time does.
Prints a Markdown section: medians of ``--repeats`` rounds.

    .venv/bin/python bench/weights-sync/stages.py --size 100 --work DIR [--server-pid PID]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path

ENGINES = Path(__file__).resolve().parents[2] / "python-engines"
sys.path.insert(0, str(ENGINES))

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from rollflow_engines.exports import EXPORT_MANIFEST, write_export_manifest  # noqa: E402
from rollflow_engines.roles.inference.weights_cache import WeightsCache  # noqa: E402
from rollflow_engines.roles.trainer.state_files import checksums, replace_dir  # noqa: E402
from rollflow_engines.roles.trainer.store_exports import upload_export  # noqa: E402

MB = 1_000_000
DESCRIPTION = {"backend": "sim", "model": "sim"}


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 without one)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_round(tensor: torch.Tensor, model: torch.Tensor, work: Path, cache: WeightsCache, bucket: str, version: int,
              server: int | None) -> dict[str, float]:
    times: dict[str, float] = {}

    def stage(name: str, call, *args, cpu: bool = False):
        server_cpu, client_cpu, started = cpu_seconds(server), time.process_time(), time.perf_counter()
        result = call(*args)
        times[name] = time.perf_counter() - started
        if cpu:
            times[f"{name}: the client's CPU"] = time.process_time() - client_cpu
            if server is not None:
                times[f"{name}: the store's CPU"] = cpu_seconds(server) - server_cpu
        return result

    def load(directory: Path) -> None:
        model.copy_(load_file(directory / "model.safetensors")["weight"])

    local, scratch = work / "local" / f"v{version}.tmp", work / "scratch" / f"v{version}"
    for directory in (local, scratch):
        directory.mkdir(parents=True)
    stage("local: write the file", save_file, {"weight": tensor}, local / "model.safetensors")
    write_export_manifest(local, DESCRIPTION, version)
    stage("local: fsync + rename", replace_dir, local, local.with_suffix(""))
    stage("local: load", load, local.with_suffix(""))
    stage("store: write the file (scratch)", save_file, {"weight": tensor}, scratch / "model.safetensors")
    files = stage("store: the manifest's digests", checksums, scratch, EXPORT_MANIFEST)
    write_export_manifest(scratch, DESCRIPTION, version, files)
    ref = f"s3://{bucket}/bench/weights-sync-stages/{uuid.uuid4().hex[:8]}/v{version}"
    stage("store: upload", upload_export, scratch, ref, cpu=True)
    shutil.rmtree(scratch)
    pulled = stage("store: pull + verify", cache.pull, ref, lambda manifest: None, cpu=True)
    stage("store: load", load, pulled)
    cache.loaded(pulled)
    assert torch.equal(model, tensor), "the loaded weights differ from the written"
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100, help="weights in MB (10^6 bytes)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--bucket", default="rollflow")
    parser.add_argument("--server-pid", type=int, help="the store's process, for its CPU seconds")
    args = parser.parse_args()
    torch.set_num_threads(1)
    tensor = torch.randn(args.size * MB // 4, generator=torch.Generator().manual_seed(args.size))
    model, cache = torch.zeros_like(tensor), WeightsCache(args.work / "weights-cache")
    rounds = [one_round(tensor, model, args.work, cache, args.bucket, version, args.server_pid) for version in range(args.repeats)]
    load = os.getloadavg()
    print(f"\n## Stages at {args.size} MB (bench/weights-sync/stages.py)\n\nMedians of {args.repeats} rounds, each stage "
          f"timed alone; load average {' / '.join(f'{x:.2f}' for x in load)} at the end.\n\n| stage | seconds |\n|---|---:|")
    for name in rounds[0]:
        print(f"| {name} | {statistics.median(r[name] for r in rounds):.3f} |")


if __name__ == "__main__":
    main()
