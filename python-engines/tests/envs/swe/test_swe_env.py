"""The swe env on the tally project's instances, in the real sandbox: the gold patch resolves, no edit and a
partial fix do not, the agent works with the prepared environment and never sees the test_patch, instances
are picked by seed, split and ids, and a missing repository or interpreter is the server's failure."""
import json
import os
import shutil

import pytest

from rollflow_engines.envs.swe.env import SweConfig, SweEnv
from rollflow_engines.errors import RequestError, UnavailableError

from .helpers import apply_patch, bash, config, play, write_rows
from .project import BUGS, source


@pytest.mark.parametrize("instance_id", list(BUGS))  # a directory, a list-valued row, a tarball
def test_the_gold_patch_resolves_every_instance(built, instance_id):
    row = built.row(instance_id)
    steps = play(built, instance_id, [apply_patch(row["patch"]), "<submit/>"])
    assert "applied" in steps[0].observation, steps[0].observation
    end = steps[-1]
    f2p, p2p = json.loads(row["FAIL_TO_PASS"]) if isinstance(row["FAIL_TO_PASS"], str) else row["FAIL_TO_PASS"], row["PASS_TO_PASS"]
    p2p = json.loads(p2p) if isinstance(p2p, str) else p2p
    assert (end.reward, end.done, end.info["success"], end.info["reward_tampered"]) == (1.0, True, True, False), end
    assert end.info["fail_to_pass"] == [len(f2p), len(f2p)] and end.info["pass_to_pass"] == [len(p2p), len(p2p)]


def test_no_edit_scores_0_with_the_counts(built):
    end = play(built, "tally__tally-1", ["<submit/>"])[-1]
    assert (end.reward, end.done, end.info["success"], end.info["reward_tampered"]) == (0.0, True, False, False)
    assert end.info["fail_to_pass"] == [0, 2] and end.info["pass_to_pass"] == [8, 8]


def test_a_partial_fix_scores_0(built):
    """tally-3 has two faults in convert(); fixing only the unit check leaves the conversion wrong."""
    edit = '<replace path="tally/units.py"><old>    if source not in FACTORS:\n</old><new>    if source not in FACTORS or target not in FACTORS:\n</new></replace>'
    steps = play(built, "tally__tally-3", [edit, "<submit/>"])
    assert steps[0].observation.startswith("Replaced 1 occurrence")
    assert (steps[-1].reward, steps[-1].info["fail_to_pass"]) == (0.0, [0, 1])


def test_the_fix_through_native_tool_calls_scores_1(built):
    path, fixed, buggy = BUGS["tally__tally-1"]["code"][0]
    # the line after a newline: "    return ordered[middle]" also ends the odd branch's deeper-indented line
    call = json.dumps({"name": "edit", "arguments": {"path": path, "old_str": "\n" + buggy, "new_str": "\n" + fixed}})
    steps = play(built, "tally__tally-1", [f"<tool_call>{call}</tool_call>", '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'],
                 actions="tool_calls")
    assert steps[0].observation == "Replaced 1 occurrence in tally/stats.py.", steps[0].observation
    assert steps[-1].reward == 1.0, steps[-1]


def test_the_agent_works_with_the_prepared_environment_and_not_the_test_patch(built):
    env = SweEnv()
    try:
        obs = env.reset(0, config(built, "tally__tally-1"))
        assert "Task tally__tally-1 (tally/tally)" in obs and "median([1, 2, 3, 4])" in obs and "tally/" in obs and "<submit/>" in obs
        prefix = env.step(bash("python -c 'import sys; print(sys.prefix)'")).observation
        assert prefix.split("\n", 1)[1].strip() == os.path.dirname(os.path.dirname(built.python))  # the venv, not the server's
        assert "test_median_even" not in env.step("<view>tests/test_stats.py</view>").observation
        assert env.step("<view>../../../etc/passwd</view>").observation.startswith("Error:")  # swe_lite's path checks
        env.step(bash("ln -s /etc/passwd leak.txt"))
        assert "root:" not in env.step("<view>leak.txt</view>").observation
        ran = env.step(bash("python -m pytest -q tests 2>&1 | tail -1")).observation
        assert "passed" in ran and "failed" not in ran, ran  # the suite at the base state passes: the bug is untested there
        assert env.step(bash("touch /grading-planted 2>&1; touch " + os.path.dirname(built.python) + "/x 2>&1")).observation.count("Read-only") == 2
    finally:
        env.close()


