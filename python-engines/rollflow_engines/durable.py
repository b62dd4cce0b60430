"""Durable files: what a crash of the process or of the machine cannot half-undo.

A rename makes a finished file or directory appear at once, but only an fsync of
the file (or every file of a directory) before it, and of the parent directory
after it, makes the rename survive a power loss: without them the new name can
point at empty or partial data after a reboot. ``ENOSPC``/``EDQUOT`` (a full disk
or quota) is told apart from other write failures so the caller can answer
"disk full, retry later" rather than "bad request".
"""
from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import BinaryIO, Callable

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


_DISK_FULL_TEXTS = tuple(os.strerror(n) for n in sorted(DISK_FULL_ERRNOS))


def is_disk_full(e: BaseException | None) -> bool:
    """True for the error of a write that found no space left (device or quota): an OSError, or an error that
    wraps one (its cause) or quotes it (safetensors' SafetensorError says "No space left on device")."""
    seen = 0
    while e is not None and seen < 8:
        if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS or any(t in str(e) for t in _DISK_FULL_TEXTS):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


def fsync_path(path: Path) -> None:
    """fsync one file or directory (a directory's fsync makes the names in it durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(directory: Path) -> None:
    """fsync every file and directory under ``directory``, and ``directory`` itself: before it is renamed into place."""
    for root, dirs, files in os.walk(directory):
        for name in files:
            fsync_path(Path(root) / name)
        for name in dirs:
            fsync_path(Path(root) / name)
    fsync_path(directory)


def write_text_durable(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` and fsync it (the caller renames or fsyncs the directory that holds it)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


class _Recorded(io.RawIOBase):
    """A file that remembers the OSError of a failed write: libraries that write through it (torch.save) raise
    their own error instead, which would hide that the disk was full."""

    def __init__(self, f: BinaryIO):
        self.f, self.error = f, None

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        try:
            return self.f.write(b)
        except OSError as e:
            self.error = e
            raise


def write_through(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """``write(file)`` into a new file at ``path``, fsynced; an OSError a write met is raised as itself."""
    with open(path, "wb") as f:
        recorded = _Recorded(f)
        try:
            write(recorded)
        except Exception as e:
            if recorded.error is not None and recorded.error is not e:
                raise recorded.error from e
            raise
        f.flush()
        os.fsync(f.fileno())
