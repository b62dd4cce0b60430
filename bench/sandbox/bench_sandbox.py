"""The hardened sandbox's latency and density on this machine (a script for `make bench`, not a test).

(a) start to first command: ``open_workspace`` + ``run("true")`` on a fresh workspace (the figure the
    hosted sandboxes quote), and ``run("true")`` on an existing one; p50 / p99;
(b) hardening cost: ``run("true")`` per command with each layer (seccomp, the memory cgroup, the
    workspace tmpfs) on alone, all on and all off, interleaved in rounds so the machine's load drifts
    alike over all of them; and the same command with the code of an earlier commit (``--before REF``,
    the sandbox as it was, run in a child process), so "all off" can be checked against it;
(c) density: K threads, each with a workspace of its own, loop over a fixed command mix for
    ``--seconds``; commands per second per core and p50 / p99 latency per K.

Layers are switched with ``rollflow_engines.sandbox.launch.hardening``, an internal toggle: no config
key exposes it. Prints one JSON object; ``--out`` writes it too.

Run from the repo root:
    .venv/bin/python bench/sandbox/bench_sandbox.py [--runs 200] [--before 5c798ae] [--out bench/results/sandbox.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python-engines"))

LAYERS = ("seccomp", "cgroup", "workspace_fs")
CONFIGS = {"all_off": {}, **{f"{layer}_only": {layer: True} for layer in LAYERS}, "all_on": dict.fromkeys(LAYERS, True)}
# The density mix, one command each in turn: a shell builtin, a file write and read, a Python start.
MIX = ["true", "echo x > f && cat f > /dev/null", "python -c pass"]


def summary(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    pick = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]  # noqa: E731
    return {"p50_ms": round(statistics.median(ms), 2), "p99_ms": round(pick(0.99), 2), "n": len(ms)}


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def start_latency(root: Path, runs: int) -> dict:
    from rollflow_engines.sandbox import open_workspace
    fresh, again = [], []
    for _ in range(runs):
        started = time.perf_counter()
        ws = open_workspace(root, "bench")
        ws.run("true")
        fresh.append(time.perf_counter() - started)
        again.append(timed(lambda: ws.run("true")))
        ws.remove()
    return {"fresh_workspace_then_true": summary(fresh), "run_true_in_existing_workspace": summary(again)}


def layer_costs(root: Path, runs: int, rounds: int) -> dict:
    from rollflow_engines.sandbox import open_workspace
    from rollflow_engines.sandbox.launch import hardening
    samples: dict[str, list[float]] = {name: [] for name in CONFIGS}
    for _ in range(rounds):
        for name, on in CONFIGS.items():
            with hardening(**{layer: on.get(layer, False) for layer in LAYERS}):
                with open_workspace(root, "bench") as ws:  # the tmpfs toggle acts when a workspace opens
                    ws.run("true")
                    samples[name] += [timed(lambda: ws.run("true")) for _ in range(runs // rounds)]
    out = {name: summary(s) for name, s in samples.items()}
    base = out["all_off"]["p50_ms"]
    for name in CONFIGS:
        out[name]["p50_over_all_off_ms"] = round(out[name]["p50_ms"] - base, 2)
        out[name]["p50_ratio_to_all_off"] = round(out[name]["p50_ms"] / base, 3)
    return out


BEFORE = """
import json, sys, time, statistics
sys.path.insert(0, sys.argv[1])
from rollflow_engines.sandbox import open_workspace, check_sandbox
check_sandbox()
out = []
with open_workspace(sys.argv[2], "bench-before") as ws:
    ws.run("true")
    for _ in range(int(sys.argv[3])):
        t = time.perf_counter(); ws.run("true"); out.append(time.perf_counter() - t)
print(json.dumps(out))
"""


def before(ref: str, root: Path, runs: int) -> dict:
    """The same ``run("true")`` with the sandbox package of commit ``ref``, in a child process."""
    with tempfile.TemporaryDirectory(prefix="rollflow-bench-before-") as d:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "python-engines/rollflow_engines"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", d], input=archive, check=True)
        done = subprocess.run([sys.executable, "-c", BEFORE, str(Path(d, "python-engines")), str(root), str(runs)],
                              capture_output=True, text=True, check=True)
    return {"ref": ref, **summary(json.loads(done.stdout))}


def density(root: Path, seconds: float, ks: list[int]) -> dict:
    from rollflow_engines.sandbox import open_workspace
    cores = os.cpu_count() or 1
    out = {}
    for k in ks:
        latencies: list[float] = []
        lock = threading.Lock()
        deadline = time.monotonic() + seconds

        def worker(i: int) -> None:
            with open_workspace(root, "bench") as ws:
                n = i
                while time.monotonic() < deadline:
                    t = timed(lambda: ws.run(MIX[n % len(MIX)]))
                    n += 1
                    with lock:
                        latencies.append(t)
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(k)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        out[f"k={k}"] = {"commands_per_s": round(len(latencies) / elapsed, 1),
                         "commands_per_s_per_core": round(len(latencies) / elapsed / cores, 1), **summary(latencies)}
    return out


def main() -> None:
    from rollflow_engines.sandbox import check_sandbox
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", default="1,2,4,8")
    parser.add_argument("--before", default=None, help="a commit whose sandbox to time the same way (e.g. 5c798ae)")
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "rollflow-sandbox-bench")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    report = {"loadavg_before": os.getloadavg(), "cpus": os.cpu_count(), "command": " ".join(sys.argv),
              "sandbox": check_sandbox().lines()}  # the one-off probe is in no figure
    report["start"] = start_latency(args.root, args.runs)
    report["layers"] = layer_costs(args.root, args.runs, args.rounds)
    if args.before:
        report["before"] = before(args.before, args.root, args.runs)
    report["density_mix"] = MIX
    report["density"] = density(args.root, args.seconds, [int(k) for k in args.concurrency.split(",")])
    report["loadavg_after"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
