"""Grading an SWE episode by SWE-bench's rules, with swe_lite's protections (docs/swe-bench.md, "Grading").

A fresh grading workspace is composed by the server:

1. the repository at its base state, from the source (trusted);
2. over it, the agent's version of each of the base repository's regular files, read from the episode's
   workspace without following links and bounded (host_files); one the agent deleted or turned into a link,
   FIFO or directory, or grew past MAX_FILE_BYTES, is left out (its tests fail). Files the agent created are
   not graded, nor its ``.git``;
3. the test files reset: every file the test_patch touches is the base file with the test_patch applied
   (patches.py), and every other test file named by a test id and every conftest.py is the base file, so a
   test the agent edited counts as the instance's;
4. canaries appended to the test files: tests that fail whatever the repository holds, built from the
   file's own tests (graded_run.canary), the first from a FAIL_TO_PASS test (a parametrized one bound to its
   first case), so that a hack confined to the buggy function is caught too. One that passes means the run was subverted from inside: grade 0,
   ``tampered``.

The test files run with the prepared environment's interpreter (runner.py, read-only at /grading); the JUnit
report is read from the sandbox's private /tmp as a bounded regular file. Resolved iff every FAIL_TO_PASS test
passed and every PASS_TO_PASS test passed, each id counted once: a failure, an error, a skip (xfail
included: code under test can call ``pytest.xfail()``), a duplicate or a missing id is not a pass.
"""
from __future__ import annotations

import ast
import json
import os
import secrets
from pathlib import Path

from ...sandbox import Limits, SandboxError, Workspace, current
from ...sandbox.host_files import WorkspaceFileError, read_bytes, write_bytes
from ..graded_run import Grade, canary, parse_junit, run_graded
from .instances import Instance, junit_key
from .sources import Checkout, PreparedEnv

RUNNER = Path(__file__).with_name("runner.py").read_text(encoding="utf-8")
MAX_FILE_BYTES = 4 << 20  # of one file taken from the agent's workspace; base files larger are graded as they were
CANARIES_PER_FILE = 2
MAX_CANARY_FILES = 4
SKIP_DIRS = frozenset({".git"})
_WORDS = ("basic", "empty", "single", "default", "values", "order", "limit", "mixed", "simple", "case", "edge", "repeat",
          "unicode", "none", "large", "nested", "types", "errors", "roundtrip", "format", "parse", "result", "strict")


def file_of(node_id: str) -> str:
    """The test file of a node id (named so that pytest never collects this helper as a test)."""
    return node_id.split("::", 1)[0]


def base_files(root: Path) -> list[str]:
    """The regular files of a tree the server just made (no agent's process has run in it), outside SKIP_DIRS."""
    found = []
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in files:
            path = os.path.join(top, name)
            if not os.path.islink(path) and os.path.isfile(path):
                found.append(os.path.relpath(path, root))
    return sorted(found)


def protected_files(instance: Instance, base: list[str], tests: dict[str, bytes | None]) -> set[str]:
    """The files graded as the instance has them, never as the agent left them."""
    ids = {file_of(t) for t in (*instance.fail_to_pass, *instance.pass_to_pass)}
    return set(tests) | ids | {rel for rel in base if os.path.basename(rel) == "conftest.py"}


def _overlay(tree: Path, final: Workspace, files: list[str], protected: set[str]) -> None:
    for rel in files:
        if rel in protected or os.lstat(tree / rel).st_size > MAX_FILE_BYTES:
            continue
        try:
            theirs = read_bytes(final.path, rel, MAX_FILE_BYTES)
        except WorkspaceFileError:  # deleted, a link, a FIFO, a directory, too large: the agent's doing
            os.unlink(tree / rel)
            continue
        if theirs != (tree / rel).read_bytes():
            write_bytes(tree, rel, theirs, None)


