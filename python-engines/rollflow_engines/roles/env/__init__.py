"""The env role: gym-like text environments (/reset, /step, /close) and verifiers (/reward).

    POST /reset  {env, seed, config?, restore?, index?} -> {session, observation, info, on_env_loss, step_timeout_s}
    POST /step   {session, index, action}         -> {observation, reward, done, info}
    POST /close  {session}                        -> {closed: true}   (idempotent)
    POST /reward {domain, prompt?, response, reference, verifier?, config?} -> {reward, info}
    GET  /metrics                                 Prometheus text, rollflow_env_* series

Errors use the shared body ``{error, problems: [{field, message, given}]}``:
400 for bad input (unknown ``env``, ``domain`` or ``verifier``, a bad
``config.<key>``, a ``reference`` the verifier cannot read, wrong types), 404 for an unknown, closed or expired
``session``, 409 for a step after ``done`` or an ``index`` that is neither the next nor a
retry of the last (steps.py: each index is applied once, a retry gets the recorded answer), 429 when ``max_sessions`` are
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

from fastapi import FastAPI

from .options import Options

__all__ = ["Options", "register"]


def register(app: FastAPI, backend: str, options: Options) -> None:
    from .api import EnvRole, register_routes

    register_routes(app, EnvRole(options))
