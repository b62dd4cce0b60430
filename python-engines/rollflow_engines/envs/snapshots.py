"""Saved episode states of envs whose state lives outside the process (a sandbox workspace).

An env that can resume an episode saves a snapshot after each step that may change its state and
reports its id in the step's ``info.snapshot``; a client that lost the session resets with
``restore: <id>`` on any env server that shares this directory (the same host, or a shared file
system), and the env continues from there without running anything again. A snapshot is a
compressed JSON value; ids are random, so nothing of the episode can be guessed from one.
"""
from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from ..errors import NotFoundError

DEFAULT_DIR = Path(tempfile.gettempdir()) / "rollflow-env-snapshots"
_dir = DEFAULT_DIR
_ID_CHARS = set("0123456789abcdef")


def configure(directory: Path) -> None:
    """Where this process keeps snapshots (the env role's ``snapshot_dir``)."""
    global _dir
    _dir = directory


def save(value: dict[str, Any]) -> str:
    _dir.mkdir(parents=True, exist_ok=True)
    snapshot = secrets.token_hex(16)
    part = _dir / f".{snapshot}.part"
    part.write_bytes(zlib.compress(json.dumps(value).encode()))
    os.replace(part, _dir / snapshot)  # whole or absent, even if the server dies mid-write
    return snapshot


def load(snapshot: str) -> dict[str, Any]:
    """The saved value; NotFoundError (404, field ``restore``) for an unknown or removed id."""
    path = _dir / snapshot
    if not (set(snapshot) <= _ID_CHARS and path.is_file()):
        raise NotFoundError("restore", f"no snapshot {snapshot!r} in {_dir}", snapshot)
    return json.loads(zlib.decompress(path.read_bytes()))


def reap(max_age_s: float) -> int:
    """Removes snapshots (and half-written parts) not written for ``max_age_s``: those of episodes nobody resumed."""
    if not _dir.is_dir():
        return 0
    cutoff, removed = time.time() - max_age_s, 0
    for path in _dir.iterdir():
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:  # removed meanwhile by its episode's end or another server's janitor
            pass
    return removed


def remove(snapshot: str | None) -> None:
    if snapshot and set(snapshot) <= _ID_CHARS:
        (_dir / snapshot).unlink(missing_ok=True)
