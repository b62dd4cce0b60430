"""Weights exports to the object store: /export_weights with ``export_dir`` an ``s3://<bucket>/<prefix>`` ref, for
inference servers on hosts that share no disk with the trainer (they pull it: roles/inference/weights_cache.py).

An export is written as a local one is, into a scratch directory (option ``export_scratch_dir``); then each of its
files goes to the object ``<prefix>/v<N>/<relative path>`` (objects.py's format: sha256 metadata, multipart over
8 MiB), and the manifest goes LAST: a manifest object means every file it lists is in the store. The manifest lists
each file with its size and sha256, so a server checks what it pulled against what the trainer wrote, not only
each object against its own metadata; the upload takes each object's sha256 metadata from it too, so a file is
hashed once, not once for the manifest and again for its object. The scratch directory is removed afterwards,
whatever happened.

Idempotent per version: an export whose manifest equals the one already in the store (the same weights, file for
file) uploads nothing, so a retried export answers at once and never disturbs a server pulling that version
meanwhile. One that differs (the trainer was reset for a new run and exports its version again) first removes the
old manifest: an upload that dies halfway leaves an export without a manifest, which servers refuse as incomplete,
never an old manifest over new files.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ...exports import EXPORT_FILES, EXPORT_MANIFEST
from ...objects import CorruptObjectError, ObjectNotFoundError, delete_object, parse_object_ref, read_object, write_object, write_object_from_file


def store_prefix(export_dir: str) -> str | None:
    """``export_dir`` without a trailing slash if it is an s3:// ref (ObjectRefError if it is a malformed one); None
    for a local directory."""
    if not export_dir.startswith("s3://"):
        return None
    return str(parse_object_ref(export_dir.rstrip("/")))


def default_scratch_dir() -> Path:
    return Path(tempfile.gettempdir()) / "rollflow-exports"


def version_ref(prefix: str, version: int) -> str:
    return f"{prefix}/v{version}"


def upload_export(directory: Path, ref: str) -> bool:
    """Puts the export in ``directory`` (its manifest listing its files) at ``ref``; False if the store already held
    this very export, so nothing was uploaded."""
    manifest_ref = f"{ref}/{EXPORT_MANIFEST}"
    manifest = (directory / EXPORT_MANIFEST).read_bytes()
    try:
        held = read_object(manifest_ref)
    except ObjectNotFoundError:
        held = None
    except CorruptObjectError:
        held = b""  # a damaged manifest of our own prefix: replaced like any other export that differs
    if held == manifest:
        return False
    if held is not None:
        delete_object(manifest_ref)
    for name, listed in sorted(json.loads(manifest)[EXPORT_FILES].items()):  # every file of the export but the manifest
        write_object_from_file(f"{ref}/{name}", directory / name, sha256=listed["sha256"])
    write_object(manifest_ref, manifest)
    return True
