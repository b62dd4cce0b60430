"""RL algorithms as pure torch functions, registered under the run config's names.

- ``losses.POLICY_LOSSES``: ``pg_variant`` -> loss(logprobs, old_logprobs, advantages, mask, params)
- ``losses.LOSS_AGGREGATIONS``: ``loss_agg_mode`` -> how per-token losses are reduced
- ``advantages.REWARD_NORMS``: ``reward_norm`` -> fn(rewards, group_ids, params)
- ``advantages.ADVANTAGE_ESTIMATORS``: ``adv_estimator`` -> fn(rewards, group_ids, params)
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from .advantages import ADV_ESTIMATOR_NAMES, ADVANTAGE_ESTIMATORS, REWARD_NORM_NAMES, REWARD_NORMS, AdvantageParams
from .losses import LOSS_AGGREGATIONS, PG_VARIANTS, POLICY_LOSSES, LossParams


def check_registered(kind: str, name: str, registry: Mapping[str, object], config_names: Iterable[str] = ()) -> str:
    """``name`` if ``registry`` has it; otherwise ValueError saying what is implemented.

    A name the run config accepts but this package does not implement yet is
    told apart from a name nobody knows, so a user sees which of the two it is.
    """
    if name in registry:
        return name
    implemented = ", ".join(registry)
    if name in config_names:
        raise ValueError(f"{kind} {name!r} is a run-config name this trainer does not implement yet; implemented: {implemented}")
    raise ValueError(f"unknown {kind} {name!r}; implemented: {implemented}")


__all__ = [
    "ADVANTAGE_ESTIMATORS", "ADV_ESTIMATOR_NAMES", "AdvantageParams", "LOSS_AGGREGATIONS", "LossParams",
    "PG_VARIANTS", "POLICY_LOSSES", "REWARD_NORMS", "REWARD_NORM_NAMES", "check_registered",
]
