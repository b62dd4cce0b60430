"""Policy losses: hand-computed tables, aggregation, and where gradient may flow."""
import math

import pytest
import torch

from rollflow_engines.algorithms import LOSS_AGGREGATIONS, POLICY_LOSSES, LossInputs, LossParams, objective
from rollflow_engines.algorithms.losses import cispo, decoupled_ppo, ppo, tis, topr, vanilla


def t(*rows) -> torch.Tensor:
    """A [B, T] float tensor; t(0.5) is one token."""
    return torch.tensor([list(r) if isinstance(r, (list, tuple)) else [r] for r in rows], dtype=torch.float32)


def one(logprob: float, old: float, adv: float, **extra) -> LossInputs:
    return LossInputs(logprobs=t(logprob), old_logprobs=t(old), advantages=t(adv), mask=t(1.0), **extra)


# ---- ppo: r = exp(logprob − old); with old = 0 the logprob is ln r.
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
    per_token, m = ppo(one(math.log(r), 0.0, adv), LossParams(clip_low=lo, clip_high=hi, dual_clip=c))
    assert per_token.item() == pytest.approx(loss, abs=1e-6)
    assert m["actor/clipfrac"].item() == clipped
    assert m["actor/dual_clipfrac"].item() == dual
    assert m["actor/ratio_mean"].item() == pytest.approx(r, rel=1e-6)
    # k3 estimator: (r − 1) − ln r; e.g. r = 1.5: 0.5 − 0.405465 = 0.094535
    assert m["actor/approxkl"].item() == pytest.approx((r - 1) - math.log(r), abs=1e-6)


# ---- decoupled_ppo: old = 0, prox = ln w (behaviour weight w = π_prox/π_old), logprob = ln(w·r) (r = π_θ/π_prox).
# loss = w·max(−A·r, −A·clip(r, 0.8, 1.2)) (dual clip as ppo); w := 0 where w > cap.
DECOUPLED_TABLE = [
    # w,   r,   A,    cap,  c,    loss,  clipfrac, behav_mean, dropfrac
    (2.0, 1.5, 1.0, 5.0, None, -2.4, 1.0, 2.0, 0.0),    # 2·max(−1.5, −1.2) = 2·(−1.2)
    (0.5, 1.1, 1.0, 5.0, None, -0.55, 0.0, 0.5, 0.0),   # 0.5·(−1.1)
    (6.0, 1.0, 1.0, 5.0, None, 0.0, 0.0, 0.0, 1.0),     # w = 6 > cap 5: dropped (AReaL), weight 0
    (6.0, 1.0, 1.0, None, None, -6.0, 0.0, 6.0, 0.0),   # no cap: 6·(−1)
    (2.0, 0.5, -1.0, 5.0, None, 1.6, 1.0, 2.0, 0.0),    # 2·max(0.5, 0.8) = 1.6
    (2.0, 5.0, -1.0, 5.0, 3.0, 6.0, 0.0, 2.0, 0.0),     # 2·min(max(5, 1.2), 3) = 2·3
]


@pytest.mark.parametrize("w, r, adv, cap, c, loss, clipfrac, behav, dropped", DECOUPLED_TABLE)
def test_decoupled_ppo_table(w, r, adv, cap, c, loss, clipfrac, behav, dropped):
    x = one(math.log(w * r), 0.0, adv, prox_logprobs=t(math.log(w)))
    per_token, m = decoupled_ppo(x, LossParams(behav_imp_weight_cap=cap, dual_clip=c))
    assert per_token.item() == pytest.approx(loss, abs=1e-5)
    assert m["actor/clipfrac"].item() == clipfrac
    assert m["actor/behav_weight_mean"].item() == pytest.approx(behav, rel=1e-5)
    assert m["actor/behav_dropfrac"].item() == dropped
    assert m["actor/ratio_mean"].item() == pytest.approx(r, rel=1e-5)  # measured against π_prox


def test_decoupled_ppo_without_prox_logprobs_says_so():
    with pytest.raises(ValueError, match="prox_logprobs"):
        decoupled_ppo(one(0.0, 0.0, 1.0), LossParams())


