"""What a long-tail run trained on against what it generated: reply length, reward and staleness.

    .venv/bin/python bench/learning/reply_lengths.py runs/learn-longtail/samples/<run id> [--from-step N]

The sample store holds every sample a run generated (samples/<uid>.json) and
every batch it trained (batches/step-N.jsonl), so the samples never trained
(dropped as stale, or generated but not consumed when the run ended) are the
difference. Prints, by reply-length bucket, how many samples were generated,
the share trained, their mean reward, and for the trained ones the mean
dispatch staleness in versions (the step trained minus the first version that
generated a token).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

BUCKETS = (8, 16, 32, 64, 128, 10**9)


def bucket(n: int) -> str:
    low = 0
    for high in BUCKETS:
        if n <= high:
            return f"{low + 1}-{high}" if high < 10**9 else f">{low}"
        low = high
    raise AssertionError


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store", type=Path)
    ap.add_argument("--from-step", type=int, default=0, help="count only samples whose first token is of this version or later")
    args = ap.parse_args()
    trained: dict[str, int] = {}
    for f in sorted((args.store / "batches").glob("step-*.jsonl")):
        step = int(f.stem.split("-")[1])
        for line in f.read_text().splitlines():
            trained[json.loads(line)["uid"]] = step
    rows: dict[str, list[tuple[float, int | None]]] = {}
    for f in (args.store / "samples").glob("*.json"):
        s = json.loads(f.read_text())
        first = s["version_spans"][0]["version"] if s.get("version_spans") else 0
        if first < args.from_step:
            continue
        step = trained.get(s["uid"])
        rows.setdefault(bucket(len(s["response_ids"])), []).append((s["reward"], None if step is None else step - first))
    print("| reply tokens | generated | trained | mean reward, trained | mean reward, not trained | staleness of trained |")
    print("|---|---:|---:|---:|---:|---:|")
    order = {bucket(h): i for i, h in enumerate(BUCKETS)}
    for b in sorted(rows, key=order.__getitem__):
        xs = rows[b]
        t = [(r, st) for r, st in xs if st is not None]
        u = [r for r, st in xs if st is None]
        mean = lambda v: f"{sum(v) / len(v):.3f}" if v else "—"  # noqa: E731
        print(f"| {b} | {len(xs)} | {len(t) / len(xs):.0%} | {mean([r for r, _ in t])} | {mean(u)} | {mean([st for _, st in t])} |")


if __name__ == "__main__":
    main()
