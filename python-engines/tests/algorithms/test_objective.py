"""The objective's other terms: KL estimators, the train/infer IS weight, the value loss,
the entropy bonus, and that losses/total is the number differentiated. Hand-computed tables."""
import math

import pytest
import torch

from rollflow_engines.algorithms import IS_WEIGHT_LEVELS, KL_ESTIMATORS, LossInputs, LossParams, objective
from rollflow_engines.algorithms.losses import ppo, vanilla
from rollflow_engines.algorithms.objective import value_loss, with_train_infer_correction

LN2 = math.log(2.0)

# d = log π_ref − log π_θ; k1 = −d; k3 = e^d − d − 1; ∂k1/∂logπ = 1; ∂k3/∂logπ = 1 − e^d.
KL_TABLE = [
    # logπ, ref,       k1,     k3,                     ∂k1, ∂k3
    (-1.0, -1.0, 0.0, 0.0, 1.0, 0.0),                  # same policy: both 0, k3 flat
    (-1.0, -1.0 + LN2, -LN2, 2.0 - LN2 - 1.0, 1.0, -1.0),  # d = ln 2: k1 = −0.693147, k3 = 2 − 0.693147 − 1 = 0.306853
    (0.0, -LN2, LN2, 0.5 + LN2 - 1.0, 1.0, 0.5),       # d = −ln 2: k1 = 0.693147, k3 = 0.5 + 0.693147 − 1 = 0.193147
]


@pytest.mark.parametrize("logp, ref, k1, k3, g1, g3", KL_TABLE)
def test_kl_estimator_table(logp, ref, k1, k3, g1, g3):
    for name, value, grad in (("k1", k1, g1), ("k3", k3, g3)):
        x = torch.tensor([logp], requires_grad=True)
        out = KL_ESTIMATORS[name](x, torch.tensor([ref]))
        out.sum().backward()
        assert out.item() == pytest.approx(value, abs=1e-6), name
        assert x.grad.item() == pytest.approx(grad, abs=1e-6), name


# π_train = prox, π_infer = old. token: w_t = min(e^(prox − old), C); sequence: min(e^Σ(prox − old)·mask, C).
IS_TABLE = [
    # level,     prox,            mask,       cap,  expected w per token
    ("token", (LN2, math.log(10)), (1.0, 1.0), 5.0, (2.0, 5.0)),        # 10 capped to 5
    ("token", (LN2, math.log(10)), (1.0, 1.0), None, (2.0, 10.0)),      # no cap
    ("sequence", (LN2, math.log(3)), (1.0, 1.0), 5.0, (5.0, 5.0)),      # 2·3 = 6, capped to 5, for both tokens
    ("sequence", (LN2, math.log(3)), (1.0, 1.0), None, (6.0, 6.0)),
    ("sequence", (LN2, math.log(3)), (1.0, 0.0), 5.0, (2.0, 2.0)),      # the masked token does not count: 2
]


@pytest.mark.parametrize("level, prox, mask, cap, expected", IS_TABLE)
def test_train_infer_is_weight_table(level, prox, mask, cap, expected):
    w = IS_WEIGHT_LEVELS[level](torch.tensor([prox]), torch.zeros(1, 2), torch.tensor([mask]), cap)
    assert w[0].tolist() == pytest.approx(list(expected), rel=1e-5)


def test_the_correction_reweights_the_loss_and_takes_the_ratio_against_pi_train():
    # π_infer (old) = 1 = e^0 per token, π_train (prox) = (2, 10): w = min((2, 10), 5) = (2, 5).
    # ppo's ratio is now π_θ/π_train = 1 (logprobs = prox): inside the clip, so
    # ∂loss/∂logπ_t = −w_t·A·r / 2 tokens = (−2·1/2, −5·1/2) = (−1, −2.5).
    prox = torch.tensor([[LN2, math.log(10.0)]])
    logprobs = prox.clone().requires_grad_(True)
    x = LossInputs(logprobs, torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2), prox_logprobs=prox)
    params = LossParams(train_infer_is_weight_type="token", train_infer_is_upper_bound=5.0)
    loss, m = objective(ppo, x, params)
    loss.backward()
    assert logprobs.grad[0].tolist() == pytest.approx([-1.0, -2.5], abs=1e-6)
    assert loss.item() == pytest.approx(-(2.0 + 5.0) / 2, abs=1e-6)  # −w·A·r summed over tokens, /2
    assert m["actor/is_weight_mean"].item() == pytest.approx(3.5)
    assert m["actor/is_weight_capfrac"].item() == pytest.approx(0.5)  # the 10 was capped
    assert (m["actor/ratio_mean"].item(), m["actor/clipfrac"].item()) == (pytest.approx(1.0), 0.0)
    # Off, the same inputs give the uncorrected ppo: r = π_θ/π_infer = (2, 10), both clipped at 1.2.
    _, off = objective(ppo, x, LossParams())
    assert off["actor/clipfrac"].item() == 1.0 and "actor/is_weight_mean" not in off


