"""The losses and estimators several peers have (GSPO, Dr. GRPO's aggregation, k2 and the clamped
k3, rejection masks, clip-cov and kl-cov, the KL in the reward, REINFORCE++'s whitening): tables
computed by hand, each value worked out in its comment."""
import math

import pytest
import torch

from rollflow_engines.algorithms import (KL_ESTIMATORS, KL_PENALTIES, LOSS_AGGREGATIONS, LossInputs, LossParams,
                                         aggregate, rejection_keep)
from rollflow_engines.algorithms.covariance import clip_cov, kl_cov
from rollflow_engines.algorithms.losses import gspo
from rollflow_engines.roles.trainer.batch import fill_advantages, micro_inputs, prepare_batch
from rollflow_engines.roles.trainer.contracts import Sample, TrainStepRequest


def t(*rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32)


# ---- aggregation: a sequence with no loss token does not count.
# values [[1, 2], [3, 0], [5, 5]], mask [[1, 1], [0, 0], [1, 0]]: the second sequence is fully masked.
EMPTY_TABLE = [
    ("token_mean", (1 + 2 + 5) / 3, 3.0),
    ("seq_mean_token_mean", (1.5 + 5) / 2, 2.0),  # not (1.5 + 0 + 5) / 3 = 2.1667
    ("seq_mean_token_sum", (3 + 5) / 2, 2.0),  # not 8 / 3
    ("seq_mean_token_sum_norm", (3 + 5) / 2 / 4, 2.0),  # then / C = 4
]


@pytest.mark.parametrize("mode, expected, weight", EMPTY_TABLE)
def test_a_sequence_without_loss_tokens_does_not_shrink_the_mean(mode, expected, weight):
    values, mask = t((1.0, 2.0), (3.0, 0.0), (5.0, 5.0)), t((1.0, 1.0), (0.0, 0.0), (1.0, 0.0))
    params = LossParams(loss_agg_mode=mode, loss_scale_factor=4.0)
    assert aggregate(values, mask, params).item() == pytest.approx(expected)
    assert LOSS_AGGREGATIONS[mode].weight(mask) == weight


@pytest.mark.parametrize("mode", list(LOSS_AGGREGATIONS))
def test_micro_batches_with_empty_sequences_reproduce_the_full_batch(mode):
    values = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    mask = t((1, 1, 0), (0, 0, 0), (0, 0, 0), (1, 0, 1))  # the middle micro-batch below holds only empty sequences
    agg = LOSS_AGGREGATIONS[mode]
    parts = [(values[:1], mask[:1]), (values[1:3], mask[1:3]), (values[3:], mask[3:])]
    total = sum(agg.weight(m) for _, m in parts)
    combined = sum(agg.reduce(v, m) * agg.weight(m) / total for v, m in parts)
    assert combined.item() == pytest.approx(agg.reduce(values, mask).item(), rel=1e-6)


# ---- KL estimators: log π_θ = −1, log π_ref = −1.5 (d = log π_ref − log π_θ = −0.5)
KL_TABLE = [
    ("k1", 0.5),  # log π_θ − log π_ref
    ("k2", 0.125),  # ½ · 0.5²
    ("k3", math.exp(-0.5) + 0.5 - 1.0),  # 0.106531
    ("low_var_kl", math.exp(-0.5) + 0.5 - 1.0),  # within the clamp: k3
]


@pytest.mark.parametrize("name, expected", KL_TABLE)
def test_kl_estimator_table(name, expected):
    assert KL_ESTIMATORS[name](t((-1.0,)), t((-1.5,))).item() == pytest.approx(expected, rel=1e-5)


def test_low_var_kl_clamps_where_k3_explodes():
    # log π_θ = −30, log π_ref = 0: k3 = e^20 − 20 − 1 (its log ratio capped at 20) ≈ 4.85e8; clamped k3: d = 10, then ≤ 10
    assert KL_ESTIMATORS["k3"](t((-30.0,)), t((0.0,))).item() == pytest.approx(math.exp(20) - 21, rel=1e-5)
    assert KL_ESTIMATORS["low_var_kl"](t((-30.0,)), t((0.0,))).item() == pytest.approx(10.0)
    assert KL_PENALTIES["abs"](t((-1.0,)), t((-1.5,))).item() == pytest.approx(0.5)
    assert KL_PENALTIES["mse"] is KL_ESTIMATORS["k2"] and KL_PENALTIES["kl"] is KL_ESTIMATORS["k1"]


