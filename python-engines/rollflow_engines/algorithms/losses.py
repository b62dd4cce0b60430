"""Policy-gradient losses: one small pure function per run-config `pg_variant`.

Every variant has one signature::

    loss_fn(x: LossInputs, params: LossParams) -> (per_token_loss [B, T], metrics)

It returns the loss of each token; ``objective.objective`` multiplies in the
train/infer importance weight, aggregates by ``params.loss_agg_mode`` and adds
the KL, entropy and value terms. ``metrics`` maps fixed names (``actor/…``) to
detached 0-d tensors, each a token mean over ``x.mask``.

In the formulas r_t = π_θ(y_t) / π_old(y_t) = exp(log π_θ − log π_old), A_t is the
advantage, sg(·) stops the gradient, and every ratio that enters as a weight
(not through a clip of the surrogate) is sg'd: its gradient would be −A·∇r, a
second, unwanted policy-gradient term.

The train step looks the function up by name in ``POLICY_LOSSES`` and never
branches on the variant; ``loss_fn.needs`` names the optional ``LossInputs``
fields the variant reads, so the trainer computes them only when asked.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import torch
from torch import Tensor

# The run config's names (src/configs/schema.ts PG_VARIANTS).
PG_VARIANTS = ("vanilla", "ppo", "decoupled_ppo", "tis", "cispo", "topr", "gspo", "clip_cov", "kl_cov")

# exp() of a log ratio beyond this overflows float32 soon after; verl clamps the same way.
MAX_LOG_RATIO = 20.0


@dataclass(frozen=True)
class LossInputs:
    """Per-token tensors of one micro-batch, shape [B, T] (B responses, T = longest response) unless noted.

    Only ``logprobs``, ``entropy`` and ``values`` may carry gradient; every loss
    treats the other fields as constants.
    """

    logprobs: Tensor  # log π_θ(y_t | x, y_<t), recomputed by the trainer under the current weights
    # log π_old: the behaviour policy, i.e. the inference server's logprobs when it sampled y_t. Never taken
    # to be ``logprobs``: a ratio of exactly 1 would silently turn clipping off (SkyRL #1315, AReaL #201).
    old_logprobs: Tensor
    advantages: Tensor  # A_t (a sequence-level advantage is broadcast to its tokens)
    mask: Tensor  # 1.0 for tokens in the loss; 0.0 for padding and masked-out tokens (env observations)
    rewards: Tensor | None = None  # [B] the response's raw scalar reward (topr splits on its sign)
    # log π_prox: the trainer's logprobs under the weights at the start of this train step, no gradient
    # (the proximal policy of decoupled PPO; π_train of the train/infer correction).
    prox_logprobs: Tensor | None = None
    ref_logprobs: Tensor | None = None  # log π_ref under the frozen initial weights (KL loss)
    entropy: Tensor | None = None  # H(π_θ(· | x, y_<t)) from the logits
    values: Tensor | None = None  # V_φ(s_t) of the value head, current weights
    old_values: Tensor | None = None  # V(s_t) at the start of the step (GAE's values; the value clip's centre)
    returns: Tensor | None = None  # GAE returns R_t = A_t + V_old(s_t), the value head's target
    is_weight: Tensor | None = None  # train/infer importance weight (see objective.py); None means 1


@dataclass(frozen=True)
class LossParams:
    """Loss settings of a train step; each variant reads only the ones it uses. Names follow ROLL."""

    loss_agg_mode: str = "token_mean"  # key of LOSS_AGGREGATIONS, for every term
    loss_scale_factor: float = 1.0  # C of seq_mean_token_sum_norm (Dr. GRPO's constant normaliser)
    # ppo, decoupled_ppo
    clip_low: float = 0.2  # ratio lower bound is 1 − clip_low (ROLL pg_clip_low)
    clip_high: float = 0.2  # ratio upper bound is 1 + clip_high; clip-higher when > clip_low (ROLL pg_clip_high)
    dual_clip: float | None = None  # c > 1 caps the loss of negative-advantage tokens at c·|A|; None: off
    # tis, and topr's non-positive samples: the truncated ratio is clip(r, lower, upper)
    tis_lower_bound: float = 0.0
    tis_upper_bound: float = 1.0
    # cispo: the weight is clip(r, 1 − ε_low, 1 + ε_high)
    cispo_epsilon_low: float = 0.1
    cispo_epsilon_high: float = 0.1
    # clip_cov / kl_cov (verl names): share of tokens selected by covariance, clip_cov's band, kl_cov's coefficient
    clip_cov_ratio: float = 0.0002
    clip_cov_lb: float = 1.0
    clip_cov_ub: float = 5.0
    kl_cov_ratio: float = 0.0002
    ppo_kl_coef: float = 0.1
    # topr: weights of the positive-reward and the other samples' terms
    topr_positive_weight: float = 1.0
    topr_negative_weight: float = 1.0
    # decoupled_ppo: tokens whose behaviour weight π_prox/π_old exceeds this are dropped (AReaL); None: keep all
    behav_imp_weight_cap: float | None = 5.0
    # train/infer mismatch correction (objective.py): None = off, else a key of IS_WEIGHT_LEVELS
    train_infer_is_weight_type: str | None = None
    train_infer_is_upper_bound: float | None = 5.0  # C in min(π_train/π_infer, C); None: no cap
    # KL to the reference policy
    use_kl_loss: bool = False
    kl_loss_coef: float = 0.0  # β
    kl_loss_type: str = "k3"  # key of objective.KL_ESTIMATORS
    entropy_loss_coef: float = 0.0  # entropy bonus: total −= coef · entropy
    # value head (adv_estimator gae)
    value_loss_coef: float = 0.5
    value_clip: float | None = None  # ε_v of the clipped value loss; None: unclipped


class PolicyLoss(Protocol):
    needs: frozenset[str]

    def __call__(self, x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]: ...


# ---- aggregation: how per-token losses become one number

@dataclass(frozen=True)
class Aggregation:
    """``reduce`` turns per-token values of one micro-batch into a scalar; ``weight``
    is that micro-batch's share of the whole, so Σ_i reduce_i · weight_i / Σ_i weight_i
    over micro-batches equals ``reduce`` over the full batch (exact gradient accumulation).
    ``scaled``: the result is then divided by LossParams.loss_scale_factor (``aggregate``)."""

    reduce: Callable[[Tensor, Tensor], Tensor]
    weight: Callable[[Tensor], float]
    scaled: bool = False


def _token_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Σ values·mask / Σ mask: every token weighs the same (DAPO's token-level loss)."""
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def _counted_sequences(mask: Tensor) -> Tensor:
    """How many sequences have at least one loss token. A sequence with none (all its tokens masked:
    an env-only reply, a truncated sample) has no loss, so it must not count in a mean over sequences,
    or it would shrink every other sequence's gradient."""
    return (mask.sum(-1) > 0).sum().to(mask.dtype)


