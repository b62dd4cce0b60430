"""Policy-gradient losses: one small pure function per run-config `pg_variant`.

Every loss has one signature::

    loss_fn(logprobs, old_logprobs, advantages, mask, params) -> (loss, metrics)

All four tensors are per token, shape [B, T] (B responses, T = longest response):

- ``logprobs``: log π_θ(y_t | x, y_<t), recomputed by the trainer under the
  current weights; the only input that carries gradient.
- ``old_logprobs``: log π_old(y_t | x, y_<t) of the behaviour policy, i.e. the
  logprobs the inference server reported when it sampled y_t. They are never
  recomputed and never taken to be ``logprobs``: a ratio of exactly 1 would
  silently turn PPO's clipping off (SkyRL #1315, AReaL #201).
- ``advantages``: the sample's advantage broadcast to its tokens (no gradient).
- ``mask``: 1.0 for tokens that count in the loss, 0.0 for padding and for
  tokens the sample masks out (e.g. env observations in a multi-turn response).

``loss`` is a scalar aggregated by ``params.loss_agg_mode`` (see
``LOSS_AGGREGATIONS``); ``metrics`` maps fixed metric names (``losses/…``,
``actor/…``) to detached 0-d tensors, each a token mean over ``mask``.

The train step looks the function up by name in ``POLICY_LOSSES`` and never
branches on the variant itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import torch
from torch import Tensor

# The run config's names (src/configs/schema.ts PG_VARIANTS); only some are implemented yet.
PG_VARIANTS = ("vanilla", "ppo", "decoupled_ppo", "tis", "cispo", "topr")

# exp() of a log ratio beyond this overflows float32 soon after; verl clamps the same way.
_MAX_LOG_RATIO = 20.0


@dataclass(frozen=True)
class LossParams:
    """Loss settings shared by all variants; each variant reads only the ones it uses."""

    clip_low: float = 0.2  # ppo: ratio lower bound is 1 - clip_low
    clip_high: float = 0.2  # ppo: ratio upper bound is 1 + clip_high (clip-higher when > clip_low)
    dual_clip: float | None = None  # ppo: c > 1 caps the loss of negative-advantage tokens at c·|A|
    loss_agg_mode: str = "token_mean"  # key of LOSS_AGGREGATIONS


class PolicyLoss(Protocol):
    def __call__(self, logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, mask: Tensor,
                 params: LossParams) -> tuple[Tensor, dict[str, Tensor]]: ...


# ---- aggregation: how per-token losses become one number

@dataclass(frozen=True)
class Aggregation:
    """``reduce`` turns per-token values of one micro-batch into a scalar; ``weight``
    is that micro-batch's share of the whole, so Σ_i reduce_i · weight_i / Σ_i weight_i
    over micro-batches equals ``reduce`` over the full batch (exact gradient accumulation)."""

    reduce: Callable[[Tensor, Tensor], Tensor]
    weight: Callable[[Tensor], float]


def _token_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Σ values·mask / Σ mask: every token weighs the same (DAPO's token-level loss)."""
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def _seq_mean_token_mean(values: Tensor, mask: Tensor) -> Tensor:
    """mean over sequences of (Σ_t values·mask / Σ_t mask): every sequence weighs the same (original GRPO)."""
    return ((values * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()


def _seq_mean_token_sum(values: Tensor, mask: Tensor) -> Tensor:
    """mean over sequences of Σ_t values·mask: no length normalisation (Dr. GRPO)."""
    return (values * mask).sum(-1).mean()


LOSS_AGGREGATIONS: dict[str, Aggregation] = {
    "token_mean": Aggregation(_token_mean, lambda mask: float(mask.sum())),
    "seq_mean_token_mean": Aggregation(_seq_mean_token_mean, lambda mask: float(mask.shape[0])),
    "seq_mean_token_sum": Aggregation(_seq_mean_token_sum, lambda mask: float(mask.shape[0])),
}


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    return _token_mean(values, mask)


def _ratio_metrics(logprobs: Tensor, old_logprobs: Tensor, mask: Tensor) -> dict[str, Tensor]:
    """Diagnostics of how far π_θ is from π_old, computed for every variant.

    approxkl is the k3 estimator of KL(π_old ‖ π_θ): mean((r − 1) − log r), r = π_θ/π_old, ≥ 0.
    """
    with torch.no_grad():
        log_ratio = (logprobs - old_logprobs).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
        ratio = log_ratio.exp()
        return {
            "actor/ratio_mean": masked_mean(ratio, mask),
            "actor/approxkl": masked_mean((ratio - 1.0) - log_ratio, mask),
        }


# ---- the variants

def vanilla(logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, mask: Tensor,
            params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """REINFORCE: loss_t = −A_t · log π_θ(y_t).

    On-policy policy gradient with no off-policy correction: ∇loss_t = −A_t ∇log π_θ(y_t).
    ``old_logprobs`` do not enter the loss; they feed the ratio diagnostics only.
    """
    per_token = -advantages.detach() * logprobs
    loss = LOSS_AGGREGATIONS[params.loss_agg_mode].reduce(per_token, mask)
    metrics = _ratio_metrics(logprobs, old_logprobs, mask)
    metrics["losses/pg_loss"] = loss.detach()
    metrics["actor/clipfrac"] = torch.zeros(())
    return loss, metrics


def ppo(logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, mask: Tensor,
        params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO clipped surrogate, with separate low/high clip and optional dual clip.

        r_t    = exp(log π_θ(y_t) − log π_old(y_t))              (π_old: the inference server's logprobs)
        loss_t = max(−A_t · r_t, −A_t · clip(r_t, 1 − ε_low, 1 + ε_high))
        dual clip (c > 1, only where A_t < 0): loss_t = min(loss_t, −A_t · c)

    ``actor/clipfrac`` is the share of tokens whose clipped term is the larger one
    (their gradient is zero); ``actor/dual_clipfrac`` the share capped by the dual clip.
    """
    old = old_logprobs.detach()
    adv = advantages.detach()
    log_ratio = (logprobs - old).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    ratio = log_ratio.exp()
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - params.clip_low, 1.0 + params.clip_high)
    per_token = torch.maximum(unclipped, clipped)
    dual_active = torch.zeros_like(per_token, dtype=torch.bool)
    if params.dual_clip is not None:
        cap = -adv * params.dual_clip
        dual_active = (adv < 0) & (per_token > cap)
        per_token = torch.where(dual_active, cap, per_token)
    agg = LOSS_AGGREGATIONS[params.loss_agg_mode]
    loss = agg.reduce(per_token, mask)
    metrics = _ratio_metrics(logprobs, old, mask)
    with torch.no_grad():
        metrics["losses/pg_loss"] = loss.detach()
        metrics["actor/clipfrac"] = masked_mean((clipped > unclipped).float(), mask)
        metrics["actor/dual_clipfrac"] = masked_mean(dual_active.float(), mask)
    return loss, metrics


POLICY_LOSSES: dict[str, PolicyLoss] = {
    "vanilla": vanilla,
    "ppo": ppo,
}
