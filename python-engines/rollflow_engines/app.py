"""The HTTP application every role serves. Endpoints beyond /health arrive with each role."""
from __future__ import annotations

import os
import time

from fastapi import FastAPI

from . import __version__
from .config import ServeConfig


def create_app(config: ServeConfig) -> FastAPI:
    app = FastAPI(title=f"rollflow-engines {config.role}", version=__version__)
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

    return app
