"""The timeline of bench/multihost/run.sh as markdown: each fault, and how long the run took to train its next step."""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("json")
    p.add_argument("out")
    p.add_argument("--command", required=True)
    p.add_argument("--load-before", required=True)
    p.add_argument("--cores", required=True)
    a = p.parse_args()
    r = json.loads(Path(a.json).read_text())
    steps = sorted(r["steps"], key=lambda s: s["step"])
    walls = [s["wall_s"] for s in steps]
    gaps = [b - x for x, b in zip(walls, walls[1:])]
    first_fault = r["timeline"][0]["at"] if r["timeline"] else walls[-1]
    clean = [g for x, g in zip(walls, gaps) if x + g < first_fault]
    lines = [
        "# Multi-host: four simulated hosts, a host lost, a host partitioned",
        "",
        f"Command: `{a.command}` (runs `tests/integration/multihost.test.ts` with its long settings; every check of the",
        "test held, or no report is written). Machine: "
        f"{a.cores} cores, load {a.load_before} (1 min) at the start. Sim engines (no model), FrozenLake on the env servers.",
        "",
        "Hosts (hosts/netns.sh: network and mount namespaces, no shared writable path, TCP over veth):",
        f"A: {'Temporal server on PostgreSQL (temporal/cluster.sh)' if r['bench']['temporal'] == 'cluster' else 'Temporal dev server (SQLite)'} and versitygw; B, C: inference + env server + `worker --role inference,env`;",
        "D: trainer + `worker --role main,trainer`. Samples, batches, weights, trainer states, env snapshots and the run's records in the bucket.",
        "",
        f"Run: {len(steps)} steps of 8 episodes. Step time before the first fault: median "
        f"{statistics.median(clean):.1f} s over {len(clean)} steps." if clean else f"Run: {len(steps)} steps of 8 episodes.",
        "",
        "| t (s from the run's start) | event | next step trained at (s) | after (s) |",
        "| --- | --- | --- | --- |",
    ]
    for e in r["timeline"]:
        after = [w for w in walls if w > e["at"]]
        nxt = f"{after[0]:.1f} | {after[0] - e['at']:.1f}" if after else f"none: the run had ended (last step at {walls[-1]:.1f}) | —"
        lines.append(f"| {e['at']:.1f} | {e['event']} | {nxt} |")
    lines += [
        "",
        f"Total wall time: {walls[-1]:.1f} s. Longest gap between two steps: {max(gaps):.1f} s.",
        f"Env actions applied: {r['envActions']['b']} on B, {r['envActions']['c']} on C; no (session, index) applied twice "
        f"({r['envActions']['check']}). Every step trained once, on {len(steps) * 8} distinct samples.",
        "",
        "Fault times are the test's clock from just before `rollflow run`; step times are the run's wall_s (from the",
        "workflow's start): the two agree within about a second.",
        "",
        "| step | wall_s |",
        "| --- | --- |",
        *[f"| {s['step']} | {s['wall_s']:.1f} |" for s in steps],
    ]
    Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
