"""Adds each run's workflow execution start times to bench/results/learning-runs.jsonl.

Runs recorded before wall_s counted across continue-as-new (fixed in the
commit after 9ae1680) need them to put their records on one clock
(report.py's stitch). Asks the Temporal server the runs ran on:

    .venv/bin/python bench/learning/execution_starts.py [--address 127.0.0.1:7233]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNS = Path(os.environ.get("LEARNING_RESULTS", ROOT / "bench" / "results")) / "learning-runs.jsonl"


def starts_ms(cli: str, address: str, workflow_id: str) -> list[float]:
    out = subprocess.run([cli, "workflow", "list", "--address", address, "--query", f"WorkflowId = '{workflow_id}'", "-o", "json"],
                         check=True, capture_output=True, text=True).stdout
    times = [datetime.fromisoformat(e["startTime"].replace("Z", "+00:00")).timestamp() * 1000 for e in json.loads(out)]
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default="127.0.0.1:7233")
    args = parser.parse_args()
    cli = subprocess.run([str(ROOT / "temporal" / "ensure-cli.sh")], check=True, capture_output=True, text=True).stdout.strip()
    entries = [json.loads(line) for line in RUNS.read_text().splitlines()]
    for e in entries:
        run_id = e["summary"].get("run_id")
        if run_id and "execution_starts_ms" not in e:
            e["execution_starts_ms"] = starts_ms(cli, args.address, run_id)
    RUNS.write_text("".join(json.dumps(e) + "\n" for e in entries))


if __name__ == "__main__":
    main()
