"""Request errors every role shares: a malformed request gets a 4xx naming the field, never a 500.

Every error body has one shape, whoever refuses the request (a handler, request
validation, routing, the size limit at the edge):
``{"error": "<field>: <message>; ...", "problems": [{"field", "message", "given"}]}``.
``given`` echoes the offending input, cut to a bounded excerpt: an error reply
must never be as large as the request that caused it.
"""
from __future__ import annotations

import itertools
import json
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

# Longest echo of a given value, in characters of its JSON text.
GIVEN_MAX_CHARS = 200


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


class UnscoredError(RequestError):
    """Thrown when a verifier could not score a response (an LLM judge gave no readable grade): never a made-up
    score. The request was fine and the server too; the sample has no reward."""

    status_code = 422


class UnavailableError(RequestError):
    """Thrown when the server cannot do the work for a reason of its own (its sandbox failed): the request
    was fine, retrying (here or on another server) may succeed. Clients treat a 503 as the infrastructure's."""

    status_code = 503


class InsufficientStorageError(RequestError):
    """Thrown when a write found its disk full (ENOSPC, or a quota): nothing half-written is left, and the same
    request succeeds once space is freed. A 5xx, so clients wait and retry; code ``disk_full``."""

    status_code = 507


class RequestTooLargeError(RequestError):
    """Thrown when a request body is longer than the server's max_request_bytes."""

    status_code = 413


def _head(value: Any, limit: int = GIVEN_MAX_CHARS) -> Any:
    """The first ``limit`` characters, items or keys of ``value`` at every level, which is all an excerpt
    can show; NaN/Infinity (not JSON) and bytes become their text, so the error reply itself serialises."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (bytes, bytearray)):
        return repr(bytes(value[:limit]))
    if isinstance(value, str):
        return value[:limit + 1]
    if isinstance(value, dict):
        return {k: _head(v, limit) for k, v in itertools.islice(value.items(), limit)}
    if isinstance(value, (list, tuple)):
        return [_head(v, limit) for v in value[:limit]]
    return value


def _size(value: Any, text: str) -> str:
    if isinstance(value, str):
        return f"{len(value)} characters"
    if isinstance(value, (list, tuple)):
        return f"{len(value)} items"
    if isinstance(value, dict):
        return f"{len(value)} keys"
    return f"{len(text)} characters"


def excerpt(value: Any) -> Any:
    """``value`` itself if its JSON text is at most GIVEN_MAX_CHARS characters long; else that much of
    the text (of the string itself, for a string) and a cut marker giving the full size."""
    head = _head(value)
    text = head if isinstance(head, str) else json.dumps(head, ensure_ascii=False, default=repr)
    if len(text) <= GIVEN_MAX_CHARS:
        return head
    return f"{text[:GIVEN_MAX_CHARS]}… [cut: {_size(value, text)} in all]"


def problem(field: str, message: str, given: Any = None) -> dict:
    return {"field": field, "message": message, "given": excerpt(given)}


def error_body(problems: list[dict], code: str | None = None) -> dict:
    body = {"error": "; ".join(f"{p['field']}: {p['message']}" for p in problems), "problems": problems}
    return {**body, "code": code} if code else body


def error_response(status_code: int, problems: list[dict], headers: dict[str, str] | None = None, code: str | None = None) -> JSONResponse:
    return JSONResponse(status_code=status_code, content=jsonable_encoder(error_body(problems, code)), headers=headers)


def _validation_problem(e: dict) -> dict:
    if e["type"] == "json_invalid":  # FastAPI's loc is ("body", <character offset>), its input is empty
        position = e["loc"][-1]
        return problem("(body)", f"not valid JSON: {e.get('ctx', {}).get('error', e['msg'])} at character {position}")
    loc = [str(p) for p in e["loc"] if p != "body"]
    return problem(".".join(loc) or "(body)", e["msg"], e.get("input"))


def _routing_problem(request: Request, exc: StarletteHTTPException) -> dict:
    """Routing's own refusals (404 no such endpoint, 405 wrong method) and FastAPI's body parsing fallback."""
    if exc.status_code == 404:
        return problem("(path)", f"no endpoint {request.url.path}", request.url.path)
    if exc.status_code == 405:
        allowed = next((v for k, v in (exc.headers or {}).items() if k.lower() == "allow"), "")
        return problem("(method)", f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}", request.method)
    return problem("(request)", str(exc.detail))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, [_validation_problem(e) for e in exc.errors()])

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError) -> JSONResponse:
        return error_response(exc.status_code, [problem(exc.field, exc.message, exc.given)], code=exc.code)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, [_routing_problem(request, exc)], headers=exc.headers)
