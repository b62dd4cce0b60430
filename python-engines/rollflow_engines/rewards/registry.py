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
# A ``sandboxed`` verifier's fn also takes the seconds it may take (the server's reward_timeout_s).
VerifyFn = Callable[..., tuple[float, dict[str, Any]]]


@dataclass(frozen=True)
class Verifier:
    name: str
    fn: VerifyFn
    Config: type[VerifierConfig] = VerifierConfig
    isolated: bool = True  # run in a worker process under the reward timeout
    # Runs model-written code in the sandbox (which isolates it): called in a server thread with its time
    # limit; SandboxError / SandboxUnavailable from it are the server's failure (503), not a score.
    sandboxed: bool = False
    # Calls another server (an LLM judge): in a server thread with its time limit, like a sandboxed one.
    # UnavailableError from it (the other server is down) is a 503, not a score.
    remote: bool = False
    description: str = ""
    preload: tuple[str, ...] = field(default=())  # modules each worker imports before it reports ready


VERIFIERS: dict[str, Verifier] = {}


def register_verifier(verifier: Verifier) -> Verifier:
    if (verifier.sandboxed or verifier.remote) and verifier.isolated:
        raise ValueError(f"verifier {verifier.name!r}: sandboxed and remote verifiers run in a server thread, not isolated")
    if verifier.name in VERIFIERS and VERIFIERS[verifier.name] != verifier:
        raise ValueError(f"verifier {verifier.name!r} is already registered")
    VERIFIERS[verifier.name] = verifier
    return verifier


def known_verifiers() -> list[str]:
    return sorted(VERIFIERS)


def get_verifier(name: str) -> Verifier | None:
    return VERIFIERS.get(name)
