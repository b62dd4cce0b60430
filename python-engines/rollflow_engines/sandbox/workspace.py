"""A workspace: a fresh directory a sandbox works in, and the runs of commands inside it.

On disk, ``<root>/<owner>/<id>/`` holds ``workspace/`` (the sandbox's /workspace, ``Workspace.path``),
``tmp/`` (its /tmp) and ``lock``, which the process holding the workspace keeps ``flock``-ed and which
records the workspace's uid: the janitor (``janitor.py``) tells live workspaces from orphans by it. In
bwrap mode ``<id>`` is the mount point of the workspace's own tmpfs, capped at ``disk_mb`` and
``max_inodes`` (wsfs.py), mounted before anything is written there and unmounted on removal.

Cleanup: ``remove()`` (also on leaving the ``with``, however it is left) kills every process of the
workspace, waits until the kernel has none left under its uid, deletes the directory and gives the
uid back. A ``run`` in progress in another thread is killed by ``remove()`` and raises SandboxError;
a run interrupted in its own thread (KeyboardInterrupt, an exception from a signal handler) kills its
command before the exception propagates. If the server itself dies, ``--die-with-parent`` kills the
sandboxes and the janitor deletes the directories it left.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Literal

from .command import rlimit_args
from . import host_files, launch, wsfs
from .errors import SandboxError
from .limits import Limits, RunResult
from .mounts import HOST_ROOT, WORKSPACE, sandbox_environment
from .output import pump
from .uids import UidLease, kill_uid, lease_uid

log = logging.getLogger(__name__)

Mode = Literal["bwrap", "none"]
OWNER_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
LOCK_FILE = "lock"
_MAX_SIGNAL = 64  # bwrap reports a command killed by signal N as exit status 128 + N, like a shell
# A workspace's filesystem cap (bwrap mode). A SWE repository (django: about 6 000 files and directories,
# 50 MiB with its git objects packed) fits with room for a build and pytest's files; 100 000 empty files
# or a disk-filling loop do not.
DEFAULT_DISK_MB = 256
DEFAULT_MAX_INODES = 20_000

# Workspaces open in this process, by their directory: the janitor removes these through their Workspace.
_open: dict[Path, "Workspace"] = {}
_open_lock = threading.Lock()


def open_here(record: Path) -> "Workspace | None":
    """The Workspace of ``record`` if this process has it open."""
    with _open_lock:
        return _open.get(record)


class Workspace:
    def __init__(self, record: Path, owner: str, mode: Mode, bwrap: str, lease: UidLease | None, lock_fd: int):
        self.record, self.owner, self.mode, self.bwrap = record, owner, mode, bwrap
        self.path, self.tmp = record / "workspace", record / "tmp"
        self.uid = lease.uid if lease else None
        self._lease, self._lock_fd = lease, lock_fd
        self._procs: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._removed = False

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"Workspace({self.path}, owner={self.owner!r}, mode={self.mode!r}, uid={self.uid})"

    # ---- files, written from the host (no sandbox process runs between two runs, so nothing races these)

    def write_files(self, files: dict[str, str]) -> None:
        """Write text files at paths relative to the workspace, owned by the sandbox's uid. No link the sandboxed
        code planted is followed (host_files.py); WorkspaceFileError names a path that cannot be written."""
        for rel, text in files.items():
            host_files.write_text(self.path, rel, text, self.uid)

    def adopt(self) -> None:
        """Give the sandbox's uid every entry the server put under the workspace by other means than write_files
        (a repository copied or unpacked into it, envs/swe). Only for trees the server itself just made: links
        are changed, never followed (lchown)."""
        if self.uid is None:
            return
        for top, dirs, files in os.walk(self.path):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(top, name), self.uid, self.uid)
        os.lchown(self.path, self.uid, self.uid)

    def read_text(self, rel: str, max_bytes: int) -> str:
        """A workspace file's text, read without following links or waiting on a FIFO (host_files.py)."""
        return host_files.read_text(self.path, rel, max_bytes)

    # ---- running

    def run(self, command: str | list[str], *, stdin: str | None = None, limits: Limits | None = None,
            ro_binds: dict[str, Path] | None = None, path_first: tuple[str, ...] = (), system_root: Path = HOST_ROOT) -> RunResult:
        """Run ``command`` (a str goes to ``/bin/sh -c``) with cwd = the workspace; SandboxError if the sandbox failed.
        ``ro_binds`` (a path inside -> a host directory) are seen read-only (bwrap mode only); ``path_first``
        directories come first on the command's PATH; ``system_root``: where the system directories come from (a
        container image's root file system, bwrap mode only; mounts.filesystem_args)."""
        limits = limits or Limits()
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        status_r, status_w = os.pipe() if self.mode == "bwrap" else (-1, -1)
        killed = threading.Event()
        try:
            proc, started = self._start(argv, limits, status_w, ro_binds, path_first, system_root)
        except BaseException:
            if status_r >= 0:
                os.close(status_r)
            raise
        finally:
            if status_w >= 0:
                os.close(status_w)

        def kill() -> None:
            killed.set()
            _kill_group(proc)

        status: dict = {}
        try:
            out, err, timed_out = pump(proc, stdin.encode() if stdin is not None else None, limits.wall_s, limits.output_bytes, kill)
            status = _read_status(status_r)
        finally:
            # bwrap returns as soon as the command exits, while its init (pid 1 of the namespace) still
            # kills the rest: wait for that, so nothing of this run is left when the next one starts.
            if self.uid is not None and (killed.is_set() or not _namespace_ended(status.get("child-pid"))):
                kill_uid(self.uid)
            if status_r >= 0:
                os.close(status_r)
            with self._lock:
                self._procs.discard(proc)
            oom_killed = started is not None and started.oom_killed()
            if started is not None:
                started.close()  # every process of the run is gone: its cgroup can go
        if self._removed:
            raise SandboxError(f"the workspace {self.path} was removed while {argv[-1][:200]!r} ran")
        exit_code, sig = self._outcome(proc, status, err.text(), timed_out)
        return RunResult(exit_code=exit_code, stdout=out.text(), stderr=err.text(), truncated=out.truncated or err.truncated,
                         timed_out=timed_out, signal=sig, oom_killed=oom_killed)

    def _start(self, argv: list[str], limits: Limits, status_fd: int,
               ro_binds: dict[str, Path] | None = None, path_first: tuple[str, ...] = (),
               system_root: Path = HOST_ROOT) -> tuple[subprocess.Popen, "launch.Launch | None"]:
        with self._lock:
            if self._removed:
                raise SandboxError(f"the workspace {self.path} was removed")
            if not self.path.is_dir():
                raise SandboxError(f"the workspace {self.path} is gone (deleted by the janitor or by hand)")
            started = None
            if self.mode == "bwrap":
                assert self.uid is not None
                started = launch.Launch(self.bwrap, self.uid, status_fd, self.path, self.tmp, argv, limits, self.record.name,
                                        ro_binds, system_root)
                full = started.argv
                env, cwd, fds = sandbox_environment(home=WORKSPACE, tmp="/tmp", path_first=path_first), "/", (status_fd, *started.pass_fds)
            else:
                if ro_binds or system_root != HOST_ROOT:
                    raise SandboxError("read-only binds and another system root need sandbox mode bwrap")
                full = [*rlimit_args(limits), *argv]
                env, cwd, fds = sandbox_environment(home=str(self.path), tmp=str(self.tmp), path_first=path_first), str(self.path), ()
            try:
                proc = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=env, cwd=cwd, pass_fds=fds, start_new_session=True)
            except BaseException as e:
                if started is not None:
                    started.close()
                if isinstance(e, OSError):
                    raise SandboxError(f"could not start {full[0]}: {e}") from e
                raise
            finally:
                if started is not None:
                    started.close_fds()  # the child has its own copies
            self._procs.add(proc)
            return proc, started

    def _outcome(self, proc: subprocess.Popen, status: dict, stderr: str, timed_out: bool) -> tuple[int | None, int | None]:
        """(exit_code, signal) of the command, from bwrap's status report (bwrap mode) or the process itself."""
        if timed_out:
            return None, int(signal.SIGKILL)
        code = status.get("exit-code") if self.mode == "bwrap" else proc.returncode
        if self.mode == "bwrap" and "child-pid" not in status:
            raise SandboxError(f"bwrap failed to start the sandbox (exit {proc.returncode}): {stderr.strip()[-2000:] or 'no message'}")
        if code is None:  # bwrap itself was killed from outside (the OOM killer, an operator)
            return None, -proc.returncode if proc.returncode and proc.returncode < 0 else int(signal.SIGKILL)
        if code < 0:
            return None, -code
        if 128 < code <= 128 + _MAX_SIGNAL:
            return None, code - 128
        return code, None

    # ---- cleanup

    def remove(self) -> None:
        """Kill every process, delete the directory, release the uid. Idempotent; safe from any thread."""
        with self._lock:
            if self._removed:
                return
            self._removed = True
            procs = list(self._procs)
        for proc in procs:
            _kill_group(proc)
        try:
            if self.uid is not None:
                kill_uid(self.uid)
            delete_tree(self.record)
            try:
                self.record.parent.rmdir()  # the owner's last workspace takes its directory along
            except OSError:
                pass
        finally:
            with _open_lock:
                _open.pop(self.record, None)
            if self._lease:
                self._lease.release()
            os.close(self._lock_fd)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # prlimit -> setpriv -> bwrap exec one another: one process, its own group
    except (ProcessLookupError, PermissionError):
        pass


