"""The workspace filesystem: a tmpfs per workspace, capped in bytes and in inodes.

A workspace record ``<root>/<owner>/<id>`` is the mount point of its own tmpfs (``size=``,
``nr_inodes=``), mounted by the server (root) before anything is written in it; ``workspace/``, ``tmp/``
and the lock file live inside it. So the sandbox's /workspace and /tmp together hold at most
``disk_mb`` of data and ``max_inodes`` files and directories; past either, a write or a create fails
with ENOSPC inside the sandbox and nothing outside notices. Why a tmpfs rather than a loop-mounted
image or quotas:

- start latency: one mount(2), well under a millisecond; a loop image needs mkfs and a loop device;
- cleanup: umount frees everything at once, however many files the code made (deleting 100 000 files
  one by one is what ``rm -rf`` would do otherwise), and a crashed server's tmpfs is found by the
  janitor as a mount under the root and detached the same way;
- cost: the files are in memory (no swap here), charged to the memory cgroup of whoever wrote them.
  A workspace holds at most ``disk_mb`` of it, so N open workspaces pin at most N x ``disk_mb``.

Quotas would need the root's filesystem to be mounted with them; a tmpfs works wherever we are root.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

from .mountinfo import mounts

MS_NOSUID, MS_NODEV = 0x2, 0x4
MNT_DETACH = 2

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)


def mount_tmpfs(path: Path, size_mb: int, inodes: int) -> None:
    """Mount a fresh tmpfs on ``path`` (root-owned, 0755; nosuid, nodev); OSError if the kernel refuses."""
    options = f"size={size_mb}m,nr_inodes={inodes},mode=0755".encode()
    if _libc.mount(b"rollflow-workspace", os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount -t tmpfs on {path}: {os.strerror(err)}")


def mounts_under(path: Path) -> list[Path]:
    """Mount points at or below ``path`` in this mount namespace, deepest first."""
    top = Path(os.path.abspath(path))
    found = {m.point for m in mounts() if m.point == top or m.point.is_relative_to(top)}
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def unmount_all(path: Path) -> None:
    """Detach every mount at or below ``path`` (lazily: a mount still referenced somewhere is freed with
    its last reference). Only ever called once the workspace's processes are gone."""
    for point in mounts_under(path):
        if _libc.umount2(os.fsencode(point), MNT_DETACH) != 0:
            err = ctypes.get_errno()
            if err not in (22, 2):  # EINVAL: not a mount point any more; ENOENT: gone
                raise OSError(err, f"umount {point}: {os.strerror(err)}")
