"""Reward normalisation and advantage estimators: small pure functions by config name.

Both kinds share one signature::

    fn(rewards, group_ids, params) -> Tensor[num_samples]

- ``rewards``: float tensor [N], one scalar reward per sample (response);
- ``group_ids``: which prompt group each sample belongs to (GRPO group): a
  list of str/int or a long tensor [N]; any hashable labels, order irrelevant;
- ``params``: ``AdvantageParams``; each function reads only what it uses.

The result is sequence-level; the caller broadcasts it to the response tokens.
The trainer applies ``REWARD_NORMS[reward_norm]`` first, then
``ADVANTAGE_ESTIMATORS[adv_estimator]`` on the normalised rewards.

Group statistics use the unbiased (Bessel-corrected) standard deviation, as
TRL and verl do; a group of one sample has std 0, so its mean-centred value is 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import torch
from torch import Tensor

# The run config's names (src/configs/schema.ts); gae needs a value model and comes later.
ADV_ESTIMATOR_NAMES = ("grpo", "reinforce", "gae")
REWARD_NORM_NAMES = ("none", "group", "batch", "group_mean_batch_std")


@dataclass(frozen=True)
class AdvantageParams:
    eps: float = 1e-6  # added to every std before dividing
    std_normalize: bool = True  # grpo: divide by the group std (False: Dr. GRPO's mean-centring only)
    baseline: str = "group_mean"  # reinforce: "group_mean" subtracts the group mean, "none" uses r as is


class AdvantageFn(Protocol):
    def __call__(self, rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor: ...


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


# ---- reward normalisation (run config `reward_norm`)

def norm_none(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """r, unchanged."""
    return rewards.clone()


def norm_group(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """(r − mean_group) / (std_group + eps)."""
    idx = group_index(group_ids)
    return (rewards - group_mean(rewards, idx)) / (group_std(rewards, idx) + params.eps)


def norm_batch(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """(r − mean_batch) / (std_batch + eps)."""
    return (rewards - rewards.mean()) / (_batch_std(rewards) + params.eps)


def norm_group_mean_batch_std(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """c = r − mean_group; c / (std_batch(c) + eps)  (REINFORCE++-baseline style)."""
    idx = group_index(group_ids)
    centred = rewards - group_mean(rewards, idx)
    return centred / (_batch_std(centred) + params.eps)


REWARD_NORMS: dict[str, AdvantageFn] = {
    "none": norm_none,
    "group": norm_group,
    "batch": norm_batch,
    "group_mean_batch_std": norm_group_mean_batch_std,
}


# ---- advantage estimators (run config `adv_estimator`)

def grpo(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """GRPO: A = (r − mean_group) / (std_group + eps); with std_normalize=False, A = r − mean_group."""
    idx = group_index(group_ids)
    centred = rewards - group_mean(rewards, idx)
    return centred / (group_std(rewards, idx) + params.eps) if params.std_normalize else centred


def reinforce(rewards: Tensor, group_ids: Sequence[object] | Tensor, params: AdvantageParams) -> Tensor:
    """REINFORCE: A = r − mean_group (baseline "group_mean", RLOO-like) or A = r (baseline "none")."""
    if params.baseline == "none":
        return rewards.clone()
    return rewards - group_mean(rewards, group_index(group_ids))


ADVANTAGE_ESTIMATORS: dict[str, AdvantageFn] = {
    "grpo": grpo,
    "reinforce": reinforce,
}
