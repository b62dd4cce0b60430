"""The train step's objective: the policy loss plus KL, entropy and value terms.

    total = pg_loss + β·kl − entropy_loss_coef·entropy + value_loss_coef·value_loss

Each term is a per-token tensor reduced by the same ``loss_agg_mode`` (``aggregate``):

- ``pg_loss``: ``POLICY_LOSSES[pg_variant]``, times the train/infer importance
  weight when that correction is on (``train_infer_is_weight``);
- ``kl``: ``KL_ESTIMATORS[kl_loss_type](log π_θ, log π_ref)`` to the frozen initial
  weights; added when ``use_kl_loss`` (β = kl_loss_coef), reported whenever
  ``ref_logprobs`` are given (the KL folded into the reward instead, ROLL's
  add_token_level_kl, is applied to the advantages: trainer batch.py);
- ``entropy``: H(π_θ) from the logits; a bonus, so it is subtracted;
- ``value_loss``: ``value_loss`` of the value head, when ``values`` are given (gae).

``losses/total`` is the number the backward pass differentiates.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import torch
from torch import Tensor

from .losses import MAX_LOG_RATIO, LossInputs, LossParams, PolicyLoss, aggregate, masked_mean


# ---- KL to the reference policy (kl_loss_type)

def kl_k1(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """k1 = log π_θ − log π_ref. Unbiased for KL(π_θ ‖ π_ref) under samples of π_θ, but
    can be negative per token; its gradient is ∇log π_θ (a constant push down of log π_θ)."""
    return logprobs - ref_logprobs.detach()


def kl_k2(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """k2 = ½ (log π_θ − log π_ref)² ≥ 0 (verl's "mse"); its gradient (log π_θ − log π_ref)·∇log π_θ is
    that of KL(π_θ ‖ π_ref) in expectation under π_θ samples."""
    return 0.5 * (logprobs - ref_logprobs.detach()) ** 2


def kl_k3(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """k3 = exp(log π_ref − log π_θ) − (log π_ref − log π_θ) − 1 ≥ 0 (Schulman's low-variance
    estimator; GRPO's KL term). d k3 / d log π_θ = 1 − π_ref/π_θ."""
    d = (ref_logprobs.detach() - logprobs).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)
    return d.exp() - d - 1.0


KL_CLAMP = 10.0


def kl_k3_clamped(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """k3 with its log ratio and its value clamped to ±10, as verl's ``low_var_kl`` (and SkyRL's k3):
    a token whose probability collapsed under π_θ cannot blow the loss up."""
    d = (ref_logprobs.detach() - logprobs).clamp(-KL_CLAMP, KL_CLAMP)
    return (d.exp() - d - 1.0).clamp(-KL_CLAMP, KL_CLAMP)


def kl_abs(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """|log π_θ − log π_ref| (verl's and ROLL's "abs" KL penalty)."""
    return (logprobs - ref_logprobs.detach()).abs()


# kl_loss_type -> estimator; low_var_kl is verl's name for the clamped k3.
KL_ESTIMATORS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "k1": kl_k1, "k2": kl_k2, "k3": kl_k3, "low_var_kl": kl_k3_clamped,
}
# kl_penalty (the KL folded into the reward) -> estimator, with ROLL's and verl's names.
KL_PENALTIES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "kl": kl_k1, "abs": kl_abs, "mse": kl_k2, "low_var_kl": kl_k3_clamped,
}


# ---- train/infer mismatch correction (train_infer_correction.is_weight)

def is_weight_token(train_logprobs: Tensor, infer_logprobs: Tensor, mask: Tensor, cap: float | None) -> Tensor:
    """w_t = min(π_train(y_t) / π_infer(y_t), C), per token (truncated IS, Yao et al. 2025)."""
    w = (train_logprobs - infer_logprobs).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO).exp()
    return w.clamp(max=cap) if cap is not None else w


def is_weight_sequence(train_logprobs: Tensor, infer_logprobs: Tensor, mask: Tensor, cap: float | None) -> Tensor:
    """w = min(Π_t π_train(y_t) / π_infer(y_t), C) over the sequence's loss tokens, given to each of them."""
    log_w = ((train_logprobs - infer_logprobs) * mask).sum(-1, keepdim=True).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)
    w = log_w.exp().expand_as(train_logprobs)
    return w.clamp(max=cap) if cap is not None else w


IS_WEIGHT_LEVELS: dict[str, Callable[[Tensor, Tensor, Tensor, float | None], Tensor]] = {
    "token": is_weight_token,
    "sequence": is_weight_sequence,
}


# ---- rejection of mismatched tokens (train_infer_correction.filters, ROLL's names)

def _log_ratio_token(train: Tensor, infer: Tensor, mask: Tensor) -> Tensor:
    return train - infer


def _log_ratio_sequence(train: Tensor, infer: Tensor, mask: Tensor) -> Tensor:
    return ((train - infer) * mask).sum(-1, keepdim=True).expand_as(train)


def _log_ratio_geometric(train: Tensor, infer: Tensor, mask: Tensor) -> Tensor:
    return (((train - infer) * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1.0)).expand_as(train)


# agg_type -> the log of the ratio a filter tests, per token: the token's own; the product over the
# sequence's loss tokens; their geometric mean (a per-token average, so long sequences are not rejected
# for their length alone).
REJECTION_LEVELS: dict[str, Callable[[Tensor, Tensor, Tensor], Tensor]] = {
    "token": _log_ratio_token, "sequence": _log_ratio_sequence, "geometric": _log_ratio_geometric,
}


