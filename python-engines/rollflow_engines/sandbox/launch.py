"""Everything one bwrap run needs beside its command: the argument and seccomp descriptors, its memory
cgroup, and the command line that ties them together (command.py).

``HARDENING`` is internal: the benchmark (bench/sandbox/) and tests turn its layers off one at a time
to measure or demonstrate them. No config key reaches it; production runs with everything on.
"""
from __future__ import annotations

import itertools
import os
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from . import cgroups, seccomp
from .command import bwrap_options, inner_command, launch_argv, nul_separated
from .errors import SandboxError
from .limits import Limits
from .mounts import HOST_ROOT, filesystem_args

MiB = 1 << 20


@dataclass(frozen=True)
class Hardening:
    seccomp: bool = True       # the seccomp filter (seccomp.py)
    cgroup: bool = True        # a memory cgroup per run, where the machine has one (cgroups.py)
    workspace_fs: bool = True  # a capped tmpfs per workspace (wsfs.py); read when a workspace is opened


HARDENING = Hardening()
_runs = itertools.count()


@contextmanager
def hardening(**layers: bool):
    """Benchmarks and tests only: run with some layers off, e.g. ``with hardening(seccomp=False):``."""
    global HARDENING
    before = HARDENING
    HARDENING = replace(before, **layers)
    try:
        yield HARDENING
    finally:
        HARDENING = before


class Launch:
    """One run's command line and the resources it holds until the run is over (``close``)."""

    def __init__(self, bwrap: str, uid: int, status_fd: int | None, workspace: Path, tmp: Path, command: list[str],
                 limits: Limits, name: str, ro_binds: dict[str, Path] | None = None, system_root: Path = HOST_ROOT):
        self.fds: list[int] = []
        self.cgroup: cgroups.RunCgroup | None = None
        try:
            seccomp_fd = self._fd(seccomp.bpf(), "rollflow-seccomp") if HARDENING.seccomp else None
            options = bwrap_options(status_fd, seccomp_fd, filesystem_args(workspace, tmp, ro_binds, system_root))
            args_fd = self._fd(nul_separated(options), "rollflow-bwrap-args")
            mode = cgroups.memory_mode()
            if HARDENING.cgroup and mode.kind != "rlimit":
                try:
                    self.cgroup = cgroups.RunCgroup(mode, f"{name}-{next(_runs)}", limits.memory_total_mb * MiB)
                except OSError as e:
                    raise SandboxError(f"could not make the run's memory cgroup under {mode.base}: {e}") from e
            self.argv = launch_argv(bwrap, args_fd, limits, str(self.cgroup.procs) if self.cgroup else None,
                                    inner_command(uid, command))
        except BaseException:
            self.close()
            raise

    def _fd(self, data: bytes, name: str) -> int:
        fd = seccomp.data_fd(data, name)
        self.fds.append(fd)
        return fd

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return tuple(self.fds)

    def close_fds(self) -> None:
        """Once the child has its copies: ours are not needed."""
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def oom_killed(self) -> bool:
        return self.cgroup is not None and self.cgroup.oom_kills() > 0

    def close(self) -> None:
        """After the run's last process is gone: close what is left and remove the cgroup."""
        self.close_fds()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
