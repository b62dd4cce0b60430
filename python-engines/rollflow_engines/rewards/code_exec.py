"""code_exec: run a model-written Python program against test cases, each in the sandbox.

The reference (the dataset's ``answer``) is a JSON object, as public code-RL datasets store them:

    {"style": "stdio", "tests": [{"input": "1 2\\n", "output": "3\\n"}, ...]}
    {"style": "call", "fn_name": "add", "tests": [{"args": [1, 2], "expected": 3}, ...]}

- ``stdio``: ``python solution.py`` reads the test's input on stdin; it passes if it exits 0 and its
  stdout equals the expected output after whitespace normalisation (each line's whitespace-separated
  tokens; leading and trailing blank lines ignored).
- ``call``: ``fn_name(*args)`` (a module-level function, or a method of a class ``Solution``) must
  return a value equal to ``expected`` as JSON (tuples are lists; floats within 1e-6 relative).

The program is the last fenced ```python block of the response, else the whole response. One fresh
workspace per response; each test is its own run (``limits``, per test), so one looping test costs only
itself. ``mode: all`` (default) scores 1 only if every test passes and stops at the first failure;
``mode: fraction`` scores passed / total. The env role's ``reward_timeout_s`` bounds the whole
verification: tests it leaves unrun count as failed, with ``info.timeout``.

``info``: ``passed``, ``total``, ``ran``, ``timeouts`` (tests killed by the wall clock or the CPU limit),
``extracted`` (``block`` or ``whole_text``) and ``first_failure`` (``test``, ``reason``, a bounded
``excerpt``). A malformed reference is a 400 naming ``reference``. A sandbox failure raises
SandboxError/SandboxUnavailable: the env role answers 503 (infrastructure), never a score.

Everything the program leaves in the workspace is the model's, so the server reads its result file only
through ``Workspace.read_text`` (no link followed, no FIFO waited on, at most ``RESULT_MAX_BYTES``), parses
it with JSON's recursion failures caught and compares it without recursion: whatever the file holds
(nothing, a link, a directory, a FIFO, 8 MB, ``[[[[...]]]]``, NaN, a 400-digit integer) is "no result"
or a wrong answer, never the server's error. The expected value never enters the sandbox. The env role
enforces ``reward_timeout_s`` from outside as well (rewards/deadline.py): past it the workspace is removed.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import RequestError
from ..sandbox import Limits, LimitsConfig, RunResult, Workspace, current
from .code_exec_compare import parse_result, same_value, summary
from .registry import Verifier, VerifierConfig, register_verifier

HARNESS = Path(__file__).with_name("code_exec_harness.py").read_text(encoding="utf-8")
# Most bytes of a call test's result file read back (a JSON of the return value): 8 MiB is CODE_LIMITS' max_file_mb,
# and a limits config may raise that, not this.
RESULT_MAX_BYTES = 8 * 1024 * 1024
# A code test is one small program: tighter than a SWE turn's defaults. Given limits are merged over these.
CODE_LIMITS = {"wall_s": 6.0, "cpu_s": 4, "memory_mb": 512, "max_procs": 16, "max_file_mb": 8, "output_bytes": 16_000}
EXCERPT_CHARS = 400
# The opening fence of a Python block; the rest of its line is the block's header (```python title="x").
_OPENING = re.compile(r"```(?:python3?|py)", re.IGNORECASE)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class CodeExecConfig(VerifierConfig):
    mode: Literal["all", "fraction"] = Field(default="all", description="all: 1 only if every test passes (stops at the first failure); fraction: passed / total.")
    limits: LimitsConfig = Field(default_factory=lambda: LimitsConfig(**CODE_LIMITS),
                                 description=f"Sandbox limits of each test's run; keys given are merged over {CODE_LIMITS}.")

    @field_validator("limits", mode="before")
    @classmethod
    def _over_code_defaults(cls, given: Any) -> Any:
        return {**CODE_LIMITS, **given} if isinstance(given, dict) else given


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StdioTest(_Strict):
    input: str
    output: str


class CallTest(_Strict):
    args: list[Any]
    expected: Any


class CodeReference(_Strict):
    style: Literal["stdio", "call"]
    tests: list[dict[str, Any]] = Field(min_length=1)
    fn_name: str | None = None

    @model_validator(mode="after")
    def _tests_fit_style(self) -> "CodeReference":
        if self.style == "call" and not (self.fn_name and _IDENTIFIER.fullmatch(self.fn_name)):
            raise ValueError(f"fn_name: a Python identifier is required for style 'call' (given: {self.fn_name!r})")
        model = StdioTest if self.style == "stdio" else CallTest
        for i, test in enumerate(self.tests):
            try:
                model.model_validate(test)
            except ValidationError as e:
                keys = "input and output (strings)" if self.style == "stdio" else "args (a list) and expected"
                raise ValueError(f"tests[{i}]: expected {keys}: {e.errors()[0]['msg']}") from None
        return self


def parse_reference(reference: str) -> CodeReference:
    """The reference as a CodeReference; a RequestError (400, field ``reference``) saying what is wrong."""
    expected = 'a JSON object {"style": "stdio"|"call", "tests": [...], "fn_name"?: "..."}'
    try:
        return CodeReference.model_validate_json(reference)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        why = first["msg"].removeprefix("Value error, ")
        raise RequestError("reference", f"not a code_exec reference: {where + ': ' if where else ''}{why}; expected {expected}", reference) from None


def extract_code(response: str) -> tuple[str, str]:
    """The last ```python block, else the whole text. A block runs from the line after its opening fence to
    the next ```. Scanned once, left to right: the regex `````py[^\n]*\n(.*?)```` rescans to the end of the
    line from every opening, quadratic on a line of a million ```py (minutes of CPU holding the GIL)."""
    last, pos = None, 0
    while (opening := _OPENING.search(response, pos)) is not None:
        newline = response.find("\n", opening.end())
        if newline < 0:
            break  # no later opening has a newline after it either
        closing = response.find("```", newline + 1)
        if closing < 0:
            break  # nor a closing fence
        last, pos = response[newline + 1:closing], closing + 3
    return (last, "block") if last is not None else (response, "whole_text")


def normalise_output(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def _killed(r: RunResult) -> bool:
    return r.timed_out or r.signal in (9, 24)  # the wall clock, or RLIMIT_CPU (SIGXCPU, then SIGKILL)


def _run_stdio(ws: Workspace, test: StdioTest, limits: Limits) -> tuple[bool, str, RunResult]:
    r = ws.run(["python", "solution.py"], stdin=test.input, limits=limits)
    if r.exit_code != 0:
        return False, "timed out" if _killed(r) else "crashed", r
    if normalise_output(r.stdout) != normalise_output(test.output):
        return False, "wrong answer", r
    return True, "", r


def _run_call(ws: Workspace, fn_name: str, index: int, test: CallTest, limits: Limits) -> tuple[bool, str, RunResult]:
    result_file = f"result-{index}.json"  # a fresh name per test: nothing an earlier test left can stand in for it
    request = {"fn_name": fn_name, "args": test.args, "result_file": result_file}
    r = ws.run(["python", "harness.py"], stdin=json.dumps(request), limits=limits)
    if r.exit_code != 0:
        return False, "timed out" if _killed(r) else "crashed", r
    try:  # the file may be anything the program made it: read_text refuses all but a regular file within the cap
        got = parse_result(ws.read_text(result_file, RESULT_MAX_BYTES))
    except ValueError as e:
        return False, f"no result: {str(e)[:200]}", r
    if not same_value(got, test.expected):
        return False, f"wrong answer: returned {summary(got)}", r
    return True, "", r


def verify_code(prompt: str, response: str, reference: str, config: dict[str, Any], time_limit_s: float) -> tuple[float, dict[str, Any]]:
    cfg = CodeExecConfig.model_validate(config)
    ref = parse_reference(reference)
    code, extracted = extract_code(response)
    deadline = time.monotonic() + time_limit_s
    limits = cfg.limits.to_limits()
    total = len(ref.tests)
    passed = ran = timeouts = 0
    first_failure: dict[str, Any] | None = None
    out_of_time = False
    files = {"solution.py": code, **({"harness.py": HARNESS} if ref.style == "call" else {})}
    with current().open(files=files) as ws:
        for i, raw in enumerate(ref.tests):
            left = deadline - time.monotonic()
            if left <= 0:
                out_of_time = True
                break
            cut = left < limits.wall_s  # this test's wall clock is what is left of the verification's
            test_limits = replace(limits, wall_s=min(limits.wall_s, left))
            if ref.style == "stdio":
                ok, reason, r = _run_stdio(ws, StdioTest.model_validate(raw), test_limits)
            else:
                assert ref.fn_name is not None
                ok, reason, r = _run_call(ws, ref.fn_name, i, CallTest.model_validate(raw), test_limits)
            ran += 1
            timeouts += _killed(r)
            out_of_time |= cut and r.timed_out  # killed by the verification's deadline, not only the test's
            if ok:
                passed += 1
                continue
            if first_failure is None:
                first_failure = {"test": i, "reason": reason, "exit_code": r.exit_code,
                                 "excerpt": (r.stderr.strip() or r.stdout.strip())[-EXCERPT_CHARS:]}
            if cfg.mode == "all":
                break
    reward = passed / total if cfg.mode == "fraction" else float(passed == total)
    info = {"passed": passed, "total": total, "ran": ran, "timeouts": timeouts, "extracted": extracted,
            "first_failure": first_failure}
    if out_of_time:
        info.update(timeout=True, error=f"verification took longer than reward_timeout_s={time_limit_s:g} s; {total - ran} test(s) not run")
    return reward, info


register_verifier(Verifier(
    name="code_exec", fn=verify_code, Config=CodeExecConfig, isolated=False, sandboxed=True,
    description="Runs the response's Python program against the reference's tests in the sandbox (stdin/stdout or "
                "function-call style): 1 if all pass (mode all) or the fraction passed (mode fraction).",
))