# ---- GSPO: the sequence ratio is the geometric mean of the token ratios.
def gspo_inputs(log_ratios, adv, mask=None):
    logprobs = torch.tensor([[-1.0] * len(log_ratios)], requires_grad=True)
    old = logprobs.detach() - torch.tensor([log_ratios])
    m = torch.ones_like(old) if mask is None else torch.tensor([mask], dtype=torch.float32)
    return logprobs, LossInputs(logprobs=logprobs, old_logprobs=old, advantages=torch.full_like(old, adv), mask=m)


GSPO_TABLE = [
    # log r per token, A, mask, loss per token, d loss/d log π per token, clipfrac
    ((0.2, -0.1), 1.0, None, -math.exp(0.05), (-math.exp(0.05),) * 2, 0.0),  # s = e^{(0.2 − 0.1)/2}
    ((0.6, 0.4), 1.0, None, -1.2, (0.0, 0.0), 1.0),  # s = e^0.5 = 1.649 > 1.2: clipped, no gradient
    ((0.6, 0.4), -1.0, None, math.exp(0.5), (math.exp(0.5),) * 2, 0.0),  # A < 0: the larger −A·s wins, unclipped
    ((0.1, 5.0), 1.0, (1, 0), -math.exp(0.1), (-math.exp(0.1), 0.0), 0.0),  # the masked token is not in s
]


@pytest.mark.parametrize("log_ratios, adv, mask, loss, grad, clipfrac", GSPO_TABLE)
def test_gspo_table(log_ratios, adv, mask, loss, grad, clipfrac):
    logprobs, x = gspo_inputs(log_ratios, adv, mask)
    per_token, metrics = gspo(x, LossParams(clip_low=0.2, clip_high=0.2))
    counted = per_token[x.mask > 0]
    assert counted.tolist() == pytest.approx([loss] * len(counted), rel=1e-5)
    (per_token * x.mask).sum().backward()
    assert logprobs.grad[0].tolist() == pytest.approx(list(grad), rel=1e-5, abs=1e-7)
    assert metrics["actor/clipfrac"].item() == pytest.approx(clipfrac)


# ---- rejection masks on π_train/π_infer: train log π = 0 everywhere, infer = (0, −1, 0.1),
# so the token log ratios are (0, 1, −0.1): ratios (1, 2.718, 0.905); their sum 0.9, their mean 0.3.
REJECTION_TABLE = [
    ("token", 0.8, 1.2, [1.0, 0.0, 1.0]),  # only the middle token is outside
    ("sequence", 0.8, 1.2, [0.0, 0.0, 0.0]),  # e^0.9 = 2.46: the whole sequence goes
    ("sequence", 0.5, 3.0, [1.0, 1.0, 1.0]),
    ("geometric", 0.8, 1.2, [0.0, 0.0, 0.0]),  # e^0.3 = 1.35 > 1.2
    ("geometric", 0.8, 1.5, [1.0, 1.0, 1.0]),
]


@pytest.mark.parametrize("level, low, high, keep", REJECTION_TABLE)
def test_rejection_mask_table(level, low, high, keep):
    out = rejection_keep(t((0.0, 0.0, 0.0)), t((0.0, -1.0, 0.1)), t((1.0, 1.0, 1.0)), level, low, high)
    assert out[0].tolist() == keep


# ---- clip-cov and kl-cov. A = (1, −1, 2, 0), log π = (−1, −1, −0.5, −2): means 0.5 and −1.125, so
# cov = (0.5·0.125, −1.5·0.125, 1.5·0.625, −0.5·−0.875) = (0.0625, −0.1875, 0.9375, 0.4375).
COV_ADV, COV_LOGP = (1.0, -1.0, 2.0, 0.0), (-1.0, -1.0, -0.5, -2.0)


def cov_inputs(old_shift=(0.0, 0.0, 0.0, 0.0)):
    logprobs = torch.tensor([COV_LOGP], requires_grad=True)
    old = logprobs.detach() - torch.tensor([old_shift])
    return logprobs, LossInputs(logprobs=logprobs, old_logprobs=old, advantages=t(COV_ADV), mask=torch.ones(1, 4))


def test_clip_cov_detaches_the_token_in_the_covariance_band():
    logprobs, x = cov_inputs()
    # Band (0.5, 5): only token 2 (cov 0.9375); ratio 1, so the others' loss is −A.
    per_token, metrics = clip_cov(x, LossParams(clip_cov_lb=0.5, clip_cov_ub=5.0, clip_cov_ratio=0.25))
    assert per_token[0].tolist() == pytest.approx([-1.0, 1.0, 0.0, 0.0])
    per_token.sum().backward()
    assert logprobs.grad[0].tolist() == pytest.approx([-1.0, 1.0, 0.0, 0.0])  # −A·r per token, 0 where detached
    assert metrics["actor/cov_detached_frac"].item() == pytest.approx(0.25)


