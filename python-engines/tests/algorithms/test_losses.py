"""Policy losses: hand-computed tables, aggregation, and where gradient may flow."""
import math

import pytest
import torch

from rollflow_engines.algorithms import LOSS_AGGREGATIONS, POLICY_LOSSES, LossParams
from rollflow_engines.algorithms.losses import ppo, vanilla


def one_token(value: float) -> torch.Tensor:
    return torch.tensor([[value]], dtype=torch.float32)


# ratio r = exp(logprob − old_logprob); with old = 0 the logprob is ln r.
# loss = max(−A·r, −A·clip(r, 1 − lo, 1 + hi)), then (A < 0 only) min(·, −A·c).
PPO_TABLE = [
    # r,   A,  lo,  hi,   c,    loss,  clipped, dual
    (1.5, 1.0, 0.2, 0.2, None, -1.2, 1.0, 0.0),   # max(−1.5, −1.2) = −1.2: clipped above
    (1.1, 1.0, 0.2, 0.2, None, -1.1, 0.0, 0.0),   # inside [0.8, 1.2]: −1.1
    (0.5, 1.0, 0.2, 0.2, None, -0.5, 0.0, 0.0),   # max(−0.5, −0.8) = −0.5: A > 0 is not clipped below
    (0.5, -1.0, 0.2, 0.2, None, 0.8, 1.0, 0.0),   # max(0.5, 0.8) = 0.8: clipped below
    (1.5, -1.0, 0.2, 0.2, None, 1.5, 0.0, 0.0),   # max(1.5, 1.2) = 1.5: A < 0 is not clipped above
    (1.5, 1.0, 0.2, 0.28, None, -1.28, 1.0, 0.0),  # clip-higher: max(−1.5, −1.28) = −1.28
    (0.5, -1.0, 0.1, 0.2, None, 0.9, 1.0, 0.0),   # lower clip 0.1: max(0.5, 0.9) = 0.9
    (5.0, -1.0, 0.2, 0.2, 3.0, 3.0, 0.0, 1.0),    # max(5, 1.2) = 5, dual clip: min(5, 3) = 3
    (2.0, -1.0, 0.2, 0.2, 3.0, 2.0, 0.0, 0.0),    # max(2, 1.2) = 2 < 3: dual clip inactive
    (5.0, 1.0, 0.2, 0.2, 3.0, -1.2, 1.0, 0.0),    # A > 0: dual clip never applies; max(−5, −1.2)
    (1.5, 2.0, 0.2, 0.2, None, -2.4, 1.0, 0.0),   # −2·1.2 = −2.4
]


@pytest.mark.parametrize("r, adv, lo, hi, c, loss, clipped, dual", PPO_TABLE)
def test_ppo_table(r, adv, lo, hi, c, loss, clipped, dual):
    out, m = ppo(one_token(math.log(r)), one_token(0.0), one_token(adv), one_token(1.0),
                 LossParams(clip_low=lo, clip_high=hi, dual_clip=c))
    assert out.item() == pytest.approx(loss, abs=1e-6)
    assert m["losses/pg_loss"].item() == pytest.approx(loss, abs=1e-6)
    assert m["actor/clipfrac"].item() == clipped
    assert m["actor/dual_clipfrac"].item() == dual
    assert m["actor/ratio_mean"].item() == pytest.approx(r, rel=1e-6)
    # k3 estimator: (r − 1) − ln r; e.g. r = 1.5: 0.5 − 0.405465 = 0.094535
    assert m["actor/approxkl"].item() == pytest.approx((r - 1) - math.log(r), abs=1e-6)


VANILLA_TABLE = [
    # logprob, A,   loss = −A·logprob
    (-0.5, 2.0, 1.0),
    (-2.0, -1.0, -2.0),
    (0.0, 3.0, 0.0),
]


@pytest.mark.parametrize("logprob, adv, loss", VANILLA_TABLE)
def test_vanilla_table(logprob, adv, loss):
    out, m = vanilla(one_token(logprob), one_token(-1.0), one_token(adv), one_token(1.0), LossParams())
    assert out.item() == pytest.approx(loss, abs=1e-6)
    assert m["actor/clipfrac"].item() == 0.0
    # The ratio is still measured against old_logprobs: exp(logprob − (−1)).
    assert m["actor/ratio_mean"].item() == pytest.approx(math.exp(logprob + 1.0), rel=1e-6)


