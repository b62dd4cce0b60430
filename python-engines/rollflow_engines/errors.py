"""Request errors every role shares: a malformed request gets a 4xx naming the field, never a 500."""
from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


class RequestError(Exception):
    """Thrown by a handler when a request is well-formed JSON but wrong: names the field and why."""

    status_code = 400

    def __init__(self, field: str, message: str, given: Any = None, code: str | None = None):
        super().__init__(f"{field}: {message}")
        self.field, self.message, self.given = field, message, given
        # A stable name for a state the caller acts on (e.g. trainer_busy: retry later), beside the human message.
        self.code = code


class NotFoundError(RequestError):
    """Thrown when a request names something the server does not have (a session, a checkpoint)."""

    status_code = 404


class ConflictError(RequestError):
    """Thrown when a request cannot run in the server's current state (e.g. update_weights while not paused)."""

    status_code = 409


def _json_safe(value: Any) -> Any:
    """JSON has no NaN or Infinity; echo such input back as text rather than fail the error reply itself."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _problem(field: str, message: str, given: Any) -> dict:
    return {"field": field, "message": message, "given": _json_safe(given)}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for e in exc.errors():
            loc = [str(p) for p in e["loc"] if p != "body"]
            problems.append(_problem(".".join(loc) or "(body)", e["msg"], e.get("input")))
        body = {"error": "; ".join(f"{p['field']}: {p['message']}" for p in problems), "problems": problems}
        return JSONResponse(status_code=400, content=jsonable_encoder(body, custom_encoder={bytes: repr}))

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError) -> JSONResponse:
        body = {"error": str(exc), "problems": [_problem(exc.field, exc.message, exc.given)]}
        if exc.code:
            body["code"] = exc.code
        return JSONResponse(status_code=exc.status_code, content=jsonable_encoder(body))
