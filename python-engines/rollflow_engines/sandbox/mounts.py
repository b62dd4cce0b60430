"""What a sandbox sees: the bwrap arguments for its filesystem, and its environment variables.

Read-only: /usr, /etc, the top-level /bin, /sbin, /lib* (symlinks into /usr on merged-/usr systems,
copied as symlinks; bound read-only where they are real directories), and the Python installation
and venv this server runs from, so ``python -m pytest`` works inside (the directories above them are
made searchable, empty, inside the sandbox). Writable: only the workspace
(at /workspace) and a private /tmp (a directory beside it, on disk, so a full /tmp costs disk, not
the machine's memory). Nothing else of the host exists inside: not /work, /root, the host's /tmp,
/run, /home, /sys, or any other workspace. /proc is the sandbox's own (its pid namespace); /dev is
a minimal one (null, zero, random, tty, ...). The root itself is remounted read-only.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

WORKSPACE = "/workspace"
SYSTEM_DIRS = ("/usr", "/etc")
TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def python_dirs() -> list[Path]:
    """The interpreter's installation and venv, resolved, where /usr does not already cover them."""
    dirs = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    return sorted(d for d in dirs if not any(d.is_relative_to(s) for s in SYSTEM_DIRS))


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
    python = python_dirs()
    for parent in sorted({p for d in python for p in d.parents if p != Path("/")}, key=lambda p: len(p.parts)):
        args += ["--perms", "0755", "--dir", str(parent)]  # bwrap would make them 0700, closed to the sandbox's uid
    for d in python:
        args += ["--ro-bind", str(d), str(d)]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--bind", str(workspace), WORKSPACE, "--bind", str(tmp), "/tmp"]
    for inside, host in (ro_binds or {}).items():
        args += ["--ro-bind", str(host), inside]
    args += ["--remount-ro", "/", "--chdir", WORKSPACE]
    return args


def sandbox_environment(home: str, tmp: str) -> dict[str, str]:
    """The whole environment of a sandboxed command: none of the server's variables reach it."""
    return {
        "PATH": f"{venv_bin()}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": home, "TMPDIR": tmp, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
    }