def test_kl_cov_penalises_the_largest_covariance_token():
    logprobs, x = cov_inputs(old_shift=(0.0, 0.0, 0.1, 0.0))  # token 2: log r = 0.1
    per_token, metrics = kl_cov(x, LossParams(kl_cov_ratio=0.25, ppo_kl_coef=0.1))
    # token 2: −2·e^0.1 + 0.1·|0.1| = −2.210342 + 0.01; the others −A·1
    assert per_token[0].tolist() == pytest.approx([-1.0, 1.0, -2.0 * math.exp(0.1) + 0.01, 0.0], rel=1e-6)
    assert metrics["actor/cov_penalised_frac"].item() == pytest.approx(0.25)


# ---- the KL in the reward and REINFORCE++'s whitening, through the trainer's batch preparation.
def batch_of(rewards, groups, response_len=2, **fields):
    samples = [Sample(uid=f"s{i}", group_id=g, prompt_ids=[1, 2], response_ids=[3] * response_len,
                      old_logprobs=[-1.0] * response_len, reward=r) for i, (r, g) in enumerate(zip(rewards, groups))]
    batch = prepare_batch(samples, TrainStepRequest(step=0, batch=samples, **fields))
    return batch, micro_inputs(batch, list(range(len(samples))), pad_id=0)


def test_kl_in_the_reward_comes_off_each_sequence_before_the_estimator():
    # rloo on raw rewards (1, 0); π_prox = −1 everywhere, π_ref = (−1.5, −1) on the first sample:
    # KL (k1) = (0.5, 0) -> Σ = 0.5; β = 0.2 -> rewards (0.9, 0) -> A = (0.9 − 0, 0 − 0.9)
    batch, m = batch_of([1.0, 0.0], ["g", "g"], adv_estimator="rloo", add_token_level_kl=True, init_kl_coef=0.2)
    assert batch.needs.prox_logprobs and batch.needs.ref_logprobs and batch.advantages is None
    m.prox_logprobs, m.ref_logprobs = t((-1.0, -1.0), (-1.0, -1.0)), t((-1.5, -1.0), (-1.0, -1.0))
    fill_advantages(batch, [m])
    assert m.advantages.flatten().tolist() == pytest.approx([0.9, 0.9, -0.9, -0.9])


def test_kl_in_the_reward_is_a_per_token_reward_for_gae():
    # gae, γ = λ = 1, V = 0: rewards per token (−0.2·0.5, 1 − 0.2·0) -> A = (0.9, 1.0); sample 2: (0, 0)
    batch, m = batch_of([1.0, 0.0], ["g", "h"], adv_estimator="gae", reward_norm="none", gamma=1.0, lambd=1.0,
                        add_token_level_kl=True, init_kl_coef=0.2)
    m.prox_logprobs, m.ref_logprobs = t((-1.0, -1.0), (-1.0, -1.0)), t((-1.5, -1.0), (-1.0, -1.0))
    m.old_values = torch.zeros(2, 2)
    fill_advantages(batch, [m])
    assert m.advantages.flatten().tolist() == pytest.approx([0.9, 1.0, 0.0, 0.0])


def test_reinforce_plus_plus_baseline_whitens_over_the_batch_tokens():
    # one token each; centred (0.5, −0.5, 0, 0); unbiased std sqrt(0.5/3) = 0.408248 -> ±1.224745, 0, 0
    batch, m = batch_of([1.0, 0.0, 1.0, 1.0], ["a", "a", "b", "b"], response_len=1, adv_estimator="reinforce_plus_plus_baseline")
    fill_advantages(batch, [m])
    assert m.advantages[:, 0].tolist() == pytest.approx([1.224745, -1.224745, 0.0, 0.0], abs=1e-5)


def test_rejection_filters_change_the_loss_mask_before_anything_reads_it():
    # π_infer = −1 (old_logprobs); π_train = (−1, 0) on sample 0: its second token has ratio e = 2.72 > 1.2
    batch, m = batch_of([1.0, 0.0], ["g", "g"],
                        train_infer_correction={"filters": [{"enabled": True, "agg_type": "token"}, {"enabled": False, "agg_type": "sequence", "ratio_high": 1.0}]})
    assert batch.needs.prox_logprobs
    m.prox_logprobs = t((-1.0, 0.0), (-1.0, -1.0))
    fill_advantages(batch, [m])
    assert m.mask.tolist() == [[1.0, 0.0], [1.0, 1.0]]  # the disabled filter would have removed everything
    assert batch.rejected_frac == pytest.approx(0.25)
