"""The mined-task format warm-start's examples (``warm:swe-mined``): warm:swe's two-turn transcripts on tasks of
the swe env's dataset (`make swe-tasks`, docs/swe-mining.md) instead of SWE-lite's generated ones.

Each example is a training task's ``brief`` first observation (envs/swe/brief.py), a ``<replace>`` of the smallest
piece of the mutated line that occurs once in its file (the fix in a ``correct_prob`` share, the same text put back
otherwise), the env's answer, and ``<submit/>``. The tasks are the warm-start's ``env_config``: the swe env's
config (instances, source, ids), whose ``split`` must be the training split, so a held-out task (split
heldout_tasks or heldout_projects) can never be shown: ``select`` refuses an id outside it. Relative paths are
the repository root's (where `make swe-tasks` writes .cache/swe-mined), whatever the server's working directory.
"""
from __future__ import annotations

import functools
import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

from ..envs.swe.brief import brief_observation, patched_file
from ..envs.swe.env import SweConfig
from ..envs.swe.instances import Instance, load_dataset, select
from ..envs.swe.sources import Checkout, resolve
from .tiny import REPO_ROOT
from .warmstart_swe import smallest_unique_edit, two_turns

TRAIN_SPLIT = "train"


def _rooted(path: str) -> str:
    return path if Path(path).is_absolute() else str(REPO_ROOT / path)


def mined_config(env_config: dict[str, Any]) -> SweConfig:
    """The swe env's config of the warm-start's tasks, paths made absolute; ValueError unless it is the training split."""
    config = SweConfig.model_validate({**env_config, "brief": True})
    if config.split != TRAIN_SPLIT or not config.ids:
        raise ValueError(f"a mined warm-start shows training tasks only: its env_config needs split {TRAIN_SPLIT!r} and ids "
                         f"(got split {config.split!r})")
    source = config.source.model_copy(update={"repo_path": _rooted(config.source.repo_path), "python": _rooted(config.source.python)})
    return config.model_copy(update={"instances": _rooted(config.instances), "source": source})


def training_instances(config: SweConfig) -> list[Instance]:
    """The instances of ``config`` (a mined_config), each of the training split (select raises on an id outside it)."""
    dataset = load_dataset(config.instances, config.format, config.fields, with_split=True)
    chosen = select(dataset, config.split, config.ids)
    assert all(i.split == TRAIN_SPLIT for i in chosen)  # what select's filter means; a test holds it to that
    return chosen


def mutated_line(patch: str) -> tuple[str, str]:
    """(the buggy line, the fixed line) of a one-line gold patch; ValueError for any other patch."""
    removed = [line[1:] for line in patch.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    if len(removed) != 1 or len(added) != 1:
        raise ValueError(f"not a one-line patch ({len(removed)} lines removed, {len(added)} added)")
    return removed[0], added[0]


def base_text(checkout: Checkout, path: str) -> str:
    """``path``'s text in the repository at its base state (a directory, or a tarball with one top-level directory)."""
    if checkout.path.is_dir():
        return (checkout.path / path).read_text(encoding="utf-8")
    with tarfile.open(checkout.path) as tar:
        member = next(m for m in tar.getmembers() if m.isfile() and (m.name == path or m.name.partition("/")[2] == path))
        return tar.extractfile(member).read().decode("utf-8")


@functools.lru_cache(maxsize=256)
def _task(config_json: str, instance_id: str) -> tuple[str, str, str, str]:
    """(first observation, path, old, new) of one task; the tarball is read once per process, not per example."""
    config = mined_config(json.loads(config_json))
    instance = next(i for i in training_instances(config) if i.instance_id == instance_id)
    path = patched_file(instance.patch)
    checkout, _ = resolve(config.source, instance)
    old, new = smallest_unique_edit(base_text(checkout, path), *mutated_line(instance.patch))
    return brief_observation(instance), path, old, new


def mined_transcript(env_config: dict[str, Any], instance_id: str, correct: bool) -> tuple[str, list[tuple[str, str]]]:
    """The first observation, then (reply, the observation after it) per turn; the last observation is ''."""
    first, path, old, new = _task(json.dumps(env_config, sort_keys=True), instance_id)
    return first, two_turns(path, old, new, correct)


def data_digest(env_config: dict[str, Any]) -> str:
    """A hash of what the examples are made of (each task's first observation and edit), for the warm-start's cache
    key: a re-mined dataset, or another brief observation, builds a new model rather than reusing the old one."""
    config_json = json.dumps(env_config, sort_keys=True)
    return hashlib.sha256(json.dumps([_task(config_json, i) for i in env_config["ids"]]).encode()).hexdigest()
