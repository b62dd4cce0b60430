"""From checked samples to a train step's tensors: the per-step plan, advantages (and the reward KL and
rejection that shape them), per-micro-batch inputs and the batch's metrics.

Reading and checking the samples is batch_read.py; padding and logprob gathering, models/sequences.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ...algorithms import (ADVANTAGE_ESTIMATORS, POLICY_LOSSES, VALUE_ESTIMATORS, WHITENED_ESTIMATORS, AdvantageParams,
                           LossInputs, LossParams, needs_prox_logprobs, normalize_rewards, whiten)
from ...algorithms import KL_PENALTIES, rejection_keep
from ...algorithms.advantages import AdvantageFn, ValueAdvantageFn, last_token_rewards
from ...algorithms.losses import PolicyLoss
from ...models.sequences import MicroBatch, pad_sequences
from .batch_read import batch_fingerprint
from .contracts import Sample, TrainStepRequest

# ---- advantages and the per-step plan

@dataclass(frozen=True)
class StepNeeds:
    """Inputs a step computes before its first optimizer update (a no-grad pass), beyond π_θ itself."""

    prox_logprobs: bool  # log π_prox under the weights at the step's start (decoupled_ppo, train/infer correction)
    values: bool  # the value head's values V_old (a value-based adv_estimator: gae)
    ref_logprobs: bool  # log π_ref of the frozen initial weights (use_kl_loss)


@dataclass(frozen=True)
class RewardKL:
    """ROLL's add_token_level_kl: β·KL(π ‖ π_ref) taken from the reward before the advantages."""

    coef: float  # β (init_kl_coef)
    penalty: str  # key of KL_PENALTIES
    estimator: AdvantageFn  # the sequence-level estimator to run on the penalised rewards (unused for gae)
    group_ids: list[str]
    norm_levels: tuple[str, str]


@dataclass(frozen=True)
class Rejection:
    """One enabled train_infer_correction filter."""

    level: str  # key of REJECTION_LEVELS
    low: float
    high: float


@dataclass
class PreparedBatch:
    """Everything a backend needs, computed once per train step (before any epoch)."""

    samples: list[Sample]
    rewards: Tensor  # [N] raw rewards
    scores: Tensor  # [N] normalised rewards, the estimator's input
    # [N] sequence-level advantages; None when they wait for the step start (a value estimator, or the KL in the reward)
    advantages: Tensor | None
    value_estimator: ValueAdvantageFn | None  # VALUE_ESTIMATORS[adv_estimator], run once the values are known
    adv_params: AdvantageParams
    policy_loss: PolicyLoss
    loss_params: LossParams
    needs: StepNeeds
    fingerprint: str
    reward_kl: "RewardKL | None" = None  # the KL folded into the reward (add_token_level_kl)
    rejection: tuple["Rejection", ...] = ()  # train/infer rejection filters, applied to the loss mask at the step start
    rejected_frac: float | None = None  # share of loss tokens the filters removed, once applied

    @property
    def tokens(self) -> int:
        return sum(len(s.response_ids) for s in self.samples)

    @property
    def loss_tokens(self) -> int:
        return sum(len(s.response_ids) if s.loss_mask is None else sum(s.loss_mask) for s in self.samples)


def prepare_batch(samples: list[Sample], req: TrainStepRequest) -> PreparedBatch:
    rewards = torch.tensor([s.reward for s in samples], dtype=torch.float32)
    group_ids = [s.group_id for s in samples]
    adv_params = AdvantageParams(eps=req.adv_eps, baseline=req.adv_baseline, gamma=req.gamma, lambd=req.lambd,
                                 whiten_advantages=req.whiten_advantages or req.adv_estimator in WHITENED_ESTIMATORS)
    levels = req.reward_norm_levels()
    scores = normalize_rewards(rewards, group_ids, *levels, eps=req.adv_eps)
    # The two estimator registries take different inputs (advantages.py); which one holds the name decides.
    value_estimator = VALUE_ESTIMATORS.get(req.adv_estimator)
    estimator = ADVANTAGE_ESTIMATORS.get(req.adv_estimator)
    reward_kl = RewardKL(req.init_kl_coef, req.kl_penalty, estimator, group_ids, levels) if req.add_token_level_kl else None
    advantages = None if value_estimator or reward_kl else estimator(scores, group_ids, adv_params)
    is_weight = req.train_infer_correction.is_weight
    rejection = tuple(Rejection(f.agg_type, f.ratio_low, f.ratio_high) for f in req.train_infer_correction.filters if f.enabled)
    loss_params = LossParams(
        loss_agg_mode=req.loss_agg_mode,
        loss_scale_factor=req.loss_scale_factor or float(max(len(s.response_ids) for s in samples)),
        clip_low=req.pg_clip_low if req.pg_clip_low is not None else req.pg_clip,
        clip_high=req.pg_clip_high if req.pg_clip_high is not None else req.pg_clip,
        dual_clip=req.effective_dual_clip(),
        tis_lower_bound=req.tis_lower_bound, tis_upper_bound=req.tis_upper_bound,
        cispo_epsilon_low=req.cispo_epsilon_low, cispo_epsilon_high=req.cispo_epsilon_high,
        clip_cov_ratio=req.clip_cov_ratio, clip_cov_lb=req.clip_cov_lb, clip_cov_ub=req.clip_cov_ub,
        kl_cov_ratio=req.kl_cov_ratio, ppo_kl_coef=req.ppo_kl_coef,
        topr_positive_weight=req.topr_positive_weight, topr_negative_weight=req.topr_negative_weight,
        behav_imp_weight_cap=req.behav_imp_weight_cap,
        train_infer_is_weight_type=is_weight.weight_type if is_weight.enabled else None,
        train_infer_is_upper_bound=is_weight.upper_bound,
        use_kl_loss=req.use_kl_loss, kl_loss_coef=req.kl_loss_coef, kl_loss_type=req.kl_loss_type,
        entropy_loss_coef=req.entropy_loss_coef,
        value_loss_coef=req.value_loss_coef, value_clip=req.value_clip,
    )
    policy = POLICY_LOSSES[req.pg_variant]
    # The KL in the reward compares π at the step start (π_prox) with π_ref, as verl and ROLL do.
    needs = StepNeeds(prox_logprobs=needs_prox_logprobs(policy, loss_params, bool(rejection)) or reward_kl is not None,
                      values=value_estimator is not None, ref_logprobs=req.use_kl_loss or reward_kl is not None)
    return PreparedBatch(samples, rewards, scores, advantages, value_estimator, adv_params, policy, loss_params, needs,
                         batch_fingerprint(samples), reward_kl, rejection)


