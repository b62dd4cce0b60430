"""A fixed sample of real mined tasks (mining_sample.jsonl: tasks the miner mined from inflection 0.5.1), checked
against the real project: each base state is rebuilt from the pinned sdist and the gold patch reversed, its content
hash must be the row's base_commit, and the swe env's grader must resolve the gold patch and not the base.

Needs inflection's sdist: taken from .cache/swe-mined/sdists when `make swe-tasks` has run, else downloaded once
from PyPI with pip (15 kB, sha256 checked against projects.json) into that cache. No network and no cached sdist
is a failure, never a skip. The prepared environment is a venv reaching this test runner's pytest (project.py).
"""
import pytest

from rollflow_engines.envs.swe.instances import parse_row, Fields
from rollflow_engines.envs.swe.mining.mine import tree_hash, validate, write_tarball

from rollflow_engines.envs.swe.env import SweConfig, SweEnv

from .helpers import apply_patch
from .sample_tasks import ROWS, SAMPLE, base_tree, episode_config


def test_the_sample_is_small_and_well_formed():
    assert 3 <= len(ROWS) <= 5 and SAMPLE.stat().st_size < 40_000
    for row in ROWS:
        parse_row(row, Fields(), with_split=True)  # what the swe env reads; raises on a malformed row
        assert row["repo"] == "pypi/inflection" and row["test_patch"] == "" and row["split"] == "heldout_projects"


@pytest.mark.parametrize("row", ROWS, ids=[r["instance_id"] for r in ROWS])
def test_a_sampled_task_is_rebuilt_from_the_sdist_and_graded_as_mined(inflection, row, tmp_path):
    project, _, python, _ = inflection
    base = base_tree(inflection, row, tmp_path / "base")
    assert tree_hash(base) == row["base_commit"]
    tarball = tmp_path / f"{row['instance_id']}.tar.gz"
    write_tarball(base, f"{project.name}-{project.version}", tarball)
    instance = parse_row(row, Fields(), with_split=True)
    assert validate(instance, tarball, python) == (True, "")


def test_a_sampled_task_is_an_episode_of_the_swe_env_through_the_documented_source(inflection, tmp_path):
    """The config of docs/swe-mining.md (a tarball per instance, the env per repo_slug): the gold patch applied by the
    agent inside the sandbox scores 1, no edit scores 0."""
    row = ROWS[0]
    config = episode_config(inflection, row, tmp_path)
    for replies, reward in (([apply_patch(row["patch"]), "<submit/>"], 1.0), (["<submit/>"], 0.0)):
        env = SweEnv()
        try:
            env.reset(0, SweConfig.model_validate(config))
            for reply in replies:
                end = env.step(reply)
        finally:
            env.close()
        assert (end.reward, end.done, end.info["fail_to_pass"][1], end.info["pass_to_pass"][1]) == (reward, True, len(row["FAIL_TO_PASS"]),
                                                                                                  len(row["PASS_TO_PASS"])), end
