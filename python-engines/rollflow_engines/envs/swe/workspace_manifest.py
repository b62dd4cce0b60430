"""The swe env's incremental snapshots: what of a workspace differs from its reset state, as a small manifest.

The reset state (the instance's repository from its source, trusted) is put together again on any server, so a
snapshot holds only what changed since: for each such path, a regular file's mode and the sha256 of its content
(the content itself a blob, envs/snapshots.py: ``<where>/blobs/<sha256>``, written once, shared), a directory's mode,
a link's target, a FIFO's mode, or ``None`` for a path of the reset state that is gone. Sockets and devices are left
out (a socket's listener is gone with the session; the sandbox can make no device).

What is looked at: the paths inotify reported since the last look, an lstat each (workspace_watch.py says why no
change goes unreported, and when a look walks the whole workspace instead: a directory made or moved, a hard link,
the kernel's queue full). What is hashed: only what changed since the last look. A look reuses a file's known hash
when its (mode, size, mtime, ctime, inode) are those it had when hashed. The sandboxed code can set a file's mtime
back (``touch -d``) but not its ctime, which the kernel sets to the time of any change to the file's content or
metadata. A ctime is as coarse as the kernel's clock tick, so a file changed in the tick it was hashed in could
keep its ctime: a hash is reused only when the file's ctime is more than RACY_NS before the look that took it
("racily clean", as git calls it), and the reset and restore wait that long before they record what they wrote.
An edit (the server's own write) is not looked at after: its step saves no snapshot, and the next command's look
sees it. A command after which the look finds the changes of the last manifest saved (it read, listed, searched)
writes nothing either: its snapshot id is a reference to that manifest with the step's counters
(snapshots.reference); one after which the look finds no change at all (an episode's first ``ls``) names the reset
state the same way.

What the policy can reach: every path in a manifest comes from the server's own walk or an event's name, reached
without following a link (scandir, lstat, each directory on the way opened O_NOFOLLOW, files opened
O_NOFOLLOW|O_NONBLOCK and bounded: host_files). A restore (manifest_apply.py) follows no link either, strips
setuid/setgid bits, and refuses a malformed entry or a content that does not match its name as ``snapshot_corrupt``.
"""
from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

from ...sandbox.host_files import WorkspaceFileError, WorkspaceOverLimit, lstat_at, read_walked, walk
from .. import snapshots
from ..swe_lite.env import SNAPSHOT_CAPS
from . import manifest_apply
from .manifest_apply import MODE_BITS, Entry
from .workspace_watch import Batch, WorkspaceWatch

# The caps of one walk; past any of them the episode ends (the model's doing, as swe_lite's snapshot caps).
MAX_ENTRIES = 50_000           # a bwrap workspace holds at most 20 000 inodes (sandbox.workspace.DEFAULT_MAX_INODES)
MAX_CHANGED_BYTES = 256 << 20  # of files that differ from the reset state (a bwrap workspace's disk cap)
MAX_SECONDS = SNAPSHOT_CAPS["max_seconds"]  # swe_lite's: its step_timeout_s, which the swe env keeps, counts it
# A hash is reused only for a file whose ctime is this much before the walk that took it: two ticks of the coarse
# clock file times come from (a tick is 10 ms at the slowest kernel HZ, 100).
RACY_NS = 20_000_000
# The most bytes of file contents (before compression) a manifest carries itself rather than name as blobs in the
# store: a command's usual change (a patched module of 10-60 KB) is one write; what a manifest carries is written
# again by each later manifest until it is stored as a blob, so this also bounds what a cheap step rewrites.
CARRIED_MAX_BYTES = 256 << 10

Key = tuple[int, int, int, int, int]  # st_mode, st_size, st_mtime_ns, st_ctime_ns, st_ino


def _key(st: os.stat_result) -> Key:
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _too_much_changed() -> WorkspaceOverLimit:
    return WorkspaceOverLimit(f"the workspace's changed files hold more than {MAX_CHANGED_BYTES} bytes")


def _settle() -> None:
    """Wait until what was just written is past the racy window, so what is recorded next can be trusted."""
    time.sleep(RACY_NS / 1e9)