def rejection_keep(train_logprobs: Tensor, infer_logprobs: Tensor, mask: Tensor, level: str, low: float, high: float) -> Tensor:
    """1 where the train/infer ratio at ``level`` lies in [low, high], else 0 (the token, or the whole
    sequence, leaves the loss: rejected, not down-weighted as the IS weight does)."""
    ratio = REJECTION_LEVELS[level](train_logprobs, infer_logprobs, mask).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO).exp()
    return ((ratio >= low) & (ratio <= high)).to(mask.dtype)


def with_train_infer_correction(x: LossInputs, params: LossParams) -> tuple[LossInputs, dict[str, Tensor]]:
    """The inputs with the train/infer mismatch correction applied (unchanged when it is off).

    π_infer is the inference server's logprob (``old_logprobs``); π_train the trainer's
    logprob of the same token, recomputed at the start of the step (``prox_logprobs``).
    The variant's ratio is then taken against π_train, and its loss is multiplied by
    sg(w) = min(π_train/π_infer, C). The trainer no longer holds the weights that
    generated a stale sample, so in an asynchronous run w corrects that staleness
    too, not only the numerical mismatch between the two engines.
    """
    if params.train_infer_is_weight_type is None:
        return x, {}
    if x.prox_logprobs is None:
        raise ValueError("the train/infer correction needs prox_logprobs (the trainer's logprobs at the start of the step)")
    train = x.prox_logprobs.detach()
    with torch.no_grad():
        w = IS_WEIGHT_LEVELS[params.train_infer_is_weight_type](train, x.old_logprobs.detach(), x.mask, params.train_infer_is_upper_bound)
        raw = IS_WEIGHT_LEVELS[params.train_infer_is_weight_type](train, x.old_logprobs.detach(), x.mask, None)
        metrics = {"actor/is_weight_mean": masked_mean(w, x.mask), "actor/is_weight_capfrac": masked_mean((raw > w).float(), x.mask)}
    return replace(x, old_logprobs=train, is_weight=w), metrics


# ---- value head

def value_loss(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """Clipped value loss (PPO), per token:

        V_clip = V_old + clip(V − V_old, −ε_v, ε_v)
        loss_t = ½ · max((V − R)², (V_clip − R)²)          ε_v = value_clip; without it ½ · (V − R)²

    V: the value head now; V_old: its values at the start of the step; R: the GAE returns.
    """
    if x.values is None or x.returns is None:
        raise ValueError("the value loss needs values and returns")
    returns = x.returns.detach()
    unclipped = (x.values - returns) ** 2
    per_token = unclipped
    clipped_active = torch.zeros_like(unclipped, dtype=torch.bool)
    if params.value_clip is not None:
        if x.old_values is None:
            raise ValueError("the clipped value loss needs old_values")
        old = x.old_values.detach()
        clipped = (old + (x.values - old).clamp(-params.value_clip, params.value_clip) - returns) ** 2
        clipped_active = clipped > unclipped
        per_token = torch.maximum(unclipped, clipped)
    with torch.no_grad():
        metrics = {"critic/values_mean": masked_mean(x.values, x.mask), "critic/returns_mean": masked_mean(returns, x.mask),
                   "critic/vf_clipfrac": masked_mean(clipped_active.float(), x.mask)}
    return 0.5 * per_token, metrics


# ---- the whole objective

def objective(policy: PolicyLoss, x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """total = pg_loss + β·kl − entropy_loss_coef·entropy + value_loss_coef·value_loss (module docstring);
    returns (total, metrics) with losses/pg_loss, losses/kl, losses/entropy, losses/value_loss, losses/total."""
    agg = lambda values, mask: aggregate(values, mask, params)  # noqa: E731
    x, metrics = with_train_infer_correction(x, params)
    per_token, policy_metrics = policy(x, params)
    metrics.update(policy_metrics)
    if x.is_weight is not None:
        per_token = per_token * x.is_weight.detach()
    pg_loss = agg(per_token, x.mask)
    total = pg_loss
    metrics["losses/pg_loss"] = pg_loss.detach()
    if x.ref_logprobs is not None:
        kl = agg(KL_ESTIMATORS[params.kl_loss_type](x.logprobs, x.ref_logprobs), x.mask)
        metrics["losses/kl"] = kl.detach()
        if params.use_kl_loss:
            total = total + params.kl_loss_coef * kl
    if x.entropy is not None:
        entropy = agg(x.entropy, x.mask)
        metrics["losses/entropy"] = entropy.detach()
        if params.entropy_loss_coef:
            total = total - params.entropy_loss_coef * entropy
    if x.values is not None:
        v_per_token, v_metrics = value_loss(x, params)
        v_loss = agg(v_per_token, x.mask)
        metrics.update(v_metrics)
        metrics["losses/value_loss"] = v_loss.detach()
        total = total + params.value_loss_coef * v_loss
    metrics["losses/total"] = total.detach()
    return total, {k: v.detach() for k, v in metrics.items()}


def needs_prox_logprobs(policy: PolicyLoss, params: LossParams, rejects: bool = False) -> bool:
    """Whether a step must first compute log π_prox (a no-grad forward pass before the first update):
    the variant reads it, or the train/infer correction compares it with π_infer (IS weight, ``rejects``)."""
    return "prox_logprobs" in policy.needs or params.train_infer_is_weight_type is not None or rejects
