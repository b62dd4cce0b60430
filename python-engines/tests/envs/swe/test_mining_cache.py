"""The miner's cache: its key, the splits, and a dataset that is rewritten only when a project's tasks change."""
import argparse
import json

from rollflow_engines.envs.swe.mining import __main__ as cli
from rollflow_engines.envs.swe.mining.projects import Project, merged


def _args(**kw):
    return argparse.Namespace(**{"seed": 0, "max_kept": 24, "max_tried": 120, **kw})


def test_the_key_covers_the_seed_the_limits_and_the_miner_version(monkeypatch):
    key = cli.cache_key(_args())
    assert key == cli.cache_key(_args())
    assert len({key, cli.cache_key(_args(seed=1)), cli.cache_key(_args(max_kept=5)), cli.cache_key(_args(max_tried=5))}) == 4
    monkeypatch.setattr(cli, "MINER_VERSION", "next")
    assert cli.cache_key(_args()) != key


def test_heldout_tasks_are_a_share_of_the_train_projects_tasks_only():
    ids = [f"pypi__x-{n:010x}" for n in range(200)]
    train = [cli.split_of({"instance_id": i, "split": "train"}) for i in ids]
    assert set(train) == {"train", "heldout_tasks"} and 20 <= train.count("heldout_tasks") <= 60
    assert {cli.split_of({"instance_id": i, "split": "heldout_projects"}) for i in ids} == {"heldout_projects"}


def test_the_dataset_is_assembled_in_the_lists_order_and_left_alone_when_unchanged(tmp_path):
    projects = [Project(n, "1", "", (), "train") for n in ("b", "a")]
    for p in projects:
        (tmp_path / "work" / p.name).mkdir(parents=True)
        (tmp_path / "work" / p.name / "tasks-k.jsonl").write_text(json.dumps({"instance_id": p.name}) + "\n")
        (tmp_path / "work" / p.name / "summary-k.json").write_text(json.dumps({"project": p.name, "tasks": 1}))
    assert cli.assemble(tmp_path, projects, "k")[0] == 2
    target = tmp_path / "instances.jsonl"
    assert [json.loads(line)["instance_id"] for line in target.read_text().splitlines()] == ["b", "a"]
    before = target.stat().st_mtime_ns
    assert cli.assemble(tmp_path, projects, "k")[0] == 2 and target.stat().st_mtime_ns == before
    assert cli.assemble(tmp_path, projects, "other")[0] == 0  # another key: none of these tasks


def test_a_projects_own_pin_replaces_the_common_one():
    assert merged(["pytest==9.2.0", "pluggy==1.7.0"], ("pytest==7.4.4", "freezegun==1.5.1")) == ["pytest==7.4.4", "pluggy==1.7.0", "freezegun==1.5.1"]