def _seq_mean_token_mean(values: Tensor, mask: Tensor) -> Tensor:
    """mean over the counted sequences of (Σ_t values·mask / Σ_t mask): every sequence weighs the same (original GRPO)."""
    return ((values * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).sum() / _counted_sequences(mask).clamp(min=1.0)


def _seq_mean_token_sum(values: Tensor, mask: Tensor) -> Tensor:
    """mean over the counted sequences of Σ_t values·mask: no length normalisation."""
    return (values * mask).sum() / _counted_sequences(mask).clamp(min=1.0)


def _sequences(mask: Tensor) -> float:
    return float(_counted_sequences(mask))


LOSS_AGGREGATIONS: dict[str, Aggregation] = {
    "token_mean": Aggregation(_token_mean, lambda mask: float(mask.sum())),
    "seq_mean_token_mean": Aggregation(_seq_mean_token_mean, _sequences),
    "seq_mean_token_sum": Aggregation(_seq_mean_token_sum, _sequences),
    # Dr. GRPO (Liu et al. 2025): mean over sequences of Σ_t values·mask / C, C a constant (loss_scale_factor,
    # by default the generation budget): no per-length normalisation, so no bias towards long wrong replies.
    "seq_mean_token_sum_norm": Aggregation(_seq_mean_token_sum, _sequences, scaled=True),
}


def aggregate(values: Tensor, mask: Tensor, params: "LossParams") -> Tensor:
    """``values`` reduced by params.loss_agg_mode (LOSS_AGGREGATIONS), divided by loss_scale_factor where the mode says so."""
    agg = LOSS_AGGREGATIONS[params.loss_agg_mode]
    out = agg.reduce(values, mask)
    return out / params.loss_scale_factor if agg.scaled else out


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    return _token_mean(values, mask)


def log_ratio(logprobs: Tensor, base: Tensor) -> Tensor:
    """log π − log π_base, clamped to ±MAX_LOG_RATIO so exp() stays finite."""
    return (logprobs - base.detach()).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)


