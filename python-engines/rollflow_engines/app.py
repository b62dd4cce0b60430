"""The HTTP application: /health and uniform errors for every role, then the role's own endpoints."""
from __future__ import annotations

import os
import time

from fastapi import FastAPI

from . import __version__
from .config import ServeConfig, validate_role_options
from .edge import RequestEdge
from .errors import install_error_handlers
from .roles import load_role


def create_app(config: ServeConfig) -> FastAPI:
    app = FastAPI(title=f"rollflow-engines {config.role}", version=__version__)
    install_error_handlers(app)
    started = time.time()

    @app.get("/health")
    def health() -> dict:
        return {
            "status": "ok",
            "role": config.role,
            "backend": config.backend,
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - started, 3),
        }

    options = validate_role_options(config)
    app.add_middleware(RequestEdge, max_request_bytes=options.max_request_bytes)
    load_role(config.role).register(app, config.backend, options)
    return app
