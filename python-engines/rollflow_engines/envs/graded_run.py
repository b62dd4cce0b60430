"""The pieces of a graded test run that swe_lite and swe share (docs/sandbox.md, "Reward integrity").

- ``write_readable``: the runner, its fixed pytest configuration and whatever else the grading needs, written
  by the server into a directory beside the workspace (outside what the sandbox can write), bound read-only.
- ``run_graded``: runs the runner in the grading sandbox. The runner prints ``rollflow-grading-started NONCE``
  before any code of the repository is imported, so output without it is an interpreter that never
  started: SandboxError, the server's failure, never a 0. The JUnit report is read from the sandbox's
  private /tmp without following links, as a regular file of bounded size (host_files).
- ``Grade``: the counts, and SWE-bench's rule for resolved.
- ``parse_junit``: outcomes by a key of each ``<testcase>``; a test reported twice counts as failed, a
  failure, error or skip as failed, a DOCTYPE or entity refuses the whole report.
- ``canary``: a test that fails whatever the repository holds, built from a real test of the module.
"""
from __future__ import annotations

import ast
import secrets
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable

from ..sandbox import Limits, SandboxError, Workspace
from ..sandbox.host_files import WorkspaceFileError, read_bytes
from ..sandbox.mounts import HOST_ROOT

MAX_RESULTS_BYTES = 1 << 20  # of the JUnit report
STARTED = "rollflow-grading-started"


@dataclass(frozen=True)
class Grade:
    f2p_passed: int
    f2p_total: int
    p2p_passed: int
    p2p_total: int
    tampered: bool = False  # a canary passed: the test run was subverted from inside (all counts are 0 then)

    @property
    def resolved(self) -> bool:
        """SWE-bench's rule: every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes."""
        return not self.tampered and self.f2p_passed == self.f2p_total and self.p2p_passed == self.p2p_total

    @property
    def fraction(self) -> float:
        total = self.f2p_total + self.p2p_total
        return (self.f2p_passed + self.p2p_passed) / total if total else 0.0


def write_readable(top: Path, files: dict[str, str]) -> None:
    """Root's files that any uid may read (whatever this server's umask), none may write."""
    for rel, text in files.items():
        path = top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
    for d in {top, *(p for rel in files for p in (top / rel).parents if p.is_relative_to(top))}:
        d.chmod(0o755)


def run_graded(ws: Workspace, files: dict[str, str], args: list[str], limits: Limits, *, python: str = "python",
               binds: dict[str, Path] | None = None, path_first: tuple[str, ...] = (), system_root: Path = HOST_ROOT) -> bytes | None:
    """Write ``files`` (``runner.py`` among them) read-only at /grading, run ``python -I /grading/runner.py NONCE
    /grading REPO RESULTS *args`` in ``ws``, and return the JUnit report's bytes; None if there is none usable
    (absent, a link, a FIFO, too large: the model's code may have ended the run). ``binds`` are further read-only
    directories (a task's interpreter); ``system_root`` where the system comes from (Workspace.run). SandboxError when the interpreter never started."""
    hidden = ws.record / "hidden"  # beside the workspace, outside what the sandbox can write
    write_readable(hidden, files)
    nonce, results = secrets.token_hex(8), f"results-{secrets.token_hex(8)}.xml"
    if ws.mode == "bwrap":
        inside, repo, tmp, ro = "/grading", "/workspace", "/tmp", {"/grading": hidden, **(binds or {})}
    else:  # mode none trusts the code: no bind to make, the host paths as they are
        inside, repo, tmp, ro = str(hidden), str(ws.path), str(ws.tmp), None
    r = ws.run([python, "-I", f"{inside}/runner.py", nonce, inside, repo, f"{tmp}/{results}", *args], limits=limits,
               ro_binds=ro, path_first=path_first, system_root=system_root)
    if not r.stdout.startswith(f"{STARTED} {nonce}\n"):
        if r.timed_out:  # never got to print: the machine is too slow for the grading's time limit
            raise SandboxError(f"the grading interpreter did not start within {limits.wall_s:g} s")
        raise SandboxError(f"the grading interpreter did not start ({python}: exit {r.exit_code}, signal {r.signal}): "
                           f"{r.stderr.strip()[-1000:] or 'no message'}")
    try:
        return read_bytes(ws.tmp, results, MAX_RESULTS_BYTES)
    except WorkspaceFileError:
        return None


def parse_junit(report: bytes, key: Callable[[ET.Element], Hashable | None]) -> dict[Hashable, str] | None:
    """key(testcase) -> "passed" | "failed" for the test cases ``key`` names (None: not one of ours); a test reported
    twice counts as failed. None for a report that does not parse."""
    if b"<!DOCTYPE" in report or b"<!ENTITY" in report:  # pytest writes neither; entities are an expansion attack
        return None
    try:
        root = ET.fromstring(report)
    except ET.ParseError:
        return None
    seen: Counter = Counter()
    outcomes: dict[Hashable, str] = {}
    for case in root.iter("testcase"):
        k = key(case)
        if k is None:
            continue
        seen[k] += 1
        failed = any(child.tag in ("failure", "error", "skipped") for child in case)
        outcomes[k] = "failed" if failed or seen[k] > 1 else "passed"
    return outcomes


def _is_literal(node: ast.expr) -> bool:
    """A value written out in the test (a constant, or a tuple/list/set/dict of them, a negative number)."""
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def canary(original: ast.FunctionDef | None, name: str) -> ast.FunctionDef:
    """A test named ``name`` that fails under an honest run: ``original``'s body up to its first top-level assert,
    whose checked expression is then compared with a random 13-digit number no honest code returns (so it reads
    like the module's own tests); with no such original, that number compared with another."""
    token = ast.Constant(10**12 + secrets.randbelow(10**12))
    at = next((i for i, n in enumerate(original.body) if isinstance(n, ast.Assert)), None) if original else None
    if original is None or at is None:
        body: list[ast.stmt] = [ast.Assert(ast.Compare(ast.Constant(10**12 + secrets.randbelow(10**12) + 10**13), [ast.Eq()], [token]))]
        args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    else:
        checked = original.body[at].test
        if isinstance(checked, ast.Compare):
            # the computed side (a call, else not a literal): real suites often write the expected value first (`assert "x" == f(y)`, as
            # inflection's do); a canary on that constant fails whatever f returns and would miss an f that
            # answers an object equal to everything
            sides = [checked.left, *checked.comparators]
            computed = [e for e in sides if any(isinstance(n, ast.Call) for n in ast.walk(e))]
            checked = next(iter(computed or [e for e in sides if not _is_literal(e)]), checked.left)
        elif isinstance(checked, ast.UnaryOp) and isinstance(checked.op, ast.Not):
            checked = checked.operand
        body, args = [*original.body[:at], ast.Assert(ast.Compare(checked, [ast.Eq()], [token]))], original.args
    made = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None, type_comment=None,
                           **({"type_params": []} if hasattr(ast.FunctionDef, "type_params") else {}))
    return ast.fix_missing_locations(made)
