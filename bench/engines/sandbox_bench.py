"""The sandbox's own cost (a script, not a test; numbers go in reports).

(a) run: one ``Workspace.run`` of ``true`` (a fresh sandbox: namespaces, mounts, uid switch), N times
    in one workspace, against a bare ``subprocess.run(["true"])``; the difference is the sandbox's
    command overhead;
(b) workspace: ``open_workspace`` + ``remove`` with no command (directory, uid lease, lock), N times.

Prints one JSON object: median / p90 / p99 / max in milliseconds, and the load average before and after.

Run from the repo root:
    .venv/bin/python bench/engines/sandbox_bench.py [--runs 50] [--root DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENGINES = Path(__file__).resolve().parents[2] / "python-engines"
sys.path.insert(0, str(ENGINES))


def summary(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    pick = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]  # noqa: E731
    return {"median_ms": round(statistics.median(ms), 2), "p90_ms": round(pick(0.9), 2),
            "p99_ms": round(pick(0.99), 2), "max_ms": round(ms[-1], 2), "n": len(ms)}


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    from rollflow_engines.sandbox import check_sandbox, open_workspace

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "rollflow-sandbox-bench")
    args = parser.parse_args()
    load_before = os.getloadavg()
    check_sandbox()  # the one-off probe is not part of any figure
    bare = timed(lambda: subprocess.run(["true"], check=True), args.runs)
    with open_workspace(args.root, "bench") as ws:
        ws.run("true")  # warm the page cache
        runs = timed(lambda: ws.run("true"), args.runs)
        assert all(ws.run("true").exit_code == 0 for _ in range(3))
    workspaces = timed(lambda: open_workspace(args.root, "bench").remove(), args.runs)
    print(json.dumps({
        "sandboxed_true": summary(runs), "bare_subprocess_true": summary(bare),
        "overhead_median_ms": round((statistics.median(runs) - statistics.median(bare)) * 1000, 2),
        "open_and_remove_workspace": summary(workspaces),
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(), "cpus": os.cpu_count(),
    }, indent=2))


if __name__ == "__main__":
    main()
