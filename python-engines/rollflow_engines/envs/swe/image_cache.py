"""Where source kind image keeps unpacked root file systems: a cache bounded in size, shared by the threads of a
server and by servers on one disk, that an unattended run cannot fill.

Under ``cache_dir``, per image id:

- ``<id>/``: the root file system, complete (renamed into place once unpacked);
- ``.<id>.lock``: flock'd shared by each episode that uses the image (its lease, held from its reset to its close),
  exclusive to unpack the image or to remove it; a server that dies lets go of its locks with its descriptors;
- ``.<id>.size``: the tree's size on disk in bytes, whose mtime says when an episode last took the image;
- ``.<id>.<random>/``: an unpacking in progress, or one a server died in;
- ``.evicted.<id>.<random>/``: an image being removed, or one a server died removing.

After each unpacking, ``trim`` removes the least recently taken images that no episode holds until the cache is
within its bound, and what dead servers left. An image in use is never removed (so the cache can stay over its
bound while episodes hold more than it); one removed is unpacked again when an episode next needs it.
"""
from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import stat
import tempfile
import threading
from pathlib import Path
from typing import Callable

from ...sandbox import SandboxUnavailable

TAKE_TRIES = 5  # an image removed between our unpacking and our lease (a cache smaller than it) is unpacked again
_thread_locks: dict[tuple[Path, str], threading.Lock] = {}
_thread_locks_lock = threading.Lock()


class ImageLease:
    """An episode's hold on an unpacked image: ``trim`` leaves it alone until ``release`` (or the holder's exit)."""

    def __init__(self, fd: int, rootfs: Path):
        self._fd: int | None = fd
        self.rootfs = rootfs

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # the flock goes with the last descriptor (os.open's are not inherited by sandboxes)
            self._fd = None

    def __del__(self):  # a lease dropped unreleased (a caller that only wanted the tree) must not pin the image
        self.release()