# ---- tis, cispo: logprob = −1 and old = −1 − ln r, so loss = −sg(clip(r))·A·(−1) = clip(r)·A.
TIS_TABLE = [
    # r,   A,    lo,  hi,  loss, clipfrac
    (0.5, 1.0, 0.0, 1.0, 0.5, 0.0),     # clip(0.5, 0, 1) = 0.5 -> 0.5·1
    (2.0, 1.0, 0.0, 1.0, 1.0, 1.0),     # truncated to 1
    (2.0, -2.0, 0.0, 1.5, -3.0, 1.0),   # 1.5·(−2)
    (0.2, 1.0, 0.5, 1.0, 0.5, 1.0),     # raised to the lower bound 0.5
]


@pytest.mark.parametrize("r, adv, lo, hi, loss, clipfrac", TIS_TABLE)
def test_tis_table(r, adv, lo, hi, loss, clipfrac):
    per_token, m = tis(one(-1.0, -1.0 - math.log(r), adv), LossParams(tis_lower_bound=lo, tis_upper_bound=hi))
    assert per_token.item() == pytest.approx(loss, abs=1e-5)
    assert m["actor/clipfrac"].item() == clipfrac
    assert m["actor/clipped_ratio_mean"].item() == pytest.approx(min(max(r, lo), hi), rel=1e-5)


CISPO_TABLE = [
    # r,    A,    ε_low, ε_high, loss, clipfrac
    (1.05, 1.0, 0.1, 0.1, 1.05, 0.0),    # inside [0.9, 1.1]
    (1.5, 1.0, 0.1, 0.1, 1.1, 1.0),      # weight capped at 1.1, gradient kept (not zeroed as in ppo)
    (0.5, -1.0, 0.1, 0.1, -0.9, 1.0),    # weight raised to 0.9: 0.9·(−1)
    (1.5, 1.0, 0.1, 0.28, 1.28, 1.0),    # ε_high 0.28
]


@pytest.mark.parametrize("r, adv, lo, hi, loss, clipfrac", CISPO_TABLE)
def test_cispo_table(r, adv, lo, hi, loss, clipfrac):
    per_token, m = cispo(one(-1.0, -1.0 - math.log(r), adv), LossParams(cispo_epsilon_low=lo, cispo_epsilon_high=hi))
    assert per_token.item() == pytest.approx(loss, abs=1e-5)
    assert m["actor/clipfrac"].item() == clipfrac


# ---- topr: logprob = −1, so loss = w₊·A (reward > 0) or w₋·clip(r, 0, 1)·A (otherwise).
TOPR_TABLE = [
    # reward, r,   A,    w₊,  w₋,  loss,  clipfrac, positive_frac
    (1.0, 3.0, 0.5, 1.0, 1.0, 0.5, 0.0, 1.0),     # positive: no IS weight at all, 1·0.5
    (1.0, 3.0, 0.5, 2.0, 1.0, 1.0, 0.0, 1.0),     # weighted: 2·0.5
    (0.0, 3.0, -0.5, 1.0, 1.0, -0.5, 1.0, 0.0),   # reward 0 is not positive: clip(3) = 1, 1·1·(−0.5)
    (0.0, 0.25, -0.5, 1.0, 2.0, -0.25, 0.0, 0.0),  # 2·0.25·(−0.5)
    (-1.0, 0.5, 1.0, 1.0, 1.0, 0.5, 0.0, 0.0),    # split on the reward's sign, not A's: 0.5·1
]


@pytest.mark.parametrize("reward, r, adv, wp, wn, loss, clipfrac, positive", TOPR_TABLE)
def test_topr_table(reward, r, adv, wp, wn, loss, clipfrac, positive):
    x = one(-1.0, -1.0 - math.log(r), adv, rewards=torch.tensor([reward]))
    per_token, m = topr(x, LossParams(topr_positive_weight=wp, topr_negative_weight=wn))
    assert per_token.item() == pytest.approx(loss, abs=1e-5)
    assert m["actor/clipfrac"].item() == clipfrac
    assert m["actor/topr_positive_frac"].item() == positive


