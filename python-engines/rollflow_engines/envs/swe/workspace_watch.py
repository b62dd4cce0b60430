"""Which paths of a workspace a command may have changed: inotify watches on each of its directories, so the swe
env's snapshot (workspace_manifest.py) looks at those paths alone instead of lstat()ing the whole tree (8-12 ms for
a 26 MB repository's 1 931 entries, against a handful of paths for a command such as ``git apply``).

Why a change cannot go unseen. A change to a directory's entries (create, delete, rename, link, symlink, mkfifo,
mkdir) is reported on that directory's watch, with the entry's name; a change to an entry's metadata (chmod, utimes,
truncate) too. A change to a file's content needs the file open for writing, and the kernel reports the close of
such a file when its last reference goes, a shared ``mmap``'s included; the events are read only after every process
of the command is gone (the sandbox's pid namespace and cgroup are empty when its run returns), so by then every such
close has been reported (tests/envs/swe/test_swe_workspace_watch.py writes through an ``mmap`` in the sandbox).

What events cannot tell, and when a look therefore covers the whole tree (``Batch.complete`` is False, or the
manifest's own checks over the paths, workspace_manifest.py):
- where else a file is named: a write through a hard link is reported under the name written through. The
  manifest walks everything while a walk has seen a file with more than one link, when a file an event names has
  more than one, and when a file made since the last look is gone again (a link, written through, then removed).
  A link cannot name anything outside the workspace: link(2) across mounts is EXDEV, and in the sandbox the
  workspace is a mount of its own;
- what happened in a directory made (or moved) since the last look: nothing watched it yet;
- anything, once the kernel's queue overflowed, a watch could not be added (the user's watch limit), or the process
  could not get an inotify instance (a user has 128): then every look is a whole walk, as without watches.
A path reported that did not change costs one lstat; only a change not reported would matter, and the cases above
are the ones the kernel leaves unreported.

One inotify instance serves every workspace of the process, its queue read by whichever workspace looks next.
"""
from __future__ import annotations

import atexit
import logging
import threading
from dataclasses import dataclass, field

from inotify_simple import INotify, flags

log = logging.getLogger(__name__)

MASK = (flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO | flags.CLOSE_WRITE | flags.MODIFY
        | flags.ATTRIB | flags.MOVE_SELF | flags.DELETE_SELF | flags.DONT_FOLLOW | flags.ONLYDIR)
# An entry that is (or was) a directory appeared or moved: what happened inside it went unwatched.
_DIRECTORY_MOVED = flags.CREATE | flags.MOVED_FROM | flags.MOVED_TO
# The most paths a batch holds: past them a whole walk is cheaper than an lstat each through their directories, and
# a command that makes and removes names without end (other workspaces' looks keep the kernel's queue from filling)
# cannot grow the server's memory with them.
MAX_PATHS = 2048


@dataclass
class Batch:
    """What the events since the last look say: the paths they name, those of them made meanwhile (following
    renames: a file made under a temporary name and renamed into place counts under its final one), and whether
    they can be trusted at all (``complete``)."""
    paths: set[str] = field(default_factory=set)
    made: set[str] = field(default_factory=set)
    complete: bool = True


class _Instance:
    """The process's inotify instance and the watches of every workspace on it."""

    def __init__(self):
        self.inotify = INotify()
        atexit.register(self.inotify.close)  # the process's for its lifetime
        self.lock = threading.Lock()
        self.owners: dict[int, tuple[WorkspaceWatch, str]] = {}  # watch descriptor -> workspace, directory ("" the root)

    def drain(self) -> None:
        """Hands every queued event to the workspace its watch belongs to (the lock held)."""
        while events := self.inotify.read(timeout=0):
            for event in events:
                if event.mask & flags.Q_OVERFLOW:
                    log.warning("the inotify queue overflowed: every workspace is walked whole once")
                    for watch, _ in list(self.owners.values()):
                        watch.pending.complete = False
                    continue
                owner = self.owners.get(event.wd)
                if owner is None:
                    continue  # a watch removed before its events were read: its workspace walked whole since
                if event.mask & flags.IGNORED:  # the directory is gone (or unmounted); its removal was reported
                    del self.owners[event.wd]
                    if owner[0].directories.get(owner[1]) == event.wd:
                        del owner[0].directories[owner[1]]
                    continue
                owner[0].note(owner[1], event)


