"""The files of a trainer state, checkpoint or export: written beside their target, checked, made durable,
renamed into place; what a killed process left behind is removed; what was read back is verified.

Names of the scratch directories (siblings of the target, so the rename stays on one filesystem):
``.<name>.tmp-<pid>-<8 hex>`` while writing, ``.<name>.old-<pid>-<8 hex>`` for the replaced target while it is
being removed. The pid says whose it is: one whose process is gone (or is this process, which writes under the
trainer's lock, so none of its own is in flight when it cleans) is stale.

Checksums: a state's meta file (rollflow_checkpoint.json) lists every other file written with its size and
sha256 (``files``); /load checks them all before any weight changes, and a state that fails is
``checkpoint_corrupt`` (the caller falls back to an older state, src/activities/trainer-recovery.ts).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from ...durable import fsync_path, fsync_tree
from ...errors import ConflictError, RequestError

CORRUPT = "checkpoint_corrupt"  # the 4xx code of a state whose files do not match its checksums
FILES_KEY = "files"  # in the meta file: {relative path: {"size": bytes, "sha256": hex}}
_SCRATCH = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-[0-9a-f]{8}$")
_CHUNK = 1 << 20


def _scratch_name(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process writes under the trainer's lock: none of its own scratch is in flight now
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


def scratch_dir_for(target: Path, marker: str, field: str) -> Path:
    """An empty sibling directory of ``target`` to write into, after removing stale ones. An existing ``target``
    is only ever replaced if it holds ``marker`` (it is ours) or is empty."""
    if target.exists() and not (target.is_dir() and ((target / marker).is_file() or not any(target.iterdir()))):
        raise ConflictError(field, f"{target} exists and is not a directory this trainer wrote; not replacing it", str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_scratch(target.parent)
    tmp = _scratch_name(target, "tmp")
    tmp.mkdir()
    return tmp


def replace_dir(tmp: Path, target: Path) -> None:
    """Move the finished ``tmp`` to ``target``, durably: its files are fsynced before the rename and the parent
    directory after it. A reader sees the old directory or the new one, never a partial one (a replaced target
    is missing for an instant)."""
    fsync_tree(tmp)
    if target.exists():
        old = _scratch_name(target, "old")
        target.rename(old)
        tmp.rename(target)
        fsync_path(target.parent)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(target)
    fsync_path(target.parent)


def _sha256(file: Path) -> str:
    h = hashlib.sha256()
    with open(file, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def checksums(directory: Path, meta_name: str) -> dict[str, dict[str, Any]]:
    """Size and sha256 of every file under ``directory`` but the meta file itself, by path relative to it."""
    return {file.relative_to(directory).as_posix(): {"size": file.stat().st_size, "sha256": _sha256(file)}
            for file in sorted(directory.rglob("*")) if file.is_file() and file.relative_to(directory).as_posix() != meta_name}


def verify_checksums(directory: Path, meta: dict[str, Any], field: str, given: Any) -> None:
    """A ``checkpoint_corrupt`` RequestError naming the first file that is missing or differs from ``meta``'s list."""
    files = meta.get(FILES_KEY)
    if not isinstance(files, dict) or not files:
        raise RequestError(field, f"{directory} lists no checksums ({FILES_KEY!r} in its meta file): written before checksums "
                                  "or damaged; cannot tell its files are intact", given, CORRUPT)
    for name, expected in sorted(files.items()):
        file = directory / name
        if not file.is_file():
            raise RequestError(field, f"{file} is missing (listed in the state's checksums)", given, CORRUPT)
        try:
            size, digest = file.stat().st_size, _sha256(file)
        except OSError as e:
            raise RequestError(field, f"{file} cannot be read: {e}", given, CORRUPT) from e
        if not isinstance(expected, dict) or size != expected.get("size") or digest != expected.get("sha256"):
            raise RequestError(field, f"{file} does not match its checksum (size {size}, sha256 {digest[:12]}…; recorded "
                                      f"{expected!r:.120})", given, CORRUPT)
