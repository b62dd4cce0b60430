"""The trainer's own record of what it did (option ``step_log``): one JSON line per train step it applied
to its weights, and one per event that starts or saves a weights lineage. The chaos checker
(src/chaos/trainer-invariants.ts) reads it as a record independent of the workflow's.

A *lineage* is one history of weights in memory: it starts at the launch weights (no run), at /reset
(version 0 of a run) or at /load (the saved state's version, whose lineage the checkpoint names as
``parent``), and it ends when the process dies or another reset/load replaces the weights. Lines::

    {"run_id", "step", "version_after", "uids_sha256", "ts", "lineage", "recovered"?: true}
    {"run_id", "event": "reset" | "load" | "save", "version", "lineage", "parent"?, "path"?, "ts"}

A step line is written only by an applied optimizer step (``commit``), never for a retried step
answered from the recorded response. ``recovered: true`` marks a step this log already holds for the
run: the step re-applied to weights restored from a saved state (a restarted trainer replaying the
stored batches), so a reader can tell it from a step applied twice to one lineage. Each line is
flushed and fsynced before the step's response leaves: a step the run saw acknowledged is on disk.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

from ...durable import fsync_path


def new_lineage() -> str:
    return uuid.uuid4().hex[:16]


class StepLog:
    """Appends to ``path``; remembers, per run, the highest step the file holds (for ``recovered``)."""

    def __init__(self, path: str):
        self.path = Path(path)
        self._highest: dict[str | None, int] = {}
        try:
            self._open()
        except OSError as e:  # at start, naming the option: never a trainer that trains without its record
            raise OSError(f"step_log {path!r}: cannot append to it: {e}") from e

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line torn by a crash mid-write: its step was never acknowledged
                if isinstance(record, dict) and isinstance(record.get("step"), int):
                    self._note(record.get("run_id"), record["step"])
        else:
            self.path.touch()
            fsync_path(self.path.parent)  # the new file's name survives a crash too

    def _note(self, run_id: str | None, step: int) -> None:
        self._highest[run_id] = max(step, self._highest.get(run_id, -1))

    def step(self, run_id: str | None, step: int, version_after: int, uids_sha256: str, lineage: str) -> None:
        record: dict[str, Any] = {"run_id": run_id, "step": step, "version_after": version_after, "uids_sha256": uids_sha256,
                                  "ts": time.time(), "lineage": lineage}
        if step <= self._highest.get(run_id, -1):
            record["recovered"] = True
        self._append(record)
        self._note(run_id, step)

    def event(self, run_id: str | None, event: str, version: int, lineage: str, **extra: Any) -> None:
        self._append({"run_id": run_id, "event": event, "version": version, "lineage": lineage, **extra, "ts": time.time()})

    def _append(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())
