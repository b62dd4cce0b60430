"""A tiny real-looking pure-Python project and SWE-bench-format instances on it, made in code (no downloads).

``tally`` is a package of three modules with a pytest suite (a conftest.py fixture, a test class, a
parametrized test). Each instance plants a bug by reversing its fix: the base state is the buggy tree, the
gold ``patch`` is the fix, the ``test_patch`` adds tests that expose the bug. FAIL_TO_PASS and PASS_TO_PASS
are not typed by hand: ``build`` runs pytest on the base and on the fixed tree, each with the test_patch
applied, and takes the ids from the runs (fail then pass; pass in both).
"""
from __future__ import annotations

import difflib
import json
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from rollflow_engines.envs.swe.instances import junit_key

FILES = {
    "README.md": "# tally\n\nSmall statistics and text helpers.\n",
    "tally/__init__.py": '"""tally: small statistics and text helpers."""\nfrom .stats import mean, median\nfrom .text import slugify\n\n__all__ = ["mean", "median", "slugify"]\n',
    "tally/stats.py": '''"""Descriptive statistics over sequences of numbers."""


def mean(values):
    """The arithmetic mean; ValueError for no values."""
    values = list(values)
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values):
    """The middle value; for an even count, the mean of the two middle values."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of no values")
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def clamp(value, low, high):
    """``value`` limited to the range [low, high]."""
    if low > high:
        raise ValueError("low is above high")
    return max(low, min(value, high))
''',
    "tally/text.py": '''"""Text helpers."""
import re

_SEPARATORS = re.compile(r"[^a-z0-9]+")


def slugify(text):
    """Lower case, runs of other characters as one dash, none at either end."""
    return _SEPARATORS.sub("-", text.lower()).strip("-")


def initials(name):
    return "".join(part[0].upper() for part in name.split())
''',
    "tally/units.py": '''"""Unit conversions."""

FACTORS = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0}


def convert(value, source, target):
    """``value`` in unit ``source`` expressed in unit ``target``."""
    if source not in FACTORS or target not in FACTORS:
        raise KeyError(f"unknown unit {source if source not in FACTORS else target}")
    return value * FACTORS[source] / FACTORS[target]
''',
    "tests/conftest.py": 'import pytest\n\n\n@pytest.fixture\ndef samples():\n    return [3, 1, 4, 1, 5]\n',
    "tests/test_stats.py": '''import pytest

from tally.stats import clamp, mean, median


def test_mean(samples):
    assert mean(samples) == 2.8


def test_mean_of_nothing():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd(samples):
    assert median(samples) == 3


class TestClamp:
    def test_inside(self):
        assert clamp(5, 0, 10) == 5

    def test_outside(self):
        assert clamp(-1, 0, 10) == 0
''',
    "tests/test_text.py": '''import pytest

from tally.text import initials, slugify


@pytest.mark.parametrize("text, slug", [("Hello World", "hello-world"), ("a", "a")])
def test_slugify(text, slug):
    assert slugify(text) == slug


def test_initials():
    assert initials("ada lovelace") == "AL"
''',
}

# Each instance: the bug planted in the code (the fix reversed), and the tests its test_patch adds.
BUGS = {
    "tally__tally-1": {
        "issue": "median() of an even number of values returns the upper middle value instead of the mean of the two middle values: "
                 "median([1, 2, 3, 4]) gives 3, expected 2.5.",
        "code": [("tally/stats.py", "    return (ordered[middle - 1] + ordered[middle]) / 2\n", "    return ordered[middle]\n")],
        "tests": [("tests/test_stats.py", "def test_median_odd(samples):\n    assert median(samples) == 3\n",
                   "def test_median_odd(samples):\n    assert median(samples) == 3\n\n\ndef test_median_even():\n    assert median([1, 2, 3, 4]) == 2.5\n\n\n"
                   "def test_median_even_unsorted():\n    assert median([4, 1, 3, 2]) == 2.5\n")],
    },
    "tally__tally-2": {
        "issue": "slugify() keeps dashes at the ends: slugify('  Hello, World! ') gives '-hello-world-', expected 'hello-world'.",
        "code": [("tally/text.py", '    return _SEPARATORS.sub("-", text.lower()).strip("-")\n', '    return _SEPARATORS.sub("-", text.lower())\n')],
        "tests": [("tests/test_text.py", '("Hello World", "hello-world"), ("a", "a")]', '("Hello World", "hello-world"), ("a", "a"), ("  Hello, World! ", "hello-world"), ("--x--", "x")]')],
    },
    "tally__tally-3": {  # two edits: the fix is in two places of one function
        "issue": "convert() divides where it should multiply: convert(1, 'km', 'm') gives 0.001, expected 1000; and an unknown "
                 "target unit raises no KeyError.",
        "code": [("tally/units.py", "    if source not in FACTORS or target not in FACTORS:\n", "    if source not in FACTORS:\n"),
                 ("tally/units.py", "    return value * FACTORS[source] / FACTORS[target]\n", "    return value / FACTORS[source] * FACTORS[target]\n")],
        "tests": [("tests/test_units.py", None, "import pytest\n\nfrom tally.units import convert\n\n\ndef test_km_to_m():\n    assert convert(1, 'km', 'm') == 1000\n\n\n"
                   "def test_same_unit():\n    assert convert(7, 'cm', 'cm') == 7\n\n\ndef test_unknown_target():\n    with pytest.raises(KeyError):\n        convert(1, 'm', 'ft')\n")],
    },
}