def test_ppo_token_mean_over_a_masked_batch():
    # rows: r = 1.5 A = +1 -> −1.2 (clipped); r = 0.5 A = −1 -> 0.8 (clipped)
    #       r = 1.1 A = +2 -> −2.2;          r = 0.7 A = −2 -> masked out
    r = torch.tensor([[1.5, 0.5], [1.1, 0.7]])
    adv = torch.tensor([[1.0, -1.0], [2.0, -2.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss, m = ppo(r.log(), torch.zeros(2, 2), adv, mask, LossParams())
    assert loss.item() == pytest.approx((-1.2 + 0.8 - 2.2) / 3, abs=1e-6)  # −0.866667
    assert m["actor/clipfrac"].item() == pytest.approx(2 / 3)
    assert m["actor/ratio_mean"].item() == pytest.approx((1.5 + 0.5 + 1.1) / 3, rel=1e-6)


# values [[1, 2, 3], [4, 5, 6]] with mask [[1, 1, 0], [1, 0, 0]]
AGG_TABLE = [
    ("token_mean", (1 + 2 + 4) / 3, 3.0),  # 7/3, weight = 3 tokens
    ("seq_mean_token_mean", ((1 + 2) / 2 + 4 / 1) / 2, 2.0),  # (1.5 + 4)/2 = 2.75, weight = 2 sequences
    ("seq_mean_token_sum", ((1 + 2) + 4) / 2, 2.0),  # (3 + 4)/2 = 3.5
]


@pytest.mark.parametrize("mode, expected, weight", AGG_TABLE)
def test_aggregation_table(mode, expected, weight):
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    agg = LOSS_AGGREGATIONS[mode]
    assert agg.reduce(values, mask).item() == pytest.approx(expected)
    assert agg.weight(mask) == weight


@pytest.mark.parametrize("mode", list(LOSS_AGGREGATIONS))
def test_weighted_micro_batches_reproduce_the_full_batch(mode):
    # Gradient accumulation relies on Σ reduce_i · w_i / Σ w_i == reduce(all).
    g = torch.Generator().manual_seed(0)
    values = torch.randn(5, 4, generator=g)
    mask = (torch.rand(5, 4, generator=g) > 0.3).float()
    mask[:, 0] = 1.0
    agg = LOSS_AGGREGATIONS[mode]
    parts = [(values[:2], mask[:2]), (values[2:], mask[2:])]
    total = sum(agg.weight(m) for _, m in parts)
    combined = sum(agg.reduce(v, m) * agg.weight(m) / total for v, m in parts)
    assert combined.item() == pytest.approx(agg.reduce(values, mask).item(), rel=1e-6)


def test_ppo_gradient_flows_through_logprobs_only_and_is_zero_where_clipped():
    # token 0: r = 1 (inside the clip), A = +1 -> d/dlogp (−A·r)/2 = −1·1/2 = −0.5
    # token 1: r = 1.5, A = +1 -> clipped, gradient 0
    logprobs = torch.tensor([[0.0, math.log(1.5)]], requires_grad=True)
    old = torch.zeros(1, 2, requires_grad=True)
    adv = torch.ones(1, 2, requires_grad=True)
    loss, _ = ppo(logprobs, old, adv, torch.ones(1, 2), LossParams())
    loss.backward()
    assert logprobs.grad[0].tolist() == pytest.approx([-0.5, 0.0])
    assert old.grad is None and adv.grad is None  # π_old and A are constants of the loss


def test_dual_clipped_token_has_no_gradient():
    logprobs = torch.tensor([[math.log(5.0)]], requires_grad=True)
    loss, _ = ppo(logprobs, torch.zeros(1, 1), -torch.ones(1, 1), torch.ones(1, 1), LossParams(dual_clip=3.0))
    loss.backward()
    assert logprobs.grad.item() == 0.0


def test_vanilla_gradient_is_minus_advantage_over_tokens():
    # loss = mean(−A·logp) over 2 tokens -> d/dlogp = −A/2 = [−1, +0.5]
    logprobs = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    old = torch.zeros(1, 2, requires_grad=True)
    adv = torch.tensor([[2.0, -1.0]], requires_grad=True)
    loss, _ = vanilla(logprobs, old, adv, torch.ones(1, 2), LossParams())
    loss.backward()
    assert logprobs.grad[0].tolist() == pytest.approx([-1.0, 0.5])
    assert old.grad is None and adv.grad is None


def test_masked_tokens_get_no_gradient():
    logprobs = torch.zeros(1, 3, requires_grad=True)
    loss, _ = ppo(logprobs, torch.zeros(1, 3), torch.ones(1, 3), torch.tensor([[1.0, 0.0, 1.0]]), LossParams())
    loss.backward()
    assert logprobs.grad[0].tolist() == pytest.approx([-0.5, 0.0, -0.5])


def test_every_loss_reports_the_same_core_metrics():
    core = {"losses/pg_loss", "actor/clipfrac", "actor/approxkl", "actor/ratio_mean"}
    for name, fn in POLICY_LOSSES.items():
        _, m = fn(torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2), LossParams())
        assert core <= set(m), name
        assert all(not v.requires_grad for v in m.values()), name
