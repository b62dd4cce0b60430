"""Reward normalisation and advantage estimators: small pure functions by config name.

A train step first normalises the scalar rewards once (``normalize_rewards`` with
the mean/std levels of ``REWARD_NORMS[reward_norm]``, or ROLL's norm_mean_type /
norm_std_type; unset, the estimator's ``DEFAULT_REWARD_NORM``), then runs the
advantage estimator, which never normalises again. Estimators come in two
registries because they need different inputs:

- ``ADVANTAGE_ESTIMATORS`` (sequence level, no value model)::

      fn(rewards [N], group_ids, params) -> advantages [N]

  the caller broadcasts each advantage to its response tokens;

- ``VALUE_ESTIMATORS`` (token level, with the value head's values)::

      fn(rewards [N] or [N, T], values [N, T], mask [N, T], params) -> (advantages [N, T], returns [N, T])

``group_ids`` says which prompt group (GRPO group) each sample belongs to: a list
of str/int or a long tensor [N]; any hashable labels, order irrelevant.

Group and batch statistics use the unbiased (Bessel-corrected) standard
deviation, as TRL, verl and ROLL do; a group of one has std 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import torch
from torch import Tensor

# The run config's names (src/configs/schema.ts).
ADV_ESTIMATOR_NAMES = ("grpo", "reinforce", "gae", "rloo", "reinforce_plus_plus_baseline")
REWARD_NORM_NAMES = ("none", "group", "batch", "group_mean_batch_std")
NORM_LEVELS = ("none", "group", "batch")  # ROLL's norm_mean_type / norm_std_type values ("running" is not implemented)


@dataclass(frozen=True)
class AdvantageParams:
    eps: float = 1e-6  # added to every std before dividing
    baseline: str = "group_mean"  # reinforce: "group_mean" subtracts the group mean, "none" uses r as is
    gamma: float = 1.0  # gae: discount γ per token (ROLL gamma)
    lambd: float = 0.95  # gae: λ of the exponentially weighted TD errors (ROLL lambd)
    whiten_advantages: bool = False  # whiten the final token advantages over the batch's loss tokens (ROLL)


class AdvantageFn(Protocol):
    def __call__(self, rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor: ...


class ValueAdvantageFn(Protocol):
    def __call__(self, rewards: Tensor, values: Tensor, mask: Tensor, params: AdvantageParams) -> tuple[Tensor, Tensor]: ...


# ---- group statistics

def group_index(group_ids: Sequence[object] | Tensor) -> Tensor:
    """Labels -> dense long indices 0..G-1 in order of first appearance."""
    labels = group_ids.tolist() if isinstance(group_ids, Tensor) else list(group_ids)
    seen: dict[object, int] = {}
    return torch.tensor([seen.setdefault(g, len(seen)) for g in labels], dtype=torch.long)


def group_mean(values: Tensor, index: Tensor) -> Tensor:
    """Each sample's group mean, shape [N]."""
    groups = int(index.max()) + 1 if index.numel() else 0
    sums = torch.zeros(groups, dtype=values.dtype).index_add_(0, index, values)
    counts = torch.zeros(groups, dtype=values.dtype).index_add_(0, index, torch.ones_like(values))
    return (sums / counts)[index]


def group_std(values: Tensor, index: Tensor) -> Tensor:
    """Each sample's unbiased group std, shape [N]; 0 for groups of one."""
    groups = int(index.max()) + 1 if index.numel() else 0
    counts = torch.zeros(groups, dtype=values.dtype).index_add_(0, index, torch.ones_like(values))
    centred = values - group_mean(values, index)
    sq = torch.zeros(groups, dtype=values.dtype).index_add_(0, index, centred * centred)
    var = sq / (counts - 1.0).clamp(min=1.0)
    return var.sqrt()[index]


def _batch_std(values: Tensor) -> Tensor:
    return values.std() if values.numel() > 1 else torch.zeros((), dtype=values.dtype)


# ---- reward normalisation (run config `reward_norm`, or ROLL's norm_mean_type / norm_std_type)

def normalize_rewards(rewards: Tensor, group_ids: Sequence[object] | Tensor, mean_type: str, std_type: str,
                      eps: float = 1e-6) -> Tensor:
    """(r − μ) / (σ + eps), each statistic taken at its own level, as ROLL's reward normalisation:

        μ = mean over the sample's group (mean_type "group"), over the batch ("batch"), or 0 ("none");
        σ = std of the raw rewards over the group ("group"), over the batch ("batch"); "none": no division.

    group mean + batch std is LitePPO's normalisation (ROLL: norm_mean_type group, norm_std_type batch).
    """
    idx = group_index(group_ids)
    mean = {"none": torch.zeros_like(rewards), "group": group_mean(rewards, idx),
            "batch": rewards.mean().expand_as(rewards)}[mean_type]
    if std_type == "none":
        return rewards - mean
    std = group_std(rewards, idx) if std_type == "group" else _batch_std(rewards).expand_as(rewards)
    return (rewards - mean) / (std + eps)


# reward_norm name -> (mean level, std level) of normalize_rewards
REWARD_NORMS: dict[str, tuple[str, str]] = {
    "none": ("none", "none"),  # r
    "group": ("group", "group"),  # (r − mean_group) / (std_group + eps)
    "batch": ("batch", "batch"),  # (r − mean_batch) / (std_batch + eps)
    "group_mean_batch_std": ("group", "batch"),  # (r − mean_group) / (std_batch(r) + eps): LitePPO
}


# ---- sequence-level advantage estimators (run config `adv_estimator`)

