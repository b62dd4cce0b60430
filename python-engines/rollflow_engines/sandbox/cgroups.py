"""A memory cgroup per sandboxed run, so ``Limits.memory_total_mb`` bounds all the memory the run holds.

RLIMIT_AS bounds each process's address space, not what the kernel holds for the sandbox: a memfd or
shared-memory segment filled with ``write`` is in no process's address space, and ``max_procs``
processes each get their own RLIMIT_AS. A memory cgroup counts every page charged to it (anonymous,
memfd/shmem/tmpfs, page cache, kernel memory) and OOM-kills inside the group at its limit.

Which flavour, decided once per process (``memory_mode``), logged once, in this order:

- **cgroup2** with the memory controller available in this process's cgroup and delegable (the
  "no internal processes" rule lets a non-root cgroup with processes in it enable it for children
  only if it is the root): ``memory.max``, ``memory.swap.max = 0``, ``memory.oom.group = 1``;
- **cgroup1** memory hierarchy, writable (we are root): ``memory.limit_in_bytes`` and, where swap
  accounting exists, ``memory.memsw.limit_in_bytes`` (so swap does not dodge the limit);
- **rlimit**: neither is usable; only RLIMIT_AS per process holds. Logged as a WARNING with the reason.

Run cgroups live under ``<this process's cgroup>/rollflow-sandbox/`` (nested: a limit on the server's
own cgroup still binds its sandboxes), named ``<workspace id>-<n>``. The launched process joins its
cgroup before it execs anything (``command.cgroup_wrapper``), so every process of the sandbox is in it.
A run removes its cgroup when it ends; a server killed mid-run leaves an empty one, which ``sweep``
(called by the janitor) removes once it is empty and older than a grace period.
"""
from __future__ import annotations

import errno
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .mountinfo import mounts

log = logging.getLogger(__name__)

BASE_NAME = "rollflow-sandbox"
LEFTOVER_GRACE_S = 60.0  # a run's cgroup gets its process within milliseconds of being made
_RMDIR_TRIES_S = 5.0     # the kernel frees a cgroup shortly after its last process is reaped

Kind = Literal["cgroup2", "cgroup1", "rlimit"]


@dataclass(frozen=True)
class MemoryMode:
    kind: Kind
    base: Path | None  # where run cgroups are made (None in rlimit mode)
    reason: str        # why this mode, naming what refused the better ones

    def describe(self) -> str:
        if self.kind == "rlimit":
            return f"memory: RLIMIT_AS per process only, no cgroup ({self.reason})"
        return f"memory: {self.kind} memory cgroup per run under {self.base} ({self.reason})"


_mode: MemoryMode | None = None
_lock = threading.Lock()


def memory_mode() -> MemoryMode:
    """The flavour in force for this process (detected and logged once)."""
    global _mode
    with _lock:
        if _mode is None:
            _mode = _detect()
            (log.warning if _mode.kind == "rlimit" else log.info)("sandbox %s", _mode.describe())
        return _mode


def _mounts() -> tuple[Path | None, Path | None]:
    """(the cgroup2 mount, the cgroup1 memory mount)."""
    v2 = next((m.point for m in mounts() if m.fstype == "cgroup2"), None)
    v1 = next((m.point for m in mounts() if m.fstype == "cgroup" and "memory" in m.options), None)
    return v2, v1


def _own_cgroups() -> tuple[str | None, str | None]:
    """(this process's cgroup2 path, its cgroup1 memory path) from /proc/self/cgroup."""
    v2 = v1 = None
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controllers == "":
                v2 = path
            elif "memory" in controllers.split(","):
                v1 = path
    return v2, v1


