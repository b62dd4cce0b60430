"""Env registry: env name -> BaseEnv subclass."""
from __future__ import annotations

from .base import BaseEnv

ENVS: dict[str, type[BaseEnv]] = {}


def register_env(cls: type[BaseEnv]) -> type[BaseEnv]:
    """Class decorator: make ``cls`` available to /reset under ``cls.name``."""
    if not getattr(cls, "name", None):
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in ENVS and ENVS[cls.name] is not cls:
        raise ValueError(f"env {cls.name!r} is already registered by {ENVS[cls.name].__name__}")
    ENVS[cls.name] = cls
    return cls


def known_envs() -> list[str]:
    return sorted(ENVS)


def get_env(name: str) -> type[BaseEnv] | None:
    return ENVS.get(name)
