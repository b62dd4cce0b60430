"""Clip-Cov and KL-Cov (Cui et al. 2025, "The Entropy Mechanism of Reinforcement Learning for
Reasoning Language Models"; verl's loss_mode clip_cov / kl_cov, with its parameter names).

Policy entropy falls as tokens with a large covariance between their advantage and their log
probability are reinforced. Both variants act on those tokens only, chosen per micro-batch by

    cov_t = (A_t − mean A) · (log π_θ(y_t) − mean log π_θ)      means over the loss tokens

- clip_cov: of the tokens PPO's clip leaves active whose cov_t lies in (clip_cov_lb, clip_cov_ub),
  a random clip_cov_ratio share (at least one) is taken out of the gradient; the rest is PPO's
  clipped surrogate.
- kl_cov: no clip at all, loss_t = −A_t·r_t, plus ppo_kl_coef·|log r_t| on the kl_cov_ratio share
  (at least one) of tokens with the largest cov_t.

r_t = π_θ/π_old; ε = pg_clip_low/high. The random draw uses torch's generator, which the trainer
seeds and saves with its state.
"""
from __future__ import annotations

import torch
from torch import Tensor

from .losses import LossInputs, LossParams, _clipped_surrogate, _ratio_metrics, log_ratio, masked_mean, policy_loss


def token_covariance(advantages: Tensor, logprobs: Tensor, mask: Tensor) -> Tensor:
    """cov_t = (A_t − mean A)(log π_θ(y_t) − mean log π_θ), means over the loss tokens; no gradient."""
    with torch.no_grad():
        a, lp = advantages.detach(), logprobs.detach()
        return (a - masked_mean(a, mask)) * (lp - masked_mean(lp, mask))


def _share(ratio: float, tokens: int) -> int:
    return max(int(ratio * tokens), 1)


@policy_loss("clip_cov")
def clip_cov(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO's clipped surrogate with a random share of high-covariance tokens detached (module docstring):

        loss_t = c_t · max(−A_t·r_t, −A_t·clip(r_t, 1 − ε_low, 1 + ε_high)),   c_t ∈ {0, 1}

    c_t = 0 for ⌊clip_cov_ratio · N⌋ (≥ 1) tokens drawn at random among the loss tokens PPO does not
    clip whose cov_t ∈ (clip_cov_lb, clip_cov_ub); N is the number of loss tokens.
    ``actor/cov_detached_frac`` is the share of loss tokens detached.
    """
    ratio = log_ratio(x.logprobs, x.old_logprobs).exp()
    per_token, active = _clipped_surrogate(ratio, x.advantages.detach(), params)
    cov = token_covariance(x.advantages, x.logprobs, x.mask)
    candidates = ((x.mask > 0) & (active["clipped"] == 0) & (cov > params.clip_cov_lb) & (cov < params.clip_cov_ub)).flatten().nonzero().squeeze(-1)
    keep = torch.ones_like(per_token)
    if candidates.numel():
        chosen = candidates[torch.randperm(candidates.numel())[:_share(params.clip_cov_ratio, int(x.mask.sum()))]]
        keep.view(-1)[chosen] = 0.0
    metrics = _ratio_metrics(x.logprobs, x.old_logprobs, x.mask)
    metrics["actor/clipfrac"] = masked_mean(active["clipped"], x.mask)
    metrics["actor/cov_detached_frac"] = masked_mean(1.0 - keep, x.mask)
    return keep * per_token, metrics


@policy_loss("kl_cov")
def kl_cov(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """Unclipped policy gradient with a KL penalty on the highest-covariance tokens (module docstring):

        loss_t = −A_t·r_t + k_t · ppo_kl_coef · |log r_t|,   k_t ∈ {0, 1}

    k_t = 1 for the ⌊kl_cov_ratio · N⌋ (≥ 1) loss tokens with the largest cov_t.
    ``actor/cov_penalised_frac`` is the share of loss tokens penalised.
    """
    lr = log_ratio(x.logprobs, x.old_logprobs)
    per_token = -x.advantages.detach() * lr.exp()
    cov = token_covariance(x.advantages, x.logprobs, x.mask)
    counted = (x.mask > 0).flatten().nonzero().squeeze(-1)
    penalised = torch.zeros_like(per_token)
    if counted.numel():
        top = counted[torch.topk(cov.flatten()[counted], min(_share(params.kl_cov_ratio, counted.numel()), counted.numel())).indices]
        penalised.view(-1)[top] = 1.0
    metrics = _ratio_metrics(x.logprobs, x.old_logprobs, x.mask)
    metrics["actor/clipfrac"] = torch.zeros(())
    metrics["actor/cov_penalised_frac"] = masked_mean(penalised, x.mask)
    return per_token + penalised * params.ppo_kl_coef * lr.abs(), metrics
