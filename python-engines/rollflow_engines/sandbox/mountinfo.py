"""This process's mounts, from /proc/self/mountinfo: where each is, its file system type and its super options."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mount:
    point: Path
    fstype: str
    options: tuple[str, ...]


def mounts() -> list[Mount]:
    found = []
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            left, _, right = line.partition(b" - ")
            fstype, _source, options = (right.split() + [b"", b"", b""])[:3]
            found.append(Mount(Path(os.fsdecode(_unescape(left.split()[4]))), os.fsdecode(fstype), tuple(os.fsdecode(options).split(","))))
    return found


def _unescape(field: bytes) -> bytes:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code, char in ((b"\\040", b" "), (b"\\011", b"\t"), (b"\\012", b"\n"), (b"\\134", b"\\")):
        field = field.replace(code, char)
    return field
