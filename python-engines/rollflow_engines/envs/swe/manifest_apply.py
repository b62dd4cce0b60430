"""Applying a swe snapshot's manifest over a workspace's reset state (workspace_manifest.py records and saves it).

A manifest is read from a store the policy cannot write, but a restore trusts none of it: every entry's form is
checked before anything changes (``checked``), and ``apply`` writes through host_files' openat walk, so no link on the
way is followed whatever a path says (a path through one is ``snapshot_corrupt``); links and FIFOs are made with
symlinkat/mkfifoat in a directory reached the same way, and no setuid/setgid bit is kept (MODE_BITS).
"""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

from ...errors import RequestError
from ...sandbox.host_files import WorkspaceFileError, open_parent, write_bytes
from .. import snapshots

MODE_BITS = 0o1777  # kept of a mode: permissions and the sticky bit, never setuid/setgid

Entry = list  # ["f", mode, sha256, size] | ["d", mode] | ["l", target] | ["p", mode]


def apply(root: Path, uid: int | None, changes: dict[str, Entry | None], contents: dict[str, bytes]) -> None:
    """Removes what ``changes`` says is gone, then makes each entry, parents first, with ``contents`` by sha256 (all
    read and checked by the caller, so a damaged one changes nothing); a directory's mode comes last."""
    try:
        for rel in sorted(r for r, e in changes.items() if e is None):
            _remove(root, uid, rel)
        made = sorted((r for r, e in changes.items() if e is not None), key=lambda r: (r.count("/"), r))
        for rel in made:
            _put(root, uid, rel, changes[rel], contents)
        for rel in reversed([r for r in made if changes[r][0] == "d"]):  # last, deepest first: a read-only
            _chmod(root, uid, rel, changes[rel][1])                       # directory still took its entries
    except WorkspaceFileError as e:  # a path no walk of the server's could have recorded
        raise _corrupt(str(e)) from e


def _remove(root: Path, uid: int | None, rel: str) -> None:
    fd, name = open_parent(root, rel, uid)
    try:
        _remove_at(fd, name)
    finally:
        os.close(fd)


def _put(root: Path, uid: int | None, rel: str, entry: Entry, contents: dict[str, bytes]) -> None:
    kind = entry[0]
    if kind == "f":
        fd, name = open_parent(root, rel, uid)
        try:
            _remove_unless(fd, name, stat.S_ISREG)
        finally:
            os.close(fd)
        write_bytes(root, rel, contents[entry[2]], uid)
    fd, name = open_parent(root, rel, uid)
    try:
        if kind == "d":
            if not _remove_unless(fd, name, stat.S_ISDIR):
                os.mkdir(name, 0o700, dir_fd=fd)
        elif kind == "l":
            _remove_unless(fd, name, lambda m: False)
            os.symlink(entry[1], name, dir_fd=fd)
        elif kind == "p":
            _remove_unless(fd, name, lambda m: False)
            os.mkfifo(name, 0o600, dir_fd=fd)
        if uid is not None:
            os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)
        if kind in ("f", "p"):  # just made by the server, not a link: chmod may follow the name
            os.chmod(name, entry[1], dir_fd=fd)
    finally:
        os.close(fd)


def _chmod(root: Path, uid: int | None, rel: str, mode: int) -> None:
    fd, name = open_parent(root, rel, uid)
    try:
        if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):  # made by _put, nothing ran since
            os.chmod(name, mode, dir_fd=fd)
    finally:
        os.close(fd)


def _remove_unless(fd: int, name: str, keep) -> bool:
    """Removes what is at ``name`` unless its mode passes ``keep``; whether something is left there."""
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return False
    if keep(mode):
        return True
    _remove_at(fd, name)
    return False


def _remove_at(fd: int, name: str) -> None:
    try:
        if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            shutil.rmtree(name, dir_fd=fd)  # links inside are removed, never followed
        else:
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass


def _corrupt(why: str) -> RequestError:
    return RequestError("restore", f"the snapshot's manifest is damaged: {why}", None, snapshots.CORRUPT)


def checked(changes: Any) -> dict[str, Entry | None]:
    """The manifest's changes if every entry is well formed, else snapshot_corrupt (never applied in part)."""
    if not isinstance(changes, dict):
        raise _corrupt("no changes")
    for rel, entry in changes.items():
        if entry is None:
            continue
        ok = isinstance(entry, list) and entry and entry[0] in ("f", "d", "l", "p")
        if ok and entry[0] == "f":
            ok = len(entry) == 4 and isinstance(entry[2], str) and len(entry[2]) == 64 and isinstance(entry[3], int)
        elif ok and entry[0] in ("d", "p"):
            ok = len(entry) == 2
        elif ok:
            ok = len(entry) == 2 and isinstance(entry[1], str) and "\x00" not in entry[1]
        if ok and entry[0] != "l":
            ok = isinstance(entry[1], int) and not isinstance(entry[1], bool) and entry[1] == entry[1] & MODE_BITS
        if not ok:
            raise _corrupt(f"entry {str(rel)[:200]!r} is {str(entry)[:200]}")
    return changes