def _namespace_ended(init_pid: int | None, timeout_s: float = 10.0) -> bool:
    """Wait until the sandbox's init has exited (a zombie, reaped, or its pid reused): the kernel has then
    reaped every other process of its pid namespace. False if unknown or not by ``timeout_s``."""
    if init_pid is None:
        return False
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{init_pid}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            return True
        name, state = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:stat.rfind(")") + 3]
        if name != "bwrap" or state in ("Z", "X"):
            return True
        time.sleep(0.001)
    return False


def _read_status(fd: int) -> dict:
    """bwrap's --json-status-fd lines ({"child-pid": ...} once the sandbox exists, {"exit-code": ...} at the end), merged."""
    if fd < 0:
        return {}
    os.set_blocking(fd, False)  # every writer is gone by now; never wait here
    data = b""
    try:
        while chunk := os.read(fd, 65536):
            data += chunk
    except BlockingIOError:
        pass
    status: dict = {}
    for line in data.decode(errors="replace").splitlines():
        try:
            status.update(json.loads(line))
        except json.JSONDecodeError:
            continue
    return status


def delete_tree(path: Path) -> None:
    """Delete a workspace directory whatever the sandboxed code left in it (modes, nesting, odd names):
    its tmpfs is unmounted first (which frees its files at once), so what is left is one filesystem."""
    try:
        wsfs.unmount_all(path)
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except (OSError, RecursionError):
        done = subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True, text=True)
        if done.returncode != 0 and path.exists():
            raise SandboxError(f"could not delete {path}: {done.stderr.strip()}") from None


