"""Saved episode states of envs whose state lives outside the process (a sandbox workspace).

An env that can resume an episode saves a snapshot after each step that may change its state and
reports its id in the step's ``info.snapshot``; a client that lost the session resets with
``restore: <id>`` on any env server that shares where snapshots are kept, and the env continues from
there without running anything again. A snapshot is a compressed JSON value; ids are random, so
nothing of the episode can be guessed from one.

Where (the env role's ``snapshot_dir``): a directory, shared by the servers of one host (or a shared
file system); or an ``s3://<bucket>/<prefix>`` ref, shared by servers on hosts that share no disk (a
launched env server gets one when the run's sample store is a bucket): each snapshot is then the
object ``<prefix>/<id>`` (objects.py: whole or absent, its sha256 verified on every read).

A snapshot whose bytes are damaged (the object's sha256, or the zlib checksum of a file) is refused
as ``snapshot_corrupt`` (400, field ``restore``): the client replays the episode from its start, as
it does for a snapshot that is gone (404). A snapshot that cannot be written (a full disk, a store
that cannot be reached) is SnapshotNotSaved: the env answers its step without a new snapshot rather
than fail a step whose action already ran.
"""
from __future__ import annotations

import json
import logging
import os
import re
import secrets
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from ..errors import NotFoundError, RequestError, UnavailableError
from ..objects import (CorruptObjectError, ObjectNotFoundError, ObjectStoreError, delete_object, is_object_ref,
                       list_objects_modified, parse_object_ref, read_object, write_object)

log = logging.getLogger(__name__)

DEFAULT_DIR = Path(tempfile.gettempdir()) / "rollflow-env-snapshots"
CORRUPT = "snapshot_corrupt"  # the 4xx code of a snapshot whose bytes are damaged
_where: Path | str = DEFAULT_DIR  # a directory, or an s3:// prefix without its trailing slash
_ID_CHARS = set("0123456789abcdef")
_ID = re.compile(r"^[0-9a-f]{32}$")  # what save names a snapshot: secrets.token_hex(16)


class SnapshotNotSaved(Exception):
    """Thrown by save when the snapshot could not be written; nothing was saved."""


def location(where: str | Path) -> Path | str:
    """``where`` as configure keeps it: an s3:// ref without a trailing slash (ObjectRefError, a ValueError, if it is
    a malformed one), or a directory."""
    if isinstance(where, str) and is_object_ref(where):
        return str(parse_object_ref(where.rstrip("/")))
    return Path(where)


def configure(where: str | Path) -> None:
    """Where this process keeps snapshots (the env role's ``snapshot_dir``): a directory or an s3:// ref."""
    global _where
    _where = location(where)


def save(value: dict[str, Any]) -> str:
    snapshot = secrets.token_hex(16)
    data = zlib.compress(json.dumps(value).encode())
    try:
        if isinstance(_where, str):
            write_object(f"{_where}/{snapshot}", data)  # whole or absent
        else:
            _where.mkdir(parents=True, exist_ok=True)
            part = _where / f".{snapshot}.part"
            part.write_bytes(data)
            os.replace(part, _where / snapshot)  # whole or absent, even if the server dies mid-write
    except (OSError, ObjectStoreError) as e:
        raise SnapshotNotSaved(f"cannot save a snapshot in {_where}: {e}") from e
    return snapshot


def load(snapshot: str) -> dict[str, Any]:
    """The saved value; NotFoundError (404, field ``restore``) for an unknown or removed id, ``snapshot_corrupt`` (400)
    for damaged bytes, UnavailableError (503) when the store cannot be reached."""
    if not set(snapshot) <= _ID_CHARS:
        raise NotFoundError("restore", f"no snapshot {snapshot!r} in {_where}", snapshot)
    if isinstance(_where, str):
        try:
            data = read_object(f"{_where}/{snapshot}")
        except ObjectNotFoundError:
            raise NotFoundError("restore", f"no snapshot {snapshot!r} in {_where}", snapshot) from None
        except CorruptObjectError as e:
            raise RequestError("restore", f"snapshot {snapshot!r} is damaged, not restoring it: {e}", snapshot, CORRUPT) from e
        except ObjectStoreError as e:
            raise UnavailableError("restore", f"cannot read snapshot {snapshot!r}: {e}", snapshot) from e
    else:
        path = _where / snapshot
        if not path.is_file():
            raise NotFoundError("restore", f"no snapshot {snapshot!r} in {_where}", snapshot)
        data = path.read_bytes()
    try:
        return json.loads(zlib.decompress(data))
    except (zlib.error, ValueError) as e:
        raise RequestError("restore", f"snapshot {snapshot!r} in {_where} is damaged, not restoring it: {e}", snapshot, CORRUPT) from e


def reap(max_age_s: float) -> int:
    """Removes snapshots (and half-written parts) not written for ``max_age_s``: those of episodes nobody resumed. In a
    bucket, only objects directly under the prefix named as save names them: others' objects there are left alone.
    Age there is the store's LastModified against this host's clock."""
    cutoff, removed = time.time() - max_age_s, 0
    if isinstance(_where, str):
        for listed in list_objects_modified(f"{_where}/"):
            if _ID.match(listed.ref.removeprefix(f"{_where}/")) and listed.modified < cutoff:
                delete_object(listed.ref)  # one removed meanwhile by another server's janitor: nothing to do
                removed += 1
        return removed
    if not _where.is_dir():
        return 0
    for path in _where.iterdir():
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:  # removed meanwhile by its episode's end or another server's janitor
            pass
    return removed


def remove(snapshot: str | None) -> None:
    """Best effort: a snapshot that stays behind is reaped for its age."""
    if not (snapshot and set(snapshot) <= _ID_CHARS):
        return
    if isinstance(_where, str):
        try:
            delete_object(f"{_where}/{snapshot}")
        except ObjectStoreError as e:
            log.warning("cannot remove snapshot %s (the janitor reaps it for its age): %s", snapshot, e)
    else:
        (_where / snapshot).unlink(missing_ok=True)
