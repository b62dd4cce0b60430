"""The HTTP application: /health and uniform errors for every role, then the role's own endpoints."""
from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from . import __version__
from .config import ServeConfig, validate_role_options
from .edge import RequestEdge
from .errors import install_error_handlers
from .liveness import Liveness, LivenessMiddleware
from .roles import load_role


def create_app(config: ServeConfig) -> FastAPI:
    app = FastAPI(title=f"rollflow-engines {config.role}", version=__version__)
    install_error_handlers(app)
    started = time.time()
    options = validate_role_options(config)
    liveness = app.state.liveness = Liveness(options.stall_after_s)

    # async, on the event loop itself: a blocked loop answers nothing, which a probe's timeout sees (see liveness.py).
    @app.get("/health")
    async def health() -> JSONResponse:
        problem = liveness.problem()
        body = {
            "status": "ok" if problem is None else problem.split(":", 1)[0],  # "stalled" or "failed"
            **({"error": problem} if problem is not None else {}),
            "role": config.role,
            "backend": config.backend,
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - started, 3),
            "liveness": liveness.report(),
        }
        return JSONResponse(body, status_code=503 if problem is not None else 200)

    app.add_middleware(LivenessMiddleware, liveness=liveness)
    app.add_middleware(RequestEdge, max_request_bytes=options.max_request_bytes)
    _watch_liveness_for_the_app_lifetime(app, liveness)
    load_role(config.role).register(app, config.backend, options)
    return app


def _watch_liveness_for_the_app_lifetime(app: FastAPI, liveness: Liveness) -> None:
    outer = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with outer(a) as state:
            watcher = asyncio.create_task(liveness.watch_loop())
            try:
                yield state
            finally:
                watcher.cancel()

    app.router.lifespan_context = lifespan