VANILLA_TABLE = [
    # logprob, A,   loss = −A·logprob
    (-0.5, 2.0, 1.0),
    (-2.0, -1.0, -2.0),
    (0.0, 3.0, 0.0),
]


@pytest.mark.parametrize("logprob, adv, loss", VANILLA_TABLE)
def test_vanilla_table(logprob, adv, loss):
    per_token, m = vanilla(one(logprob, -1.0, adv), LossParams())
    assert per_token.item() == pytest.approx(loss, abs=1e-6)
    assert m["actor/clipfrac"].item() == 0.0
    # The ratio is still measured against old_logprobs: exp(logprob − (−1)).
    assert m["actor/ratio_mean"].item() == pytest.approx(math.exp(logprob + 1.0), rel=1e-6)


def test_ppo_token_mean_over_a_masked_batch():
    # rows: r = 1.5 A = +1 -> −1.2 (clipped); r = 0.5 A = −1 -> 0.8 (clipped)
    #       r = 1.1 A = +2 -> −2.2;          r = 0.7 A = −2 -> masked out
    r = t((1.5, 0.5), (1.1, 0.7))
    x = LossInputs(r.log(), torch.zeros(2, 2), t((1.0, -1.0), (2.0, -2.0)), t((1.0, 1.0), (1.0, 0.0)))
    loss, m = objective(ppo, x, LossParams())
    assert loss.item() == pytest.approx((-1.2 + 0.8 - 2.2) / 3, abs=1e-6)  # −0.866667
    assert m["losses/pg_loss"].item() == m["losses/total"].item() == pytest.approx(loss.item())
    assert m["actor/clipfrac"].item() == pytest.approx(2 / 3)
    assert m["actor/ratio_mean"].item() == pytest.approx((1.5 + 0.5 + 1.1) / 3, rel=1e-6)


# ---- aggregation: values [[1, 2, 3], [4, 5, 6]] with mask [[1, 1, 0], [1, 0, 0]]
AGG_TABLE = [
    ("token_mean", (1 + 2 + 4) / 3, 3.0),  # 7/3, weight = 3 tokens
    ("seq_mean_token_mean", ((1 + 2) / 2 + 4 / 1) / 2, 2.0),  # (1.5 + 4)/2 = 2.75, weight = 2 sequences
    ("seq_mean_token_sum", ((1 + 2) + 4) / 2, 2.0),  # (3 + 4)/2 = 3.5
]


@pytest.mark.parametrize("mode, expected, weight", AGG_TABLE)
def test_aggregation_table(mode, expected, weight):
    values = t((1.0, 2.0, 3.0), (4.0, 5.0, 6.0))
    mask = t((1.0, 1.0, 0.0), (1.0, 0.0, 0.0))
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


# ---- gradients: the IS weights are constants (sg), so ∇_logπ loss = −w·A / tokens (token_mean) exactly.
# Two tokens each; logprob = −1, old = −1 − ln r, so r is as listed. Expected: −w_t·A_t / 2.
GRADIENT_TABLE = [
    # variant, r per token, A per token, extra inputs, params, expected ∂loss/∂logπ per token
    ("tis", (0.5, 2.0), (1.0, -2.0), {}, {},
     (-0.5 * 1.0 / 2, -1.0 * -2.0 / 2)),                    # w = clip(r, 0, 1) = (0.5, 1) -> (−0.25, 1.0)
    ("cispo", (1.05, 1.5), (1.0, 1.0), {}, {},
     (-1.05 / 2, -1.1 / 2)),                                # w = (1.05, 1.1): a clipped token keeps its gradient
    ("topr", (3.0, 3.0), (0.5, -0.5), {"rewards": torch.tensor([1.0, 0.0])}, {"topr_positive_weight": 2.0},
     (-2.0 * 0.5 / 2, -1.0 * -0.5 / 2)),                    # rows: positive w = w₊ = 2; other w = clip(3, 0, 1) = 1
    ("vanilla", (3.0, 0.1), (1.0, -1.0), {}, {},
     (-1.0 / 2, 1.0 / 2)),                                  # no weight at all: −A / 2
]


