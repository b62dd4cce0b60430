"""A project's baseline: which test files it can run as the grading runs them, which tests pass, which tests call
which function (testrun.trace_map), and how long each file takes.

A test file whose collection fails (a missing optional dependency: pyparsing's diagram tests, dateutil's freezegun
tests) stops pytest's whole session, so it is dropped and the rest run again. A node id whose JUnit name
another node id shares (the grading could not tell them apart) is never a passing test here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..instances import junit_key
from . import testrun

SKIP_DIRS = frozenset({"docs", "doc", "documentation", "bench", "benchmarks", "examples", "ci_tools", "tools", "scripts", "build"})
BASELINE_TIMEOUT_S = 900


def is_test_file(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def find_test_files(tree: Path) -> list[str]:
    return sorted(rel for p in tree.rglob("*.py") if is_test_file(rel := p.relative_to(tree).as_posix())
                  and rel.split("/")[0] not in SKIP_DIRS and not rel.endswith("conftest.py"))


def source_files(tree: Path) -> list[str]:
    """The project's own modules (what is mutated): not tests, not set-up or tooling."""
    out = []
    for p in tree.rglob("*.py"):
        rel = p.relative_to(tree).as_posix()
        parts = rel.split("/")
        if (is_test_file(rel) or parts[0] in SKIP_DIRS or any(d in ("tests", "test", "testing") for d in parts[:-1])
                or parts[-1] in ("setup.py", "versioneer.py", "_version.py", "noxfile.py", "updatezinfo.py")):
            continue
        out.append(rel)
    return sorted(out)


@dataclass
class Baseline:
    files: list[str]                 # test files that run
    passing: list[str]               # node ids that pass (and have a JUnit name of their own)
    calls: dict[str, list[str]]      # "file:first line" -> node ids of the tests calling that function
    file_seconds: dict[str, float]

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.__dict__, sort_keys=True))

    @classmethod
    def load(cls, path: Path) -> "Baseline":
        return cls(**json.loads(path.read_text()))


def _collection_errors(run: testrun.Run, files: list[str]) -> set[str]:
    """The files pytest reported as a collection error (an empty classname and the module's dotted name)."""
    by_module = {f[:-3].replace("/", "."): f for f in files}
    return {by_module[name] for (cls, name), o in run.outcomes.items() if cls == "" and name in by_module}


def measure(tree: Path, python: str) -> Baseline:
    files = find_test_files(tree)
    for _ in range(5):
        run = testrun.run_tests(tree, python, files, BASELINE_TIMEOUT_S)
        broken = _collection_errors(run, files)
        if not broken:
            break
        files = [f for f in files if f not in broken]
    traced = testrun.trace_map(tree, python, files, BASELINE_TIMEOUT_S)
    ids = traced.get("tests", [])
    keys: dict[tuple[str, str], int] = {}
    for i in ids:
        keys[junit_key(i)] = keys.get(junit_key(i), 0) + 1
    passing = [i for i in ids if keys[junit_key(i)] == 1 and (o := run.outcomes.get(junit_key(i))) and o.status == "passed"]
    seconds: dict[str, float] = {}
    for i in ids:
        if o := run.outcomes.get(junit_key(i)):
            f = i.split("::", 1)[0]
            seconds[f] = seconds.get(f, 0.0) + o.seconds
    return Baseline(files, passing, traced.get("calls", {}), seconds)
