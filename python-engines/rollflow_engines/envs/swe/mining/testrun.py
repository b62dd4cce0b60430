"""Test runs of a project's tree, made the way the swe env's grading makes them.

``run_tests`` runs envs/swe/runner.py itself (whole files, ``python -I``, the repository appended last to
sys.path, a fixed empty ``-c`` configuration, PYTEST_DISABLE_PLUGIN_AUTOLOAD, a JUnit report), with the
project's prepared interpreter, so an outcome seen here is the one the grading sees. It runs outside the
sandbox: the code is the project's own, mutated by the miner (trusted), under a wall-clock limit.

``trace_map`` is one baseline run under a profiler (tracer.py): which tests call which function of the
repository, so a mutant runs only the test files that can notice it.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


RUNNER = Path(__file__).resolve().parents[1] / "runner.py"
TRACER = Path(__file__).with_name("tracer.py")


@dataclass
class Outcome:
    status: str          # passed | failed (a failure, an error or a skip)
    message: str = ""    # the failure's message (pytest's reprcrash: the exception line, assertion introspection)
    seconds: float = 0.0


@dataclass
class Run:
    outcomes: dict[tuple[str, str], Outcome] = field(default_factory=dict)  # by junit key (classname, name)
    timed_out: bool = False
    seconds: float = 0.0


def environment(python: str, home: str) -> dict[str, str]:
    """The sandbox's environment (sandbox/mounts.py sandbox_environment), with host paths. Hypothesis keeps its
    example database in this run's own home, not in the repository's ``.hypothesis``: a database shared by runs
    replays examples an earlier mutant found (an outcome that depends on what ran before) and would be packed
    into the task's tarball and its content hash."""
    return {"PATH": f"{os.path.dirname(python)}:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "HYPOTHESIS_STORAGE_DIRECTORY": f"{home}/.hypothesis"}


def _limit_cpu(cpu_s: int | None):
    """A preexec_fn: at most ``cpu_s`` CPU seconds (SIGXCPU, then SIGKILL 5 s later), and no core file (it would land in
    the repository)."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cpu_s is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    return apply


def _run(cmd: list[str], cwd: str, python: str, home: str, timeout_s: float, cpu_s: int | None = None) -> bool:
    """Run in a process group of its own; False when it ran past ``timeout_s`` wall seconds (the group is killed) or
    past ``cpu_s`` CPU seconds (the kernel kills it)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=environment(python, home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_limit_cpu(cpu_s))
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return False
    return code not in (-signal.SIGXCPU, -signal.SIGKILL)


def parse_report(path: Path) -> dict[tuple[str, str], Outcome]:
    if not path.is_file():
        return {}
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return {}
    outcomes: dict[tuple[str, str], Outcome] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname") or "", case.get("name") or "")
        bad = [c for c in case if c.tag in ("failure", "error", "skipped")]
        status = "failed" if bad or key in outcomes else "passed"  # a test reported twice counts as failed, as the grading has it
        message = (bad[0].get("message") or "") if bad else ""
        outcomes[key] = Outcome(status, message, float(case.get("time") or 0))
    return outcomes


def run_tests(repo: Path, python: str, files: list[str], timeout_s: float, cpu_s: int | None = None) -> Run:
    """The JUnit outcomes of ``files`` (relative to ``repo``) run as the grading runs them; ``timed_out`` when the run
    passed ``timeout_s`` wall seconds or ``cpu_s`` CPU seconds."""
    with tempfile.TemporaryDirectory(prefix="rollflow-mine-") as top:
        grading = Path(top)
        (grading / "pytest.ini").write_text("[pytest]\n")
        (grading / "files.json").write_text(json.dumps(sorted(files)))
        results = grading / "results.xml"
        started = time.monotonic()
        finished = _run([python, "-I", str(RUNNER), "mine", str(grading), str(repo), str(results)], str(repo), python, top, timeout_s, cpu_s)
        return Run(parse_report(results), not finished, time.monotonic() - started)


def trace_map(repo: Path, python: str, files: list[str], timeout_s: float) -> dict:
    """``{"tests": [node ids run], "calls": {"file:first line": [node ids of the tests that called it]}}`` (a function
    by its code object's co_firstlineno); empty if the traced run did not finish."""
    with tempfile.TemporaryDirectory(prefix="rollflow-trace-") as top:
        out = Path(top) / "map.json"
        (Path(top) / "pytest.ini").write_text("[pytest]\n")
        if not _run([python, "-I", str(TRACER), str(repo), str(out), f"{top}/pytest.ini", *sorted(files)], str(repo), python, top, timeout_s):
            return {}
        return json.loads(out.read_text()) if out.is_file() else {}
