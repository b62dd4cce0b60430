"""exact_match: the response, stripped of surrounding whitespace, equals the reference, stripped."""
from __future__ import annotations

from typing import Any

from pydantic import Field

from .registry import Verifier, VerifierConfig, register_verifier


class ExactMatchConfig(VerifierConfig):
    ignore_case: bool = Field(default=False, description="Compare case-insensitively (str.casefold).")


def exact_match(prompt: str, response: str, reference: str, config: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    a, b = response.strip(), reference.strip()
    if config.get("ignore_case"):
        a, b = a.casefold(), b.casefold()
    return (1.0 if a == b else 0.0), {}


register_verifier(Verifier(
    name="exact_match", fn=exact_match, Config=ExactMatchConfig, isolated=False,
    description="1 if the stripped response equals the stripped reference, else 0.",
))
