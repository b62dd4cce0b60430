"""Episodes of the swe env on the tally project, for the env's tests and the red team's."""
from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from rollflow_engines.envs.swe.env import SweConfig, SweEnv

from .project import Built, source


def config(built: Built, instance_id: str | None = None, **overrides) -> SweConfig:
    given = {"instances": str(built.instances_path), "source": source(built), **overrides}
    if instance_id is not None:
        given["ids"] = [instance_id]
    return SweConfig.model_validate(given)


def bash(script: str) -> str:
    return f"<bash>{script}</bash>"


def write(path: str, text: str) -> str:
    return bash(f"mkdir -p $(dirname {path}) && cat > {path} <<'EOF_RF'\n{text}\nEOF_RF")


def apply_patch(patch: str) -> str:
    """The instance's gold patch applied inside the sandbox with git, as an agent could."""
    return bash(f"cat > /tmp/fix.patch <<'EOF_PATCH'\n{patch}EOF_PATCH\ngit apply /tmp/fix.patch && echo applied")


def play(built: Built, instance_id: str, replies: list[str], **overrides) -> list:
    """Reset on ``instance_id``, step each reply (stopping when done), close; the step results."""
    return play_config({"instances": str(built.instances_path), "source": source(built), "ids": [instance_id]}, replies, **overrides)


def play_config(given: dict, replies: list[str], **overrides) -> list:
    """An episode of the swe env on the config ``given`` (one instance: seed 0), as ``play``."""
    env = SweEnv()
    try:
        env.reset(0, SweConfig.model_validate({**given, **overrides}))
        results = []
        for reply in replies:
            results.append(env.step(reply))
            if results[-1].done:
                break
        return results
    finally:
        env.close()


def write_rows(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def tree(root: Path) -> dict[str, tuple]:
    """Every entry under root as (kind, mode or link target, content sha256 for a file), links never followed: two
    workspaces that compare equal hold the same thing (the swe snapshots' tests, bench/swe-snapshots)."""
    found = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISFIFO(st.st_mode):
                found[rel] = ("fifo", stat.S_IMODE(st.st_mode))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", stat.S_IMODE(st.st_mode))
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("file", stat.S_IMODE(st.st_mode), hashlib.sha256(Path(path).read_bytes()).hexdigest())
            else:
                found[rel] = ("other", stat.S_IFMT(st.st_mode))
    return found
