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

Blobs (the swe env's incremental snapshots, envs/swe/workspace_manifest.py): a snapshot may name file contents kept
beside it, content-addressed, as ``<where>/blobs/<sha256>`` (zlib-compressed bytes whose content has that sha256).
A blob is written once (save_blob skips one already there) and shared by every snapshot that names it; a blob
that is gone is a 404 like its snapshot, one whose content does not match its name ``snapshot_corrupt``. Blobs are
not removed with their snapshots (others may share them): reap_blobs sweeps those that no remaining snapshot names.
"""
from __future__ import annotations

import hashlib
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
_SHA256 = re.compile(r"^[0-9a-f]{64}$")  # what save_blob names a blob
BLOBS = "blobs"
RESET = "reset"  # what a reference to an episode's reset state names in place of a stored id: nothing to read or remove
BLOB_LEVEL = 1  # zlib level of blobs: source text shrinks about 3x at several times level 6's speed


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


def in_bucket() -> bool:
    """Whether snapshots go to an object store (each write a round trip) rather than a directory."""
    return isinstance(_where, str)


def save(value: dict[str, Any], carried: dict[str, bytes] | None = None) -> str:
    """Writes the snapshot; its id. ``carried``: file contents by sha256, kept in the snapshot itself after its JSON
    (uncompressed: zlib would cost more time than the bytes it saves) instead of as blobs beside it, so a step that
    changed a few small files writes one file or object. load gives them back, each checked against its name, as
    ``value["carried"]``."""
    snapshot = secrets.token_hex(16)
    if carried:
        value = {**value, "carried": [[sha, len(content)] for sha, content in carried.items()]}
    data = zlib.compress(json.dumps(value).encode()) + b"".join((carried or {}).values())
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


def reference(stored: str, counters: dict[str, int]) -> str:
    """A snapshot id for a step that changed nothing the stored snapshot holds but its counters: that snapshot, with
    these counters in place of its own (``<id>+turn=4,chars=310``). Nothing is written for it; load reads it back.
    ``stored`` RESET: the episode's reset state, which the restoring env puts together itself (reset runs first)."""
    return f"{stored}+" + ",".join(f"{name}={value}" for name, value in counters.items())


def stored_id(snapshot: str | None) -> str | None:
    """The stored snapshot an id names (a reference's, or the id itself)."""
    return snapshot.partition("+")[0] if snapshot else None


def load(snapshot: str) -> dict[str, Any]:
    """The saved value (a reference's with its counters); NotFoundError (404, field ``restore``) for an unknown or
    removed id, or a malformed one, ``snapshot_corrupt`` (400) for damaged bytes, UnavailableError (503) when the store
    cannot be reached. A reference to the reset state loads as ``{"reset": True, "counters": …}``: the env checks
    the counters' names against its own."""
    stored, plus, later = snapshot.partition("+")
    if stored == RESET and plus:
        return {"reset": True, "counters": _later_counters(None, later, snapshot)}
    if not set(stored) <= _ID_CHARS:
        raise NotFoundError("restore", f"no snapshot {snapshot!r} in {_where}", snapshot)
    data = _read_stored(stored, f"snapshot {stored!r}", snapshot)
    try:
        unpacking = zlib.decompressobj()
        value = json.loads(unpacking.decompress(data))
        if not unpacking.eof:
            raise ValueError("it ends inside its compressed JSON")
        if "carried" in value or unpacking.unused_data:
            value["carried"] = _carried(value.get("carried"), unpacking.unused_data)
    except (zlib.error, ValueError, TypeError) as e:
        raise RequestError("restore", f"snapshot {stored!r} in {_where} is damaged, not restoring it: {e}", snapshot, CORRUPT) from e
    if plus:
        value["counters"] = _later_counters(value.get("counters"), later, snapshot)
    return value


def _carried(listed: Any, tail: bytes) -> dict[str, bytes]:
    """The contents a snapshot carries after its JSON (``listed``: [sha256, length] each), each checked against its
    name; ValueError for anything else (bytes no entry accounts for included)."""
    if not isinstance(listed, list):
        raise ValueError("bytes follow its JSON, which lists no content carried")
    contents, at = {}, 0
    for item in listed:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and _SHA256.match(item[0])
                and isinstance(item[1], int) and not isinstance(item[1], bool) and 0 <= item[1] <= len(tail) - at):
            raise ValueError(f"a content carried is listed as {str(item)[:120]}")
        content = tail[at:at + item[1]]
        if hashlib.sha256(content).hexdigest() != item[0]:
            raise ValueError(f"the content carried as {item[0]} does not hold what its name says")
        contents[item[0]] = content
        at += item[1]
    if at != len(tail):
        raise ValueError(f"{len(tail) - at} bytes after the contents it carries")
    return contents


def _later_counters(saved: Any, later: str, snapshot: str) -> dict[str, int]:
    """The counters a reference names: each a count, with the same names as the stored snapshot's (``saved``; None
    for the reset state, whose names the env checks)."""
    pairs = [pair.partition("=") for pair in later.split(",")]
    counters = {name: int(value) for name, _, value in pairs if value.isdigit() and value.isascii()}
    same_names = saved is None or isinstance(saved, dict) and set(counters) == set(saved)
    if not same_names or len(counters) != len(pairs):
        raise NotFoundError("restore", f"no snapshot {snapshot!r} in {_where}: its counters are not those snapshot {stored_id(snapshot)!r} keeps", snapshot)
    return counters


