"""Prints what a run's trackers wrote, as JSON, read with each library's own reader (for the TS integration test):

    python -m tests.trackers.read_back <tensorboard log dir> <wandb dir> <run id>
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from .wandb_log import config, history


def main(tb_dir: str, wandb_dir: str, run_id: str) -> None:
    events = EventAccumulator(tb_dir)
    events.Reload()
    scalars = {tag: [[e.step, e.value] for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    logs = sorted(Path(wandb_dir).glob(f"wandb/offline-run-*-{run_id}/run-{run_id}.wandb"))
    print(json.dumps({
        "tensorboard": scalars,
        "wandb_runs": [str(p.parent) for p in logs],
        "wandb_history": [h for p in logs for h in history(p)],
        "wandb_config": {k: v for p in logs for k, v in config(p).items()},
    }))


if __name__ == "__main__":
    main(*sys.argv[1:4])