def _ratio_metrics(logprobs: Tensor, base: Tensor, mask: Tensor) -> dict[str, Tensor]:
    """How far π_θ is from the policy its ratio is taken against, for every variant.

    approxkl is the k3 estimator of KL(π_base ‖ π_θ): mean((r − 1) − log r), r = π_θ/π_base, ≥ 0.
    """
    with torch.no_grad():
        lr = log_ratio(logprobs, base)
        ratio = lr.exp()
        return {"actor/ratio_mean": masked_mean(ratio, mask), "actor/approxkl": masked_mean((ratio - 1.0) - lr, mask)}


def _truncation_metrics(ratio: Tensor, low: float, high: float, mask: Tensor) -> dict[str, Tensor]:
    """Share of tokens whose ratio was truncated, and the mean weight after truncation."""
    with torch.no_grad():
        return {"actor/clipfrac": masked_mean(((ratio < low) | (ratio > high)).float(), mask),
                "actor/clipped_ratio_mean": masked_mean(ratio.clamp(low, high), mask)}


# ---- the registry

POLICY_LOSSES: dict[str, PolicyLoss] = {}


def policy_loss(name: str, needs: tuple[str, ...] = ()):
    """Registers a variant under its config name; ``needs``: optional LossInputs fields it reads."""
    def register(fn):
        fn.needs = frozenset(needs)
        POLICY_LOSSES[name] = fn
        return fn
    return register


def _clipped_surrogate(ratio: Tensor, adv: Tensor, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """max(−A·r, −A·clip(r, 1 − ε_low, 1 + ε_high)), then (A < 0 only) min(·, −A·c); shared by ppo and decoupled_ppo."""
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - params.clip_low, 1.0 + params.clip_high)
    per_token = torch.maximum(unclipped, clipped)
    dual_active = torch.zeros_like(per_token, dtype=torch.bool)
    if params.dual_clip is not None:
        cap = -adv * params.dual_clip
        dual_active = (adv < 0) & (per_token > cap)
        per_token = torch.where(dual_active, cap, per_token)
    return per_token, {"clipped": (clipped > unclipped).float(), "dual": dual_active.float()}


# ---- the variants

