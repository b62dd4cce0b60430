"""The inference role (the paper's LLMProxy backend worker).

Endpoints: /v1/completions (token ids in, token ids + logprobs + weight
versions out), /v1/chat/completions, /pause, /resume, /update_weights, /state
and /metrics. Backends: sim (latency model), torch (a Hugging Face causal LM on
CPU), vllm (GPU; import-guarded). See engine.py for the scheduler and
contracts.py for the wire types.
"""
from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from .engine import InferenceEngine
from .metrics import InferenceMetrics
from .options import Options, SimLength, SimOptions
from .weights_cache import WeightsCache

__all__ = ["Options", "SimLength", "SimOptions", "build_engine", "register"]

# backend name -> "module:Class"; imported on use so torch/vllm load only when chosen.
ENGINES = {
    "sim": "rollflow_engines.roles.inference.sim:SimEngine",
    "torch": "rollflow_engines.roles.inference.torch_backend:TorchEngine",
    "vllm": "rollflow_engines.roles.inference.vllm_backend:VllmEngine",
}


def build_engine(backend: str, options: Options) -> InferenceEngine:
    module, _, name = ENGINES[backend].partition(":")
    engine_class = getattr(importlib.import_module(module), name)
    engine = engine_class(options, InferenceMetrics())
    engine.weights_cache = WeightsCache(options.weights_cache_dir)
    return engine


def register(app: FastAPI, backend: str, options: Options) -> None:
    from .api import register_routes

    engine = build_engine(backend, options)
    app.state.inference_engine = engine  # for tests and tooling in the same process
    # Tokens are the progress; a paused server holds its requests by design (unless a step it waits on never returns).
    app.state.liveness.watch_counter(lambda: engine.metrics.registry.get_sample_value("rollflow_inference_tokens_generated_total") or 0.0)
    app.state.liveness.excuse_while(engine.holds_by_design)
    app.state.liveness.fail_when(lambda: engine.failure)
    register_routes(app, engine, options)

    # Run the engine's scheduler for the app's lifetime, inside whatever lifespan the app already has.
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with outer(a) as state:
            await engine.start()
            try:
                yield state
            finally:
                await engine.stop()

    app.router.lifespan_context = lifespan
