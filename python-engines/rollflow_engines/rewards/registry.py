"""Verifier registry: verifier name -> how to score (prompt, response, reference)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict


class VerifierConfig(BaseModel):
    """Base of every verifier's Config (the ``config`` of a /reward request): unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


# fn(prompt, response, reference, config as a dict) -> (reward, info). Must be a
# module-level function when ``isolated``: it is sent to a worker process by name.
VerifyFn = Callable[[str, str, str, dict[str, Any]], tuple[float, dict[str, Any]]]


@dataclass(frozen=True)
class Verifier:
    name: str
    fn: VerifyFn
    Config: type[VerifierConfig] = VerifierConfig
    isolated: bool = True  # run in a worker process under the reward timeout
    description: str = ""
    preload: tuple[str, ...] = field(default=())  # modules each worker imports before it reports ready


VERIFIERS: dict[str, Verifier] = {}


def register_verifier(verifier: Verifier) -> Verifier:
    if verifier.name in VERIFIERS and VERIFIERS[verifier.name] != verifier:
        raise ValueError(f"verifier {verifier.name!r} is already registered")
    VERIFIERS[verifier.name] = verifier
    return verifier


def known_verifiers() -> list[str]:
    return sorted(VERIFIERS)


def get_verifier(name: str) -> Verifier | None:
    return VERIFIERS.get(name)