def test_the_correction_needs_prox_logprobs():
    with pytest.raises(ValueError, match="prox_logprobs"):
        with_train_infer_correction(LossInputs(torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1)),
                                    LossParams(train_infer_is_weight_type="token"))


# loss = ½·max((V − R)², (V_clip − R)²), V_clip = V_old + clip(V − V_old, −ε, ε); without ε: ½·(V − R)².
VALUE_TABLE = [
    # V,   V_old, R,   ε,    loss,   clipfrac, ∂loss/∂V
    (0.5, 0.0, 1.0, None, 0.125, 0.0, -0.5),    # ½·0.25; ∂ = V − R = −0.5
    (1.5, 1.0, 0.0, 0.2, 1.125, 0.0, 1.5),      # (1.5)² = 2.25 vs V_clip = 1.2: 1.44 -> ½·2.25; ∂ = 1.5
    (1.8, 1.0, 2.0, 0.2, 0.32, 1.0, 0.0),       # 0.04 vs V_clip = 1.2: (−0.8)² = 0.64 -> ½·0.64; clipped: ∂ = 0
    (1.1, 1.0, 2.0, 0.2, 0.405, 0.0, -0.9),     # inside the clip: ½·0.81; ∂ = −0.9
]


@pytest.mark.parametrize("v, v_old, ret, eps, loss, clipfrac, grad", VALUE_TABLE)
def test_value_loss_table(v, v_old, ret, eps, loss, clipfrac, grad):
    values = torch.tensor([[v]], requires_grad=True)
    x = LossInputs(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1, 1),
                   values=values, old_values=torch.tensor([[v_old]]), returns=torch.tensor([[ret]]))
    per_token, m = value_loss(x, LossParams(value_clip=eps))
    per_token.sum().backward()
    assert per_token.item() == pytest.approx(loss, abs=1e-6)
    assert m["critic/vf_clipfrac"].item() == clipfrac
    assert values.grad.item() == pytest.approx(grad, abs=1e-6)


def test_total_is_pg_plus_kl_minus_entropy_plus_value_loss():
    # vanilla, 2 tokens: logπ = (−1, −1), A = (1, 1) -> pg = mean(−A·logπ) = 1
    # k1 with ref = (−2, −1): kl = mean(1, 0) = 0.5; entropy = mean(0.5, 1.5) = 1.0
    # values (0, 1), returns (1, 1): value loss = mean(½·1, 0) = 0.25
    # total = 1 + 0.2·0.5 − 0.1·1.0 + 0.5·0.25 = 1 + 0.1 − 0.1 + 0.125 = 1.125
    logprobs = torch.full((1, 2), -1.0, requires_grad=True)
    entropy = torch.tensor([[0.5, 1.5]], requires_grad=True)
    values = torch.tensor([[0.0, 1.0]], requires_grad=True)
    x = LossInputs(logprobs, torch.full((1, 2), -1.0), torch.ones(1, 2), torch.ones(1, 2), ref_logprobs=torch.tensor([[-2.0, -1.0]]),
                   entropy=entropy, values=values, old_values=torch.zeros(1, 2), returns=torch.ones(1, 2))
    params = LossParams(use_kl_loss=True, kl_loss_coef=0.2, kl_loss_type="k1", entropy_loss_coef=0.1, value_loss_coef=0.5)
    total, m = objective(vanilla, x, params)
    assert m["losses/pg_loss"].item() == pytest.approx(1.0)
    assert m["losses/kl"].item() == pytest.approx(0.5)
    assert m["losses/entropy"].item() == pytest.approx(1.0)
    assert m["losses/value_loss"].item() == pytest.approx(0.25)
    assert total.item() == m["losses/total"].item() == pytest.approx(1.125)
    total.backward()
    # ∂/∂logπ = (−A + β·∂k1)/2 = (−1 + 0.2)/2 = −0.4; ∂/∂H = −0.1/2; ∂/∂V = 0.5·(V − R)/2 = (−0.25, 0)
    assert logprobs.grad[0].tolist() == pytest.approx([-0.4, -0.4])
    assert entropy.grad[0].tolist() == pytest.approx([-0.05, -0.05])
    assert values.grad[0].tolist() == pytest.approx([-0.25, 0.0])


def test_kl_is_reported_but_not_added_without_use_kl_loss():
    x = LossInputs(torch.full((1, 1), -1.0), torch.full((1, 1), -1.0), torch.ones(1, 1), torch.ones(1, 1),
                   ref_logprobs=torch.full((1, 1), -2.0))
    total, m = objective(vanilla, x, LossParams(kl_loss_coef=0.2, kl_loss_type="k1"))
    assert m["losses/kl"].item() == pytest.approx(1.0) and total.item() == pytest.approx(1.0)  # pg only
