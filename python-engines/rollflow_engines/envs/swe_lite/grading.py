"""Grading a SWE-lite episode: the hidden tests run in a fresh sandbox on the episode's final files.

The final files are copied (regular files only: a symlink the model planted is not followed, so
nothing of the host comes along) into a new workspace beside the hidden tests, under ``.grading/``,
and pytest writes its results to a JUnit XML file whose name is drawn per grading, so nothing the
model's code prints can pose as a result. The model never sees the tests or the results file.
"""
from __future__ import annotations

import os
import secrets
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ...sandbox import Limits, Workspace, current
from .tasks import Task

GRADING_DIR = ".grading"
MAX_COPIED_BYTES = 4 * 1024 * 1024
F2P_FILE, P2P_FILE = "test_fail_to_pass.py", "test_pass_to_pass.py"


@dataclass(frozen=True)
class Grade:
    f2p_passed: int
    f2p_total: int
    p2p_passed: int
    p2p_total: int

    @property
    def resolved(self) -> bool:
        return self.f2p_passed == self.f2p_total and self.p2p_passed == self.p2p_total

    @property
    def fraction(self) -> float:
        total = self.f2p_total + self.p2p_total
        return (self.f2p_passed + self.p2p_passed) / total if total else 0.0


def final_files(root: Path) -> dict[str, str]:
    """The workspace's regular text files (no symlinks, nothing under .grading), at most MAX_COPIED_BYTES in all."""
    files: dict[str, str] = {}
    used = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d != GRADING_DIR and d != "__pycache__" and not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            size = os.path.getsize(path)
            if used + size > MAX_COPIED_BYTES:
                continue
            used += size
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read().decode("utf-8", errors="replace")
    return files


def _count(report: ET.Element, file: str, names: int) -> int:
    cases = [c for c in report.iter("testcase") if file.removesuffix(".py") in (c.get("classname") or "")]
    passed = sum(1 for c in cases if not any(child.tag in ("failure", "error", "skipped") for child in c))
    return min(passed, names)


def _test_count(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.startswith("def test_"))


def grade(task: Task, final: Workspace, limits: Limits) -> Grade:
    """Runs the hidden tests on ``final``'s files; SandboxError when the sandbox itself fails."""
    results = f"{GRADING_DIR}/results-{secrets.token_hex(8)}.xml"
    files = {**final_files(final.path), f"{GRADING_DIR}/{F2P_FILE}": task.fail_to_pass, f"{GRADING_DIR}/{P2P_FILE}": task.pass_to_pass}
    with current().open(files=files) as ws:
        ws.run(f"python -m pytest -q -p no:cacheprovider --junitxml={results} {GRADING_DIR}", limits=limits)
        report_path = ws.path / results
        f2p_total, p2p_total = _test_count(task.fail_to_pass), _test_count(task.pass_to_pass)
        if not report_path.is_file():  # pytest never got to write it (killed, or the model's code ended it): nothing passed
            return Grade(0, f2p_total, 0, p2p_total)
        try:
            report = ET.parse(report_path).getroot()
        except ET.ParseError:
            return Grade(0, f2p_total, 0, p2p_total)
        return Grade(_count(report, F2P_FILE, f2p_total), f2p_total, _count(report, P2P_FILE, p2p_total), p2p_total)