@pytest.mark.parametrize("variant, ratios, advs, extra, params, expected", GRADIENT_TABLE, ids=[row[0] for row in GRADIENT_TABLE])
def test_importance_weights_carry_no_gradient(variant, ratios, advs, extra, params, expected):
    n = len(ratios)
    logprobs = torch.full((n, 1), -1.0, requires_grad=True)
    old = torch.tensor([[-1.0 - math.log(r)] for r in ratios], requires_grad=True)
    adv = torch.tensor([[a] for a in advs], requires_grad=True)
    x = LossInputs(logprobs, old, adv, torch.ones(n, 1), **extra)
    loss, _ = objective(POLICY_LOSSES[variant], x, LossParams(**params))
    loss.backward()
    assert logprobs.grad[:, 0].tolist() == pytest.approx(list(expected), abs=1e-6)
    assert old.grad is None and adv.grad is None  # π_old and A are constants of the loss


def test_decoupled_ppo_gradient_is_the_behaviour_weight_times_the_surrogate_gradient():
    # token 0: w = 2, r = 1 (inside the clip), A = 1 -> ∂(w·(−A·r))/∂logπ = −w·A·r = −2, /2 tokens = −1
    # token 1: w = 2, r = 1.5 > 1.2, A = 1 -> clipped, gradient 0
    prox = torch.tensor([[math.log(2.0)], [math.log(2.0)]], requires_grad=True)
    logprobs = (prox.detach() + torch.tensor([[0.0], [math.log(1.5)]])).requires_grad_(True)
    x = LossInputs(logprobs, torch.zeros(2, 1), torch.ones(2, 1), torch.ones(2, 1), prox_logprobs=prox)
    loss, _ = objective(decoupled_ppo, x, LossParams())
    loss.backward()
    assert logprobs.grad[:, 0].tolist() == pytest.approx([-1.0, 0.0], abs=1e-6)
    assert prox.grad is None  # π_prox enters as a constant, the behaviour weight too


def test_ppo_gradient_flows_through_logprobs_only_and_is_zero_where_clipped():
    # token 0: r = 1 (inside the clip), A = +1 -> d/dlogp (−A·r)/2 = −1·1/2 = −0.5
    # token 1: r = 1.5, A = +1 -> clipped, gradient 0
    logprobs = torch.tensor([[0.0, math.log(1.5)]], requires_grad=True)
    old = torch.zeros(1, 2, requires_grad=True)
    adv = torch.ones(1, 2, requires_grad=True)
    loss, _ = objective(ppo, LossInputs(logprobs, old, adv, torch.ones(1, 2)), LossParams())
    loss.backward()
    assert logprobs.grad[0].tolist() == pytest.approx([-0.5, 0.0])
    assert old.grad is None and adv.grad is None


def test_dual_clipped_token_has_no_gradient():
    logprobs = torch.tensor([[math.log(5.0)]], requires_grad=True)
    loss, _ = objective(ppo, LossInputs(logprobs, torch.zeros(1, 1), -torch.ones(1, 1), torch.ones(1, 1)), LossParams(dual_clip=3.0))
    loss.backward()
    assert logprobs.grad.item() == 0.0


def test_masked_tokens_get_no_gradient():
    logprobs = torch.zeros(1, 3, requires_grad=True)
    loss, _ = objective(ppo, LossInputs(logprobs, torch.zeros(1, 3), torch.ones(1, 3), t((1.0, 0.0, 1.0))), LossParams())
    loss.backward()
    assert logprobs.grad[0].tolist() == pytest.approx([-0.5, 0.0, -0.5])


def test_every_loss_reports_the_same_core_metrics_and_declares_what_it_needs():
    core = {"losses/pg_loss", "losses/total", "actor/clipfrac", "actor/approxkl", "actor/ratio_mean"}
    for name, fn in POLICY_LOSSES.items():
        x = LossInputs(torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2),
                       rewards=torch.ones(1), prox_logprobs=torch.zeros(1, 2))
        _, m = objective(fn, x, LossParams())
        assert core <= set(m), name
        assert all(not v.requires_grad for v in m.values()), name
        assert fn.needs <= {"prox_logprobs", "rewards"}, name
    assert POLICY_LOSSES["decoupled_ppo"].needs == {"prox_logprobs"}