def test_the_seed_picks_an_instance_deterministically_within_split_and_ids(built):
    def picked(seed, **overrides):
        env = SweEnv()
        try:
            env.reset(seed, SweConfig.model_validate({"instances": str(built.instances_path), "source": source(built), **overrides}))
            return env.info()["instance_id"]
        finally:
            env.close()
    assert [picked(s) for s in range(4)] == ["tally__tally-1", "tally__tally-2", "tally__tally-3", "tally__tally-1"]
    assert [picked(s, split="train") for s in range(3)] == ["tally__tally-1", "tally__tally-2", "tally__tally-1"]
    assert [picked(s, split="test") for s in range(2)] == ["tally__tally-3"] * 2
    assert [picked(s, ids=["tally__tally-3", "tally__tally-2"]) for s in range(2)] == ["tally__tally-3", "tally__tally-2"]
    with pytest.raises(RequestError, match=r"config.ids: \['nope-1'\] are not instances of .* in split 'train'"):
        picked(0, split="train", ids=["nope-1"])


def test_renamed_fields_are_read_through_the_fields_setting(built, tmp_path):
    renamed = {"instance_id": "id", "problem_statement": "statement", "FAIL_TO_PASS": "f2p", "PASS_TO_PASS": "p2p"}
    rows = [{renamed.get(k, k): v for k, v in row.items()} for row in built.rows]
    path = write_rows(tmp_path / "renamed.jsonl", rows)
    fields = {"instance_id": "id", "problem_statement": "statement", "FAIL_TO_PASS": "f2p", "PASS_TO_PASS": "p2p"}
    steps = play(built, "tally__tally-1", [apply_patch(built.row("tally__tally-1")["patch"]), "<submit/>"], instances=str(path), fields=fields)
    assert steps[-1].reward == 1.0
    with pytest.raises(RequestError, match="config.instances: .*has no readable instance .*row 1: no field 'instance_id'"):
        SweEnv().reset(0, config(built, instances=str(path)))


