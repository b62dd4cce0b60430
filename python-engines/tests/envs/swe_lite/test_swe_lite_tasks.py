"""SWE-lite tasks: 60 over three tiers, the same for the same id, and each one a real bug: on the planted
bug every FAIL_TO_PASS test fails and every PASS_TO_PASS test passes; with the fix applied, all pass.
Checked by running the hidden tests in the sandbox, as grading does."""
import pytest

from rollflow_engines.envs.swe_lite.grading import grade
from rollflow_engines.envs.swe_lite.tasks import TIERS, generate_task, task_for_seed, task_ids
from rollflow_engines.sandbox import Limits, current

LIMITS = Limits(wall_s=60, cpu_s=30)


def test_sixty_tasks_over_three_tiers_each_the_same_for_the_same_id():
    ids = task_ids()
    assert len(ids) == 60 and {generate_task(i).tier for i in ids} == set(TIERS)
    assert all(generate_task(i) == generate_task(i) for i in ids)
    assert len({tuple(sorted(generate_task(i).files.items())) for i in ids}) >= 55  # the seed varies names and constants
    assert task_for_seed(7, (2,)).tier == 2 and task_for_seed(7) == task_for_seed(7 + 60)


@pytest.mark.parametrize("bad", ["t4-000", "t1-020", "t1-1", "x"])
def test_an_unknown_id_says_what_ids_exist(bad):
    with pytest.raises(ValueError, match="expected t1-000"):
        generate_task(bad)


@pytest.mark.parametrize("task_id", task_ids())
def test_the_planted_bug_fails_exactly_the_fail_to_pass_tests_and_the_fix_passes_all(task_id):
    task = generate_task(task_id)
    with current().open(files=task.files) as buggy:
        before = grade(task, buggy, LIMITS)
    with current().open(files=task.fixed_files()) as fixed:
        after = grade(task, fixed, LIMITS)
    assert before.f2p_total > 0 and before.p2p_total > 0
    assert (before.f2p_passed, before.p2p_passed) == (0, before.p2p_total), before
    assert after.resolved, after
