"""The mined-task format warm-start (models/warmstart_swe_mined.py, warm:swe-mined) on the checked-in real tasks
(inflection 0.5.1), two of them relabelled as the training split: it shows training tasks only, its examples are
laid out as a rollout of the brief episode and fit the context, and its fix really fixes (its no-op does not)."""
from pathlib import Path

import pytest
import yaml

from rollflow_engines.envs.swe.env import SweConfig, SweEnv
from rollflow_engines.models.loading import check_tiny_name
from rollflow_engines.models.tiny import build_tokenizer
from rollflow_engines.models.warmstart import WARM_STARTS, WarmStart, make_example
from rollflow_engines.models.warmstart_swe_mined import mined_config, mined_transcript

from .sample_tasks import ROWS, mined_layout

TRAIN, HELD_OUT = ROWS[:2], ROWS[2]
EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "learn-swe-mined.yaml"


@pytest.fixture(scope="module")
def dataset(inflection, tmp_path_factory):
    """The three tasks in the miner's layout: the first two of split train, the third held out."""
    rows = [{**row, "split": "train"} for row in TRAIN] + [{**HELD_OUT, "split": "heldout_tasks"}]
    return mined_layout(inflection, rows, tmp_path_factory.mktemp("mined"))


def spec(dataset, ids, split="train") -> WarmStart:
    return WarmStart(env="swe", env_config={**dataset, "split": split, "ids": ids}, correct_prob=0.3)


def test_held_out_tasks_are_never_shown(dataset):
    train_ids = [row["instance_id"] for row in TRAIN]
    tok = build_tokenizer()
    shown = {tok.decode(make_example(spec(dataset, train_ids), i, tok)[0]).split(".")[0] for i in range(24)}
    assert shown == {f"<|user|>Task {i}" for i in train_ids}
    with pytest.raises(ValueError, match="not instances of .* in split 'train'"):
        make_example(spec(dataset, [*train_ids, HELD_OUT["instance_id"]]), 0, tok)
    with pytest.raises(ValueError, match="training tasks only"):
        mined_config(spec(dataset, [HELD_OUT["instance_id"]], split="heldout_tasks").env_config)


def test_examples_are_two_replies_inside_the_context(dataset):
    tok = build_tokenizer()
    for i in range(8):
        prompt, response, mask = make_example(spec(dataset, [row["instance_id"] for row in TRAIN]), i, tok)
        replies = tok.decode([t for t, m in zip(response, mask) if m]).split("<eos>")
        assert replies[0].startswith('<replace path="inflection/__init__.py"><old>') and replies[1:] == ["<submit/>", ""]
        assert len(replies[0]) <= 96 and len(prompt) + len(response) <= 512 - 96  # room left: the second reply's cap


@pytest.mark.parametrize("correct, reward", [(True, 1.0), (False, 0.0)])
def test_the_fix_it_teaches_resolves_the_task_and_its_no_op_does_not(dataset, correct, reward):
    row = TRAIN[0]
    first, turns = mined_transcript({**dataset, "split": "train", "ids": [row["instance_id"]]}, row["instance_id"], correct)
    env = SweEnv()
    try:
        assert env.reset(0, SweConfig.model_validate({**dataset, "split": "train", "ids": [row["instance_id"]], "brief": True})) == first
        for reply, observation in turns:
            result = env.step(reply)
            assert result.observation == observation or result.done
    finally:
        env.close()
    assert (result.done, result.reward) == (True, reward)


def test_the_named_warm_start_is_the_examples_training_split():
    """warm:swe-mined shows learn-swe-mined.yaml's training tasks, of split train; its validation lists are the held-out
    splits (which tasks exist is the dataset's to say: select checks that when the run starts)."""
    check_tiny_name("tiny:small+warm:swe-mined")
    config = WARM_STARTS["swe-mined"].env_config
    envs = yaml.safe_load(EXAMPLE.read_text())["custom_envs"]
    assert config["split"] == "train" and config["ids"] == envs["swe_train"]["env_config"]["ids"]
    assert len(config["ids"]) == len(set(config["ids"])) == 16
    assert {name: env["env_config"]["split"] for name, env in envs.items()} == {
        "swe_train": "train", "swe_heldout_tasks": "heldout_tasks", "swe_heldout_projects": "heldout_projects"}
    paths = [config["instances"], config["source"]["repo_path"], config["source"]["python"]]
    assert all(p.startswith(".cache/swe-mined/") for p in paths)  # the checkout's .cache, not a machine's path
