"""What a sandbox sees: the bwrap arguments for its filesystem, and its environment variables.

Read-only: /usr, /etc, the top-level /bin, /sbin, /lib* (symlinks into /usr on merged-/usr systems,
copied as symlinks; bound read-only where they are real directories), and every directory the
sandbox's Python imports from (``python_dirs``), so ``python -m pytest`` works inside (the directories
above them are made searchable, empty, inside the sandbox). Writable: only the workspace (at
/workspace) and a private /tmp (both in the workspace's own capped tmpfs, see wsfs.py). Nothing else of
the host exists inside: not /work, /root, the host's /tmp, /run, /home, /sys, or any other workspace.
/proc is the sandbox's own (its pid namespace); /dev is a minimal one (null, zero, random, tty, ...).
The root itself is remounted read-only.

bwrap applies its operations in order, and a bind hides whatever an earlier one put below its target.
So the private /tmp is bound first and the Python directories after it: a venv living under /tmp (a
checkout in /tmp) stays visible inside, bound over the private /tmp at its own path.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from .errors import SandboxUnavailable

WORKSPACE = "/workspace"
SYSTEM_DIRS = ("/usr", "/etc")
TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYS_PATH = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, *sys.path]))"

_python_dirs: list[Path] | None = None
_lock = threading.Lock()


def python_dirs() -> list[Path]:
    """The directories the sandbox's ``python`` needs, outside /usr and /etc: its installation, its venv,
    and every ``sys.path`` entry it starts with (a ``.pth`` file may point anywhere). Each at the path
    the interpreter names it by and at its resolved path (a venv reached through a symlink, the
    interpreter's own symlink into its installation), bound from the resolved path.

    Asked of the interpreter itself, once per process, with the sandbox's own environment: this
    process's ``sys.path`` also holds what PYTHONPATH, pytest or the server added, which the sandboxed
    interpreter will not see (and which must not be exposed: the server's own source)."""
    global _python_dirs
    with _lock:
        if _python_dirs is None:
            _python_dirs = interpreter_dirs(sys.executable)
        return list(_python_dirs)


def interpreter_dirs(python: str) -> list[Path]:
    """python_dirs for any interpreter (a task's prepared environment, envs/swe): what it needs bound, asked
    of it with the sandbox's environment. SandboxUnavailable if it cannot say (missing, broken, too slow)."""
    try:
        done = subprocess.run([python, "-c", _SYS_PATH], capture_output=True, text=True, timeout=60,
                              cwd="/", env=sandbox_environment(home="/nonexistent", tmp="/nonexistent"))
        entries = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        entries, done = None, e
    if entries is None:
        raise SandboxUnavailable(f"{python} could not report its sys.path: {done}")
    found = [Path(os.path.abspath(e)) for e in entries if e and os.path.exists(e)]
    return _outermost([*found, *(p.resolve() for p in found)])


def _outermost(paths) -> list[Path]:
    """Existing paths outside the system dirs, without those inside another one of them."""
    kept: list[Path] = []
    for p in sorted({p for p in paths if not any(p.is_relative_to(s) for s in SYSTEM_DIRS)}, key=lambda p: len(p.parts)):
        if not any(p.is_relative_to(k) for k in kept):
            kept.append(p)
    return sorted(kept)


def venv_bin() -> Path:
    return Path(sys.prefix).resolve() / "bin"


def filesystem_args(workspace: Path, tmp: Path, ro_binds: dict[str, Path] | None = None) -> list[str]:
    """``ro_binds`` (a path inside -> a host directory) are bound read-only over the rest: what the sandboxed
    code must read and must not change (the hidden tests of a grading)."""
    args: list[str] = []
    for d in SYSTEM_DIRS:
        args += ["--ro-bind", d, d]
    for top in TOP_LEVEL:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--proc", "/proc", "--dev", "/dev", "--bind", str(workspace), WORKSPACE, "--bind", str(tmp), "/tmp"]
    python = python_dirs()
    inside = [*python, *(Path(p) for p in ro_binds or {})]  # a bound directory's parents must be searchable too (a task's venv)
    for parent in sorted({p for d in inside for p in d.parents if p != Path("/")}, key=lambda p: len(p.parts)):
        args += ["--perms", "0755", "--dir", str(parent)]  # bwrap would make them 0700, closed to the sandbox's uid
    for d in python:
        args += ["--ro-bind", str(d.resolve()), str(d)]
    for inside, host in (ro_binds or {}).items():
        args += ["--ro-bind", str(host), inside]
    args += ["--remount-ro", "/", "--chdir", WORKSPACE]
    return args


def sandbox_environment(home: str, tmp: str, path_first: tuple[str, ...] = ()) -> dict[str, str]:
    """The whole environment of a sandboxed command: none of the server's variables reach it. Its PATH
    names the venv's bin directory, a host path: the venv is bound at the same path on purpose.
    ``path_first``: directories searched before it (a task's prepared environment, bound read-only)."""
    return {
        "PATH": ":".join([*path_first, f"{venv_bin()}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]),
        "HOME": home, "TMPDIR": tmp, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
    }
