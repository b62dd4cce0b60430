"""One uid per open workspace, unique on this machine, and the processes running under it.

The env server runs as root, and the kernel never enforces RLIMIT_NPROC for root; it counts every
process of a uid machine-wide. So each workspace runs its commands under a uid of its own, taken
from a pool of ``POOL_SIZE`` uids no account uses: the process cap of one sandbox then holds while
others run, and a fork bomb cannot starve its neighbours or the server. A uid is held by an
exclusive ``flock`` on ``LOCK_DIR/<uid>`` for as long as its workspace is open, so several env
servers share the pool safely, and the kernel releases it when a holder dies. A uid that still has
processes (a dying sandbox of a killed server) is skipped until they are gone.
"""
from __future__ import annotations

import fcntl
import os
import random
import time
from pathlib import Path

from .errors import SandboxError

UID_BASE = 1_500_000_000  # far above any account's uid and the usual subuid ranges
POOL_SIZE = 4096
LOCK_DIR = Path("/run/lock/rollflow-sandbox-uids") if Path("/run/lock").is_dir() else Path("/tmp/rollflow-sandbox-uids")


class UidLease:
    """A uid held until ``release``; the lock file records nothing, its lock is the lease."""

    def __init__(self, uid: int, fd: int):
        self.uid, self._fd = uid, fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing drops the flock
            self._fd = -1


def lease_uid() -> UidLease:
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    start = random.randrange(POOL_SIZE)  # spread concurrent servers over the pool
    busy = processes_by_uid()
    for i in range(POOL_SIZE):
        uid = UID_BASE + (start + i) % POOL_SIZE
        if uid in busy:
            continue
        fd = os.open(LOCK_DIR / str(uid), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise SandboxError(f"all {POOL_SIZE} sandbox uids are in use (lock files in {LOCK_DIR}): too many workspaces open at once")


def _real_uid(pid: str) -> int | None:
    # /proc/<pid>/status, not a stat of /proc/<pid>: a process that made itself non-dumpable shows as root there.
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass  # the process exited while we looked
    return None


def processes_by_uid() -> dict[int, list[int]]:
    """Pids of every process of a pool uid, by uid."""
    found: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            uid = _real_uid(entry.name)
            if uid is not None and UID_BASE <= uid < UID_BASE + POOL_SIZE:
                found.setdefault(uid, []).append(int(entry.name))
    return found


def kill_uid(uid: int, timeout_s: float = 10.0) -> None:
    """SIGKILL every process of ``uid`` until none is left; SandboxError if some survive ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while pids := processes_by_uid().get(uid):
        if time.monotonic() > deadline:
            raise SandboxError(f"processes {pids[:10]} of sandbox uid {uid} survived SIGKILL for {timeout_s:g} s")
        for pid in pids:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        time.sleep(0.01)  # the kernel tears a killed pid namespace down asynchronously