def _edited(files: dict[str, str], edits) -> dict[str, str]:
    out = dict(files)
    for path, old, new in edits:
        if old is None:
            out[path] = new
        else:
            assert out[path].count(old) == 1, (path, old)
            out[path] = out[path].replace(old, new)
    return out


def make_patch(before: dict[str, str], after: dict[str, str]) -> str:
    """A git-style unified diff from ``before`` to ``after`` (whole trees as path -> text)."""
    chunks = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a == b:
            continue
        header = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if a is None else "")
        body = difflib.unified_diff((a or "").splitlines(True), (b or "").splitlines(True),
                                    "/dev/null" if a is None else f"a/{path}", f"b/{path}")
        chunks.append(header + "".join(body))
    return "".join(chunks)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def run_outcomes(tree: Path, python: str) -> dict[str, str]:
    """node id -> passed | failed, from a real pytest run of the tree's tests (collected ids, JUnit outcomes)."""
    collected = subprocess.run([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"], cwd=tree,
                               capture_output=True, text=True, timeout=300)
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    report = tree.parent / f"{tree.name}-report.xml"
    subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "--junitxml", str(report), "tests"],
                   cwd=tree, capture_output=True, text=True, timeout=300)
    cases = {(c.get("classname"), c.get("name")): not any(ch.tag in ("failure", "error", "skipped") for ch in c)
             for c in ET.parse(report).getroot().iter("testcase")}
    return {i: "passed" if cases.get(junit_key(i)) else "failed" for i in ids}


@dataclass
class Built:
    root: Path
    instances_path: Path
    rows: list[dict]
    python: str        # the prepared environment's interpreter
    fixed: dict[str, dict[str, str]]  # instance id -> the fixed tree (code and tests)

    def row(self, instance_id: str) -> dict:
        return next(r for r in self.rows if r["instance_id"] == instance_id)


def make_venv(root: Path) -> str:
    """A prepared environment: a venv of its own whose site-packages reach the test runner's (for pytest) through a .pth."""
    venv = root / "envs" / "tally"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    runner_site = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "pytest").exists())
    (site / "runner-site.pth").write_text(runner_site + "\n")
    return str(venv / "bin" / "python")


def build(root: Path) -> Built:
    python = make_venv(root)
    rows, fixed_trees = [], {}
    for n, (instance_id, bug) in enumerate(BUGS.items()):
        fixed = FILES
        buggy = _edited(fixed, [(p, new, old) for p, new, old in bug["code"]])
        tests_after = _edited(buggy, bug["tests"])
        fixed_after = _edited(fixed, bug["tests"])
        fixed_trees[instance_id] = fixed_after
        base_dir = write_tree(root / "repos" / instance_id, buggy)
        with tempfile.TemporaryDirectory(dir=root) as scratch:
            before = run_outcomes(write_tree(Path(scratch) / "before", tests_after), python)
            after = run_outcomes(write_tree(Path(scratch) / "after", fixed_after), python)
        f2p = sorted(i for i in after if after[i] == "passed" and before.get(i) == "failed")
        p2p = sorted(i for i in after if after[i] == "passed" and before.get(i) == "passed")
        assert f2p and p2p, (instance_id, before, after)
        if n == 2:  # one repository as a tarball with a top-level directory, as sdists and `git archive --prefix` make them
            with tarfile.open(root / "repos" / f"{instance_id}.tar.gz", "w:gz") as tar:
                tar.add(base_dir, arcname="tally-0.1")
            import shutil
            shutil.rmtree(base_dir)
        rows.append({"instance_id": instance_id, "repo": "tally/tally", "base_commit": f"{n:040x}", "problem_statement": bug["issue"],
                     "patch": make_patch(buggy, fixed), "test_patch": make_patch(buggy, tests_after),
                     # the HF datasets hold the lists as JSON strings; one row keeps lists, as other datasets do
                     "FAIL_TO_PASS": json.dumps(f2p) if n != 1 else f2p, "PASS_TO_PASS": json.dumps(p2p) if n != 1 else p2p,
                     "split": "train" if n < 2 else "test"})
    path = root / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return Built(root, path, rows, python, fixed_trees)


def source(built: Built) -> dict:
    """The env_config.source for the built repositories: a directory per instance, or its .tar.gz."""
    return {"kind": "local", "repo_path": str(built.root / "repos" / "{instance_id}"), "python": built.python}