def open_unchecked(root: Path, owner: str, *, mode: Mode, files: dict[str, str] | None, bwrap: str,
                   disk_mb: int = DEFAULT_DISK_MB, max_inodes: int = DEFAULT_MAX_INODES) -> Workspace:
    """open_workspace without the machine check: for that check's own probe (check.py)."""
    root = Path(root).absolute()
    record = _make_record(root / owner)
    lease: UidLease | None = None
    lock_fd = -1
    try:
        if mode == "bwrap" and launch.HARDENING.workspace_fs:
            wsfs.mount_tmpfs(record, disk_mb, max_inodes)
        lease = lease_uid() if mode == "bwrap" else None
        lock_fd = _write_lock(record, lease.uid if lease else None)
        for d in ("workspace", "tmp"):
            (record / d).mkdir()
        workspace = Workspace(record, owner, mode, bwrap, lease, lock_fd)
        if workspace.uid is not None:
            for d in (workspace.path, workspace.tmp):
                os.chown(d, workspace.uid, workspace.uid)
        workspace.write_files(files or {})
    except BaseException as e:
        if lease:
            lease.release()
        if lock_fd >= 0:
            os.close(lock_fd)
        delete_tree(record)
        if isinstance(e, OSError):  # a full disk, a lock directory we may not write: the machine's failure
            raise SandboxError(f"could not set up the workspace {record}: {e}") from e
        raise
    with _open_lock:
        _open[record] = workspace
    return workspace


def _make_record(owner_dir: Path) -> Path:
    for _ in range(3):  # the janitor may delete an empty owner directory between our two mkdirs
        record = owner_dir / uuid.uuid4().hex[:16]
        try:
            owner_dir.mkdir(parents=True, exist_ok=True)
            record.mkdir(mode=0o755)
            return record
        except FileNotFoundError:
            continue
        except OSError as e:
            raise SandboxError(f"could not create a workspace under {owner_dir}: {e}") from e
    raise SandboxError(f"could not create a workspace under {owner_dir}")


def _write_lock(record: Path, uid: int | None) -> int:
    """Create ``record/lock`` already locked (written under another name, locked, then renamed), so the
    janitor never sees an unlocked lock file of a live workspace."""
    staging = record / f"{LOCK_FILE}.new"
    fd = os.open(staging, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, json.dumps({"uid": uid, "pid": os.getpid(), "created": time.time()}).encode())
    os.rename(staging, record / LOCK_FILE)
    return fd
