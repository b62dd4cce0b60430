"""What one ``Workspace.run`` may use, and what it gave back."""
from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

OUTPUT_MARKER = "\n[... output truncated: {total} bytes in all, the first {kept} shown]\n"


@dataclass(frozen=True)
class Limits:
    """Defaults fit one SWE turn (running a test suite). Each is enforced by the kernel (rlimits, the
    memory cgroup) except ``wall_s`` (the caller kills the sandbox) and ``output_bytes`` (the caller
    keeps only that much). Core dumps are always off (RLIMIT_CORE 0): a dump would write the memory
    of a process the size of ``memory_mb`` into the workspace."""

    wall_s: float = 30.0        # wall-clock time of the whole command
    cpu_s: int = 20             # RLIMIT_CPU of every process (SIGXCPU, then SIGKILL one second later)
    memory_mb: int = 1024       # RLIMIT_AS (address space) of every process
    max_procs: int = 64         # RLIMIT_NPROC: processes of the sandbox's own uid
    max_file_mb: int = 32       # RLIMIT_FSIZE: largest file a process may write (SIGXFSZ past it)
    output_bytes: int = 64_000  # kept of stdout, and of stderr, each
    # (fields below were added later: kept last so that positional construction keeps its meaning)
    # All the memory the run holds (every process, memfd and shared memory, page cache), through a
    # memory cgroup (cgroups.py); not enforced where no cgroup is usable (cgroups.memory_mode says).
    # Its own field, not memory_mb: address space is not memory (a JVM or Go reserves far more than it
    # touches), and the sum over max_procs processes is another quantity than one process's share.
    memory_total_mb: int = 2048
    max_open_files: int = 256   # RLIMIT_NOFILE of every process (EMFILE past it)


class LimitsConfig(BaseModel):
    """``Limits`` as a validated option (a verifier's or env's config); defaults are Limits'."""

    model_config = ConfigDict(extra="forbid")

    wall_s: float = Field(default=Limits.wall_s, gt=0, le=3600, description="Wall-clock seconds a command may run; past it the sandbox is killed.")
    cpu_s: int = Field(default=Limits.cpu_s, ge=1, le=3600, description="CPU seconds each process may use (RLIMIT_CPU).")
    memory_mb: int = Field(default=Limits.memory_mb, ge=64, le=1 << 20, description="Address space of each process in MiB (RLIMIT_AS).")
    max_procs: int = Field(default=Limits.max_procs, ge=4, le=4096, description="Processes the sandbox may run at once (RLIMIT_NPROC of its own uid).")
    max_file_mb: int = Field(default=Limits.max_file_mb, ge=1, le=1 << 20, description="Largest file a process may write, in MiB (RLIMIT_FSIZE).")
    memory_total_mb: int = Field(default=Limits.memory_total_mb, ge=64, le=1 << 20,
                                 description="All the memory of the whole sandbox in MiB (processes, memfd, shared memory, page cache; a memory "
                                             "cgroup): past it the kernel OOM-kills inside the sandbox. Unenforced where no cgroup is usable.")
    max_open_files: int = Field(default=Limits.max_open_files, ge=16, le=1 << 20, description="Open files of each process (RLIMIT_NOFILE).")
    output_bytes: int = Field(default=Limits.output_bytes, ge=1, le=64 << 20, description="Bytes kept of stdout and of stderr each; the rest is dropped behind a marker.")

    def to_limits(self) -> Limits:
        return Limits(**self.model_dump())


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None  # None when killed by a signal (the wall-clock timeout, an rlimit, kill -9)
    stdout: str            # decoded with errors="replace"; cut at output_bytes behind OUTPUT_MARKER
    stderr: str
    truncated: bool        # stdout or stderr was cut
    timed_out: bool        # killed at wall_s
    signal: int | None     # the signal that ended the command, when one did
    oom_killed: bool = False  # the kernel OOM-killed a process of the run at memory_total_mb (the command then
                              # usually ends with signal 9; a parent that survives its child may exit on its own)
