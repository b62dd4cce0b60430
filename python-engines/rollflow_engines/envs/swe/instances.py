"""SWE-bench-format task instances, read from a JSON-lines or parquet file.

A row holds ``instance_id``, ``repo``, ``base_commit``, ``problem_statement``, ``patch``, ``test_patch``,
``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (the two test lists as lists of strings, or as JSON strings of lists, as
in the HF datasets). Datasets that name them otherwise (SWE-Gym, SWE-smith, R2E-Gym) map the names with
``Fields``. A row that cannot be read (not JSON, a field missing or of the wrong type, a test id that is not a
pytest node id, a repeated instance_id) is a ``Problem``: reported and counted, never an exception; the
file's other rows serve.

The test ids are pytest node ids (``tests/test_x.py::TestA::test_b[1]``), as SWE-bench's pytest repositories
have them; other runners' ids (Django's ``test_x (module.Class)``) are problems in this version.
"""
from __future__ import annotations

import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

MAX_SHOWN_PROBLEMS = 5  # in an error message; all are counted


class Fields(BaseModel):
    """The column of each field, SWE-bench's names by default; ``split`` is read only when a split is asked for."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str = Field(default="instance_id", min_length=1)
    repo: str = Field(default="repo", min_length=1)
    base_commit: str = Field(default="base_commit", min_length=1)
    problem_statement: str = Field(default="problem_statement", min_length=1)
    patch: str = Field(default="patch", min_length=1)
    test_patch: str = Field(default="test_patch", min_length=1)
    FAIL_TO_PASS: str = Field(default="FAIL_TO_PASS", min_length=1)
    PASS_TO_PASS: str = Field(default="PASS_TO_PASS", min_length=1)
    split: str = Field(default="split", min_length=1, description="The column naming a row's split (read when env_config.split is set).")


@dataclass(frozen=True)
class Instance:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    patch: str       # the gold fix (never shown to the agent; tests and the scripted policy use it)
    test_patch: str  # the tests that expose the issue, applied over the graded tree
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    split: str | None = None


@dataclass(frozen=True)
class Problem:
    row: int  # 1-based, in the file's order
    why: str

    def __str__(self) -> str:
        return f"row {self.row}: {self.why}"


@dataclass(frozen=True)
class Dataset:
    path: str
    instances: tuple[Instance, ...]
    problems: tuple[Problem, ...]


def is_node_id(test_id: str) -> bool:
    """A pytest node id: a .py file path relative to the repository, then ``::`` and a name."""
    path, sep, rest = test_id.partition("::")
    return bool(sep and rest and path.endswith(".py") and not path.startswith("/") and ".." not in path.split("/"))


def junit_key(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest's JUnit report gives the test ``node_id`` (_pytest.junitxml.mangle_test_address):
    the file's path dotted without ``.py``, the classes, then the name with its parameters."""
    path, bracket, params = node_id.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _test_list(value: Any, field: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"{field} is a string that is not JSON ({e})") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{field} is {type(value).__name__}; expected a list of test ids (or a JSON string of one)")
    bad = [v for v in value if not is_node_id(v)]
    if bad:
        raise ValueError(f"{field} holds {len(bad)} ids that are not pytest node ids (path.py::name), e.g. {bad[0][:120]!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"{field} names a test id twice")
    return tuple(value)


def parse_row(row: Any, fields: Fields, with_split: bool) -> Instance:
    """One row as an Instance; ValueError naming the field and what was wrong."""
    if not isinstance(row, dict):
        raise ValueError(f"the row is {type(row).__name__}, not an object")
    names = fields.model_dump()
    if not with_split:
        names.pop("split")
    got: dict[str, Any] = {}
    for field, column in names.items():
        if column not in row:
            raise ValueError(f"no field {column!r}" + (f" (fields.{field})" if column != field else ""))
        got[field] = row[column]
    for field in ("instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch", "split"):
        if field in got and not isinstance(got[field], str):
            raise ValueError(f"{names[field]} is {type(got[field]).__name__}; expected a string")
    if not got["instance_id"].strip():
        raise ValueError(f"{names['instance_id']} is empty")
    f2p, p2p = _test_list(got["FAIL_TO_PASS"], names["FAIL_TO_PASS"]), _test_list(got["PASS_TO_PASS"], names["PASS_TO_PASS"])
    if not f2p:
        raise ValueError(f"{names['FAIL_TO_PASS']} is empty: nothing would tell a fix from no edit")
    if set(f2p) & set(p2p):
        raise ValueError(f"a test id is in both {names['FAIL_TO_PASS']} and {names['PASS_TO_PASS']}")
    keys: dict[tuple[str, str], str] = {}
    for test_id in (*f2p, *p2p):  # the report names tests by these: two ids with one name could not be told apart
        if (other := keys.setdefault(junit_key(test_id), test_id)) != test_id:
            raise ValueError(f"test ids {other[:120]!r} and {test_id[:120]!r} have the same name in pytest's JUnit report")
    return Instance(got["instance_id"], got["repo"], got["base_commit"], got["problem_statement"], got["patch"], got["test_patch"],
                    f2p, p2p, got.get("split"))


def _rows(path: Path, fmt: str) -> list[tuple[int, Any]]:
    """(row number, the decoded row or the exception that decoding it raised)."""
    if fmt == "parquet":
        import pyarrow as pa  # only for parquet files
        import pyarrow.parquet as pq
        try:
            return list(enumerate(pq.read_table(path).to_pylist(), start=1))
        except (pa.ArrowException, ValueError) as e:  # not parquet, or a column type Python cannot hold
            raise OSError(f"not a parquet file pyarrow can read: {e}") from e
    rows: list[tuple[int, Any]] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as e:
                rows.append((number, ValueError(f"not JSON ({e})")))
    return rows


def read_dataset(path: str, fmt: Literal["auto", "jsonl", "parquet"], fields: Fields, with_split: bool) -> Dataset:
    """Every row of the file as an Instance or a Problem. OSError if the file cannot be read (or, as parquet, parsed)."""
    kind = fmt if fmt != "auto" else "parquet" if path.endswith(".parquet") else "jsonl"
    instances: list[Instance] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for number, row in _rows(Path(path), kind):
        try:
            if isinstance(row, Exception):
                raise row
            instance = parse_row(row, fields, with_split)
            if instance.instance_id in seen:
                raise ValueError(f"instance_id {instance.instance_id!r} repeats an earlier row's (the later row is skipped)")
        except ValueError as e:
            problems.append(Problem(number, str(e)))
            continue
        seen.add(instance.instance_id)
        instances.append(instance)
    if problems:
        log.warning("swe dataset %s: %d malformed rows skipped (%s)", path, len(problems), "; ".join(map(str, problems[:MAX_SHOWN_PROBLEMS])))
    return Dataset(path, tuple(instances), tuple(problems))


_cache: dict[tuple, Dataset] = {}
_cache_lock = threading.Lock()
CACHED_DATASETS = 4  # a training and a validation file, each with and without a split filter


def load_dataset(path: str, fmt: Literal["auto", "jsonl", "parquet"], fields: Fields, with_split: bool) -> Dataset:
    """read_dataset, once per file version (path, size, modification time) and field mapping in this process; the
    CACHED_DATASETS last used are kept."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns, fmt, tuple(fields.model_dump().items()), with_split)
    with _cache_lock:
        dataset = _cache.pop(key, None) or read_dataset(path, fmt, fields, with_split)
        _cache[key] = dataset  # last in the dict: the most recently used
        while len(_cache) > CACHED_DATASETS:
            del _cache[next(iter(_cache))]
        return dataset


def select(dataset: Dataset, split: str | None, ids: list[str] | None) -> list[Instance]:
    """The instances a seed walks, in the file's order; ValueError naming ids the file lacks."""
    chosen = [i for i in dataset.instances if split is None or i.split == split]
    if ids is not None:
        by_id = {i.instance_id: i for i in chosen}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise ValueError(f"{missing[:MAX_SHOWN_PROBLEMS]} are not instances of {dataset.path}"
                             + (f" in split {split!r}" if split is not None else "") + f" (it has {len(dataset.instances)} readable rows)")
        chosen = [by_id[i] for i in ids]
    return chosen
