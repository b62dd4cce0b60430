"""The files of a trainer state, checkpoint or export: written beside their target, checked, made durable,
renamed into place; what a killed process left behind is removed; what was read back is verified.

Scratch directories are named as rollflow_engines/scratch.py says: their pid tells a killed writer's from a live one's.

Checksums: a state's meta file (rollflow_checkpoint.json) lists every other file written with its size and
sha256 (``files``); /load checks them all before any weight changes, and a state that fails is
``checkpoint_corrupt`` (the caller falls back to an older state, src/activities/trainer-recovery.ts).

A state saved to or loaded from the object store (an s3:// path) is written and checked here the same way, in a
scratch directory it is uploaded from or fetched into (store_states.py).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ...durable import fsync_path, fsync_tree
from ...errors import ConflictError, RequestError
from ...objects import file_sha256
from ...scratch import clean_stale_scratch, scratch_name

CORRUPT = "checkpoint_corrupt"  # the 4xx code of a state whose files do not match its checksums
FILES_KEY = "files"  # in the meta file: {relative path: {"size": bytes, "sha256": hex}}


def scratch_dir_for(target: Path, marker: str, field: str) -> Path:
    """An empty sibling directory of ``target`` to write into, after removing stale ones. An existing ``target``
    is only ever replaced if it holds ``marker`` (it is ours) or is empty."""
    if target.exists() and not (target.is_dir() and ((target / marker).is_file() or not any(target.iterdir()))):
        raise ConflictError(field, f"{target} exists and is not a directory this trainer wrote; not replacing it", str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_scratch(target.parent)
    tmp = scratch_name(target, "tmp")
    tmp.mkdir()
    return tmp


def replace_dir(tmp: Path, target: Path) -> None:
    """Move the finished ``tmp`` to ``target``, durably: its files are fsynced before the rename and the parent
    directory after it. A reader sees the old directory or the new one, never a partial one (a replaced target
    is missing for an instant)."""
    fsync_tree(tmp)
    if target.exists():
        old = scratch_name(target, "old")
        target.rename(old)
        tmp.rename(target)
        fsync_path(target.parent)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(target)
    fsync_path(target.parent)


def checksums(directory: Path, meta_name: str) -> dict[str, dict[str, Any]]:
    """Size and sha256 of every file under ``directory`` but the meta file itself, by path relative to it."""
    return {file.relative_to(directory).as_posix(): {"size": file.stat().st_size, "sha256": file_sha256(file)}
            for file in sorted(directory.rglob("*")) if file.is_file() and file.relative_to(directory).as_posix() != meta_name}


def verify_checksums(directory: Path, meta: dict[str, Any], field: str, given: Any, shown: str | None = None) -> None:
    """A ``checkpoint_corrupt`` RequestError naming the first file that is missing or differs from ``meta``'s list;
    messages name the state ``shown`` (its ref, for one fetched from the object store) or else ``directory``."""
    shown = shown or str(directory)
    files = meta.get(FILES_KEY)
    if not isinstance(files, dict) or not files:
        raise RequestError(field, f"{shown} lists no checksums ({FILES_KEY!r} in its meta file): written before checksums "
                                  "or damaged; cannot tell its files are intact", given, CORRUPT)
    for name, expected in sorted(files.items()):
        file, named = directory / name, f"{shown}/{name}"
        if not file.is_file():
            raise RequestError(field, f"{named} is missing (listed in the state's checksums)", given, CORRUPT)
        try:
            size, digest = file.stat().st_size, file_sha256(file)
        except OSError as e:
            raise RequestError(field, f"{named} cannot be read: {e}", given, CORRUPT) from e
        if not isinstance(expected, dict) or size != expected.get("size") or digest != expected.get("sha256"):
            raise RequestError(field, f"{named} does not match its checksum (size {size}, sha256 {digest[:12]}…; recorded "
                                      f"{expected!r:.120})", given, CORRUPT)
