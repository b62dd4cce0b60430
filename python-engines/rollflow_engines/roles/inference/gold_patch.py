"""A gold patch (a unified diff, git's or plain) cut into what an agent's actions can apply: per file, its section of
the patch and, for a plain modification, each hunk as the text before and after it (context and removed lines;
context and added lines), which is what one ``edit`` (str_replace) replaces.

A hunk's lines are counted from its ``@@ -a,b +c,d @@`` header, not guessed from their first character, so a removed
line that itself begins with ``--`` (``--- x`` in the diff) is read as the hunk's, not as a new file header. Files the
edit tool cannot express (a new, deleted, renamed or binary file, a mode change, a hunk with no text before it) get
no hunks: the scripted policy applies their section with ``git apply`` instead (swe_gold.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# Header lines that say the file is not a plain modification of its text.
_NOT_TEXT_EDIT = ("new file mode", "deleted file mode", "rename from", "rename to", "copy from", "old mode", "new mode",
                  "Binary files", "GIT binary patch", "similarity index")


@dataclass(frozen=True)
class Hunk:
    before: str  # context and removed lines, as they stand in the file
    after: str   # context and added lines
    start: int   # the hunk's first line in the file before the patch (1-based)


@dataclass(frozen=True)
class FilePatch:
    path: str                        # the file, relative to the repository
    section: str                     # this file's part of the patch, headers included: what git apply takes
    hunks: tuple[Hunk, ...] | None   # None: not expressible as str_replace edits


def _strip_prefix(name: str) -> str:
    name = name.split("\t", 1)[0].strip()
    return name[2:] if name[:2] in ("a/", "b/") else name


def _sections(lines: list[str]) -> list[list[str]]:
    """The patch's lines grouped by file: a group starts at ``diff --git`` or, in a plain diff, at a ``---`` line
    followed by ``+++`` outside any hunk."""
    groups: list[list[str]] = []
    in_hunk_left = 0  # lines of the current hunk not yet read (old and new counted together, roughly)
    for i, line in enumerate(lines):
        if in_hunk_left > 0:
            groups[-1].append(line)
            in_hunk_left -= 0 if line.startswith("\\") else 1
            continue
        starts_git = line.startswith("diff --git ")
        starts_plain = line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ") and not (
            groups and groups[-1][0].startswith("diff --git ") and not any(x.startswith("@@") for x in groups[-1]))
        if starts_git or starts_plain or not groups:
            groups.append([])
        groups[-1].append(line)
        if m := _HUNK.match(line):
            old, new = int(m[1] or 1), int(m[2] or 1)
            in_hunk_left = _hunk_length(lines, i + 1, old, new)
    return groups


def _hunk_length(lines: list[str], first: int, old: int, new: int) -> int:
    """How many body lines (not counting ``\\ No newline`` markers) follow a hunk header with these counts."""
    n = 0
    i = first
    while (old > 0 or new > 0) and i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("\\"):
            continue
        n += 1
        kind = line[:1]
        if kind == "-":
            old -= 1
        elif kind == "+":
            new -= 1
        else:  # context (a blank line in the diff is an empty context line)
            old -= 1
            new -= 1
    return n


def _hunks(group: list[str]) -> tuple[Hunk, ...] | None:
    hunks: list[Hunk] = []
    before: list[str] | None = None
    after: list[str] = []
    last_sides = ""
    for line in group:
        if m := _HUNK.match(line):
            if before is not None:
                hunks.append(Hunk("".join(before), "".join(after), start))
            before, after, start = [], [], int(line.split()[1].lstrip("-").split(",")[0] or 1)
            continue
        if before is None:
            continue
        if line.startswith("\\"):  # "\ No newline at end of file": the line before it has no newline
            for side in (before if "b" in last_sides else None, after if "a" in last_sides else None):
                if side:
                    side[-1] = side[-1].removesuffix("\n")
            continue
        kind, text = line[:1], line[1:] + "\n"
        if kind == "-":
            before.append(text)
            last_sides = "b"
        elif kind == "+":
            after.append(text)
            last_sides = "a"
        else:
            before.append(text)
            after.append(text)
            last_sides = "ba"
    if before is not None:
        hunks.append(Hunk("".join(before), "".join(after), start))
    if not hunks or any(not h.before for h in hunks):
        return None
    return tuple(hunks)


def split_patch(patch: str) -> list[FilePatch]:
    """Each file the patch changes, in the patch's order. ValueError for a patch that names no file."""
    lines = patch.splitlines()
    files: list[FilePatch] = []
    for group in _sections(lines):
        minus = next((_strip_prefix(x[4:]) for x in group if x.startswith("--- ")), None)
        plus = next((_strip_prefix(x[4:]) for x in group if x.startswith("+++ ")), None)
        git = group[0].split(" b/", 1)[1] if group[0].startswith("diff --git ") and " b/" in group[0] else None
        path = next((p for p in (plus, minus, git) if p and p != "/dev/null"), None)
        if path is None:
            continue  # text before the first file (a commit message), or a header with no file
        header = group[:next((i for i, x in enumerate(group) if _HUNK.match(x)), len(group))]
        plain = not any(x.startswith(_NOT_TEXT_EDIT) for x in header) and minus not in (None, "/dev/null") and plus not in (None, "/dev/null")
        files.append(FilePatch(path, "\n".join(group) + "\n", _hunks(group) if plain else None))
    if not files:
        raise ValueError("the patch names no file")
    return files
