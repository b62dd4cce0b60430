"""Exactly-once env steps: each index of a session is applied once, and the action log records each application.

A client retries a /step whose answer it did not get (its timeout, a worker that died, a connection
that broke) with the same ``index``: the count of the session's actions applied before it. The server
answers a repeat of the last applied index with the recorded response instead of applying the action
again; a repeat that arrives while that step still runs waits for it on the session's lock. Any other
index is a 409 naming ``index``: the same index with another action (two writers on one trajectory),
or one that is not the next (a gap, or an older step than the last).

The action log (option ``action_log``) is the independent record of what was applied: one JSON line
per applied step, ``{session, env, index, action_sha256, reward, done, ts}``, flushed and fsynced before
the step answers, so a line exists for every step a client could have seen. A replayed step writes no
line; so "no (session, index) twice in the log" is "no action applied twice".
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import ConflictError

if TYPE_CHECKING:
    from .contracts import StepResponse


def action_sha256(action: str) -> str:
    return hashlib.sha256(action.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class StepRecord:
    """The last step a session applied: what a retry of it is answered with."""

    env: str
    index: int
    action_sha256: str
    response: "StepResponse"
    logged: bool = False


def check_index(index: int, applied: int, last: StepRecord | None, sha: str) -> StepRecord | None:
    """The record to answer with when ``index`` repeats the last applied step; None when it is the next one.

    ConflictError (409, field ``index``) for the same index with another action, and for any index that is
    neither the last applied nor the next (``applied``: how many actions the session has applied).
    """
    if last is not None and index == last.index:
        if sha != last.action_sha256:
            raise ConflictError("index", f"step {index} of this session was applied with another action "
                                f"(sha256 {last.action_sha256[:12]}…, this one {sha[:12]}…); a retry must resend the same action", index)
        return last
    if index != applied:
        raise ConflictError("index", f"this session has applied {applied} actions, so the next step is index {applied}"
                            + (f" (a retry may repeat index {last.index})" if last is not None else ""), index)
    return None


class ActionLog:
    """Append-only JSON lines, one per applied step, each fsynced before the step answers.

    A line that cannot be written whole and fsynced is cut off again (the file is truncated to where it
    began), so the log holds each line once, whole, or not at all, and the retry's second try writes it.
    """

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        directory = os.open(path.parent, os.O_RDONLY)  # the file's name survives a crash as well as its lines
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        self._lock = threading.Lock()

    def append(self, session: str, record: StepRecord) -> None:
        line = json.dumps({"session": session, "env": record.env, "index": record.index, "action_sha256": record.action_sha256,
                           "reward": record.response.reward, "done": record.response.done, "ts": time.time()}).encode() + b"\n"
        with self._lock:
            start = os.fstat(self._fd).st_size
            try:
                if os.write(self._fd, line) != len(line):
                    raise OSError(f"wrote only part of a {len(line)}-byte line (the disk is full?)")
                os.fsync(self._fd)
            except OSError:
                os.ftruncate(self._fd, start)
                raise
        record.logged = True

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)