class WorkspaceManifest:
    """One episode's record of its workspace: the reset state, the changes since, the hashes taken and the blobs saved."""

    def __init__(self, root: Path, uid: int | None, watched: bool = True):
        self.root, self.uid = root, uid
        self.base: dict[str, tuple[Key, Entry]] = {}   # the reset state (files' entries without a hash)
        self.changes: dict[str, Entry | None] = {}     # the manifest: what differs from the reset state
        self.hashed: dict[str, tuple[Key, str]] = {}   # files hashed and not racy: key -> sha256
        self.saved: set[str] = set()                   # blobs known to be in the store
        self._fresh: dict[str, bytes] = {}             # contents read by the last walk, by sha256, until saved
        self._carried: dict[str, bytes] = {}           # the contents the last manifest carried, by sha256
        self.stored: tuple[str, dict[str, Entry | None]] | None = None  # the last manifest saved: its id and changes
        self.watch = WorkspaceWatch.open() if watched else None  # None: every look walks the whole workspace
        self.linked = False  # the last whole walk saw a file with more than one name: every look walks it all
        self.stats = {"hashed_files": 0, "hashed_bytes": 0, "blobs_written": 0, "blob_bytes": 0, "carried_bytes": 0, "whole_walks": 0,
                      "paths_looked_at": 0}

    # ---- recording

    def record_reset(self) -> None:
        """The reset state, walked before any command of the agent's ran (what the server itself just put there)."""
        _settle()
        self.base = {rel: (_key(st), self._entry_without_content(st, path)) for rel, path, st in self._walk()}
        self.changes, self.hashed, self.stored = {}, {}, None

    def rescan(self) -> None:
        """After a command ran in the sandbox (every process of it gone): the paths its events name are looked at,
        or every entry when they cannot be trusted (hashing only those whose key changed)."""
        batch = self.watch.take() if self.watch is not None else None
        if batch is None or not batch.complete or self.linked or not self._rescan_paths(batch):
            self._rescan_all()

    def _rescan_all(self) -> None:
        self.stats["whole_walks"] += 1
        started = time.time_ns()
        changes: dict[str, Entry | None] = {}
        seen: set[str] = set()
        changed_bytes = 0
        for rel, path, st in self._walk():
            seen.add(rel)
            entry = self._changed_entry(rel, path, st, started)
            if entry is not None:
                changes[rel] = entry
                if entry[0] == "f":
                    changed_bytes += entry[3]
                    if changed_bytes > MAX_CHANGED_BYTES:
                        raise _too_much_changed()
        changes.update((rel, None) for rel in self.base if rel not in seen)
        self.changes = changes

    def _rescan_paths(self, batch: Batch) -> bool:
        """The changes updated for the paths of ``batch`` alone; False (nothing updated) when the events cannot say
        what changed: a file they name has another name, or one made since the last look is gone again (it may have
        been a link, written through, then removed)."""
        started = time.time_ns()
        try:
            looked = {rel: lstat_at(self.root, rel) for rel in batch.paths}
        except WorkspaceFileError:  # a path not to be reached the safe way (EACCES, too long): the walk's way
            return False
        self.stats["paths_looked_at"] += len(looked)
        for rel, st in looked.items():
            if st is None and rel in batch.made or st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                return False
        changes = dict(self.changes)
        for rel in sorted(looked):
            st = looked[rel]
            entry = None if st is None else self._changed_entry(rel, os.path.join(self.root, rel), st, started)
            self._record(changes, rel, entry, gone=st is None)
            if (st is None or not stat.S_ISDIR(st.st_mode)) and self._was_directory(rel):
                prefix = rel + "/"  # its entries' removals were each reported; gone in any case
                for under in [r for r in (*self.base, *changes) if r.startswith(prefix)]:
                    self._record(changes, under, None, gone=True)
        existing = len(self.base) + sum(1 for r, e in changes.items() if e is not None and r not in self.base) \
            - sum(1 for e in changes.values() if e is None)
        if existing > MAX_ENTRIES:
            raise WorkspaceOverLimit(f"the workspace holds more than {MAX_ENTRIES} files and directories")
        if sum(e[3] for e in changes.values() if e is not None and e[0] == "f") > MAX_CHANGED_BYTES:
            raise _too_much_changed()
        self.changes = changes
        return True

    def _record(self, changes: dict[str, Entry | None], rel: str, entry: Entry | None, gone: bool) -> None:
        """What ``rel`` is now: changed (``entry``), a path of the reset state that is gone, or as the reset state has it."""
        if entry is not None:
            changes[rel] = entry
        elif gone and rel in self.base:
            changes[rel] = None
        else:
            changes.pop(rel, None)

    def _was_directory(self, rel: str) -> bool:
        known = self.changes.get(rel) or self.base.get(rel, (None, None))[1]
        return known is not None and known[0] == "d"

    def _changed_entry(self, rel: str, path: str, st: os.stat_result, started: int) -> Entry | None:
        """The entry of ``rel`` if it differs from the reset state, else None."""
        key, base = _key(st), self.base.get(rel)
        if base is not None and base[0] == key:
            return None  # untouched since the reset (its ctime says so): most entries of a walk end here
        if not stat.S_ISREG(st.st_mode):
            entry = self._entry_without_content(st, path)
            return None if entry is None or base is not None and base[1] == entry else entry
        known = self.hashed.get(rel)
        if known is not None and known[0] == key and (known[1] in self.saved or known[1] in self._carried):
            sha = known[1]
        else:
            try:
                data = read_walked(path, rel, MAX_CHANGED_BYTES)
            except WorkspaceFileError as e:  # larger than the cap (or unreadable): the model's doing, as the caps are
                raise WorkspaceOverLimit(f"the workspace's file {e}") from e
            sha = hashlib.sha256(data).hexdigest()
            self.stats["hashed_files"] += 1
            self.stats["hashed_bytes"] += len(data)
            if sha not in self.saved and sha not in self._carried:
                self._fresh[sha] = data
            if st.st_ctime_ns < started - RACY_NS:
                self.hashed[rel] = (key, sha)
            else:
                self.hashed.pop(rel, None)
        return ["f", st.st_mode & MODE_BITS, sha, st.st_size]

    @staticmethod
    def _entry_without_content(st: os.stat_result, path: str) -> Entry | None:
        if stat.S_ISREG(st.st_mode):
            return ["f", st.st_mode & MODE_BITS, None, st.st_size]
        if stat.S_ISDIR(st.st_mode):
            return ["d", st.st_mode & MODE_BITS]
        if stat.S_ISLNK(st.st_mode):
            return ["l", os.readlink(path)]
        if stat.S_ISFIFO(st.st_mode):
            return ["p", st.st_mode & MODE_BITS]
        return None  # a socket (or a device): not kept

    def _walk(self):
        """(rel, path, lstat) of every entry under the root, links never followed; WorkspaceOverLimit past the caps.
        Every directory is watched from here on, before it is listed."""
        if self.watch is not None:
            self.watch.restart(os.fspath(self.root))
        self.linked = False
        for rel, entry in walk(self.root, max_entries=MAX_ENTRIES, max_seconds=MAX_SECONDS):
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if self.watch is not None:
                    self.watch.add(rel, entry.path)
            elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                self.linked = True
            yield rel, entry.path, st

    def close(self) -> None:
        """The workspace is going: its watches with it."""
        if self.watch is not None:
            self.watch.close()

    # ---- saving and restoring

    def save(self, instance_id: str, counters: dict[str, int]) -> str:
        """Writes the blobs the store lacks, then the manifest; its snapshot id. SnapshotNotSaved when either fails
        (the changes stay recorded: the next save writes what this one could not). When the walk found the changes of
        the last manifest saved (a command that read, listed, searched), nothing is written: the id is a reference to
        that manifest with these counters, so a bucket costs no round trip for it."""
        if not self.changes:  # the reset state (the episode's commands so far read, listed; or undid every change)
            self._fresh.clear()
            self.stored = None  # the step removes the last manifest: no reference may name it again
            return snapshots.reference(snapshots.RESET, counters)
        if self.stored is not None and self.stored[1] == self.changes:
            self._fresh.clear()
            return snapshots.reference(self.stored[0], counters)
        sizes = {e[2]: e[3] for e in self.changes.values() if e is not None and e[0] == "f"}
        named = sorted(sizes)
        # Each write is a round trip to a bucket, or a file created (0.1 to 0.6 ms here), so the contents the store
        # lacks ride in the manifest itself up to CARRIED_MAX_BYTES (a command that changed a few small files writes
        # one file), and those past it go to the store as blobs at the same time as the manifest.
        carried, to_store, room = {}, {}, CARRIED_MAX_BYTES
        for sha in (sha for sha in named if sha not in self.saved):
            if sizes[sha] <= room:
                room -= sizes[sha]
                carried[sha] = self._content(sha)
            else:
                to_store[sha] = self._content(sha)
        self._fresh.clear()
        self._carried = carried  # kept: the next manifest carries them again while the store lacks them
        value = {"instance": instance_id, "counters": counters, "changes": self.changes, "blobs": named}
        # The manifest may land before a blob: the step names it only once every write succeeded, so no client restores
        # it without them.
        blob_writes = [_uploads().submit(snapshots.save_blob, sha, data) for sha, data in to_store.items()]
        try:
            saved = snapshots.save(value, carried)
        finally:
            futures.wait(blob_writes)
        written = [f.result() for f in blob_writes]  # SnapshotNotSaved, once all are done
        self.saved.update(to_store)
        self.stored = (saved, self.changes)  # rescan and restore put a new dict in self.changes, never change this one
        self.stats["blobs_written"] += sum(1 for n in written if n)
        self.stats["blob_bytes"] += sum(written)  # compressed, as stored
        self.stats["carried_bytes"] += sum(map(len, carried.values()))
        return saved

    def _content(self, sha: str) -> bytes:
        """The content of ``sha``: as the last manifest carried it or the last look read it; a blob hashed by a look
        whose save failed is read again, by its path."""
        data = self._carried.get(sha)
        if data is None:
            data = self._fresh.pop(sha, None)
        return data if data is not None else self._content_of(sha)

    @staticmethod
    def discard(snapshot: str | None) -> None:
        """Removes an earlier snapshot of the episode (best effort: one left behind is reaped for its age); in a
        bucket in the background, off the step's time."""
        if snapshots.in_bucket():
            _uploads().submit(snapshots.remove, snapshot)
        else:
            snapshots.remove(snapshot)

    def _content_of(self, sha: str) -> bytes:
        for rel, entry in self.changes.items():
            if entry is not None and entry[0] == "f" and entry[2] == sha:
                data = read_walked(os.path.join(self.root, rel), rel, MAX_CHANGED_BYTES)
                if hashlib.sha256(data).hexdigest() == sha:
                    return data
        raise snapshots.SnapshotNotSaved(f"no file of the workspace holds blob {sha} any more")

    def restore(self, changes: Any, carried: dict[str, bytes]) -> None:
        """Applies a manifest's changes over the reset state (record_reset ran); the contents it carries (checked by
        snapshots.load) or names as blobs (read and checked first, so a damaged one changes nothing). RequestError
        ``snapshot_corrupt`` for a malformed manifest."""
        checked = manifest_apply.checked(changes)
        named = {e[2] for e in checked.values() if e is not None and e[0] == "f"}
        contents = {sha: carried[sha] if sha in carried else snapshots.load_blob(sha) for sha in named}
        manifest_apply.apply(self.root, self.uid, checked, contents)
        _settle()
        self.changes, self.saved = checked, named - set(carried)  # a content carried is not in the store
        for rel, entry in checked.items():
            if entry is not None and entry[0] == "f":
                self.hashed[rel] = (_key(os.lstat(os.path.join(self.root, rel))), entry[2])


_pool: futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _uploads() -> futures.ThreadPoolExecutor:
    """The process's threads for snapshot writes, to a directory or an object store (the S3 client is thread-safe once made)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = futures.ThreadPoolExecutor(8, thread_name_prefix="swe-snapshot-io")
        return _pool