# ---- per-micro-batch inputs

@dataclass
class MicroInputs:
    """One micro-batch's tensors, [b, T] unless noted. The step-start fields are filled before
    the first optimizer update and stay fixed for the whole step (all its epochs)."""

    index: list[int]  # positions of its samples in the batch
    tokens: "MicroBatch"
    old_logprobs: Tensor  # log π_old, the inference server's
    mask: Tensor  # loss mask: response mask × the samples' loss_mask
    rewards: Tensor  # [b] raw rewards
    advantages: Tensor | None = None  # set by fill_advantages
    returns: Tensor | None = None  # value estimators only
    prox_logprobs: Tensor | None = None  # step start, if needs.prox_logprobs
    old_values: Tensor | None = None  # step start, if needs.values
    ref_logprobs: Tensor | None = None  # if needs.ref_logprobs

    def loss_inputs(self, logprobs: Tensor, entropy: Tensor | None = None, values: Tensor | None = None) -> LossInputs:
        """The objective's inputs given this pass's π_θ (and entropy and values, when computed)."""
        assert self.advantages is not None, "fill_advantages first"
        device = logprobs.device
        to = (lambda t: t.to(device) if t is not None else None)  # noqa: E731
        return LossInputs(logprobs=logprobs, old_logprobs=to(self.old_logprobs), advantages=to(self.advantages),
                          mask=to(self.mask), rewards=to(self.rewards), prox_logprobs=to(self.prox_logprobs),
                          ref_logprobs=to(self.ref_logprobs), entropy=entropy, values=values,
                          old_values=to(self.old_values), returns=to(self.returns))


def micro_inputs(batch: PreparedBatch, index: list[int], pad_id: int, padding_side: str = "right",
                 min_length: int = 0) -> MicroInputs:
    samples = [batch.samples[i] for i in index]
    tokens = pad_sequences([(s.prompt_ids, s.response_ids) for s in samples], pad_id, padding_side, min_length)
    width = tokens.response_mask.shape[1]
    return MicroInputs(index=index, tokens=tokens, old_logprobs=per_token(samples, [s.old_logprobs for s in samples], width),
                       mask=loss_mask_of(samples, width) * tokens.response_mask, rewards=batch.rewards[index])


def _step_start(m: "MicroInputs", what: str) -> tuple[Tensor, Tensor | None]:
    if m.prox_logprobs is None:
        raise RuntimeError(f"{what} needs the step-start logprobs (StepNeeds.prox_logprobs)")
    return m.prox_logprobs, m.ref_logprobs


def apply_rejection(batch: PreparedBatch, micro: list["MicroInputs"]) -> None:
    """The train_infer_correction filters, in order: each micro-batch's loss mask loses the tokens (or
    sequences) whose π_train/π_infer ratio lies outside the filter's bounds. Done once, before any loss
    or aggregation weight sees the mask, so gradient accumulation stays exact."""
    if not batch.rejection:
        return
    before = sum(float(m.mask.sum()) for m in micro)
    for m in micro:
        train, _ = _step_start(m, "a train_infer_correction filter")
        for f in batch.rejection:
            m.mask = m.mask * rejection_keep(train, m.old_logprobs, m.mask, f.level, f.low, f.high)
    batch.rejected_frac = 1.0 - sum(float(m.mask.sum()) for m in micro) / max(before, 1.0)


