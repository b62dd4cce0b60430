"""Helpers for the sandbox tests: the processes of a sandbox's uid, and waiting on a recorded state."""
from __future__ import annotations

import os
import time
from pathlib import Path

from rollflow_engines.sandbox.uids import processes_by_uid

# A child Python process finds the package as the tests do.
CHILD_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def uid_processes(uid: int) -> list[int]:
    return processes_by_uid().get(uid, [])


def wait_for(predicate, what: str, deadline_s: float = 30.0):
    """Poll a recorded state; the deadline only guards against a hang."""
    deadline = time.monotonic() + deadline_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)
    return value