@policy_loss("vanilla")
def vanilla(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """REINFORCE: loss_t = −A_t · log π_θ(y_t).

    On-policy policy gradient with no off-policy correction: ∇loss_t = −A_t ∇log π_θ(y_t).
    ``old_logprobs`` do not enter the loss; they feed the ratio diagnostics only.
    """
    per_token = -x.advantages.detach() * x.logprobs
    metrics = _ratio_metrics(x.logprobs, x.old_logprobs, x.mask)
    metrics["actor/clipfrac"] = torch.zeros(())
    return per_token, metrics


@policy_loss("ppo")
def ppo(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO clipped surrogate, with separate low/high clip and optional dual clip.

        r_t    = exp(log π_θ(y_t) − log π_old(y_t))              (π_old: the inference server's logprobs)
        loss_t = max(−A_t · r_t, −A_t · clip(r_t, 1 − ε_low, 1 + ε_high))
        dual clip (c > 1, only where A_t < 0): loss_t = min(loss_t, −A_t · c)

    ``actor/clipfrac`` is the share of tokens whose clipped term is the larger one
    (their gradient is zero); ``actor/dual_clipfrac`` the share capped by the dual clip.
    """
    ratio = log_ratio(x.logprobs, x.old_logprobs).exp()
    per_token, active = _clipped_surrogate(ratio, x.advantages.detach(), params)
    metrics = _ratio_metrics(x.logprobs, x.old_logprobs, x.mask)
    metrics["actor/clipfrac"] = masked_mean(active["clipped"], x.mask)
    metrics["actor/dual_clipfrac"] = masked_mean(active["dual"], x.mask)
    return per_token, metrics


@policy_loss("decoupled_ppo", needs=("prox_logprobs",))
def decoupled_ppo(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """Decoupled PPO (AReaL): clip against the proximal policy, correct to the behaviour policy.

        r_t    = π_θ(y_t) / π_prox(y_t)       π_prox: trainer logprobs under the weights at the step's start
        w_t    = sg(π_prox(y_t) / π_old(y_t))  behaviour weight; w_t := 0 where w_t > behav_imp_weight_cap
        loss_t = w_t · max(−A_t · r_t, −A_t · clip(r_t, 1 − ε_low, 1 + ε_high))   (dual clip as in ppo)

    The trust region is centred on recent weights however stale the sample, while
    w_t keeps the gradient unbiased for the behaviour policy's samples. As in AReaL,
    a token whose w_t exceeds the cap is dropped (weight 0), not truncated.
    ``actor/ratio_mean`` and ``actor/approxkl`` here measure π_θ against π_prox.
    """
    if x.prox_logprobs is None:
        raise ValueError("decoupled_ppo needs prox_logprobs (the trainer's logprobs at the start of the step)")
    prox = x.prox_logprobs.detach()
    ratio = log_ratio(x.logprobs, prox).exp()
    surrogate, active = _clipped_surrogate(ratio, x.advantages.detach(), params)
    with torch.no_grad():
        behav = log_ratio(prox, x.old_logprobs).exp()
        dropped = behav > params.behav_imp_weight_cap if params.behav_imp_weight_cap is not None else torch.zeros_like(behav, dtype=torch.bool)
        weight = torch.where(dropped, torch.zeros_like(behav), behav)
    metrics = _ratio_metrics(x.logprobs, prox, x.mask)
    metrics["actor/clipfrac"] = masked_mean(active["clipped"], x.mask)
    metrics["actor/dual_clipfrac"] = masked_mean(active["dual"], x.mask)
    metrics["actor/behav_weight_mean"] = masked_mean(weight, x.mask)
    metrics["actor/behav_dropfrac"] = masked_mean(dropped.float(), x.mask)
    return weight * surrogate, metrics


@policy_loss("tis")
def tis(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """Truncated importance sampling: loss_t = −sg(clip(r_t, lower, upper)) · A_t · log π_θ(y_t).

    r_t = π_θ/π_old; lower, upper = tis_lower_bound, tis_upper_bound (0 and 1 by default, as in ROLL).
    ∇loss_t = −clip(r_t) · A_t · ∇log π_θ(y_t): every token keeps a gradient, scaled by its truncated weight.
    """
    ratio = log_ratio(x.logprobs, x.old_logprobs).exp()
    lo, hi = params.tis_lower_bound, params.tis_upper_bound
    per_token = -ratio.clamp(lo, hi).detach() * x.advantages.detach() * x.logprobs
    metrics = _ratio_metrics(x.logprobs, x.old_logprobs, x.mask)
    metrics.update(_truncation_metrics(ratio, lo, hi, x.mask))
    return per_token, metrics


@policy_loss("cispo")
def cispo(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """CISPO (MiniMax-M1): loss_t = −sg(clip(r_t, 1 − ε_low, 1 + ε_high)) · A_t · log π_θ(y_t).

    Clips the importance weight instead of the update, so tokens outside the trust
    region keep a (bounded) gradient rather than none. ε = cispo_epsilon_low/high.
    """
    ratio = log_ratio(x.logprobs, x.old_logprobs).exp()
    lo, hi = 1.0 - params.cispo_epsilon_low, 1.0 + params.cispo_epsilon_high
    per_token = -ratio.clamp(lo, hi).detach() * x.advantages.detach() * x.logprobs
    metrics = _ratio_metrics(x.logprobs, x.old_logprobs, x.mask)
    metrics.update(_truncation_metrics(ratio, lo, hi, x.mask))
    return per_token, metrics


@policy_loss("topr", needs=("rewards",))
def topr(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """Tapered off-policy REINFORCE (TOPR), weighted:

        reward > 0:  loss_t = −w₊ · A_t · log π_θ(y_t)                               (SFT-like, no IS)
        otherwise:   loss_t = −w₋ · sg(clip(r_t, lower, upper)) · A_t · log π_θ(y_t)  (truncated IS)

    w₊, w₋ = topr_positive_weight, topr_negative_weight; lower, upper = tis_lower_bound,
    tis_upper_bound (0 and 1 by default, the TOPR paper's truncation). The split is on
    the sign of the sample's raw reward, not of its advantage. ``actor/clipfrac``
    counts truncated tokens of the non-positive samples only.
    """
    if x.rewards is None:
        raise ValueError("topr needs rewards (each sample's scalar reward)")
    positive = (x.rewards.detach() > 0).to(x.logprobs.dtype)[:, None].expand_as(x.logprobs)
    ratio = log_ratio(x.logprobs, x.old_logprobs).exp()
    lo, hi = params.tis_lower_bound, params.tis_upper_bound
    weight = positive * params.topr_positive_weight + (1.0 - positive) * params.topr_negative_weight * ratio.clamp(lo, hi).detach()
    per_token = -weight * x.advantages.detach() * x.logprobs
    metrics = _ratio_metrics(x.logprobs, x.old_logprobs, x.mask)
    metrics.update(_truncation_metrics(ratio, lo, hi, x.mask * (1.0 - positive)))
    metrics["actor/topr_positive_frac"] = masked_mean(positive, x.mask)
    return per_token, metrics


@policy_loss("gspo")
def gspo(x: LossInputs, params: LossParams) -> tuple[Tensor, dict[str, Tensor]]:
    """GSPO (Zheng et al. 2025): one importance ratio per sequence, the geometric mean of its token ratios,

        s_i     = exp(Σ_t m_t · log r_t / Σ_t m_t),   r_t = π_θ(y_t) / π_old(y_t)
        s_{i,t} = sg(s_i) · π_θ(y_t) / sg(π_θ(y_t))   (value s_i; gradient s_i · ∇log π_θ(y_t))
        loss_t  = max(−A_i · s_{i,t}, −A_i · clip(s_{i,t}, 1 − ε_low, 1 + ε_high))   (dual clip as in ppo)

    Every token of a sequence is clipped or not together. ε_low/ε_high are pg_clip_low/high: GSPO's
    ranges are far narrower than PPO's (the paper uses 3e-4 and 4e-4). The paper and verl pair it with
    seq_mean_token_mean. ``actor/seq_ratio_mean`` is the mean of s_i over sequences with loss tokens.
    """
    lr = log_ratio(x.logprobs, x.old_logprobs)
    counted = x.mask.sum(-1, keepdim=True)
    seq_log_ratio = (lr * x.mask).sum(-1, keepdim=True) / counted.clamp(min=1.0)
    ratio = (x.logprobs - x.logprobs.detach() + seq_log_ratio.detach()).clamp(max=MAX_LOG_RATIO).exp()
    per_token, active = _clipped_surrogate(ratio, x.advantages.detach(), params)
    metrics = _ratio_metrics(x.logprobs, x.old_logprobs, x.mask)
    metrics["actor/clipfrac"] = masked_mean(active["clipped"], x.mask)
    metrics["actor/dual_clipfrac"] = masked_mean(active["dual"], x.mask)
    with torch.no_grad():
        has = (counted.squeeze(-1) > 0)
        metrics["actor/seq_ratio_mean"] = seq_log_ratio.squeeze(-1).exp()[has].mean() if has.any() else torch.ones(())
    return per_token, metrics
