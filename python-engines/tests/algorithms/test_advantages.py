"""Advantage estimators and reward normalisations: hand-computed tables."""
import re
import typing
from pathlib import Path

import pytest
import torch

from rollflow_engines.algorithms import (ADV_ESTIMATOR_NAMES, ADVANTAGE_ESTIMATORS, ALL_ADVANTAGE_ESTIMATORS,
                                         IS_WEIGHT_LEVELS, KL_ESTIMATORS, LOSS_AGGREGATIONS, NORM_LEVELS, PG_VARIANTS,
                                         POLICY_LOSSES, REWARD_NORM_NAMES, REWARD_NORMS, VALUE_ESTIMATORS,
                                         AdvantageParams, check_registered, normalize_rewards, whiten)
from rollflow_engines.algorithms.advantages import group_index, last_token_rewards
from rollflow_engines.roles.trainer.contracts import TrainInferISWeight, TrainStepRequest

S2 = 0.5 ** 0.5  # unbiased std of {1, 0}: sqrt((0.25 + 0.25) / 1) = 0.707107
S3 = 3 ** 0.5  # unbiased std of {3, 0, 0}: mean 1, sqrt((4 + 1 + 1) / 2) = 1.732051

TABLE = [
    # estimator, reward normalisation levels (applied once, before the estimator), params, rewards, groups, expected
    # groups a = {1, 0} (mean 0.5, std 0.7071), b = {1, 1} (mean 1, std 0)
    ("grpo", ("group", "group"), {}, [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5 / S2, -0.5 / S2, 0.0, 0.0]),
    # Dr. GRPO: no std division
    ("grpo", ("group", "none"), {}, [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5, -0.5, 0.0, 0.0]),
    # {3, 0, 0}: deviations (2, −1, −1) / 1.7321 = (1.1547, −0.5774, −0.5774)
    ("grpo", ("group", "group"), {}, [3, 0, 0], ["x", "x", "x"], [2 / S3, -1 / S3, -1 / S3]),
    ("grpo", ("group", "group"), {}, [5], ["alone"], [0.0]),  # a group of one: r − mean = 0
    ("reinforce", ("none", "none"), {}, [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5, -0.5, 0.0, 0.0]),
    # interleaved groups: g1 = {1, 3} mean 2, g2 = {2, 6} mean 4
    ("reinforce", ("none", "none"), {}, [1, 2, 3, 6], ["g1", "g2", "g1", "g2"], [-1.0, -2.0, 1.0, 2.0]),
    ("reinforce", ("none", "none"), {"baseline": "none"}, [1, 0, 1, 1], ["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0]),
    # RLOO: r_i minus the mean of the others. a: 1 − 0 = 1, 0 − 1 = −1; b: 1 − 1 = 0
    ("rloo", ("none", "none"), {}, [1, 0, 1, 1], ["a", "a", "b", "b"], [1.0, -1.0, 0.0, 0.0]),
    # {3, 0, 0}: 3 − (0 + 0)/2 = 3; 0 − (3 + 0)/2 = −1.5 (twice)
    ("rloo", ("none", "none"), {}, [3, 0, 0], ["x", "x", "x"], [3.0, -1.5, -1.5]),
    ("rloo", ("none", "none"), {}, [5], ["alone"], [5.0]),  # no other sample: no baseline
    # REINFORCE++-baseline before its batch whitening: r − mean_group
    ("reinforce_plus_plus_baseline", ("none", "none"), {}, [1, 2, 3, 6], ["g1", "g2", "g1", "g2"], [-1.0, -2.0, 1.0, 2.0]),
]


@pytest.mark.parametrize("name, levels, params, rewards, groups, expected", TABLE)
def test_advantage_table(name, levels, params, rewards, groups, expected):
    scores = normalize_rewards(torch.tensor(rewards, dtype=torch.float32), groups, *levels, eps=1e-6)
    out = ADVANTAGE_ESTIMATORS[name](scores, groups, AdvantageParams(**params))
    assert out.tolist() == pytest.approx(expected, abs=1e-5)


def test_rewards_are_normalised_once_with_each_estimators_default():
    """The estimator's default normalisation when the request names none; grpo refuses a mean level other than group."""
    req = lambda **f: TrainStepRequest(step=0, batch_ref="x.jsonl", **f)  # noqa: E731
    assert req(adv_estimator="grpo").reward_norm_levels() == ("group", "group")
    assert req(adv_estimator="grpo", norm_std_type="none", norm_mean_type="group").reward_norm_levels() == ("group", "none")
    assert req(adv_estimator="rloo").reward_norm_levels() == ("none", "none")
    assert req(adv_estimator="reinforce_plus_plus_baseline").reward_norm_levels() == ("none", "none")
    assert req(adv_estimator="gae").reward_norm_levels() == ("group", "group")
    for fields in ({"reward_norm": "none"}, {"reward_norm": "batch"}, {"norm_std_type": "group"}):
        with pytest.raises(ValueError, match="grpo is the group-normalised reward"):
            req(adv_estimator="grpo", **fields)


NORM_TABLE = [
    # (mean level, std level), rewards, groups, expected
    (REWARD_NORMS["none"], [1, 0, 1, 1], ["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0]),
    (REWARD_NORMS["group"], [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5 / S2, -0.5 / S2, 0.0, 0.0]),
    # batch {1, 2, 3}: mean 2, unbiased std 1 -> (−1, 0, 1)
    (REWARD_NORMS["batch"], [1, 2, 3], ["a", "b", "c"], [-1.0, 0.0, 1.0]),
    # LitePPO: centred by group (0.5, −0.5, 0, 0), divided by the batch std of the raw rewards:
    # mean 0.75, squares 0.0625 + 0.5625 + 0.0625 + 0.0625 = 0.75, /3 -> std 0.5 -> (1, −1, 0, 0)
    (REWARD_NORMS["group_mean_batch_std"], [1, 0, 1, 1], ["a", "a", "b", "b"], [1.0, -1.0, 0.0, 0.0]),
    (("group", "none"), [1, 0, 1, 1], ["a", "a", "b", "b"], [0.5, -0.5, 0.0, 0.0]),  # centring only
    (("batch", "none"), [1, 0, 1, 1], ["a", "a", "b", "b"], [0.25, -0.75, 0.25, 0.25]),  # r − 0.75
    (("none", "batch"), [1, 0, 1, 1], ["a", "a", "b", "b"], [2.0, 0.0, 2.0, 2.0]),  # r / 0.5
    (("batch", "group"), [1, 0, 3, 3], ["a", "a", "b", "b"], [-0.75 / S2, -1.75 / S2, 1.25 / 1e-6, 1.25 / 1e-6]),  # group b: std 0
]


@pytest.mark.parametrize("levels, rewards, groups, expected", NORM_TABLE)
def test_reward_norm_table(levels, rewards, groups, expected):
    out = normalize_rewards(torch.tensor(rewards, dtype=torch.float32), groups, *levels, eps=1e-6)
    assert out.tolist() == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_roll_norm_types_replace_reward_norm_on_the_wire():
    req = TrainStepRequest(step=0, batch_ref="x.jsonl", reward_norm="group", norm_mean_type="group", norm_std_type="batch")
    assert req.reward_norm_levels() == ("group", "batch") == REWARD_NORMS["group_mean_batch_std"]
    loo = {"adv_estimator": "rloo"}  # grpo needs a group mean; these pairs are for the other estimators
    assert TrainStepRequest(step=0, batch_ref="x.jsonl", norm_std_type="batch", **loo).reward_norm_levels() == ("none", "batch")
    assert TrainStepRequest(step=0, batch_ref="x.jsonl", reward_norm="batch", **loo).reward_norm_levels() == ("batch", "batch")


# GAE by hand. δ_t = r_t + γ·V_{t+1} − V_t, A_t = δ_t + γλ·A_{t+1}, R_t = A_t + V_t; the reward sits on the
# last counted token; masked tokens are skipped.
GAE_TABLE = [
    # γ,  λ,   reward, values,          mask,           advantages,                  returns
    # t2: δ = 1 − 0.4 = 0.6; t1: δ = 0.9·0.4 − 0.2 = 0.16, A = 0.16 + 0.45·0.6 = 0.43;
    # t0: δ = 0.9·0.2 − 0.5 = −0.32, A = −0.32 + 0.45·0.43 = −0.1265
    (0.9, 0.5, 1.0, [0.5, 0.2, 0.4], [1, 1, 1], [-0.1265, 0.43, 0.6], [0.3735, 0.63, 1.0]),
    # γ = λ = 1: A_t = R − V_t (Monte Carlo minus the baseline)
    (1.0, 1.0, 1.0, [0.5, 0.2, 0.4], [1, 1, 1], [0.5, 0.8, 0.6], [1.0, 1.0, 1.0]),
    # λ = 0: A_t = δ_t: (0.2 − 0.5, 0.4 − 0.2, 1 − 0.4)
    (1.0, 0.0, 1.0, [0.5, 0.2, 0.4], [1, 1, 1], [-0.3, 0.2, 0.6], [0.2, 0.4, 1.0]),
    # an env token in the middle (mask 0) is skipped: t2: A = 0.6; t0: δ = 0.4 − 0.5 = −0.1, A = −0.1 + 0.6 = 0.5
    (1.0, 1.0, 1.0, [0.5, 9.0, 0.4], [1, 0, 1], [0.5, 0.0, 0.6], [1.0, 0.0, 1.0]),
    # padding after a 2-token response: the reward goes on t1: A1 = 1 − 0.2, A0 = 1 − 0.5
    (1.0, 1.0, 1.0, [0.5, 0.2, 7.0], [1, 1, 0], [0.5, 0.8, 0.0], [1.0, 1.0, 0.0]),
    # γ = 0.5, λ = 1, V = 0: discounted reward-to-go 0.25, 0.5, 1 (reward −2 -> −0.5, −1, −2)
    (0.5, 1.0, -2.0, [0.0, 0.0, 0.0], [1, 1, 1], [-0.5, -1.0, -2.0], [-0.5, -1.0, -2.0]),
]


@pytest.mark.parametrize("gamma, lambd, reward, values, mask, advantages, returns", GAE_TABLE)
def test_gae_table(gamma, lambd, reward, values, mask, advantages, returns):
    adv, ret = VALUE_ESTIMATORS["gae"](torch.tensor([reward]), torch.tensor([values]), torch.tensor([mask], dtype=torch.float32),
                                       AdvantageParams(gamma=gamma, lambd=lambd))
    assert adv[0].tolist() == pytest.approx(advantages, abs=1e-6)
    assert ret[0].tolist() == pytest.approx(returns, abs=1e-6)


def test_gae_rows_are_independent_and_take_per_token_rewards():
    params = AdvantageParams(gamma=1.0, lambd=1.0)
    values = torch.tensor([[0.5, 0.2, 0.4], [0.0, 0.0, 0.0]])
    # row 1 has per-token rewards (0.1, 0, 1) and V = 0: A = reward-to-go (1.1, 1, 1)
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.1, 0.0, 1.0]])
    adv, ret = VALUE_ESTIMATORS["gae"](rewards, values, torch.ones(2, 3), params)
    assert adv.flatten().tolist() == pytest.approx([0.5, 0.8, 0.6, 1.1, 1.0, 1.0], abs=1e-6)
    # values carry no gradient into the advantages
    v = values.clone().requires_grad_(True)
    assert not VALUE_ESTIMATORS["gae"](rewards, v, torch.ones(2, 3), params)[0].requires_grad


def test_last_token_rewards():
    # row 0's last counted token is t1; row 1 counts nothing, so its reward goes nowhere
    out = last_token_rewards(torch.tensor([2.0, 3.0]), torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    assert out.tolist() == [[0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]


def test_whiten():
    # counted values 1, 2, 3, 4: mean 2.5, unbiased var (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5/3, std 1.290994
    adv = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    s = (5 / 3) ** 0.5
    assert whiten(adv, mask, eps=0.0).flatten().tolist() == pytest.approx([-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s, 0.0, 0.0], abs=1e-6)


def test_group_ids_may_be_ints_or_a_tensor():
    rewards = torch.tensor([1.0, 2.0, 3.0, 6.0])
    params = AdvantageParams()
    by_str = ADVANTAGE_ESTIMATORS["reinforce"](rewards, ["p", "q", "p", "q"], params)
    assert ADVANTAGE_ESTIMATORS["reinforce"](rewards, [7, 9, 7, 9], params).tolist() == by_str.tolist()
    assert ADVANTAGE_ESTIMATORS["reinforce"](rewards, torch.tensor([7, 9, 7, 9]), params).tolist() == by_str.tolist()
    assert group_index(["z", "y", "z"]).tolist() == [0, 1, 0]


def test_inputs_are_not_modified():
    rewards = torch.tensor([1.0, 0.0])
    for fn in ADVANTAGE_ESTIMATORS.values():
        fn(rewards, ["a", "a"], AdvantageParams(baseline="none"))
    for levels in REWARD_NORMS.values():
        normalize_rewards(rewards, ["a", "a"], *levels)
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


def test_every_config_name_has_an_implementation():
    assert set(POLICY_LOSSES) == set(PG_VARIANTS)
    assert set(ALL_ADVANTAGE_ESTIMATORS) == set(ADV_ESTIMATOR_NAMES)
    assert not set(ADVANTAGE_ESTIMATORS) & set(VALUE_ESTIMATORS)  # a name is in one registry, so one signature
    assert set(REWARD_NORMS) == set(REWARD_NORM_NAMES)
    assert all(level in NORM_LEVELS for levels in REWARD_NORMS.values() for level in levels)
    # The wire's closed lists name exactly what the registries hold.
    fields = TrainStepRequest.model_fields
    assert set(typing.get_args(fields["kl_loss_type"].annotation)) == set(KL_ESTIMATORS)
    assert set(typing.get_args(TrainInferISWeight.model_fields["weight_type"].annotation)) == set(IS_WEIGHT_LEVELS)
    assert set(typing.get_args(typing.get_args(fields["norm_mean_type"].annotation)[0])) == set(NORM_LEVELS)


def test_check_registered_tells_planned_from_unknown():
    assert check_registered("loss_agg_mode", "token_mean", LOSS_AGGREGATIONS) == "token_mean"
    planned = (*PG_VARIANTS, "sapo")  # a name the config might list before it is implemented
    with pytest.raises(ValueError, match="does not implement yet; implemented: vanilla, ppo"):
        check_registered("pg_variant", "sapo", POLICY_LOSSES, planned)
    with pytest.raises(ValueError, match="unknown pg_variant 'nope'"):
        check_registered("pg_variant", "nope", POLICY_LOSSES, PG_VARIANTS)
