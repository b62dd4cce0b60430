"""RL algorithms as pure torch functions, registered under the run config's names.

- ``losses.POLICY_LOSSES``: ``pg_variant`` -> loss(LossInputs, LossParams) -> per-token loss
- ``losses.LOSS_AGGREGATIONS``: ``loss_agg_mode`` -> how per-token losses are reduced
- ``objective.objective``: policy loss + KL + entropy + value loss, the number a train step differentiates
- ``objective.KL_ESTIMATORS``: ``kl_loss_type`` -> k1 | k2 | k3 | low_var_kl (k3 clamped to ±10)
- ``objective.KL_PENALTIES``: ``kl_penalty`` of the KL folded into the reward -> kl | abs | mse | low_var_kl
- ``objective.REJECTION_LEVELS``: train/infer rejection filter ``agg_type`` -> token | sequence | geometric
- ``objective.IS_WEIGHT_LEVELS``: train/infer correction ``weight_type`` -> token | sequence
- ``advantages.REWARD_NORMS``: ``reward_norm`` -> (mean level, std level) of ``normalize_rewards``, applied once
  (``DEFAULT_REWARD_NORM``: each estimator's when the request names none)
- ``advantages.ADVANTAGE_ESTIMATORS``: sequence-level ``adv_estimator`` -> fn(rewards, group_ids, params)
- ``advantages.VALUE_ESTIMATORS``: token-level ``adv_estimator`` with a value head -> fn(rewards, values, mask, params)
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from .advantages import (ADV_ESTIMATOR_NAMES, ADVANTAGE_ESTIMATORS, DEFAULT_REWARD_NORM, NORM_LEVELS, REWARD_NORM_NAMES,
                         REWARD_NORMS, VALUE_ESTIMATORS, WHITENED_ESTIMATORS, AdvantageParams, normalize_rewards, whiten)
from . import covariance  # noqa: F401  (registers clip_cov and kl_cov)
from .losses import LOSS_AGGREGATIONS, PG_VARIANTS, POLICY_LOSSES, LossInputs, LossParams, aggregate
from .objective import (IS_WEIGHT_LEVELS, KL_ESTIMATORS, KL_PENALTIES, REJECTION_LEVELS, needs_prox_logprobs, objective,
                        rejection_keep)

# Every adv_estimator name, whichever registry holds it.
ALL_ADVANTAGE_ESTIMATORS: dict[str, object] = {**ADVANTAGE_ESTIMATORS, **VALUE_ESTIMATORS}


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
    "ADVANTAGE_ESTIMATORS", "ADV_ESTIMATOR_NAMES", "ALL_ADVANTAGE_ESTIMATORS", "AdvantageParams", "DEFAULT_REWARD_NORM",
    "IS_WEIGHT_LEVELS", "WHITENED_ESTIMATORS",
    "KL_ESTIMATORS", "KL_PENALTIES", "LOSS_AGGREGATIONS", "REJECTION_LEVELS", "aggregate", "rejection_keep", "LossInputs", "LossParams", "NORM_LEVELS", "PG_VARIANTS", "POLICY_LOSSES",
    "REWARD_NORMS", "REWARD_NORM_NAMES", "VALUE_ESTIMATORS", "check_registered", "needs_prox_logprobs",
    "normalize_rewards", "objective", "whiten",
]
