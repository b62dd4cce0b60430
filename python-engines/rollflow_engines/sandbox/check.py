"""Can this machine sandbox? The tools, the seccomp filter, and one real probe sandbox, checked once per bwrap path.

The probe opens a real workspace (its tmpfs, a uid, a memory cgroup where there is one) and runs, with
exactly the command line real runs use, ``python -c 'import pytest'``: the interpreter and the
directories it imports from must be visible inside, or every run of a test suite would score 0.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import SandboxError, SandboxUnavailable

log = logging.getLogger(__name__)

# util-linux tools the command line is built from, beside bwrap itself (setpriv runs inside the sandbox, from /usr).
HELPERS = {"setpriv": "util-linux (setpriv)", "prlimit": "util-linux (prlimit)"}
PROBE = "import pytest, sys; print(sys.executable)"
_checked: set[str] = set()
_lock = threading.Lock()


@dataclass(frozen=True)
class SandboxReport:
    """What is in force on this machine (logged once at the first check; the env role may log it too)."""
    seccomp: str
    memory: str
    workspace_fs: str

    def lines(self) -> list[str]:
        return [f"seccomp: {self.seccomp}", self.memory, f"workspace fs: {self.workspace_fs}"]


def find_tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        where = "" if "/" in name else " on PATH"
        raise SandboxUnavailable(f"{name!r} was not found{where}: install the Debian package {package}"
                                 + (" (make setup installs it)" if package == "bubblewrap" else ""))
    return path


def report() -> SandboxReport:
    from . import cgroups, launch
    seccomp = "filter loaded by bwrap (--seccomp), x86_64 only, foreign ABIs killed" if launch.HARDENING.seccomp else "OFF (benchmark toggle)"
    memory = cgroups.memory_mode().describe() if launch.HARDENING.cgroup else "memory: cgroup OFF (benchmark toggle); RLIMIT_AS only"
    fs = "a tmpfs per workspace (disk_mb, max_inodes)" if launch.HARDENING.workspace_fs else "OFF (benchmark toggle): the root's disk"
    return SandboxReport(seccomp, memory, fs)


def check_sandbox(mode: str = "bwrap", *, bwrap: str = "bwrap") -> SandboxReport | None:
    """Raise SandboxUnavailable naming what is missing; mode "none" needs nothing. A success is cached."""
    if mode == "none":
        return None
    with _lock:
        if bwrap in _checked:
            return report()
        if os.geteuid() != 0:
            raise SandboxUnavailable(f"the sandbox needs root (it runs each workspace as a uid of its own); this process runs as uid {os.geteuid()}")
        path = find_tool(bwrap, "bubblewrap")
        for name, package in HELPERS.items():
            find_tool(name, package)
        from . import seccomp
        seccomp.bpf()  # raises SandboxUnavailable naming what is missing
        _probe(path, bwrap)
        _checked.add(bwrap)
        found = report()
        for line in found.lines():
            log.info("sandbox %s", line)
        return found


def _probe(bwrap_path: str, bwrap: str) -> None:
    """One workspace running the real interpreter with the real command line."""
    from .mounts import python_dirs, venv_bin
    from .workspace import open_unchecked
    try:
        with tempfile.TemporaryDirectory(prefix="rollflow-sandbox-probe-") as d:
            with open_unchecked(Path(d), "probe", mode="bwrap", files=None, bwrap=bwrap) as ws:
                done = ws.run(["python", "-c", PROBE])
    except SandboxError as e:
        raise SandboxUnavailable(f"bwrap ({bwrap_path}) cannot create the sandbox: {e}. It needs to create pid, network, "
                                 "mount, ipc and uts namespaces: a container must allow that (CAP_SYS_ADMIN, and no "
                                 "seccomp or AppArmor profile forbidding unshare/mount)") from e
    except OSError as e:
        raise SandboxUnavailable(f"bwrap ({bwrap_path}) could not be run: {e}") from e
    if done.exit_code == 127:
        raise SandboxUnavailable(f"python not found inside the sandbox: the venv at {venv_bin().parent} is not visible "
                                 f"(bound: {', '.join(map(str, python_dirs()))}); exit {done.exit_code}, signal {done.signal}: "
                                 f"{done.stderr.strip()[-1000:] or 'no message'}")
    if done.exit_code != 0:
        raise SandboxUnavailable(f"python -c 'import pytest' failed inside the sandbox (exit {done.exit_code}, signal "
                                 f"{done.signal}, bound: {', '.join(map(str, python_dirs()))}): {done.stderr.strip()[-2000:]}")