def grpo(scores: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """GRPO: the advantage is the group-normalised reward, A = (r − mean_group) / (std_group + eps).

    That normalisation is the reward normalisation's (levels group/group by default), done once
    before this: the estimator returns its input. The std level is the user's choice:
    norm_std_type none gives Dr. GRPO's A = r − mean_group, batch gives LitePPO's. A mean level
    other than group leaves GRPO without its baseline; the train-step request refuses it.
    """
    return scores.clone()


def reinforce(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """REINFORCE: A = r − mean_group (baseline "group_mean", RLOO-like) or A = r (baseline "none")."""
    if params.baseline == "none":
        return rewards.clone()
    return rewards - group_mean(rewards, group_index(group_ids))


def rloo(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """RLOO (REINFORCE leave-one-out, Ahmadian et al. 2024): each sample's baseline is the mean of the
    other samples of its group,

        A_i = r_i − (Σ_{j∈g} r_j − r_i) / (n_g − 1) = n_g / (n_g − 1) · (r_i − mean_g)

    A group of one has no other sample: A = r (verl does the same).
    """
    idx = group_index(group_ids)
    counts = torch.zeros(int(idx.max()) + 1 if idx.numel() else 0, dtype=rewards.dtype).index_add_(0, idx, torch.ones_like(rewards))[idx]
    centred = rewards - group_mean(rewards, idx)
    return torch.where(counts > 1, centred * counts / (counts - 1.0).clamp(min=1.0), rewards)


def reinforce_plus_plus_baseline(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """REINFORCE++ with baseline (Hu et al. 2025; verl's reinforce_plus_plus_baseline): A = r − mean_group
    here; the train step then whitens the token advantages over the batch's loss tokens
    (``WHITENED_ESTIMATORS``), (A − mean) / (std + eps), as whiten_advantages does."""
    return rewards - group_mean(rewards, group_index(group_ids))


ADVANTAGE_ESTIMATORS: dict[str, AdvantageFn] = {
    "grpo": grpo,
    "reinforce": reinforce,
    "rloo": rloo,
    "reinforce_plus_plus_baseline": reinforce_plus_plus_baseline,
}

# Estimators whose definition includes whitening the token advantages over the batch.
WHITENED_ESTIMATORS = frozenset({"reinforce_plus_plus_baseline"})

# The reward normalisation a train step applies when the request names none. grpo's is its own
# group normalisation; rloo and REINFORCE++ take raw rewards and build their baselines themselves.
DEFAULT_REWARD_NORM: dict[str, str] = {
    "grpo": "group", "reinforce": "group", "gae": "group", "rloo": "none", "reinforce_plus_plus_baseline": "none",
}


# ---- token-level estimators with a value model

def last_token_rewards(rewards: Tensor, mask: Tensor) -> Tensor:
    """[N, T]: each response's scalar reward on its last token with mask 1, zeros elsewhere."""
    positions = torch.arange(mask.shape[1]).expand_as(mask)
    last = torch.where(mask > 0, positions, torch.full_like(positions, -1)).max(-1).values  # −1: no counted token
    out = torch.zeros(mask.shape, dtype=rewards.dtype)
    rows = (last >= 0).nonzero().squeeze(-1)
    out[rows, last[rows]] = rewards[rows]
    return out


def gae(rewards: Tensor, values: Tensor, mask: Tensor, params: AdvantageParams) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation (Schulman et al. 2016) over the response tokens, for PPO with a value head.

        δ_t = r_t + γ · V_{t+1} − V_t
        A_t = δ_t + γλ · A_{t+1}
        R_t = A_t + V_t                                         (the value head's target)

    ``rewards`` is per token [N, T], or one scalar per response [N], which goes on the
    response's last counted token (r_t = 0 elsewhere). V_{t+1} and A_{t+1} belong to
    the next token with mask 1; past the last one they are 0 (the episode ends).
    Tokens with mask 0 (padding, env observations of a multi-turn response) are not
    actions: they are skipped, get A = R = 0, and rewards placed on them are ignored.
    ``values`` carry no gradient. γ = params.gamma, λ = params.lambd.
    """
    if rewards.dim() == 1:
        rewards = last_token_rewards(rewards, mask)
    values = values.detach()
    counted = mask > 0
    advantages = torch.zeros_like(values)
    next_value = torch.zeros(values.shape[0], dtype=values.dtype)
    next_adv = torch.zeros(values.shape[0], dtype=values.dtype)
    for t in reversed(range(values.shape[1])):
        delta = rewards[:, t] + params.gamma * next_value - values[:, t]
        adv = delta + params.gamma * params.lambd * next_adv
        here = counted[:, t]
        advantages[:, t] = torch.where(here, adv, torch.zeros_like(adv))
        next_value = torch.where(here, values[:, t], next_value)
        next_adv = torch.where(here, adv, next_adv)
    returns = torch.where(counted, advantages + values, torch.zeros_like(values))
    return advantages, returns


VALUE_ESTIMATORS: dict[str, ValueAdvantageFn] = {
    "gae": gae,
}


def whiten(advantages: Tensor, mask: Tensor, eps: float = 1e-6) -> Tensor:
    """(A − mean) / (std + eps) over the tokens with mask 1 (unbiased std); 0 where mask is 0 (ROLL whiten_advantages)."""
    counted = mask > 0
    values = advantages[counted]
    if values.numel() == 0:
        return torch.zeros_like(advantages)
    std = values.std() if values.numel() > 1 else torch.zeros((), dtype=values.dtype)
    return torch.where(counted, (advantages - values.mean()) / (std + eps), torch.zeros_like(advantages))