def take(cache_dir: Path, ident: str, unpack_into: Callable[[Path], None]) -> tuple[ImageLease, bool]:
    """A lease on image ``ident``'s root file system, unpacked by ``unpack_into(empty dir)`` if the cache lacks it;
    whether this call unpacked it."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    rootfs, unpacked = cache_dir / ident, False
    with _thread_lock(cache_dir, ident):  # this server's threads: one unpacks, the others then find the tree
        fd = os.open(_lock_path(cache_dir, ident), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            for _ in range(TAKE_TRIES):
                fcntl.flock(fd, fcntl.LOCK_SH)  # waits while another server unpacks or removes it
                if rootfs.is_dir():
                    _stamp(cache_dir, ident, rootfs)
                    return ImageLease(fd, rootfs), unpacked
                # Converting to exclusive lets go of the shared lock first, so two servers converting never deadlock.
                fcntl.flock(fd, fcntl.LOCK_EX)
                if not rootfs.is_dir():
                    _unpack(cache_dir, ident, unpack_into)
                    unpacked = True
                # Back to shared (not atomic either: a trim may remove it in between, and the loop sees that).
        except BaseException:
            os.close(fd)
            raise
    os.close(fd)
    raise SandboxUnavailable(f"image {ident} was removed from {cache_dir} {TAKE_TRIES} times as soon as it was unpacked: "
                             "is source.cache_max_gb smaller than the images episodes hold at once?")


def trim(cache_dir: Path, max_bytes: int) -> list[str]:
    """Removes the least recently taken images no episode holds until the cache's images take at most ``max_bytes``,
    then what dead servers left; the ids removed."""
    images = []
    for entry in os.scandir(cache_dir):
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            size_file = _size_path(cache_dir, entry.name)
            images.append((size_file.stat().st_mtime, entry.name, int(size_file.read_text())))
        except (OSError, ValueError):  # unpacked before sizes were kept, or its record lost: sized now, taken last long ago
            images.append((0.0, entry.name, _record_size(cache_dir, entry.name, Path(entry.path))))
    total, removed = sum(size for _, _, size in images), []
    for _, ident, size in sorted(images):
        if total <= max_bytes:
            break
        if _remove_unheld(cache_dir, ident):
            total -= size
            removed.append(ident)
    _sweep_leftovers(cache_dir)
    return removed


def disk_bytes(root: Path) -> int:
    """What the tree takes on disk (allocated blocks, each hard-linked file once), links not followed."""
    seen, total, todo = set(), 0, [root]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):
                    todo.append(entry.path)
    return total


def _unpack(cache_dir: Path, ident: str, unpack_into: Callable[[Path], None]) -> None:
    partial = Path(tempfile.mkdtemp(prefix=f".{ident}.", dir=cache_dir))
    try:
        unpack_into(partial)
        partial.chmod(0o755)
        _record_size(cache_dir, ident, partial)
        partial.rename(cache_dir / ident)
    finally:
        _remove_tree(partial)  # gone already when renamed


def _stamp(cache_dir: Path, ident: str, rootfs: Path) -> None:
    """Taken now: the last image to go."""
    try:
        os.utime(_size_path(cache_dir, ident))
    except FileNotFoundError:  # unpacked before sizes were kept
        _record_size(cache_dir, ident, rootfs)


def _record_size(cache_dir: Path, ident: str, tree: Path) -> int:
    size = disk_bytes(tree)
    _size_path(cache_dir, ident).write_text(str(size))
    return size


def _remove_unheld(cache_dir: Path, ident: str) -> bool:
    """Removes the image unless an episode holds it, or a server unpacks or removes it now."""
    fd = os.open(_lock_path(cache_dir, ident), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if not (cache_dir / ident).is_dir():
            return False
        doomed = cache_dir / f".evicted.{ident}.{secrets.token_hex(4)}"
        (cache_dir / ident).rename(doomed)  # whole or not at all for anyone who looks next
        _size_path(cache_dir, ident).unlink(missing_ok=True)
    finally:
        os.close(fd)
    _remove_tree(doomed)  # outside the lock: nobody finds it under that name
    return True


def _sweep_leftovers(cache_dir: Path) -> None:
    """Removals a dead server left half done, and unpackings it died in (their lock free: nobody unpacks them now)."""
    for entry in os.scandir(cache_dir):
        if not entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        if entry.name.startswith(".evicted."):
            _remove_tree(Path(entry.path))
            continue
        ident = entry.name[1:].rsplit(".", 1)[0]
        fd = os.open(_lock_path(cache_dir, ident), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _remove_tree(Path(entry.path))
        except BlockingIOError:
            pass  # being unpacked (or the image held meanwhile): not left over
        finally:
            os.close(fd)


def _remove_tree(path: Path) -> None:
    """rmtree that also gets through the directories an image made read-only (0555 and the like). The tree is the
    cache's own (bound read-only into sandboxes), so a link in it is not followed and cannot change meanwhile."""
    if not path.is_dir() or path.is_symlink():
        return
    try:
        os.chmod(path, stat.S_IRWXU)
        for top, dirs, _ in os.walk(path):  # top down: each directory opened before it is listed
            for name in dirs:
                if not os.path.islink(inner := os.path.join(top, name)):
                    os.chmod(inner, stat.S_IRWXU)
    except OSError:
        pass  # what cannot be opened stays, for the next trim's sweep
    shutil.rmtree(path, ignore_errors=True)


def _thread_lock(cache_dir: Path, ident: str) -> threading.Lock:
    with _thread_locks_lock:
        return _thread_locks.setdefault((cache_dir, ident), threading.Lock())


def _lock_path(cache_dir: Path, ident: str) -> Path:
    return cache_dir / f".{ident}.lock"


def _size_path(cache_dir: Path, ident: str) -> Path:
    return cache_dir / f".{ident}.size"
