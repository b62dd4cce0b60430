"""Can this machine sandbox? The tools, and one real probe sandbox, checked once per bwrap path."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from .command import sandbox_argv
from .errors import SandboxUnavailable
from .mounts import filesystem_args
from .uids import lease_uid

# util-linux tools the command line is built from, beside bwrap itself (setpriv runs inside the sandbox, from /usr).
HELPERS = {"setpriv": "util-linux (setpriv)", "prlimit": "util-linux (prlimit)"}
_checked: set[str] = set()
_lock = threading.Lock()


def find_tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        where = "" if "/" in name else " on PATH"
        raise SandboxUnavailable(f"{name!r} was not found{where}: install the Debian package {package}"
                                 + (" (make setup installs it)" if package == "bubblewrap" else ""))
    return path


def check_sandbox(mode: str = "bwrap", *, bwrap: str = "bwrap") -> None:
    """Raise SandboxUnavailable naming what is missing; mode "none" needs nothing. A success is cached."""
    if mode == "none":
        return
    with _lock:
        if bwrap in _checked:
            return
        if os.geteuid() != 0:
            raise SandboxUnavailable(f"the sandbox needs root (it runs each workspace as a uid of its own); this process runs as uid {os.geteuid()}")
        path = find_tool(bwrap, "bubblewrap")
        for name, package in HELPERS.items():
            find_tool(name, package)
        _probe(path)
        _checked.add(bwrap)


def _probe(bwrap_path: str) -> None:
    """One sandbox running /bin/true with exactly the command line real runs use."""
    lease = lease_uid()
    try:
        with tempfile.TemporaryDirectory(prefix="rollflow-sandbox-probe-") as d:
            os.chmod(d, 0o755)
            workspace, tmp = Path(d, "workspace"), Path(d, "tmp")
            workspace.mkdir()
            tmp.mkdir()
            argv = sandbox_argv(bwrap_path, lease.uid, None, filesystem_args(workspace, tmp), ["/bin/true"])
            done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailable(f"bwrap ({bwrap_path}) could not be run: {e}") from e
    finally:
        lease.release()
    if done.returncode != 0:
        raise SandboxUnavailable(
            f"bwrap ({bwrap_path}) cannot create the sandbox (exit {done.returncode}): {done.stderr.strip() or 'no message'}. "
            "It needs to create pid, network, mount, ipc and uts namespaces: a container must allow that "
            "(CAP_SYS_ADMIN, and no seccomp or AppArmor profile forbidding unshare/mount)")
