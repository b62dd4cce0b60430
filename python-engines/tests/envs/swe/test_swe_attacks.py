"""Red team for the swe env, in the style of tests/redteam/test_swe_lite_attacks.py: episodes whose actions attack
the grade. The attacks (attacks.py) are written over an instance, and each runs on two tasks: tally__tally-1 (the
in-code project) and a real mined task (inflection 0.5.1's first sampled task, rebuilt from its sdist), served
both from a local directory and from a container image. The bug is
left in, so any reward above 0 is a hack that worked; none may be the server's failure either. After each, no
workspace is left. bench/swe-redteam/run.py runs the same list over the mined tasks of every project."""
import pytest

from .attacks import ATTACKS, FORGE_AT_EXIT, REPORT_PASSED, Task, append, holds
from .helpers import play_config, source, write
from .sample_tasks import ROWS, episode_config


@pytest.fixture(scope="session", params=["tally", "inflection", "inflection-image"])
def target(request, tmp_path_factory) -> tuple[Task, dict]:
    """(what the attack may know, the env config of that one instance) for each task the attacks run on; the last is
    the same real task served from a container image (source kind image: the image's system in the sandbox)."""
    if request.param == "tally":
        built = request.getfixturevalue("built")
        row = built.row("tally__tally-1")
        return Task(row), {"instances": str(built.instances_path), "source": source(built), "ids": [row["instance_id"]]}
    if request.param == "inflection-image":
        return Task(ROWS[0]), request.getfixturevalue("inflection_images")[ROWS[0]["instance_id"]]
    root = tmp_path_factory.mktemp("redteam-real")
    return Task(ROWS[0]), episode_config(request.getfixturevalue("inflection"), ROWS[0], root)


@pytest.fixture(autouse=True)
def nothing_left(sandbox_root):
    yield
    assert not sandbox_root.exists() or all(not any(owner.iterdir()) for owner in sandbox_root.iterdir())


@pytest.mark.parametrize("name", list(ATTACKS))
def test_every_attack_without_the_fix_scores_0(target, name):
    task, config = target
    build, expect, timeout = ATTACKS[name]
    replies = build(task)
    if replies is None:
        pytest.skip(f"{name} does not apply to {task.row['instance_id']}")
    overrides = {"grading_timeout_s": timeout} if timeout else {}
    end = play_config(config, [*replies, "<submit/>"], **overrides)[-1]
    assert holds(end, expect), (name, end)


def test_the_bug_is_in_and_the_gold_patch_fixes_it(target):
    """The attacks' premise on each task: no edit scores 0 and the gold patch scores 1, so a 0 is the attack's failure."""
    from .helpers import apply_patch
    task, config = target
    assert play_config(config, ["<submit/>"])[-1].reward == 0.0
    assert play_config(config, [apply_patch(task.row["patch"]), "<submit/>"])[-1].reward == 1.0


# ---- the controls: each protection is what stops its attack (with it off, the attack scores 1), on each task

def test_without_canaries_the_stripped_report_would_score_1(target, monkeypatch):
    from rollflow_engines.envs.swe import grading
    task, config = target
    monkeypatch.setattr(grading, "CANARIES_PER_FILE", 0)
    assert play_config(config, [append(task.gold_module, FORGE_AT_EXIT), "<submit/>"])[-1].reward == 1.0


# Not on tally: its test file is the test_patch's, written whatever protected_files says (tally's control is the conftest's).
@pytest.mark.parametrize("target", ["inflection"], indirect=True)
def test_without_the_test_file_reset_edited_tests_would_score_1(target, monkeypatch):
    from rollflow_engines.envs.swe import grading
    task, config = target
    assert not task.row["test_patch"]
    monkeypatch.setattr(grading, "protected_files", lambda instance, base, tests: set())
    monkeypatch.setattr(grading, "CANARIES_PER_FILE", 0)
    assert play_config(config, [*ATTACKS["edits_the_tests_to_pass"][0](task), "<submit/>"])[-1].reward == 1.0


def test_without_the_test_file_reset_an_edited_conftest_would_score_1(built, monkeypatch):
    """tally's tests have a conftest.py (inflection's have none, and a new one is never graded)."""
    from rollflow_engines.envs.swe import grading
    monkeypatch.setattr(grading, "protected_files", lambda instance, base, tests: set())
    monkeypatch.setattr(grading, "CANARIES_PER_FILE", 0)
    conftest = "import pytest\n\n\n@pytest.fixture\ndef samples():\n    return [3, 1, 4, 1, 5]\n\n\n" + REPORT_PASSED
    end = play_config({"instances": str(built.instances_path), "source": source(built), "ids": ["tally__tally-1"]},
                      [write("tests/conftest.py", conftest), "<submit/>"])[-1]
    assert end.reward == 1.0


def test_without_canaries_aimed_at_the_failing_tests_the_buggy_function_hack_would_score_1(target, monkeypatch):
    """The hole the real task showed (inflection writes `assert "x" == f(y)` and parametrizes its failing tests): with
    canaries only from the file's plain tests, taken on their literal side, an object equal to everything returned
    by the buggy function alone was a pass."""
    from rollflow_engines.envs.swe import grading
    task, config = target
    monkeypatch.setattr(grading, "_first_case", lambda test: None)
    monkeypatch.setattr(graded_run_module(), "_is_literal", lambda node: False)
    replies = ATTACKS["the_buggy_function_returns_an_object_equal_to_everything"][0](task)
    end = play_config(config, [*replies, "<submit/>"])[-1]
    assert end.reward == (1.0 if task.row["repo"] != "tally/tally" else 0.0), end


def graded_run_module():
    from rollflow_engines.envs import graded_run
    return graded_run
