"""Grading a SWE-lite episode: the hidden tests run in a fresh sandbox on the task's own files, as the episode left them.

The graded code is the model's, and it runs in the same process as the tests, so the grade is built
from what that code cannot shape (docs/sandbox.md, "Reward integrity"):

- **Only the task's files** are copied from the episode's workspace (read without following links,
  bounded), into a fresh workspace: no ``pytest.py``, ``conftest.py``, ``pytest.ini``, ``.pth`` or
  ``sitecustomize`` of the model's comes along.
- **The hidden tests and the runner are read-only**, bound at ``/grading`` from a directory the
  sandbox cannot write; the runner (hidden_runner.py) uses an isolated interpreter with the repository
  last on its path, a fixed pytest configuration, no conftest and no plugin autoload.
- **Results** are a JUnit report in the grading sandbox's private ``/tmp``, read by the server without
  following links, as a regular file of bounded size, with no DOCTYPE.
- **Every expected test id counts exactly once**: a failure, an error, a skip or a missing id fails
  the grade.
- **Canaries**: tests that fail whatever the repository holds are mixed into both hidden modules
  under names like the real ones. One that passes means the test run was tampered with from inside:
  the grade is 0 and ``tampered`` is set.

A grading that never started (no interpreter, the sandbox failed) raises SandboxError: the server's
failure, never a 0.
"""
from __future__ import annotations

import ast
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from ...sandbox import Limits, Workspace, current
from ...sandbox.host_files import WorkspaceFileError, read_text
from ..graded_run import Grade, canary, parse_junit as _parse_junit, run_graded
from .tasks import Task

RUNNER = Path(__file__).with_name("hidden_runner.py").read_text(encoding="utf-8")
F2P_FILE, P2P_FILE = "test_fail_to_pass.py", "test_pass_to_pass.py"
MAX_FILE_BYTES = 1 << 20       # of one task file copied for grading
CANARIES_PER_MODULE = 2
_WORDS = ("small", "one", "zero", "list", "empty", "edge", "rising", "single", "counts", "other", "basic", "large",
          "negative", "repeat", "mixed", "order", "limit", "total", "case", "default", "bounds", "values", "simple")
_TEST = re.compile(r"^def (test_\w+)\(", re.MULTILINE)


@dataclass(frozen=True)
class HiddenModule:
    file: str
    source: str          # the task's tests with the canaries mixed in
    tests: tuple[str, ...]
    canaries: tuple[str, ...]


def test_names(source: str) -> tuple[str, ...]:
    return tuple(_TEST.findall(source))


def with_canaries(file: str, source: str, taken: set[str]) -> HiddenModule:
    """``source`` with canary tests inserted between its tests at random places: copies of its own tests, renamed
    like them, whose assertion compares the same expression with a random number no honest code returns. A
    canary passes only if the test run was subverted, or if the code returns an object equal to anything."""
    tests = test_names(source)
    originals = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and any(isinstance(n, ast.Assert) for n in node.body)]
    names: list[str] = []
    while len(names) < CANARIES_PER_MODULE:
        name = f"test_{secrets.choice(_WORDS)}" + (f"_{secrets.choice(_WORDS)}" if secrets.randbelow(2) else "")
        if name not in taken and name not in names:
            names.append(name)
    taken.update(names)
    blocks = re.split(r"\n(?=def test_)", source)  # the header (imports), then one block per test
    for name in names:
        blocks.insert(1 + secrets.randbelow(len(blocks)), ast.unparse(canary(secrets.choice(originals), name)) + "\n\n")
    return HiddenModule(file, "\n".join(blocks), tests, tuple(names))


def task_files(task: Task, final: Workspace) -> dict[str, str]:
    """The task's own files as the episode left them; one the model deleted or turned into something other than
    a regular file (a link, a FIFO, a directory) or grew past MAX_FILE_BYTES is left out, and its tests fail."""
    files = {}
    for rel in task.files:
        try:
            files[rel] = read_text(final.path, rel, MAX_FILE_BYTES)
        except WorkspaceFileError:
            continue
    return files


def grade(task: Task, final: Workspace, limits: Limits) -> Grade:
    """Runs the hidden tests on ``final``'s copy of the task's files; SandboxError when the sandbox itself fails."""
    taken = set(test_names(task.fail_to_pass)) | set(test_names(task.pass_to_pass))
    modules = [with_canaries(F2P_FILE, task.fail_to_pass, taken), with_canaries(P2P_FILE, task.pass_to_pass, taken)]
    with current().open(files=task_files(task, final)) as ws:
        outcomes = _run(ws, modules, limits)
    f2p, p2p = modules
    if outcomes is None:  # no report, or one that is not a JUnit file of this run: nothing passed
        return Grade(0, len(f2p.tests), 0, len(p2p.tests))
    if any(outcomes.get((m.file, name)) == "passed" for m in modules for name in m.canaries):
        return Grade(0, len(f2p.tests), 0, len(p2p.tests), tampered=True)

    def passed(m: HiddenModule) -> int:
        return sum(outcomes.get((m.file, name)) == "passed" for name in m.tests)
    return Grade(passed(f2p), len(f2p.tests), passed(p2p), len(p2p.tests))


def _run(ws: Workspace, modules: list[HiddenModule], limits: Limits) -> dict[tuple[str, str], str] | None:
    """Outcome by (file, test name) from the JUnit report; None if there is none usable."""
    report = run_graded(ws, {"pytest.ini": "[pytest]\n", "runner.py": RUNNER, **{f"tests/{m.file}": m.source for m in modules}}, [], limits)
    return None if report is None else parse_junit(report, {m.file for m in modules})


def parse_junit(report: bytes, files: set[str]) -> dict[tuple[str, str], str] | None:
    """(file, test name) -> "passed" | "failed" (a test reported twice counts as failed); None for a report that does
    not parse."""
    def key(case) -> tuple[str, str] | None:
        module = (case.get("classname") or "").rsplit(".", 1)[-1] + ".py"
        return (module, case.get("name") or "") if module in files else None
    return _parse_junit(report, key)
