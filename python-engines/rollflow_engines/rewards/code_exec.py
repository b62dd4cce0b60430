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
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import RequestError, excerpt
from ..sandbox import Limits, LimitsConfig, RunResult, Workspace, current
from .registry import Verifier, VerifierConfig, register_verifier

HARNESS = Path(__file__).with_name("code_exec_harness.py").read_text(encoding="utf-8")
# A code test is one small program: tighter than a SWE turn's defaults. Given limits are merged over these.
CODE_LIMITS = {"wall_s": 6.0, "cpu_s": 4, "memory_mb": 512, "max_procs": 16, "max_file_mb": 8, "output_bytes": 16_000}
EXCERPT_CHARS = 400
_BLOCK = re.compile(r"```(?:python3?|py)[^\n]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
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
    blocks = _BLOCK.findall(response)
    return (blocks[-1], "block") if blocks else (response, "whole_text")


def normalise_output(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def same_value(got: Any, want: Any) -> bool:
    if isinstance(want, float) or isinstance(got, float):
        return isinstance(got, (int, float)) and isinstance(want, (int, float)) and not isinstance(got, bool) \
            and math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(same_value(g, w) for g, w in zip(got, want))
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(same_value(got[k], want[k]) for k in want)
    return type(got) is type(want) and got == want


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
    try:  # resolve refuses a symlink the program planted to lead outside the workspace
        got = json.loads(ws.resolve(result_file).read_text(encoding="utf-8", errors="replace"))["result"]
    except (OSError, ValueError, KeyError, TypeError):
        return False, "no result", r
    if not same_value(got, json.loads(json.dumps(test.expected))):
        return False, f"wrong answer: returned {excerpt(got)!r}", r
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
            test_limits = replace(limits, wall_s=min(limits.wall_s, left))
            if ref.style == "stdio":
                ok, reason, r = _run_stdio(ws, StdioTest.model_validate(raw), test_limits)
            else:
                assert ref.fn_name is not None
                ok, reason, r = _run_call(ws, ref.fn_name, i, CallTest.model_validate(raw), test_limits)
            ran += 1
            timeouts += _killed(r)
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
