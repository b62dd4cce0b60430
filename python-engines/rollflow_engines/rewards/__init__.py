"""Verifiers served by the env role's ``/reward``, chosen by the sample's domain.

Built in: ``exact_match`` (inline), ``math_verify`` (in a worker process
under a timeout) and ``code_exec`` (model-written programs against tests, in
the sandbox). Add one with ``register_verifier(Verifier(...))``.
"""
from __future__ import annotations

from .registry import VERIFIERS, Verifier, VerifierConfig, get_verifier, known_verifiers, register_verifier
from . import code_exec, exact_match, math_verifier  # noqa: F401  (registers the built-in verifiers)

__all__ = ["VERIFIERS", "Verifier", "VerifierConfig", "get_verifier", "known_verifiers", "register_verifier"]
