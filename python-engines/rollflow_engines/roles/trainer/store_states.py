"""Trainer states and checkpoints in the object store: /save and /load with ``path`` an ``s3://<bucket>/<key>`` ref,
so a trainer on another host, sharing no disk, recovers from them. The worker names such refs when the run's sample
store is a bucket (src/activities/trainer-states.ts).

Layout: one object per file of the state, ``<ref>/<relative path>``, and the meta file (rollflow_checkpoint.json)
LAST. The meta file already lists every other file with its size and sha256 (state_files.py), so it is the state's
manifest: a meta object means a complete state, the rule by which the worker tells saved states in the bucket as it
does on a disk (a directory holding the meta file). Not one archive object: the files stream to and from the store
one by one as the disk has them (no archive built beside a state of many GB, nor unpacked after it), a checkpoint's
Hugging Face directory (hf/) stays objects any S3 tool fetches, and the layout and its checks are those of weights
exports (store_exports.py, roles/inference/weights_cache.py).

Save: the state is written into a local scratch directory (option ``state_scratch_dir``) exactly as a local one is,
then uploaded, and the scratch removed. An upload first writes a marker object (UPLOADING), then removes the old
meta, then the old state's other objects, uploads the files, the meta, and removes the marker: at every moment the
prefix holds the meta or the marker, so a save cut short is told apart from objects this trainer never wrote, which
it refuses to replace (as it refuses a local target that is not a state's directory).

Load: the meta object first, then every file it lists streamed into a scratch directory, each verified against its
object's sha256 metadata (objects.py); then the directory goes through the checks of a local state
(state_files.verify_checksums against the meta's list) and loads as one. A listed object that is missing or damaged,
or a damaged meta object, is ``checkpoint_corrupt`` naming the object: recovery passes over the state to an older one
exactly as it does a damaged directory.
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import ConflictError, NotFoundError, RequestError, UnavailableError
from ...exports import listed_path_inside
from ...objects import (CorruptObjectError, ObjectNotFoundError, ObjectRefError, ObjectStoreError, delete_object, is_object_ref,
                        list_objects, parse_object_ref, read_object, read_object_to_file, write_object, write_object_from_file)
from .state_files import CORRUPT, FILES_KEY

UPLOADING = ".rollflow-state-uploading"  # the marker object of an upload in progress (see the module docstring)


def state_ref(path: str, field: str = "path") -> str | None:
    """``path`` without a trailing slash if it is an s3:// ref (a 400 naming ``field`` if it is a malformed one);
    None for a local path."""
    if not is_object_ref(path):
        return None
    try:
        return str(parse_object_ref(path.rstrip("/")))
    except ObjectRefError as e:
        raise RequestError(field, str(e), path) from e


def default_scratch_dir() -> Path:
    return Path(tempfile.gettempdir()) / "rollflow-states"


def upload_state(directory: Path, ref: str, meta_name: str, field: str) -> None:
    """Puts the state written in ``directory`` (its meta file listing its files) at ``ref``, replacing one there."""
    meta_ref, marker = f"{ref}/{meta_name}", f"{ref}/{UPLOADING}"
    held = list_objects(f"{ref}/")
    if held and meta_ref not in held and marker not in held:
        raise ConflictError(field, f"{ref} holds {len(held)} objects ({held[0]}, …) but no {meta_name}: not a state this trainer "
                                   "wrote; not replacing it", ref)
    write_object(marker, b"")
    if meta_ref in held:  # first: from here on no reader takes the old state for a complete one
        delete_object(meta_ref)
    for old in held:
        if old not in (meta_ref, marker):
            delete_object(old)
    for file in sorted(directory.rglob("*")):
        name = file.relative_to(directory).as_posix()
        if file.is_file() and name != meta_name:
            write_object_from_file(f"{ref}/{name}", file)
    write_object_from_file(meta_ref, directory / meta_name)
    delete_object(marker)


def download_state(ref: str, directory: Path, meta_name: str, field: str) -> None:
    """Fetches the state at ``ref`` into the empty ``directory``: its meta object, and every file the meta lists, each
    verified against its object's sha256. A 404 if nothing is stored under ``ref``; ``checkpoint_corrupt`` naming the
    object for a damaged or missing one. A meta that is not a list of files is written as it is: the caller's checks
    of a local state refuse it."""
    meta_ref = f"{ref}/{meta_name}"
    try:
        raw = _store_call(ref, field, read_object, meta_ref)
    except ObjectNotFoundError:
        others = _store_call(ref, field, list_objects, f"{ref}/")
        if not others:
            raise NotFoundError(field, f"no trainer state at {ref}: the store has no object under it", ref) from None
        raise RequestError(field, f"{ref} is not a complete trainer state: it has {len(others)} objects but no {meta_ref} (the "
                                  "trainer uploads it last: its upload did not finish)", ref, CORRUPT) from None
    (directory / meta_name).write_bytes(raw)
    files = _listed(raw)
    for name in sorted(files):
        if not listed_path_inside(name) or name == meta_name:
            raise RequestError(field, f"{meta_ref} lists the file {name!r}, which is not a path inside the state", ref, CORRUPT)
        file = directory / name
        file.parent.mkdir(parents=True, exist_ok=True)
        try:
            _store_call(ref, field, read_object_to_file, f"{ref}/{name}", file)
        except ObjectNotFoundError:
            raise RequestError(field, f"{ref}/{name} is missing (listed in the state's checksums, not in the store)", ref, CORRUPT) from None


def _listed(raw: bytes) -> dict[str, Any]:
    try:
        meta = json.loads(raw)
    except ValueError:
        return {}
    files = meta.get(FILES_KEY) if isinstance(meta, dict) else None
    return files if isinstance(files, dict) else {}


def _store_call(ref: str, field: str, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` with a damaged object ``checkpoint_corrupt`` and a store that failed a 503 (retry later), each
    naming the object; ObjectNotFoundError stays itself for the caller to tell what is missing."""
    try:
        return call(*args)
    except CorruptObjectError as e:
        raise RequestError(field, str(e), ref, CORRUPT) from e
    except ObjectStoreError as e:
        raise UnavailableError(field, str(e), ref) from e
