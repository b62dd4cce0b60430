"""What a sandbox sees: the bwrap arguments for its filesystem, and its environment variables.

Read-only: /usr, /etc, the top-level /bin, /sbin, /lib* (symlinks into /usr on merged-/usr systems,
copied as symlinks; bound read-only where they are real directories), and every directory the
sandbox's Python imports from (``python_dirs``), so ``python -m pytest`` works inside (the directories
above them are made searchable, empty, inside the sandbox). Writable: only the workspace (at
/workspace) and a private /tmp (both in the workspace's own capped tmpfs, see wsfs.py). Nothing else of
the host exists inside: not /work, /root, the host's /tmp, /run, /home, /sys, or any other workspace.
/proc is the sandbox's own (its pid namespace); /dev is a minimal one (null, zero, random, tty, ...).
The root itself is remounted read-only.

``system_root``: where the system directories come from, the host's ``/`` by default. A container image's root
file system (envs/swe/images.py) puts its own /usr, /etc and /lib* there instead, so its interpreter runs on
its own libraries; the host's Python directories are then not bound at all (the image is the whole system),
and everything else (workspace, /tmp, /proc, /dev, read-only root) is as with the host's.

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
HOST_ROOT = Path("/")
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


# The same question asked inside a root file system: each existing entry with its real path there.
# '' (the current directory, for -c) is left out, as interpreter_dirs does.
_SYS_PATH_IN_ROOT = ("import json, os, sys; print(json.dumps([[os.path.abspath(p), os.path.realpath(p)] for p in "
                     "[sys.prefix, sys.base_prefix, *sys.path] if p and os.path.exists(p)]))")


def interpreter_binds_in(root: Path, python: str, bwrap: str = "bwrap") -> dict[str, Path]:
    """interpreter_dirs for an interpreter of a root file system that is not the host's (a container image's), as
    binds: each directory inside -> where it lies under ``root``. The interpreter is asked inside ``root`` (bwrap,
    no network, the root read-only): its links (``/opt/env/bin/python -> /usr/bin/python3``) mean the image's
    paths, not the host's. SandboxUnavailable if it cannot say."""
    argv = [bwrap, "--ro-bind", str(root), "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all",
            "--die-with-parent", "--chdir", "/", "--", python, "-c", _SYS_PATH_IN_ROOT]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=sandbox_environment(home="/nonexistent", tmp="/tmp"))
        pairs = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        pairs, done = None, e
    if pairs is None:
        raise SandboxUnavailable(f"{python} in {root} could not report its sys.path: {done}")
    real = {Path(p): Path(r) for p, r in pairs}
    kept = _outermost([*real, *real.values()])
    return {str(d): root / str(real.get(d, d)).lstrip("/") for d in kept}


def _outermost(paths) -> list[Path]:
    """Existing paths outside the system dirs, without those inside another one of them."""
    kept: list[Path] = []
    for p in sorted({p for p in paths if not any(p.is_relative_to(s) for s in SYSTEM_DIRS)}, key=lambda p: len(p.parts)):
        if not any(p.is_relative_to(k) for k in kept):
            kept.append(p)
    return sorted(kept)


def venv_bin() -> Path:
    return Path(sys.prefix).resolve() / "bin"


def filesystem_args(workspace: Path, tmp: Path, ro_binds: dict[str, Path] | None = None, system_root: Path = HOST_ROOT) -> list[str]:
    """``ro_binds`` (a path inside -> a host directory) are bound read-only over the rest: what the sandboxed
    code must read and must not change (the hidden tests of a grading). ``system_root``: see the module's doc."""
    args: list[str] = []
    for d in SYSTEM_DIRS:
        args += ["--ro-bind", _under(system_root, d), d]
    for top in TOP_LEVEL:
        source = _under(system_root, top)
        if os.path.islink(source):
            args += ["--symlink", os.readlink(source), top]
        elif os.path.isdir(source):
            args += ["--ro-bind", source, top]
    args += ["--proc", "/proc", "--dev", "/dev", "--bind", str(workspace), WORKSPACE, "--bind", str(tmp), "/tmp"]
    python = python_dirs() if system_root == HOST_ROOT else []
    inside = [*python, *(Path(p) for p in ro_binds or {})]  # a bound directory's parents must be searchable too (a task's venv)
    for parent in sorted({p for d in inside for p in d.parents if p != Path("/")}, key=lambda p: len(p.parts)):
        args += ["--perms", "0755", "--dir", str(parent)]  # bwrap would make them 0700, closed to the sandbox's uid
    for d in python:
        args += ["--ro-bind", str(d.resolve()), str(d)]
    for inside, host in (ro_binds or {}).items():
        args += ["--ro-bind", str(host), inside]
    args += ["--remount-ro", "/", "--chdir", WORKSPACE]
    return args


def _under(root: Path, path: str) -> str:
    """``path`` (absolute) as found under ``root``; the host's own path, unchanged, when ``root`` is ``/``."""
    return path if root == HOST_ROOT else str(root / path.lstrip("/"))


def sandbox_environment(home: str, tmp: str, path_first: tuple[str, ...] = ()) -> dict[str, str]:
    """The whole environment of a sandboxed command: none of the server's variables reach it. Its PATH
    names the venv's bin directory, a host path: the venv is bound at the same path on purpose.
    ``path_first``: directories searched before it (a task's prepared environment, bound read-only)."""
    return {
        "PATH": ":".join([*path_first, f"{venv_bin()}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]),
        "HOME": home, "TMPDIR": tmp, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
    }