def _detect() -> MemoryMode:
    refused = []
    mount2, mount1 = _mounts()
    own2, own1 = _own_cgroups()
    if mount2 is not None and own2 is not None:
        own = mount2 / own2.lstrip("/")
        controllers = _read(own / "cgroup.controllers").split()
        if "memory" not in controllers:
            refused.append(f"cgroup2 at {mount2}: the memory controller is not available in {own} "
                           f"(cgroup.controllers: {' '.join(controllers) or 'none'})")
        else:
            try:
                base = own / BASE_NAME
                if "memory" not in _read(own / "cgroup.subtree_control").split():
                    (own / "cgroup.subtree_control").write_text("+memory")
                base.mkdir(exist_ok=True)
                if "memory" not in _read(base / "cgroup.subtree_control").split():
                    (base / "cgroup.subtree_control").write_text("+memory")
                return MemoryMode("cgroup2", base, "the memory controller is delegated")
            except OSError as e:
                refused.append(f"cgroup2 at {mount2}: cannot delegate the memory controller below {own}: {e}")
    else:
        refused.append("no cgroup2 mount" if mount2 is None else "this process is in no cgroup2 cgroup")
    if mount1 is not None and own1 is not None:
        base = mount1 / own1.lstrip("/") / BASE_NAME
        try:
            base.mkdir(exist_ok=True)
            return MemoryMode("cgroup1", base, "; ".join([*refused, "cgroup1 memory hierarchy is writable"]))
        except OSError as e:
            refused.append(f"cgroup1 memory hierarchy at {mount1}: cannot create {base}: {e}")
    else:
        refused.append("no cgroup1 memory hierarchy mounted")
    return MemoryMode("rlimit", None, "; ".join(refused))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class RunCgroup:
    """One run's memory cgroup: made with its limit, joined by the launched process, removed after."""

    def __init__(self, mode: MemoryMode, name: str, limit_bytes: int):
        assert mode.base is not None
        self.kind, self.path = mode.kind, mode.base / name
        self.path.mkdir()
        try:
            if self.kind == "cgroup2":
                (self.path / "memory.max").write_text(str(limit_bytes))
                if (self.path / "memory.swap.max").exists():  # absent without swap accounting
                    (self.path / "memory.swap.max").write_text("0")
                (self.path / "memory.oom.group").write_text("1")  # an OOM kills the whole sandbox, not one process
            else:
                (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                memsw = self.path / "memory.memsw.limit_in_bytes"
                if memsw.exists():  # swap accounting on: memory + swap, so pages pushed to swap still count
                    memsw.write_text(str(limit_bytes))
        except BaseException:
            self.remove()
            raise

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def oom_kills(self) -> int:
        """How many processes the kernel OOM-killed in this cgroup."""
        events = self.path / ("memory.events" if self.kind == "cgroup2" else "memory.oom_control")
        for line in _read(events).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self) -> None:
        """rmdir, retried while the kernel finishes tearing the run's processes down; a cgroup that stays
        busy is left for the janitor's sweep, with a warning."""
        deadline = time.monotonic() + _RMDIR_TRIES_S
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() > deadline:
                    log.warning("sandbox cgroup %s could not be removed (%s); the janitor will retry", self.path, e)
                    return
                time.sleep(0.005)


def remove_workspace_cgroups(workspace_id: str, mode: MemoryMode | None = None) -> None:
    """Remove the empty run cgroups of one workspace (``<id>-<n>``) now, without the sweep's grace period:
    for the janitor, once it knows that workspace's server is dead."""
    mode = mode or memory_mode()
    if mode.base is None:
        return
    for path in mode.base.glob(f"{workspace_id}-*"):
        try:
            path.rmdir()
        except OSError:
            continue  # still has processes (they are being killed), or gone meanwhile: the sweep retries


def sweep(mode: MemoryMode | None = None, grace_s: float = LEFTOVER_GRACE_S) -> int:
    """Remove run cgroups left by a killed server: empty and older than ``grace_s``. Returns how many."""
    mode = mode or memory_mode()
    if mode.base is None:
        return 0
    removed = 0
    now = time.time()
    try:
        entries = [e for e in os.scandir(mode.base) if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return 0
    for entry in entries:
        path = Path(entry.path)
        try:
            if _read(path / "cgroup.procs").strip() or now - entry.stat().st_mtime < grace_s:
                continue
            path.rmdir()
            removed += 1
        except OSError:
            continue  # taken again, or gone meanwhile
    return removed
