"""Env registry: env name -> BaseEnv subclass."""
from __future__ import annotations

from typing import get_args

from .base import BaseEnv, EnvLossPolicy

ENVS: dict[str, type[BaseEnv]] = {}


def register_env(cls: type[BaseEnv]) -> type[BaseEnv]:
    """Class decorator: make ``cls`` available to /reset under ``cls.name``."""
    if not getattr(cls, "name", None):
        raise ValueError(f"{cls.__name__} has no name")
    policies = get_args(EnvLossPolicy)
    if getattr(cls, "on_env_loss", None) not in policies:
        raise ValueError(f"env {cls.name!r} declares on_env_loss = {getattr(cls, 'on_env_loss', None)!r}; expected one of {', '.join(policies)} (see BaseEnv)")
    if cls.name in ENVS and ENVS[cls.name] is not cls:
        raise ValueError(f"env {cls.name!r} is already registered by {ENVS[cls.name].__name__}")
    ENVS[cls.name] = cls
    return cls


def known_envs() -> list[str]:
    return sorted(ENVS)


def get_env(name: str) -> type[BaseEnv] | None:
    return ENVS.get(name)
