"""Scratch directories: where a directory is written before it is renamed into place, named after its target and
its writer, so what a killed process left behind is told apart from what a live one is writing.

``.<name>.tmp-<pid>-<8 hex>`` while writing, ``.<name>.old-<pid>-<8 hex>`` for a replaced target while it is being
removed; both are siblings of the target, so the rename stays on one filesystem. The pid says whose it is: one whose
process is gone (or is this process, which writes each target under a lock, so none of its own is in flight when it
cleans) is stale.
"""
from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

_SCRATCH = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-[0-9a-f]{8}$")


def scratch_name(target: Path, kind: str) -> Path:
    """A fresh sibling of ``target`` of ``kind`` tmp or old."""
    return target.with_name(f".{target.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process writes under a lock: none of its own scratch is in flight now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def clean_stale_scratch(parent: Path) -> list[Path]:
    """Removes the scratch directories in ``parent`` (named as above) whose writer is gone; returns them."""
    removed = []
    try:
        entries = list(parent.iterdir())
    except FileNotFoundError:
        return removed
    for entry in entries:
        m = _SCRATCH.match(entry.name)
        if m and not _alive(int(m["pid"])):
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed
