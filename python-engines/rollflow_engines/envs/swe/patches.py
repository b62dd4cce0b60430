"""An instance's test_patch applied to its base files, with the system's ``git apply``.

``git apply`` reads git's and plain unified diffs alike (new and deleted files, renames, modes), which is what
SWE-bench's patches are; it needs no repository. It runs here on trusted input only: the base files from the
source and the instance's own test_patch, copied into a private scratch directory, never over a tree the
agent wrote (a workspace may hold a ``.git`` whose config names commands git would run). Git does not look
for a repository above the scratch directory, and reads no system or user configuration.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ...sandbox import SandboxUnavailable

GIT_TIMEOUT_S = 60


class PatchError(ValueError):
    """The instance's test_patch does not apply to its base files: the dataset's fault (a 400 at reset)."""


def _git(args: list[str], cwd: Path, stdin: bytes) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CEILING_DIRECTORIES": str(cwd.parent), "LC_ALL": "C"}
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, env=env, timeout=GIT_TIMEOUT_S)
    except FileNotFoundError as e:
        raise SandboxUnavailable(f"git is needed to apply test patches and is not installed: {e}") from e


def touched_paths(patch: str, scratch: Path) -> list[str]:
    """The files ``patch`` changes, creates or deletes (``git apply --numstat -z``; a rename names both)."""
    done = _git(["apply", "--numstat", "-z", "-"], scratch, patch.encode())
    if done.returncode != 0:
        raise PatchError(f"test_patch is not a patch git can read: {done.stderr.decode(errors='replace').strip()[-500:]}")
    fields = done.stdout.decode(errors="surrogateescape").split("\0")
    paths: list[str] = []
    i = 0
    while i < len(fields) and fields[i]:
        _, _, path = fields[i].split("\t", 2)
        if path:
            paths.append(path)
            i += 1
        else:  # a rename or copy: "A\tD\t" then the source and the destination as fields of their own
            paths += fields[i + 1:i + 3]
            i += 3
    return paths


def apply_test_patch(base: Path, patch: str) -> dict[str, bytes | None]:
    """Each file ``patch`` touches -> its bytes after the patch is applied to ``base`` (None: the patch deletes it)."""
    if not patch.strip():
        return {}
    with tempfile.TemporaryDirectory(prefix="rollflow-test-patch-") as top:
        scratch = Path(top) / "tree"
        scratch.mkdir()
        paths = touched_paths(patch, scratch)
        for rel in paths:
            src = base / rel
            if src.is_file() and not src.is_symlink():
                (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, scratch / rel)
        done = _git(["apply", "--whitespace=nowarn", "-"], scratch, patch.encode())
        if done.returncode != 0:
            raise PatchError(f"test_patch does not apply to the base repository: {done.stderr.decode(errors='replace').strip()[-500:]}")
        return {rel: (scratch / rel).read_bytes() if (scratch / rel).is_file() else None for rel in paths}
