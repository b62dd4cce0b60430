"""The env role. Its endpoints arrive with python-engines' env server work."""
from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


def register(app: FastAPI, backend: str, options: Options) -> None:
    """No endpoints beyond /health yet."""
