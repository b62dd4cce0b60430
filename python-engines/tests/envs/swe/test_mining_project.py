"""The miner on tally, the tiny project made in code (project.py): the baseline, the keep rule, FAIL_TO_PASS and
PASS_TO_PASS from real runs, the gold patch validated by the swe grader, the same tasks from the same seed."""
import dataclasses
import subprocess

import pytest

from rollflow_engines.envs.swe.instances import junit_key
from rollflow_engines.envs.swe.mining import statement
from rollflow_engines.envs.swe.mining.baseline import measure, source_files
from rollflow_engines.envs.swe.mining.baseline import find_test_files
from rollflow_engines.envs.swe.mining.mine import judge, mine_project
from rollflow_engines.envs.swe.mining.projects import Project
from rollflow_engines.envs.swe.mining.testrun import Outcome, run_tests

from .project import FILES, make_venv, write_tree

TALLY = Project("tally", "0.1", "", (), "train", (("tests/test_stats.py", 0.1), ("tests/test_text.py", 0.1)))


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    root = tmp_path_factory.mktemp("mine")
    tree = write_tree(root / "work" / "tally" / "tree", FILES)
    python = make_venv(root)
    base = measure(tree, python)
    runs = [mine_project(TALLY, tree, python, base, root / f"repos{n}", 0, 3, 20, lambda _: None) for n in (1, 2)]
    return root, tree, python, base, runs


def test_the_baseline_knows_the_files_the_passing_tests_and_who_calls_what(mined):
    _, tree, _, base, _ = mined
    assert find_test_files(tree) == ["tests/test_stats.py", "tests/test_text.py"] == base.files
    assert source_files(tree) == ["tally/__init__.py", "tally/stats.py", "tally/text.py", "tally/units.py"]
    assert "tests/test_stats.py::TestClamp::test_inside" in base.passing and "tests/test_text.py::test_slugify[a-a]" in base.passing
    assert base.calls["tally/stats.py:4"] == ["tests/test_stats.py::test_mean", "tests/test_stats.py::test_mean_of_nothing"]
    assert "tally/units.py:6" not in base.calls  # convert: no test calls it, so it is never mutated


def _ok(*names):
    return {junit_key(n): Outcome("passed") for n in names}


def test_the_keep_rule():
    a, b, c = "t/test_a.py::test_1", "t/test_a.py::test_2", "t/test_b.py::test_3"
    assert judge([a, b, c], _ok(a, b, c)) == ([], [], "breaks no test")
    assert judge([a, b], {**_ok(b), junit_key(a): Outcome("failed")}) == ([a], [b], "")
    # PASS_TO_PASS: the still-passing tests of the failing tests' files only
    assert judge([a, b, c], {**_ok(b, c), junit_key(a): Outcome("failed")}) == ([a], [b], "")
    assert judge([a, c], {**_ok(c), junit_key(a): Outcome("failed")}) == ([a], [], "leaves no test passing in its files")
    assert judge([a, b], _ok(a))[2] == "tests not reported (collection broken)"


def test_kept_tasks_fail_and_pass_as_their_lists_say_and_the_gold_patch_restores_the_tree(mined, tmp_path):
    root, tree, python, _, runs = mined
    rows, stats = runs[0]
    assert len(rows) == 3 and stats.validated == 3 and stats.tried >= 3
    for row in rows:
        assert row["FAIL_TO_PASS"] and row["PASS_TO_PASS"] and row["test_patch"] == ""
        assert {t.split("::")[0] for t in row["PASS_TO_PASS"]} <= {t.split("::")[0] for t in row["FAIL_TO_PASS"]}
        base = tmp_path / row["instance_id"]
        base.mkdir()
        subprocess.run(["tar", "xzf", str(root / "repos1" / f"{row['instance_id']}.tar.gz"), "-C", str(base), "--strip-components", "1"], check=True)
        files = sorted({t.split("::")[0] for t in row["FAIL_TO_PASS"]})
        before = run_tests(base, python, files, 60).outcomes
        assert all(before[junit_key(t)].status == "failed" for t in row["FAIL_TO_PASS"])
        assert all(before[junit_key(t)].status == "passed" for t in row["PASS_TO_PASS"])
        subprocess.run(["git", "apply", "-"], cwd=base, input=row["patch"].encode(), check=True)
        assert (base / row["mutation_file"]).read_text() == (tree / row["mutation_file"]).read_text()
        after = run_tests(base, python, files, 60).outcomes
        assert all(after[junit_key(t)].status == "passed" for t in (*row["FAIL_TO_PASS"], *row["PASS_TO_PASS"]))
        # the statement: where and what, never the tests or the fix
        text = row["problem_statement"]
        assert statement.module_of(row["mutation_file"]) in text and "test_" not in text
        assert not any(line[1:].strip() in text for line in row["patch"].splitlines() if line.startswith(("+", "-")) and line[1:].strip()
                       and not line.startswith(("+++", "---")))


def test_the_same_seed_mines_the_same_tasks(mined):
    rows1, rows2 = mined[4][0][0], mined[4][1][0]
    assert [r["instance_id"] for r in rows1] == [r["instance_id"] for r in rows2]
    assert rows1 == rows2


def test_a_baseline_timed_on_another_machine_mines_the_same_tasks(mined):
    # Which files a mutant runs comes from TALLY's pinned test_seconds: a baseline that measured every file as
    # 1000 s (an old rule would have run nothing) or as 0 s mines the same tasks.
    root, tree, python, base, runs = mined
    for seconds in (1000.0, 0.0):
        timed = dataclasses.replace(base, file_seconds={f: seconds for f in base.file_seconds})
        rows, _ = mine_project(TALLY, tree, python, timed, root / f"repos-{seconds}", 0, 3, 20, lambda _: None)
        assert [r["instance_id"] for r in rows] == [r["instance_id"] for r in runs[0][0]]