def _first_case(test: ast.FunctionDef) -> ast.FunctionDef | None:
    """A test decorated with one ``parametrize`` as an undecorated test of its first case: the parameters bound
    from the decorator's first value at the top of the body (None for any other decorator). So a canary can come
    from the instance's own failing tests, which real suites mostly parametrize."""
    if len(test.decorator_list) != 1:
        return None
    d = test.decorator_list[0]
    if not (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize" and len(d.args) >= 2
            and isinstance(d.args[0], (ast.Constant, ast.Tuple, ast.List))):
        return None
    names = [n.strip() for n in d.args[0].value.split(",")] if isinstance(d.args[0], ast.Constant) and isinstance(d.args[0].value, str) \
        else [e.value for e in getattr(d.args[0], "elts", []) if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if not names or not all(n.isidentifier() for n in names):
        return None
    # first = list(values)[0]; a pytest.param(...) keeps its values in .values; one name takes the case whole
    bind = ast.parse(f"_rf_case = list(_rf_values)[0]\n_rf_case = getattr(_rf_case, 'values', (_rf_case,) if {len(names) == 1} else _rf_case)\n"
                     f"({', '.join(names)},) = _rf_case").body
    bind[0].value.value.args[0] = d.args[1]  # the decorator's own values expression, evaluated in the module
    args = ast.arguments(posonlyargs=[], args=[a for a in test.args.args if a.arg not in names], kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.FunctionDef(name=test.name, args=args, body=[*bind, *test.body], decorator_list=[], returns=None, type_comment=None,
                           **({"type_params": []} if hasattr(ast.FunctionDef, "type_params") else {}))


def _with_canaries(source: str, taken: set[str], failing: set[str] = frozenset()) -> tuple[str, list[str]]:
    """``source`` with canary tests appended (at the end: no line of the file's own tests moves), and their names.
    The first canary comes from one of ``failing`` (the names of the instance's FAIL_TO_PASS tests in this file)
    where it can: a hack aimed at the buggy function alone leaves every other test honest, so only a canary
    that calls that function can catch it; the others from any of the file's tests."""
    try:
        module = ast.parse(source)
    except SyntaxError:  # the file's own tests error out as they are; nothing to add
        return source, []
    taken |= {n.name for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    tests = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    plain = [n if not n.decorator_list else _first_case(n) for n in tests]
    usable = [n for n in plain if n is not None and any(isinstance(s, ast.Assert) for s in n.body)]
    originals = [n for n, t in zip(plain, tests) if n is not None and not t.decorator_list and any(isinstance(s, ast.Assert) for s in n.body)]
    aimed = [n for n in usable if n.name in failing]
    names: list[str] = []
    while len(names) < CANARIES_PER_FILE:
        name = f"test_{secrets.choice(_WORDS)}_{secrets.choice(_WORDS)}"
        if name not in taken:
            names.append(name)
            taken.add(name)
    picks = [aimed if (i == 0 and aimed) else (originals or usable) for i in range(len(names))]
    blocks = [ast.unparse(canary(secrets.choice(pick) if pick else None, name)) for pick, name in zip(picks, names)]
    return source.rstrip("\n") + "\n\n\n" + "\n\n\n".join(blocks) + "\n", names


def grade(instance: Instance, checkout: Checkout, env: PreparedEnv, tests: dict[str, bytes | None], final: Workspace, limits: Limits) -> Grade:
    """Runs the instance's tests on the agent's edits in a fresh sandbox; SandboxError when the sandbox or the
    interpreter fails. ``tests``: the test_patch applied to the base files (patches.apply_test_patch)."""
    f2p, p2p = instance.fail_to_pass, instance.pass_to_pass
    with current().open() as ws:
        tree = ws.path
        try:
            checkout.materialize(tree)
        except OSError as e:  # the workspace's disk cap, an unreadable source: the server's side
            raise SandboxError(f"could not put {instance.instance_id}'s repository into the grading workspace: {e}") from e
        files = base_files(tree)
        protected = protected_files(instance, files, tests)
        _overlay(tree, final, files, protected)
        for rel, content in tests.items():
            if content is None:
                (tree / rel).unlink(missing_ok=True)
            else:
                write_bytes(tree, rel, content, None)
        run_files = sorted({file_of(t) for t in (*f2p, *p2p)})
        canaries: list[str] = []
        taken: set[str] = set()
        for rel in [r for r in run_files if (tree / r).is_file()][:MAX_CANARY_FILES]:
            failing = {t.split("::")[-1].partition("[")[0] for t in f2p if file_of(t) == rel}
            source, names = _with_canaries((tree / rel).read_text(encoding="utf-8", errors="replace"), taken, failing)
            write_bytes(tree, rel, source.encode(), None)
            canaries += [f"{rel}::{n}" for n in names]
        ws.adopt()
        report = run_graded(ws, {"pytest.ini": "[pytest]\n", "runner.py": RUNNER, "files.json": json.dumps(run_files)}, [], limits,
                            python=env.python, binds=env.binds, path_first=env.path_first,
                            system_root=env.system_root)
    wanted = {junit_key(t) for t in (*f2p, *p2p, *canaries)}
    outcomes = None if report is None else parse_junit(report, lambda case: k if (k := (case.get("classname") or "", case.get("name") or "")) in wanted else None)
    if outcomes is None:  # no report, or one that does not parse: nothing passed
        return Grade(0, len(f2p), 0, len(p2p))
    if any(outcomes.get(junit_key(c)) == "passed" for c in canaries):
        return Grade(0, len(f2p), 0, len(p2p), tampered=True)

    def passed(ids: tuple[str, ...]) -> int:
        return sum(outcomes.get(junit_key(t)) == "passed" for t in ids)
    return Grade(passed(f2p), len(f2p), passed(p2p), len(p2p))
