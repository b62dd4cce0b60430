"""Exports in the object store, pulled into a local directory that an inference server loads as it loads a local
export: /update_weights with ``path`` an ``s3://<bucket>/<prefix>/v<N>`` ref (the trainer writes them:
roles/trainer/store_exports.py).

A pull reads the export's manifest object first (the trainer writes it last, so it means the export is complete)
and checks that it fits the served model before any weights move. Then every file the manifest lists is streamed
into a scratch directory in the cache, each verified twice: against its object's own sha256 metadata (objects.py)
and against the size and sha256 the manifest lists for it. Only then is the scratch directory renamed to the
export's entry, so a pull that dies midway leaves a scratch directory (removed by a later pull once its process is
gone, scratch.py), never an entry. Whatever is wrong is a 4xx naming the object, raised before the server changes
anything: it keeps serving the weights it has.

The cache keeps the entry being served and the one just pulled (current and previous): each pull first removes the
other entries. An entry is named after the ref and a digest of its manifest, which lists every file's sha256, so a
new run's v1 is another entry than an old run's v1. An entry is reused only if this process pulled it; those of an
earlier process are never trusted (they were not fsynced) and go at the first pull.

One cache directory per server (option ``weights_cache_dir``): two servers sharing one would remove each other's
entries.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...durable import is_disk_full
from ...errors import InsufficientStorageError, NotFoundError, RequestError, UnavailableError
from ...exports import EXPORT_FILES, EXPORT_MANIFEST, listed_path_inside
from ...objects import (CorruptObjectError, ObjectNotFoundError, ObjectRefError, ObjectStoreError, list_objects,
                        parse_object_ref, read_object, read_object_to_file)
from ...scratch import clean_stale_scratch, scratch_name

FIELD = "path"  # the request field every refusal names
_ENTRY = re.compile(r"^[A-Za-z0-9._-]+-[0-9a-f]{16}$")


def entry_name(ref: str, manifest: bytes) -> str:
    """``<the ref's key, readable>-<16 hex of sha256(ref, manifest)>``."""
    key = re.sub(r"[^A-Za-z0-9._-]+", "_", parse_object_ref(ref).key)[-60:]
    digest = hashlib.sha256(ref.encode() + b"\0" + manifest).hexdigest()
    return f"{key}-{digest[:16]}"


def listed_files(ref: str, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifest's files (relative path -> size and sha256), each path one that stays inside the export."""
    files = manifest.get(EXPORT_FILES)
    if not isinstance(files, dict):
        raise RequestError(FIELD, f"{ref}/{EXPORT_MANIFEST} lists no files ({EXPORT_FILES!r}): not an export the trainer "
                                  "wrote to the object store", ref)
    for name, entry in files.items():
        if not listed_path_inside(name) or name == EXPORT_MANIFEST:
            raise RequestError(FIELD, f"{ref}/{EXPORT_MANIFEST} lists the file {name!r}, which is not a path inside the export", ref)
        if not (isinstance(entry, dict) and isinstance(entry.get("size"), int) and isinstance(entry.get("sha256"), str)):
            raise RequestError(FIELD, f"{ref}/{EXPORT_MANIFEST} lists {name!r} without its size and sha256", ref)
    return files


class WeightsCache:
    """The pulled exports of one inference server, under ``root``."""

    def __init__(self, root: str | Path):
        self.root = Path(root).absolute()
        self._lock = threading.Lock()  # one pull at a time: a retried update waits, then finds the entry pulled
        self._pulled: set[Path] = set()
        self._serving: Path | None = None

    def pull(self, ref: str, check: Callable[[dict[str, Any]], None]) -> Path:
        """The local directory of the export at ``ref``, pulled and verified unless this process already has it;
        ``check(manifest)`` raises if the export does not fit the served model. Blocking: call it in a thread."""
        with self._lock:
            try:
                return self._pull(ref.rstrip("/"), check)
            except OSError as e:  # the cache's own disk
                if is_disk_full(e):
                    raise InsufficientStorageError(FIELD, f"disk full: cannot pull {ref} into {self.root}: {e}", ref, "disk_full") from e
                raise RequestError(FIELD, f"cannot pull {ref} into {self.root}: {e}", ref) from e

    def loaded(self, directory: Path) -> None:
        """``directory`` is what the server now serves: kept until the pull after the next one."""
        self._serving = directory

    def _pull(self, ref: str, check: Callable[[dict[str, Any]], None]) -> Path:
        raw = self._manifest(ref)
        try:
            manifest = json.loads(raw)
        except ValueError as e:
            raise RequestError(FIELD, f"{ref}/{EXPORT_MANIFEST} is not readable JSON: {e}", ref) from e
        if not isinstance(manifest, dict):
            raise RequestError(FIELD, f"{ref}/{EXPORT_MANIFEST} holds a {type(manifest).__name__}; expected an object", ref)
        check(manifest)
        files = listed_files(ref, manifest)
        entry = self.root / entry_name(ref, raw)
        if entry in self._pulled and entry.is_dir():
            return entry
        self._remove_all_but(self._serving)  # before the download, so the disk holds at most two exports
        tmp = scratch_name(entry, "tmp")
        tmp.mkdir(parents=True)
        try:
            for name, listed in sorted(files.items()):
                self._fetch(ref, name, tmp / name, listed)
            (tmp / EXPORT_MANIFEST).write_bytes(raw)
            tmp.rename(entry)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._pulled.add(entry)
        return entry

    def _manifest(self, ref: str) -> bytes:
        manifest_ref = f"{ref}/{EXPORT_MANIFEST}"
        try:
            return _store_call(ref, read_object, manifest_ref)
        except NotFoundError:
            others = _store_call(ref, list_objects, f"{ref}/")
            if not others:
                raise NotFoundError(FIELD, f"no export at {ref}: the store has no object under it", ref) from None
            raise RequestError(FIELD, f"{ref} is incomplete: it has {len(others)} objects but no {manifest_ref} (the trainer "
                                      "uploads the manifest last: its upload did not finish)", ref) from None

    @staticmethod
    def _fetch(export: str, name: str, file: Path, listed: dict[str, Any]) -> None:
        ref = f"{export}/{name}"
        file.parent.mkdir(parents=True, exist_ok=True)
        try:
            digest = _store_call(export, read_object_to_file, ref, file)
        except NotFoundError as e:
            raise RequestError(FIELD, f"{export} is incomplete: its manifest lists {ref}, which is not in the store", export) from e
        size = file.stat().st_size
        if (size, digest) != (listed["size"], listed["sha256"]):
            raise RequestError(FIELD, f"{ref} does not match the export's manifest: size {size}, sha256 {digest}; the manifest "
                                      f"lists size {listed['size']}, sha256 {listed['sha256']}", export)

    def _remove_all_but(self, keep: Path | None) -> None:
        clean_stale_scratch(self.root)
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            # Only what a pull made: a cache directory pointed at a folder of other things loses none of them.
            if entry != keep and _ENTRY.match(entry.name) and (entry / EXPORT_MANIFEST).is_file():
                shutil.rmtree(entry, ignore_errors=True)
                self._pulled.discard(entry)


def _store_call(export: str, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` with the object store's errors as the request's: a missing object 404, a damaged one 400, a
    store that failed 503 (retry later); each names the object, and ``given`` is the export's ref."""
    try:
        return call(*args)
    except ObjectNotFoundError as e:
        raise NotFoundError(FIELD, str(e), export) from e
    except (ObjectRefError, CorruptObjectError) as e:
        raise RequestError(FIELD, str(e), export) from e
    except ObjectStoreError as e:
        raise UnavailableError(FIELD, str(e), export) from e