def _reward_kl(batch: PreparedBatch, m: "MicroInputs") -> Tensor:
    """[b, T] KL_t of KL_PENALTIES[kl_penalty](log π_prox, log π_ref) on the loss tokens, 0 elsewhere."""
    prox, ref = _step_start(m, "add_token_level_kl")
    if ref is None:
        raise RuntimeError("add_token_level_kl needs the reference logprobs (StepNeeds.ref_logprobs)")
    return KL_PENALTIES[batch.reward_kl.penalty](prox, ref) * m.mask


def fill_advantages(batch: PreparedBatch, micro: list["MicroInputs"]) -> None:
    """Each micro-batch's token advantages: the sequence advantage broadcast to its tokens, or the value
    estimator run on its step-start values; then, with whiten_advantages, whitened over the whole batch.

    With the KL folded into the reward (add_token_level_kl, β = init_kl_coef), a sequence-level
    estimator runs on r_i − β·Σ_t KL_t, normalised as the rewards are (verl's use_kl_in_reward);
    gae gets the per-token rewards −β·KL_t, the normalised scalar reward added on the last token.
    """
    apply_rejection(batch, micro)
    kl = batch.reward_kl
    if kl is not None and batch.value_estimator is None:
        penalised = batch.rewards.clone()
        for m in micro:
            penalised[m.index] = penalised[m.index] - kl.coef * _reward_kl(batch, m).sum(-1)
        scores = normalize_rewards(penalised, kl.group_ids, *kl.norm_levels, eps=batch.adv_params.eps)
        batch.advantages = kl.estimator(scores, kl.group_ids, batch.adv_params)
    for m in micro:
        width = m.mask.shape[1]
        if batch.value_estimator is None:
            m.advantages = batch.advantages[m.index][:, None].expand(-1, width).clone()
        else:
            if m.old_values is None:
                raise RuntimeError("a value estimator needs the step-start values (StepNeeds.values)")
            rewards = batch.scores[m.index]
            if kl is not None:
                rewards = last_token_rewards(rewards, m.mask) - kl.coef * _reward_kl(batch, m)
            m.advantages, m.returns = batch.value_estimator(rewards, m.old_values, m.mask, batch.adv_params)
    if batch.adv_params.whiten_advantages:
        width = max(m.mask.shape[1] for m in micro)
        pad = lambda t: torch.nn.functional.pad(t, (0, width - t.shape[1]))  # noqa: E731
        whitened = whiten(torch.cat([pad(m.advantages) for m in micro]), torch.cat([pad(m.mask) for m in micro]), batch.adv_params.eps)
        for m, rows in zip(micro, whitened.split([len(m.index) for m in micro])):
            m.advantages = rows[:, :m.mask.shape[1]]


def batch_metrics(batch: PreparedBatch, version: int, micro: list[MicroInputs]) -> dict[str, float]:
    """Metrics that depend on the batch only: rewards, advantages (over loss tokens, as the loss sees them), sizes, staleness."""
    r = batch.rewards
    adv = torch.cat([m.advantages[m.mask > 0] for m in micro])
    lengths = torch.tensor([float(len(s.response_ids)) for s in batch.samples])
    out = {
        "samples": float(len(batch.samples)),
        "tokens": float(batch.tokens),
        "actor/loss_tokens": float(batch.loss_tokens),
        "rewards/mean": r.mean().item(), "rewards/std": _std(r), "rewards/max": r.max().item(), "rewards/min": r.min().item(),
        "advantages/mean": adv.mean().item(), "advantages/std": _std(adv), "advantages/max": adv.max().item(), "advantages/min": adv.min().item(),
        "response_length/mean": lengths.mean().item(), "response_length/max": lengths.max().item(),
    }
    if batch.rejected_frac is not None:
        out["actor/train_infer_rejected_frac"] = batch.rejected_frac
    # Oldest-token staleness = trained-on version − the oldest version that generated a token of the
    # sample. The run records the other kind, dispatch staleness (versions since the sample's group was
    # dispatched, the one the async ratio bounds): with partial rollout the two differ.
    oldest = [min(s.versions) if s.versions else min(sp.version for sp in s.version_spans) if s.version_spans else None
              for s in batch.samples]
    known = [version - v for v in oldest if v is not None]
    if known:
        out["staleness/oldest_token_mean"] = sum(known) / len(known)
        out["staleness/oldest_token_max"] = float(max(known))
    return out


def _std(t: Tensor) -> float:
    return t.std().item() if t.numel() > 1 else 0.0


# ---- per-token tensors of samples

def per_token(samples: list[Sample], values: list[list[float]] | None, width: int) -> Tensor:
    """[B, width] float tensor of per-response-token lists, zero-padded."""
    out = torch.zeros((len(samples), width), dtype=torch.float32)
    for i, row in enumerate(values or []):
        out[i, :len(row)] = torch.tensor(row, dtype=torch.float32)
    return out


def loss_mask_of(samples: list[Sample], width: int) -> Tensor:
    return per_token(samples, [[float(m) for m in s.loss_mask] if s.loss_mask is not None else [1.0] * len(s.response_ids)
                               for s in samples], width)