def _read_stored(key: str, what: str, given: str) -> bytes:
    """The bytes at ``<where>/<key>``: NotFoundError (404) when absent, ``snapshot_corrupt`` when the store's checksum
    fails, UnavailableError (503) when the store cannot be reached; ``what`` names it in the messages."""
    if isinstance(_where, str):
        try:
            return read_object(f"{_where}/{key}")
        except ObjectNotFoundError:
            raise NotFoundError("restore", f"no {what} in {_where}", given) from None
        except CorruptObjectError as e:
            raise RequestError("restore", f"{what} is damaged, not restoring it: {e}", given, CORRUPT) from e
        except ObjectStoreError as e:
            raise UnavailableError("restore", f"cannot read {what}: {e}", given) from e
    path = _where / key
    if not path.is_file():
        raise NotFoundError("restore", f"no {what} in {_where}", given)
    return path.read_bytes()


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
    """Removes the stored snapshot an id names (a reference's too). Best effort: one that stays behind is reaped for its
    age."""
    snapshot = stored_id(snapshot)
    if not (snapshot and set(snapshot) <= _ID_CHARS):
        return
    if isinstance(_where, str):
        try:
            delete_object(f"{_where}/{snapshot}")
        except ObjectStoreError as e:
            log.warning("cannot remove snapshot %s (the janitor reaps it for its age): %s", snapshot, e)
    else:
        (_where / snapshot).unlink(missing_ok=True)


# ---- blobs: file contents named by their sha256, shared by snapshots (see the module's doc)

_blobs_put: set[tuple[str, str]] = set()  # blobs this process put in a bucket (where, sha256)


def save_blob(sha256: str, data: bytes) -> int:
    """Keeps ``data`` (whose sha256 the caller just took) as a blob; the bytes written, 0 when it was there already. SnapshotNotSaved when it cannot be written. In a directory a blob found is touched, so reap_blobs,
    which sweeps by age, does not take it from under the snapshot about to name it."""
    try:
        if isinstance(_where, str):
            # A bucket: no cheap test for presence (a HEAD costs what a small PUT does), so one this process has not
            # written is put again; the same name holds the same bytes, so a second put changes nothing.
            if (_where, sha256) in _blobs_put:
                return 0
            packed = zlib.compress(data, BLOB_LEVEL)
            write_object(f"{_where}/{BLOBS}/{sha256}", packed)
            _blobs_put.add((_where, sha256))
            return len(packed)
        blobs = _where / BLOBS
        path = blobs / sha256
        try:
            os.utime(path)
            return 0
        except FileNotFoundError:
            pass
        blobs.mkdir(parents=True, exist_ok=True)
        part = blobs / f".{sha256}.{secrets.token_hex(4)}.part"
        packed = zlib.compress(data, BLOB_LEVEL)
        part.write_bytes(packed)
        os.replace(part, path)  # whole or absent; two servers writing the same blob write the same bytes
        return len(packed)
    except (OSError, ObjectStoreError) as e:
        raise SnapshotNotSaved(f"cannot save a blob in {_where}: {e}") from e


def load_blob(sha256: str) -> bytes:
    """The blob's content, its sha256 checked; errors as load's (field ``restore``: the snapshot that names it)."""
    if not _SHA256.match(sha256):
        raise RequestError("restore", f"a snapshot names a malformed blob {sha256[:80]!r}", sha256[:80], CORRUPT)
    data = _read_stored(f"{BLOBS}/{sha256}", f"the snapshot's blob {sha256}", sha256)
    try:
        content = zlib.decompress(data)
    except zlib.error as e:
        raise RequestError("restore", f"the snapshot's blob {sha256} is damaged: {e}", sha256, CORRUPT) from e
    if hashlib.sha256(content).hexdigest() != sha256:
        raise RequestError("restore", f"the snapshot's blob {sha256} does not hold what its name says", sha256, CORRUPT)
    return content


def reap_blobs(max_age_s: float) -> int:
    """Removes blobs that no remaining snapshot names (a snapshot lists them under ``blobs``) and that were not
    written or reused for ``max_age_s``; run after reap. The age keeps a blob an episode is saving right now (written
    or touched before its snapshot is) from being swept. A blob swept anyway (a bucket's blob reused by a server that
    trusted its own record of having put it) makes its snapshot a 404: the client replays that episode from its start."""
    cutoff, removed = time.time() - max_age_s, 0
    if isinstance(_where, str):
        named = _named_blobs([listed.ref.removeprefix(f"{_where}/") for listed in list_objects_modified(f"{_where}/")
                              if _ID.match(listed.ref.removeprefix(f"{_where}/"))])
        for listed in list_objects_modified(f"{_where}/{BLOBS}/"):
            sha = listed.ref.removeprefix(f"{_where}/{BLOBS}/")
            if _SHA256.match(sha) and sha not in named and listed.modified < cutoff:
                delete_object(listed.ref)
                _blobs_put.discard((_where, sha))
                removed += 1
        return removed
    blobs = _where / BLOBS
    if not blobs.is_dir():
        return 0
    named = _named_blobs([p.name for p in _where.iterdir() if _ID.match(p.name)])
    for path in blobs.iterdir():
        try:
            if path.name not in named and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            pass
    return removed


def _named_blobs(snapshot_ids: list[str]) -> set[str]:
    named: set[str] = set()
    for snapshot in snapshot_ids:
        try:
            value = load(snapshot)
        except UnavailableError:  # unread, it might name any blob: no sweep this time
            raise
        except RequestError:  # removed meanwhile (a 404), or damaged: it restores nothing, so it keeps nothing
            continue
        blobs = value.get("blobs") if isinstance(value, dict) else None
        named.update(b for b in blobs or [] if isinstance(b, str))
    return named
