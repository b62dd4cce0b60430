"""The HTTP edge every role shares: what a request body must be before any endpoint sees it.

- At most ``max_request_bytes`` long (each role's option): a declared
  Content-Length above it is refused with 413 before a byte of the body is
  read; a chunked body is counted as it arrives and refused once it passes
  the limit, so a huge body is never held in memory.
- UTF-8, as JSON requires: anything else is a 400 naming the byte offset.
- No lone surrogates (``"\\ud800"``): JSON escapes allow them, but they are not
  text, cannot be encoded back to UTF-8, and would otherwise crash whatever
  tokenizes or echoes them. Refused with a 400 naming the field.

The refusals use the shared error body (errors.py). Broken JSON is left to
the endpoint's own parsing, whose error the shared handlers reshape.
"""
from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import RequestTooLargeError, error_response, problem

MiB = 1024 * 1024

# A \u escape of a UTF-16 surrogate; only then can a parsed string hold a lone one.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def max_request_bytes_field(default: int) -> Any:
    """The ``max_request_bytes`` option, with the role's own default."""
    return Field(default=default, ge=1024, description="Longest request body accepted, in bytes; a longer one is refused with 413.")


class _Refused(Exception):
    def __init__(self, status: int, problem_: dict):
        self.status, self.problem = status, problem_


class RequestEdge:
    """ASGI middleware: reads a request's body within the limit, checks it, then hands it to the app."""

    def __init__(self, app: ASGIApp, max_request_bytes: int):
        self.app = app
        self.max_bytes = max_request_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_declared_length(scope)
            body = await self._read_body(receive)
            self._check_text(body)
        except _Refused as refused:
            await error_response(refused.status, [refused.problem])(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    def _too_large(self, message: str, given: int) -> _Refused:
        return _Refused(RequestTooLargeError.status_code, problem("(body)", message, given))

    def _check_declared_length(self, scope: Scope) -> None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    raise _Refused(400, problem("content-length", "not a number of bytes", value.decode("latin-1"))) from None
                if declared > self.max_bytes:
                    raise self._too_large(f"request body is {declared} bytes; this server accepts at most "
                                          f"{self.max_bytes} (max_request_bytes)", declared)

    async def _read_body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away; the app sees the same
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise self._too_large(f"request body passed {self.max_bytes} bytes (max_request_bytes) "
                                      "before it ended", size)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    @staticmethod
    def _check_text(body: bytes) -> None:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _Refused(400, problem("(body)", f"not UTF-8: byte 0x{body[e.start]:02x} at offset {e.start} "
                                        f"({e.reason})", body[max(0, e.start - 20):e.start + 20])) from None
        if SURROGATE_ESCAPE.search(body):
            where = _lone_surrogate(body)
            if where is not None:
                field, text = where
                raise _Refused(400, problem(field, "holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), "
                                            "which is not text", text.encode("utf-8", "backslashreplace").decode()))


def _lone_surrogate(body: bytes) -> tuple[str, str] | None:
    """(field, string) of the first string in the JSON ``body`` (keys included) that holds a lone
    surrogate; None if there is none or the body is not JSON (the endpoint reports that)."""
    try:
        document = json.loads(body)
    except ValueError:
        return None

    def walk(value: Any, path: list[str]) -> tuple[str, str] | None:
        if isinstance(value, str):
            return None if _is_text(value) else (".".join(path) or "(body)", value)
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            if isinstance(key, str) and not _is_text(key):
                return ".".join(path) or "(body)", key
            found = walk(item, [*path, str(key)])
            if found:
                return found
        return None

    return walk(document, [])


def _is_text(s: str) -> bool:
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that yields the body read already, then whatever the client sends next (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
