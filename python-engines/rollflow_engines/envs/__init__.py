"""Text environments served by the env role (``/reset``, ``/step``, ``/close``).

Importing this package registers the built-in envs: ``frozen_lake``, ``arithmetic``, ``swe_lite`` and ``swe``.
"""
from __future__ import annotations

from .base import BaseEnv, EnvConfig, StepResult, extract_answer
from .registry import ENVS, get_env, known_envs, register_env
from . import arithmetic, frozen_lake, swe, swe_lite  # noqa: F401  (registers the built-in envs)

__all__ = ["BaseEnv", "EnvConfig", "StepResult", "extract_answer", "ENVS", "get_env", "known_envs", "register_env"]
