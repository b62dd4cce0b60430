"""The server's own reads and writes of workspace files, which the sandboxed code may have shaped.

Everything in a workspace is the model's: a name may be a symlink (to anywhere, or to itself), a FIFO
that blocks a reader forever, a device, a directory of 100 000 files, a name of 300 characters or one
with a NUL byte. The server touches workspace files only through these functions, which

- walk the path one component at a time (``openat`` with ``O_NOFOLLOW``), so no symlink is followed,
  whether it leads outside or loops;
- open with ``O_NONBLOCK`` and then require a regular file (``fstat``), so a FIFO or device is refused,
  never waited on;
- read at most ``max_bytes`` and refuse a larger file.

Each refusal is a ``WorkspaceFileError`` (a ``ValueError``) whose message says what the path is, fit to
show the model as an observation: it is the model's doing, never the server's failure.
"""
from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path, PurePosixPath

MAX_PATH_CHARS = 1024  # longer is refused before any system call (PATH_MAX is 4096; a component's limit is 255 bytes)


class WorkspaceFileError(ValueError):
    """A workspace path the server will not read or write, and why (shown to the model); ``errno`` the system's
    error when one was the reason."""

    def __init__(self, message: str, errno_: int | None = None):
        super().__init__(message)
        self.errno = errno_


def _parts(rel: str) -> list[str]:
    if not isinstance(rel, str) or not rel:
        raise WorkspaceFileError("an empty path")
    if "\x00" in rel:
        raise WorkspaceFileError("the path holds a NUL byte")
    if len(rel) > MAX_PATH_CHARS:
        raise WorkspaceFileError(f"the path is {len(rel)} characters long (at most {MAX_PATH_CHARS})")
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts:
        raise WorkspaceFileError(f"path {rel!r} leads outside the workspace")
    parts = [p for p in pure.parts if p != "."]
    if not parts:
        raise WorkspaceFileError(f"path {rel!r} names the workspace itself, not a file")
    try:
        for part in parts:
            if len(part.encode("utf-8", errors="surrogateescape")) > 255:
                raise WorkspaceFileError(f"a part of path {rel[:80]!r}… is longer than 255 bytes")
    except UnicodeError:
        raise WorkspaceFileError("the path is not valid text") from None
    return parts


def _why(e: OSError, rel: str) -> WorkspaceFileError:
    reasons = {errno.ENOENT: "does not exist", errno.ELOOP: "is a symlink (links are not followed)",
               errno.ENOTDIR: "goes through something that is not a directory (or a symlink)",
               errno.ENAMETOOLONG: "is too long", errno.EACCES: "is not accessible", errno.EISDIR: "is a directory",
               errno.ENXIO: "is a FIFO or socket with no peer"}
    return WorkspaceFileError(f"{rel[:200]} {reasons.get(e.errno, os.strerror(e.errno or 0).lower())}", e.errno)


def _open_parent(root: Path, parts: list[str], rel: str, create_dirs: bool = False, uid: int | None = None) -> int:
    """An fd of the directory holding ``parts[-1]``, reached without following any link; missing directories
    are made (owned by ``uid``) when ``create_dirs``."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if not create_dirs:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                if uid is not None:
                    os.fchown(nxt, uid, uid)
            os.close(fd)
            fd = nxt
        return fd
    except OSError as e:
        os.close(fd)
        raise _why(e, rel) from None


def read_bytes(root: Path, rel: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``rel`` under ``root``; WorkspaceFileError if it is anything else or too large."""
    parts = _parts(rel)
    parent = _open_parent(root, parts, rel)
    try:
        return _read(parts[-1], rel, max_bytes, parent)
    finally:
        os.close(parent)


def _read(name: str, label: str, max_bytes: int, dir_fd: int | None = None) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        raise _why(e, label) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceFileError(f"{label[:200]} is not a regular file")
        if info.st_size > max_bytes:
            raise WorkspaceFileError(f"{label[:200]} is {info.st_size} bytes (at most {max_bytes} are read)")
        chunks, left = [], max_bytes + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:  # it grew after fstat
            raise WorkspaceFileError(f"{label[:200]} is over {max_bytes} bytes")
        return data
    finally:
        os.close(fd)


def read_walked(path: str, label: str, max_bytes: int) -> bytes:
    """read_bytes of a file a walk of the server's just reached without following links (no sandboxed process runs
    meanwhile, so only the last name can have become a link): opened without following it, never waited on."""
    return _read(path, label, max_bytes)


def normalized(rel: str) -> str:
    """``rel`` as a walk names it (``./a//b`` is ``a/b``); WorkspaceFileError if it leads outside or is malformed."""
    return "/".join(_parts(rel))


