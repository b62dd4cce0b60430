"""Benchmark: one weight sync through the object store against the same through a local directory.

A sync is the trainer's export (python-engines TrainerServer.export_weights, the code /export_weights runs) and the
inference side's fetch and load of it: through a local directory, the manifest check and the read of the
safetensors file; through the store, the export's upload (every file, the manifest last), then the pull into a
weights cache (WeightsCache.pull: download, verify each object twice, rename) and the same read. The weights are
synthetic: one float32 tensor of the given size in one safetensors file, written by a sim trainer whose export
writes it (building torch models of 100 MB and 1 GB on 2 cores is impractical); the load is what the torch
inference backend does, safetensors' load_file and a copy of each tensor into the model's (here into one
preallocated tensor). Calls go to the server objects directly, not over HTTP (a few ms, the same for both).

Needs an S3-compatible store from the standard AWS variables and files (bench/weights-sync/run.sh starts a
versitygw and points them at it) and a bucket, rollflow by default.

    .venv/bin/python bench/weights-sync/weights_sync.py --sizes 1,10,100,1000 --work DIR [--out report.md]
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path

ENGINES = Path(__file__).resolve().parents[2] / "python-engines"
sys.path.insert(0, str(ENGINES))

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from rollflow_engines.exports import ServedModel, check_export_fits, read_export_manifest  # noqa: E402
from rollflow_engines.roles.inference.weights_cache import WeightsCache  # noqa: E402
from rollflow_engines.roles.trainer import Options  # noqa: E402
from rollflow_engines.roles.trainer.api import TrainerServer  # noqa: E402
from rollflow_engines.roles.trainer.contracts import ExportWeightsRequest  # noqa: E402
from rollflow_engines.roles.trainer.sim import SimTrainer  # noqa: E402

MB = 1_000_000
DEFAULT_SIZES = [1, 10, 100, 1000]
SERVED = ServedModel("sim", frozenset({"sim"}), None, None)  # what the sim trainer's manifests fit


class SyntheticWeights(SimTrainer):
    """A sim trainer whose export is one safetensors file of ``tensor``."""

    def __init__(self, options, tensor: torch.Tensor):
        super().__init__(options)
        self.tensor = tensor

    async def export_weights(self, directory: Path) -> None:
        await asyncio.to_thread(save_file, {"weight": self.tensor}, directory / "model.safetensors")


async def one_sync(export_dir: str, scratch: Path, cache: WeightsCache, tensor: torch.Tensor, model: torch.Tensor,
                   version: int) -> tuple[float, float]:
    """(export seconds, fetch-and-load seconds) of one sync of version ``version``."""
    store = export_dir.startswith("s3://")
    options = Options(export_dir=export_dir, **({"export_scratch_dir": str(scratch)} if store else {}))
    trainer = TrainerServer(lambda: SyntheticWeights(options, tensor), export_dir, export_scratch_dir=options.export_scratch_dir)
    trainer.backend.version = version
    started = time.perf_counter()
    path = (await trainer.export_weights(ExportWeightsRequest(version=version))).path
    exported = time.perf_counter()
    if store:
        directory = await asyncio.to_thread(cache.pull, path, lambda manifest: check_export_fits(path, manifest, SERVED))
    else:
        directory, manifest = read_export_manifest(path)
        check_export_fits(path, manifest, SERVED)
    await asyncio.to_thread(lambda: model.copy_(load_file(directory / "model.safetensors")["weight"]))
    done = time.perf_counter()
    assert torch.equal(model, tensor), "the loaded weights differ from the exported"
    model.zero_()
    cache.loaded(directory)
    return exported - started, done - exported


async def measure(size_mb: int, repeats: int, work: Path, bucket: str) -> dict:
    tensor = torch.randn(size_mb * MB // 4, generator=torch.Generator().manual_seed(size_mb))
    model = torch.zeros_like(tensor)  # the inference server's parameters the weights are loaded into
    run = uuid.uuid4().hex[:8]
    local_cache, store_cache = WeightsCache(work / "unused-cache"), WeightsCache(work / "inference" / "weights-cache")
    rows = {"local": [], "store": []}
    for version in range(repeats):
        rows["local"].append(await one_sync(str(work / "trainer" / "exports" / run), work / "unused", local_cache, tensor, model, version))
        rows["store"].append(await one_sync(f"s3://{bucket}/bench/weights-sync/{run}", work / "trainer" / "scratch", store_cache, tensor,
                                            model, version))
    med = {k: (statistics.median(e for e, _ in v), statistics.median(f for _, f in v)) for k, v in rows.items()}
    return {"size_mb": size_mb, "repeats": repeats, **{f"{k}_{part}": round(med[k][i], 3) for k in med for i, part in enumerate(("export_s", "fetch_load_s"))}}


def table(results: list[dict]) -> str:
    lines = ["| weights | local: export | local: load | local: sync | store: export + upload | store: pull + verify + load | store: sync | store / local |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        local, store = r["local_export_s"] + r["local_fetch_load_s"], r["store_export_s"] + r["store_fetch_load_s"]
        lines.append(f"| {r['size_mb']} MB | {r['local_export_s']:.3f} s | {r['local_fetch_load_s']:.3f} s | {local:.3f} s | "
                     f"{r['store_export_s']:.3f} s | {r['store_fetch_load_s']:.3f} s | {store:.3f} s | {store / local:.2f}× |")
    return "\n".join(lines)


def verdict(results: list[dict], sizes_asked: list[int]) -> str:
    """The target (100 MB within 2× of a local copy), met or not, and the default sizes this run left out."""
    lines = []
    at_100 = next((r for r in results if r["size_mb"] == 100), None)
    if at_100:
        ratio = (at_100["store_export_s"] + at_100["store_fetch_load_s"]) / (at_100["local_export_s"] + at_100["local_fetch_load_s"])
        lines.append(f"Target, 100 MB within 2× of a local copy: {'met' if ratio <= 2 else 'not met'} ({ratio:.2f}×).")
    left_out = [s for s in DEFAULT_SIZES if s not in sizes_asked]
    if left_out:
        lines.append(f"Not run here: {', '.join(f'{s} MB' for s in left_out)} (`SIZES` of bench/weights-sync/run.sh).")
    return "\n\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="weight sizes in MB (10^6 bytes), comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="syncs per size and path; the median is reported (1 above 500 MB)")
    parser.add_argument("--work", type=Path, required=True, help="where the local exports, the scratch and the cache go")
    parser.add_argument("--bucket", default="rollflow")
    parser.add_argument("--out", type=Path, help="also write the table, with the command and the machine, to this Markdown file")
    parser.add_argument("--command", help="the command to name in --out (default: this script's own command line)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = os.getloadavg()
    results, sizes = [], [int(s) for s in args.sizes.split(",")]
    for size in sizes:
        results.append(asyncio.run(measure(size, 1 if size > 500 else args.repeats, args.work, args.bucket)))
        print(f"{size} MB: {results[-1]}", file=sys.stderr)
    load_after = os.getloadavg()
    print(table(results))
    print(verdict(results, sizes))
    if args.out:
        machine = (f"{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}, torch {torch.__version__}; "
                   f"load average (1/5/15 min) {' / '.join(f'{x:.2f}' for x in load_before)} before, "
                   f"{' / '.join(f'{x:.2f}' for x in load_after)} after")
        args.out.write_text(f"# Weight sync: the object store against a local directory\n\n"
                            f"Command: `{args.command or ' '.join(sys.argv)}` ({datetime.date.today().isoformat()})\n\nMachine: {machine}\n\n"
                            f"{table(results)}\n\nMedians of {args.repeats} syncs per size and path (1 above 500 MB). "
                            f"{verdict(results, sizes)}\n")


if __name__ == "__main__":
    main()