def test_a_parquet_dataset_is_read(built, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")  # pyarrow is in requirements.txt; the skip only guards a partial install
    import pyarrow as pa
    path = tmp_path / "instances.parquet"
    rows = [{**r, "FAIL_TO_PASS": r["FAIL_TO_PASS"] if isinstance(r["FAIL_TO_PASS"], str) else json.dumps(r["FAIL_TO_PASS"]),
             "PASS_TO_PASS": r["PASS_TO_PASS"] if isinstance(r["PASS_TO_PASS"], str) else json.dumps(r["PASS_TO_PASS"])} for r in built.rows]
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert play(built, "tally__tally-2", ["<submit/>"], instances=str(path))[-1].info["fail_to_pass"] == [0, 2]
    with pytest.raises(RequestError, match="config.instances: cannot read .*not a parquet file"):
        SweEnv().reset(0, config(built, instances=str(built.instances_path), format="parquet"))


def test_malformed_rows_are_counted_and_reported_never_a_crash(built, tmp_path, caplog):
    good = built.rows
    bad = ["{not json", json.dumps([1, 2]), {**good[0], "instance_id": "x-1", "FAIL_TO_PASS": "[not json"},
           {**good[0], "instance_id": "x-2", "FAIL_TO_PASS": json.dumps(["test_x (module.Class)"])},
           {**good[0], "instance_id": "x-3", "FAIL_TO_PASS": "[]"}, {k: v for k, v in good[0].items() if k != "patch"},
           {**good[0], "instance_id": 7}, good[0]]  # the last one repeats the first good row's id
    path = write_rows(tmp_path / "mixed.jsonl", [*good, *bad])
    with caplog.at_level("WARNING"):
        steps = play(built, "tally__tally-2", ["<submit/>"], instances=str(path))
    assert steps[-1].info["dataset_rows_malformed"] == len(bad) and steps[-1].info["fail_to_pass"] == [0, 2]
    assert f"{len(bad)} malformed rows skipped" in caplog.text and "row 4: not JSON" in caplog.text
    from rollflow_engines.envs.swe.instances import Fields, read_dataset
    problems = [str(p) for p in read_dataset(str(path), "auto", Fields(), False).problems]
    assert [p.split(":", 1)[0] for p in problems] == [f"row {n}" for n in range(4, 12)]
    assert "not pytest node ids" in problems[3] and "FAIL_TO_PASS is empty" in problems[4] and "no field 'patch'" in problems[5]
    assert "instance_id is int" in problems[6] and "repeats an earlier row" in problems[7]


def test_a_test_patch_that_does_not_apply_is_the_datasets_fault_at_reset(built, tmp_path):
    row = {**built.rows[0], "test_patch": built.rows[1]["test_patch"].replace("a\", \"a\")]", "zzz\")]")}
    path = write_rows(tmp_path / "broken.jsonl", [row])
    with pytest.raises(RequestError, match="config.instances: instance tally__tally-1: test_patch does not apply"):
        SweEnv().reset(0, config(built, instances=str(path)))


def test_a_missing_repository_or_interpreter_is_the_servers_failure(built, tmp_path):
    gone = {"kind": "local", "repo_path": str(tmp_path / "nowhere" / "{instance_id}"), "python": built.python}
    with pytest.raises(UnavailableError, match="no repository at .*nowhere/tally__tally-1"):
        SweEnv().reset(0, config(built, "tally__tally-1", source=gone))
    with pytest.raises(UnavailableError, match="no interpreter at /nonexistent/bin/python"):
        SweEnv().reset(0, config(built, "tally__tally-1", source={**gone, "repo_path": str(built.root / "repos" / "{instance_id}"),
                                                                  "python": "/nonexistent/bin/python"}))


def test_an_environment_that_vanishes_before_grading_is_a_503_not_a_0(built, tmp_path):
    """The grading's interpreter never starts: the step fails as the server's and changes nothing, so a retry grades."""
    venv = tmp_path / "venv"
    shutil.copytree(os.path.dirname(os.path.dirname(built.python)), venv, symlinks=True)
    env = SweEnv()
    try:
        env.reset(0, config(built, "tally__tally-1", source={"kind": "local", "repo_path": str(built.root / "repos" / "{instance_id}"),
                                                            "python": str(venv / "bin" / "python")}))
        shutil.rmtree(venv)
        with pytest.raises(UnavailableError, match="the grading interpreter did not start"):
            env.step("<submit/>")
        assert env.info()["turn"] == 0 and env.grade_result is None
    finally:
        env.close()


@pytest.mark.parametrize("source, expected", [
    ({"kind": "tarball", "repo_path": "x", "python": "y"}, "source.kind"),
    ({"kind": "image", "repo_path": "x", "image": "y"}, "source.repo_path"),
    ({"kind": "local", "repo_path": "repos/{name}", "python": "y"}, "has placeholder {name}"),
    ({"kind": "local", "python": "y"}, "source.repo_path"),
])
def test_a_bad_source_is_refused_naming_the_key(built, source, expected):
    from pydantic import ValidationError
    with pytest.raises(ValidationError) as caught:
        SweConfig.model_validate({"instances": "x.jsonl", "source": source})
    text = str(caught.value).replace("\n", " ")
    assert expected.split(".")[-1] in text and ("source" in text), text
