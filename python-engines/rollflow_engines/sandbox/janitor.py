"""The janitor: deletes workspaces nobody will remove.

A workspace ``<root>/<owner>/<id>`` is removed when

- it is open in this process and its owner is not in ``live_owners`` (it leaked: removed through its
  ``Workspace``, which kills its processes first);
- no process holds its lock: the process that opened it died (its sandboxes died with it,
  ``--die-with-parent``) or crashed half way through creating it;
- it is older than ``max_age_s``, whoever holds it (its uid's processes are killed first; the holder's
  next ``run`` raises SandboxError).

A workspace held open by another live process (another env server sharing the root) is otherwise left
alone, whatever its owner. A directory without a lock file is one being created, or a creation that
crashed: it is removed once older than ``CREATING_GRACE_S``. Removing a workspace unmounts its tmpfs
first (``delete_tree``). Each sweep also removes the empty run cgroups a killed server left
(``cgroups.sweep``).
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from pathlib import Path

from . import cgroups
from .errors import SandboxError
from .uids import kill_uid
from .workspace import LOCK_FILE, delete_tree, open_here

log = logging.getLogger(__name__)
CREATING_GRACE_S = 60.0  # creating a workspace takes milliseconds; a lock-less directory this old is debris


def reap_orphans(root: Path, *, max_age_s: float, live_owners: set[str]) -> int:
    """Remove orphaned and over-age workspaces under ``root``; returns how many were removed."""
    root = Path(root).absolute()
    if cgroups.memory_mode().kind != "rlimit":
        if left := cgroups.sweep():
            log.info("janitor: removed %d empty sandbox cgroup(s) left by a killed server", left)
    if not root.is_dir():
        return 0
    removed = 0
    now = time.time()
    for owner_dir in _subdirs(root):
        for record in _subdirs(owner_dir):
            try:
                if _reap(record, owner_dir.name, now, max_age_s, live_owners):
                    removed += 1
            except (OSError, SandboxError) as e:
                log.warning("janitor: could not remove workspace %s: %s", record, e)
        try:
            owner_dir.rmdir()  # only succeeds once the owner has no workspace left
        except OSError:
            pass
    if removed:
        log.info("janitor: removed %d workspace(s) under %s", removed, root)
    return removed


def _subdirs(path: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []


def _reap(record: Path, owner: str, now: float, max_age_s: float, live_owners: set[str]) -> bool:
    mine = open_here(record)
    lock = record / LOCK_FILE
    try:
        age = now - lock.stat().st_mtime  # written once, at creation, outside the sandbox's reach
    except FileNotFoundError:
        if now - record.stat().st_mtime > CREATING_GRACE_S:
            delete_tree(record)
            return True
        return False
    too_old = age > max_age_s
    if mine is not None:
        if too_old or owner not in live_owners:
            mine.remove()
            return True
        return False
    fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = False
        except BlockingIOError:
            held = True
        if held and not too_old:
            return False
        if held:  # a live process's workspace past max_age_s: stop its sandbox before deleting its files (its uid
            # is still leased to that process, so no other workspace can be running under it)
            uid = json.loads(os.read(fd, 4096) or b"{}").get("uid")
            if uid is not None:
                kill_uid(uid)
        delete_tree(record)
        cgroups.remove_workspace_cgroups(record.name)  # a run of a killed server leaves its (empty) cgroup
        return True
    finally:
        os.close(fd)
