"""Verifiers served by the env role's ``/reward``, chosen by the sample's domain.

Built in: ``exact_match`` (inline), ``math_verify`` (in a worker process
under a timeout), ``code_exec`` (model-written programs against tests, in
the sandbox) and ``llm_judge`` (a judge model's grade, docs/rewards.md). Add one with ``register_verifier(Verifier(...))``.
"""
from __future__ import annotations

from .registry import VERIFIERS, Verifier, VerifierConfig, get_verifier, known_verifiers, register_verifier
from . import code_exec, exact_match, llm_judge, math_verifier  # noqa: F401  (registers the built-in verifiers)

__all__ = ["VERIFIERS", "Verifier", "VerifierConfig", "get_verifier", "known_verifiers", "register_verifier"]
