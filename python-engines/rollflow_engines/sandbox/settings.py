"""This process's sandbox settings: where workspaces live, in which mode, and whose they are.

Envs are built by name with no arguments and verifiers are plain functions, so they take their
settings from here: ``current().open(files)`` opens a workspace owned by this process. The env role
sets them from its options (``sandbox``, ``sandbox_root``, ``sandbox_max_age_s``) when it starts; the
owner is this process (``OWNER``), so the janitor of each env server knows its own workspaces.
"""
from __future__ import annotations

import os
import tempfile
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .opening import open_workspace
from .workspace import DEFAULT_DISK_MB, DEFAULT_MAX_INODES, Mode, Workspace

DEFAULT_ROOT = Path(tempfile.gettempdir()) / "rollflow-sandboxes"
DEFAULT_MAX_AGE_S = 6 * 3600.0
OWNER = f"pid{os.getpid()}-{uuid.uuid4().hex[:8]}"  # unique even when pids repeat across restarts
# Told of each workspace opened in this context, to stop it from another thread: a verifier call past its
# deadline has its workspaces removed (rewards/deadline.py). If it raises, the new workspace is removed.
on_open: ContextVar[Callable[[Workspace], None] | None] = ContextVar("rollflow_sandbox_on_open", default=None)


@dataclass(frozen=True)
class SandboxSettings:
    root: Path = DEFAULT_ROOT
    mode: Mode = "bwrap"
    max_age_s: float = DEFAULT_MAX_AGE_S
    owner: str = field(default=OWNER)
    disk_mb: int = DEFAULT_DISK_MB        # each workspace's tmpfs: bytes of /workspace and /tmp together (bwrap mode)
    max_inodes: int = DEFAULT_MAX_INODES  # and files and directories

    def open(self, files: dict[str, str] | None = None) -> Workspace:
        workspace = open_workspace(self.root, self.owner, mode=self.mode, files=files, disk_mb=self.disk_mb, max_inodes=self.max_inodes)
        if (hook := on_open.get()) is not None:
            try:
                hook(workspace)
            except BaseException:
                workspace.remove()
                raise
        return workspace


_current = SandboxSettings()


def configure(settings: SandboxSettings) -> None:
    global _current
    _current = settings


def current() -> SandboxSettings:
    return _current
