"""Opening a workspace: its arguments checked, and the machine's ability to sandbox checked once (check.py),
before the workspace itself is made (workspace.py)."""
from __future__ import annotations

import logging
from pathlib import Path

from .check import check_sandbox
from .workspace import DEFAULT_DISK_MB, DEFAULT_MAX_INODES, OWNER_PATTERN, Mode, Workspace, open_unchecked

log = logging.getLogger(__name__)


def open_workspace(root: Path, owner: str, *, mode: Mode = "bwrap", files: dict[str, str] | None = None,
                   bwrap: str = "bwrap", disk_mb: int = DEFAULT_DISK_MB, max_inodes: int = DEFAULT_MAX_INODES) -> Workspace:
    """A fresh workspace under ``<root>/<owner>/<id>``, with ``files`` (relative path -> text) written in it.

    In bwrap mode its /workspace and /tmp together hold at most ``disk_mb`` MiB and ``max_inodes`` files
    and directories (a tmpfs of its own); mode none has no such cap (it may not run as root)."""
    if not OWNER_PATTERN.fullmatch(owner):
        raise ValueError(f"owner: got {owner!r}; expected 1-128 characters of letters, digits, '.', '_' or '-', not starting with '.', '_' or '-'")
    if mode not in ("bwrap", "none"):
        raise ValueError(f"mode: got {mode!r}; expected 'bwrap' or 'none'")
    if not (isinstance(disk_mb, int) and 1 <= disk_mb <= 1 << 20 and isinstance(max_inodes, int) and 16 <= max_inodes <= 1 << 30):
        raise ValueError(f"disk_mb, max_inodes: got {disk_mb!r}, {max_inodes!r}; expected 1..{1 << 20} MiB and 16..{1 << 30} inodes")
    if mode == "bwrap":
        check_sandbox(mode, bwrap=bwrap)
    else:
        log.warning("sandbox mode 'none': commands in this workspace run UNSANDBOXED as this server's user "
                    "(owner %s, root %s); use it only for trusted code", owner, Path(root).absolute())
    return open_unchecked(root, owner, mode=mode, files=files, bwrap=bwrap, disk_mb=disk_mb, max_inodes=max_inodes)
