"""Where an instance's repository (at its base state) and its prepared environment come from.

Sources are pluggable by ``kind``: ``local`` here, ``image`` (a container image per instance) in images.py. ``local``: a directory or a tarball per repository on this
machine, and a prepared Python environment (a venv's or any interpreter's path). Both paths are templates
over the instance: ``{instance_id}``, ``{repo}`` (``owner/name``), ``{repo_slug}`` (``owner__name``, as
SWE-bench spells it in instance ids) and ``{base_commit}``.

The source is the operator's, so it is trusted: a tarball is unpacked with tarfile's ``data`` filter all the
same (no absolute paths, no links leading out, no devices). The environment is seen read-only inside the
sandbox: its interpreter's installation and every directory on its ``sys.path`` are bound at their own paths
(sandbox.mounts.interpreter_dirs), and its ``bin`` directory comes first on the PATH of the agent's commands.
It must hold the project's dependencies and pytest, not the project itself: the graded repository comes last
on ``sys.path``, so an installed copy of the project would be tested instead of the agent's edits.

A repository or interpreter that is missing is the server's failure (SandboxUnavailable: a 503), never the
model's 0.
"""
from __future__ import annotations

import functools
import os
import shutil
import string
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...sandbox import SandboxUnavailable
from ...sandbox.mounts import HOST_ROOT, interpreter_dirs
from .instances import Instance

PLACEHOLDERS = ("instance_id", "repo", "repo_slug", "base_commit")
TARBALL_SUFFIXES = (".tar", ".tar.gz", ".tgz")


def check_template(value: str) -> str:
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(value) if name is not None]
    except ValueError as e:
        raise ValueError(f"{value!r} is not a path template ({e}); expected placeholders among {', '.join('{' + p + '}' for p in PLACEHOLDERS)}") from None
    unknown = [n for n in names if n not in PLACEHOLDERS]
    if unknown:
        raise ValueError(f"{value!r} has placeholder {{{unknown[0]}}}; expected placeholders among {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    return value


class LocalSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["local"] = Field(default="local", description="local: a directory or tarball per repository and a prepared "
                                                                 "environment on this machine (kind image: a container image per instance).")
    repo_path: str = Field(min_length=1, description="The repository at its base state: a directory, or a .tar/.tar.gz/.tgz file (a single "
                                                     "top-level directory in it is the root), named as given or with one of those "
                                                     "suffixes after it. A template over {instance_id}, {repo}, "
                                                     "{repo_slug}, {base_commit}, e.g. data/swe/repos/{instance_id}.")
    python: str = Field(min_length=1, description="The prepared environment's interpreter (a venv's bin/python), read-only in the "
                                                  "sandbox: it runs the agent's python and the grading. A template like repo_path.")

    @field_validator("repo_path", "python")
    @classmethod
    def _templates(cls, value: str) -> str:
        return check_template(value)


def repo_slug(repo: str) -> str:
    """``owner/name`` as SWE-bench spells it in instance ids: ``owner__name``."""
    return repo.replace("/", "__")


def fill(template: str, instance: Instance) -> str:
    return template.format(instance_id=instance.instance_id, repo=instance.repo, repo_slug=repo_slug(instance.repo),
                           base_commit=instance.base_commit)


@dataclass(frozen=True)
class Checkout:
    """An instance's repository at its base state, put into a directory on demand."""
    path: Path

    def materialize(self, dest: Path) -> None:
        """Copy (or unpack) the repository into the empty directory ``dest``; links are copied as links."""
        if self.path.is_dir():
            shutil.copytree(self.path, dest, symlinks=True, dirs_exist_ok=True)
            return
        with tarfile.open(self.path) as tar:
            tar.extractall(dest, filter="data")
        entries = list(dest.iterdir())
        if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():  # proj-1.0/…: that directory is the root
            top = entries[0].rename(dest / f".rollflow-top-{os.getpid()}")
            for child in top.iterdir():
                child.rename(dest / child.name)
            top.rmdir()

    def release(self) -> None:
        """The episode is done with the repository (an image's checkout lets its image leave the cache)."""


@dataclass(frozen=True)
class PreparedEnv:
    python: str                   # the interpreter, as the sandbox runs it
    binds: dict[str, Path]        # read-only: path inside -> host directory
    path_first: tuple[str, ...]   # its bin directory, first on PATH
    system_root: Path = HOST_ROOT  # where the sandbox's /usr, /etc, /lib* come from (an image's root file system)


@functools.lru_cache(maxsize=64)
def _prepared(python: str) -> PreparedEnv:
    dirs = interpreter_dirs(python)  # SandboxUnavailable if it cannot run
    return PreparedEnv(python, {str(d): d.resolve() for d in dirs}, (os.path.dirname(python),))


def find_repository(named: Path) -> Path | None:
    """The repository ``named`` gives: that directory or tarball, or ``named`` with a tarball suffix after it."""
    candidates = [named, *(named.with_name(named.name + suffix) for suffix in TARBALL_SUFFIXES)]
    return next((c for c in candidates if c.is_dir() or c.is_file() and c.name.endswith(TARBALL_SUFFIXES)), None)


def resolve(source: LocalSource, instance: Instance) -> tuple[Checkout, PreparedEnv]:
    """The instance's repository and environment; SandboxUnavailable naming the path when either is missing."""
    named = Path(fill(source.repo_path, instance)).absolute()
    repo = find_repository(named)
    if repo is None:
        raise SandboxUnavailable(f"instance {instance.instance_id}: no repository at {named} (source.repo_path {source.repo_path!r}): "
                                 f"expected a directory, a {'/'.join(TARBALL_SUFFIXES)} file, or one of those suffixes after it")
    python = os.path.abspath(fill(source.python, instance))  # not resolved: a venv's python is a link to its base interpreter
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise SandboxUnavailable(f"instance {instance.instance_id}: no interpreter at {python} (source.python {source.python!r})")
    return Checkout(repo), _prepared(python)