_instance: _Instance | None = None
_instance_failed = False
_instance_lock = threading.Lock()


def _shared() -> _Instance | None:
    global _instance, _instance_failed
    with _instance_lock:
        if _instance is None and not _instance_failed:
            try:
                _instance = _Instance()
            except OSError as e:  # EMFILE: the user's 128 instances are taken
                _instance_failed = True
                log.warning("no inotify instance (%s): swe snapshots walk the whole workspace at every step", e)
        return _instance


class WorkspaceWatch:
    """The watches on one workspace's directories, and the events they gave since the last ``take``."""

    def __init__(self, instance: _Instance):
        self._instance = instance
        self.directories: dict[str, int] = {}  # directory ("" the root) -> its watch descriptor
        self.pending = Batch(complete=False)   # nothing is watched until the first walk
        self._moves: dict[int, str] = {}       # a rename's cookie -> the name it left, when that was made meanwhile

    @classmethod
    def open(cls) -> WorkspaceWatch | None:
        """A watch for one workspace, or None where the process has no inotify instance."""
        instance = _shared()
        return None if instance is None else cls(instance)

    def restart(self, root: str) -> None:
        """Before a walk of the whole workspace: every old watch is dropped, its events with it, and the root is
        watched (the walk adds each directory as it reaches it, before it lists it)."""
        with self._instance.lock:
            self._instance.drain()
            self._forget()
            self.pending, self._moves = Batch(), {}
            self._add("", root)

    def add(self, rel: str, path: str) -> None:
        """A directory the walk reached (before it lists it)."""
        with self._instance.lock:
            self._add(rel, path)

    def take(self) -> Batch:
        """The events since the last take (or restart); a new batch begins."""
        with self._instance.lock:
            self._instance.drain()
            batch, self.pending, self._moves = self.pending, Batch(complete=self.pending.complete), {}
            return batch

    def close(self) -> None:
        with self._instance.lock:
            self._forget()

    # ---- with the instance's lock held

    def _add(self, rel: str, path: str) -> None:
        if not self.pending.complete:
            return  # a watch was refused: this walk's result is all there is until the next restart
        try:
            wd = self._instance.inotify.add_watch(path, MASK)
        except OSError as e:  # ENOSPC: the user's watch limit; EACCES
            log.warning("could not watch %s (%s): this workspace is walked whole at its next look", path, e)
            self.pending.complete = False
            return
        self.directories[rel] = wd
        self._instance.owners[wd] = (self, rel)

    def _forget(self) -> None:
        for wd in self.directories.values():
            self._instance.owners.pop(wd, None)
            try:
                self._instance.inotify.rm_watch(wd)
            except OSError:
                pass  # the kernel dropped it already (the directory is gone)
        self.directories.clear()

    def note(self, directory: str, event) -> None:
        """One event of a watch of this workspace's."""
        batch = self.pending
        if not batch.complete:
            return
        if event.mask & flags.MOVE_SELF or event.mask & flags.ISDIR and event.mask & _DIRECTORY_MOVED:
            batch.complete = False  # a directory made or moved: its inside went unwatched (a removed one was empty)
            return
        rel = f"{directory}/{event.name}" if directory and event.name else directory or event.name
        if not rel:
            return  # the root's own metadata: not an entry of the workspace
        if len(batch.paths) >= MAX_PATHS and rel not in batch.paths:
            self.pending, self._moves = Batch(complete=False), {}  # what it held goes now, not at the next take
            return
        batch.paths.add(rel)
        if event.mask & flags.CREATE:
            batch.made.add(rel)
        elif event.mask & flags.MOVED_FROM and rel in batch.made:  # its rename's other half names it from now on
            batch.made.discard(rel)
            self._moves[event.cookie] = rel
        elif event.mask & flags.MOVED_TO and self._moves.pop(event.cookie, None) is not None:
            batch.made.add(rel)