def open_parent(root: Path, rel: str, uid: int | None) -> tuple[int, str]:
    """An fd of the directory that holds ``rel`` (the caller closes it) and ``rel``'s last name, reached without
    following any link; missing directories on the way are made, owned by ``uid``. For the server's own restores."""
    parts = _parts(rel)
    return _open_parent(root, parts, rel, create_dirs=True, uid=uid), parts[-1]


def lstat_at(root: Path, rel: str) -> os.stat_result | None:
    """The lstat of ``rel`` reached without following any link, or None when it is gone or a name on its way is no
    longer a directory (nothing a walk would reach is there). Other failures (EACCES) are WorkspaceFileError."""
    parts = _parts(rel)
    try:
        parent = _open_parent(root, parts, rel)
    except WorkspaceFileError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):  # ELOOP: a link where a directory was
            return None
        raise
    try:
        return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(parent)


def read_text(root: Path, rel: str, max_bytes: int) -> str:
    return read_bytes(root, rel, max_bytes).decode("utf-8", errors="replace")


def write_text(root: Path, rel: str, text: str, uid: int | None) -> None:
    write_bytes(root, rel, text.encode("utf-8", errors="replace"), uid)


def write_bytes(root: Path, rel: str, content: bytes, uid: int | None) -> None:
    """Replace (or create) the regular file ``rel``, owned by ``uid``; an existing non-regular file or a link
    on the way is refused. The new contents are written beside it and renamed over, so a link planted at the
    name is replaced, never followed."""
    parts = _parts(rel)
    parent = _open_parent(root, parts, rel, create_dirs=True, uid=uid)
    staging = f".{parts[-1][:200]}.rollflow-new"
    try:
        try:
            existing = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            if not stat.S_ISREG(existing.st_mode):
                raise WorkspaceFileError(f"{rel[:200]} exists and is not a regular file")
        except FileNotFoundError:
            pass
        try:
            os.unlink(staging, dir_fd=parent)
        except FileNotFoundError:
            pass
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent)
        try:
            data = memoryview(content)
            while data:
                data = data[os.write(fd, data):]
            if uid is not None:
                os.fchown(fd, uid, uid)
        finally:
            os.close(fd)
        os.rename(staging, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
    except OSError as e:
        raise _why(e, rel) from None
    finally:
        os.close(parent)


class WorkspaceOverLimit(Exception):
    """The workspace holds more than the server will walk (entries, bytes or time); the message says which."""


def walk(root: Path, *, max_entries: int, max_seconds: float, skip_dirs: frozenset[str] = frozenset()):
    """(relative path, DirEntry) of every entry under ``root`` (a directory's before those in it), links never
    followed; WorkspaceOverLimit once more than ``max_entries`` entries were seen or the walk took ``max_seconds``."""
    seen = 0
    deadline = time.monotonic() + max_seconds
    pending = [(os.fspath(root), "")]
    while pending:
        top, prefix = pending.pop()
        try:
            entries = os.scandir(top)
        except OSError:  # removed meanwhile (nothing of the sandbox runs during a walk, so only by the server itself)
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > max_entries:
                    raise WorkspaceOverLimit(f"the workspace holds more than {max_entries} files and directories")
                if seen % 64 == 1 and time.monotonic() > deadline:  # a clock read costs about an lstat() on some hosts
                    raise WorkspaceOverLimit(f"reading the workspace took more than {max_seconds:g} s")
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False) and entry.name not in skip_dirs:
                    pending.append((entry.path, rel + "/"))
                yield rel, entry


def text_files(root: Path, *, max_entries: int, max_bytes: int, max_seconds: float, skip_dirs: frozenset[str] = frozenset()) -> dict[str, str]:
    """Every regular file under ``root`` (relative path -> text), walked without following links; other kinds
    (links, FIFOs, devices) are left out. WorkspaceOverLimit once more than ``max_entries`` entries (of any
    kind) were seen, the regular files sum to more than ``max_bytes``, or the walk took ``max_seconds``: the
    server's cost stays bounded whatever the sandboxed code left."""
    files: dict[str, str] = {}
    used = 0
    for rel, entry in walk(root, max_entries=max_entries, max_seconds=max_seconds, skip_dirs=skip_dirs):
        if not entry.is_file(follow_symlinks=False):
            continue
        size = entry.stat(follow_symlinks=False).st_size
        if used + size > max_bytes:
            raise WorkspaceOverLimit(f"the workspace's files hold more than {max_bytes} bytes")
        try:  # the walk found it a regular file and no sandboxed process runs now: only the last name can't be a link
            files[rel] = _read(entry.path, rel, max_bytes - used).decode("utf-8", errors="replace")
        except WorkspaceFileError:
            continue
        used += size
    return files
