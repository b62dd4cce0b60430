"""The env role: gym-like text environments (/reset, /step, /close) and verifiers (/reward).

    POST /reset  {env, seed, config?}             -> {session, observation, info}
    POST /step   {session, action}                -> {observation, reward, done, info}
    POST /close  {session}                        -> {closed: true}   (idempotent)
    POST /reward {domain, prompt?, response, reference, verifier?, config?} -> {reward, info}
    GET  /metrics                                 Prometheus text, rollflow_env_* series

Errors use the shared body ``{error, problems: [{field, message, given}]}``:
400 for bad input (unknown ``env``, ``domain`` or ``verifier``, a bad
``config.<key>``, a ``reference`` the verifier cannot read, wrong types), 404 for an unknown, closed or expired
``session``, 409 for a step after ``done``, 429 when ``max_sessions`` are
open. An action the env cannot read is not an error: the step answers with
``info.invalid_action: true``. A verifier that fails or overruns
``reward_timeout_s`` scores 0 with ``info.error`` / ``info.timeout: true``;
but when the server's sandbox fails (a sandboxed verifier such as
code_exec), /reward answers 503 (code ``sandbox_failed``): the server's
failure is never scored as the response's.

Envs live in ``rollflow_engines.envs`` and verifiers in
``rollflow_engines.rewards``; both are registries, so adding one needs no
change here. The only backend is ``python``. Model-written code runs in the
sandbox (``rollflow_engines.sandbox``, docs/sandbox.md) set by the options
``sandbox``, ``sandbox_root`` and ``sandbox_max_age_s``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...edge import MiB, max_request_bytes_field
from ...envs import snapshots
from ...rewards import get_verifier, known_verifiers
from ...sandbox.settings import DEFAULT_MAX_AGE_S, DEFAULT_ROOT

DEFAULT_DOMAINS = {"math": "math_verify", "exact": "exact_match", "code": "code_exec"}


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["python"] = "python"
    session_ttl_s: float = Field(default=600.0, gt=0, description="A session idle this long (no reset/step) is closed.")
    max_sessions: int = Field(default=4096, ge=1, description="Open sessions at most; a /reset beyond it is refused with 429.")
    reward_timeout_s: float = Field(default=10.0, gt=0, le=3600, description="Longest one verification may run; past it the reward is 0 with info.timeout.")
    reward_workers: int = Field(default=2, ge=1, le=256, description="Verifier worker processes (verifications run in parallel).")
    reward_memory_mb: int | None = Field(default=4096, ge=256, description="Address-space cap of each verifier worker; null for none.")
    # A request carries one action or one response to score: text a model wrote.
    max_request_bytes: int = max_request_bytes_field(8 * MiB)
    domains: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_DOMAINS),
                                    description="Sample domain -> verifier name; merged over the defaults math -> math_verify, exact -> exact_match, code -> code_exec.")
    sandbox: Literal["bwrap", "none"] = Field(default="bwrap", description="How model-written code runs (code_exec, sandboxed envs): bwrap, "
                                              "or none: UNSANDBOXED, for trusted code only, logged as a warning for every workspace.")
    sandbox_root: Path = Field(default=DEFAULT_ROOT, description="Directory of sandbox workspaces (<root>/<owner>/<id>); the janitor reaps orphans "
                                                                 "there when the server starts, periodically, and when it stops.")
    sandbox_max_age_s: float = Field(default=DEFAULT_MAX_AGE_S, gt=0, description="The janitor removes a workspace older than this even if "
                                                                                  "a live server holds it (its processes are killed first).")
    snapshot_dir: Path = Field(default=snapshots.DEFAULT_DIR, description="Where envs that resume episodes (swe_lite) save their "
                                                                          "snapshots; env servers that share it resume each other's episodes.")
    snapshot_max_age_s: float = Field(default=86_400.0, gt=0, description="The janitor removes a snapshot not written for this long (an "
                                                                           "episode nobody resumed); a run resuming later replays that episode from its start.")

    @field_validator("domains")
    @classmethod
    def _known_verifiers(cls, domains: dict[str, str]) -> dict[str, str]:
        merged = {**DEFAULT_DOMAINS, **domains}
        for domain, name in merged.items():
            if get_verifier(name) is None:
                raise ValueError(f"domains.{domain}: unknown verifier {name!r}; known verifiers: {', '.join(known_verifiers())}")
        return merged


def register(app: FastAPI, backend: str, options: Options) -> None:
    from .api import EnvRole, register_routes

    register_routes(app, EnvRole(options))
