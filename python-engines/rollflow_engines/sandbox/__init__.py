"""A sandbox for model-written code, on bubblewrap: see docs/sandbox.md.

    with current().open(files={"main.py": code}) as ws:   # or open_workspace(root, owner, ...)
        result = ws.run("python main.py", stdin="1 2\n", limits=Limits(wall_s=5))

Every run is a fresh sandbox over the same workspace directory: new namespaces (no network, own
pids), a read-only system, a seccomp filter, rlimits, a memory cgroup, a wall clock and an output cap;
the workspace is a capped tmpfs of its own. ``SandboxUnavailable`` and
``SandboxError`` are infrastructure failures, never the sandboxed program's.
"""
from __future__ import annotations

from .check import SandboxReport, check_sandbox
from .errors import SandboxError, SandboxUnavailable
from .janitor import reap_orphans
from .limits import Limits, LimitsConfig, RunResult
from .settings import SandboxSettings, configure, current
from .opening import open_workspace
from .workspace import Mode, Workspace

__all__ = ["Limits", "LimitsConfig", "Mode", "RunResult", "SandboxError", "SandboxReport", "SandboxSettings", "SandboxUnavailable", "Workspace",
           "check_sandbox", "configure", "current", "open_workspace", "reap_orphans"]
