"""Advantage estimators and reward normalisations: hand-computed tables."""
import re
from pathlib import Path

import pytest
import torch

from rollflow_engines.algorithms import (ADV_ESTIMATOR_NAMES, ADVANTAGE_ESTIMATORS, LOSS_AGGREGATIONS, PG_VARIANTS,
                                         POLICY_LOSSES, REWARD_NORM_NAMES, REWARD_NORMS, AdvantageParams, check_registered)
from rollflow_engines.algorithms.advantages import group_index

S2 = 0.5 ** 0.5  # unbiased std of {1, 0}: sqrt((0.25 + 0.25) / 1) = 0.707107
S3 = 3 ** 0.5  # unbiased std of {3, 0, 0}: mean 1, sqrt((4 + 1 + 1) / 2) = 1.732051

TABLE = [
    # estimator, params, rewards, groups, expected
    # groups a = {1, 0} (mean 0.5, std 0.7071), b = {1, 1} (mean 1, std 0)
    ("grpo", {}, [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5 / S2, -0.5 / S2, 0.0, 0.0]),
    ("grpo", {"std_normalize": False}, [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5, -0.5, 0.0, 0.0]),
    # {3, 0, 0}: deviations (2, −1, −1) / 1.7321 = (1.1547, −0.5774, −0.5774)
    ("grpo", {}, [3, 0, 0], ["x", "x", "x"], [2 / S3, -1 / S3, -1 / S3]),
    ("grpo", {}, [5], ["alone"], [0.0]),  # a group of one: r − mean = 0
    ("reinforce", {}, [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5, -0.5, 0.0, 0.0]),
    # interleaved groups: g1 = {1, 3} mean 2, g2 = {2, 6} mean 4
    ("reinforce", {}, [1, 2, 3, 6], ["g1", "g2", "g1", "g2"], [-1.0, -2.0, 1.0, 2.0]),
    ("reinforce", {"baseline": "none"}, [1, 0, 1, 1], ["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0]),
]


@pytest.mark.parametrize("name, params, rewards, groups, expected", TABLE)
def test_advantage_table(name, params, rewards, groups, expected):
    out = ADVANTAGE_ESTIMATORS[name](torch.tensor(rewards, dtype=torch.float32), groups, AdvantageParams(**params))
    assert out.tolist() == pytest.approx(expected, abs=1e-5)


NORM_TABLE = [
    ("none", [1, 0, 1, 1], ["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0]),
    ("group", [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5 / S2, -0.5 / S2, 0.0, 0.0]),
    # batch {1, 2, 3}: mean 2, unbiased std 1 -> (−1, 0, 1)
    ("batch", [1, 2, 3], ["a", "b", "c"], [-1.0, 0.0, 1.0]),
    # centred by group: (0.5, −0.5, 0, 0); their batch std sqrt((0.25 + 0.25) / 3) = 0.408248
    ("group_mean_batch_std", [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5 / (0.5 / 3) ** 0.5, -0.5 / (0.5 / 3) ** 0.5, 0.0, 0.0]),
]


@pytest.mark.parametrize("name, rewards, groups, expected", NORM_TABLE)
def test_reward_norm_table(name, rewards, groups, expected):
    out = REWARD_NORMS[name](torch.tensor(rewards, dtype=torch.float32), groups, AdvantageParams())
    assert out.tolist() == pytest.approx(expected, abs=1e-5)


def test_group_ids_may_be_ints_or_a_tensor():
    rewards = torch.tensor([1.0, 2.0, 3.0, 6.0])
    params = AdvantageParams()
    by_str = ADVANTAGE_ESTIMATORS["reinforce"](rewards, ["p", "q", "p", "q"], params)
    assert ADVANTAGE_ESTIMATORS["reinforce"](rewards, [7, 9, 7, 9], params).tolist() == by_str.tolist()
    assert ADVANTAGE_ESTIMATORS["reinforce"](rewards, torch.tensor([7, 9, 7, 9]), params).tolist() == by_str.tolist()
    assert group_index(["z", "y", "z"]).tolist() == [0, 1, 0]


def test_inputs_are_not_modified():
    rewards = torch.tensor([1.0, 0.0])
    for fn in [*ADVANTAGE_ESTIMATORS.values(), *REWARD_NORMS.values()]:
        fn(rewards, ["a", "a"], AdvantageParams(baseline="none"))
    assert rewards.tolist() == [1.0, 0.0]


def schema_names(const: str) -> list[str]:
    """A name list from the run config schema, so the two languages cannot drift."""
    schema = (Path(__file__).resolve().parents[3] / "src" / "configs" / "schema.ts").read_text()
    body = re.search(rf"export const {const} = \[(.*?)\] as const", schema).group(1)
    return re.findall(r"'([^']+)'", body)


def test_registries_use_the_run_config_names():
    assert list(PG_VARIANTS) == schema_names("PG_VARIANTS")
    assert list(ADV_ESTIMATOR_NAMES) == schema_names("ADV_ESTIMATORS")
    assert list(REWARD_NORM_NAMES) == schema_names("REWARD_NORMS")
    assert {"vanilla", "ppo"} <= set(POLICY_LOSSES) <= set(PG_VARIANTS)
    assert {"grpo", "reinforce"} <= set(ADVANTAGE_ESTIMATORS) <= set(ADV_ESTIMATOR_NAMES)
    assert set(REWARD_NORMS) == set(REWARD_NORM_NAMES)


def test_check_registered_tells_planned_from_unknown():
    assert check_registered("loss_agg_mode", "token_mean", LOSS_AGGREGATIONS) == "token_mean"
    with pytest.raises(ValueError, match="does not implement yet; implemented: vanilla, ppo"):
        check_registered("pg_variant", "tis", POLICY_LOSSES, PG_VARIANTS)
    with pytest.raises(ValueError, match="unknown pg_variant 'nope'"):
        check_registered("pg_variant", "nope", POLICY_LOSSES, PG_VARIANTS)
