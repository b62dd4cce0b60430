"""Open env sessions: a thread-safe table with an idle timeout and a size cap.

Idle sessions (no reset/step for ``ttl_s``) are closed by a sweep that runs at
the start of every request to the table (and from ``/metrics``), so no
background thread is needed and tests can drive time with a fake clock. A
session in the middle of a step is never idle. Recently closed ids are
remembered (a bounded list) so a late /step can say *why* its session is gone,
and with an ended episode its last step, so the retry of a step that ended the
episode is answered after the client closed the session (steps.py).
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from ...envs import BaseEnv
from ...errors import NotFoundError, RequestError
from .steps import StepRecord

log = logging.getLogger(__name__)
_TOMBSTONES = 10_000


class TooManySessionsError(RequestError):
    """max_sessions are open: close some (or raise the option) before resetting more."""

    status_code = 429


@dataclass(eq=False)
class Session:
    id: str
    env_name: str
    env: BaseEnv
    last_used: float
    done: bool = False
    closed: bool = False
    applied: int = 0  # actions applied: the index the next /step must carry
    last: StepRecord | None = None  # the last applied step, answered again to a retry of it
    resumable: bool = False  # its episode is open and has a saved snapshot: a server that lost it could resume it
    lock: threading.Lock = field(default_factory=threading.Lock)  # held while the env steps


class SessionStore:
    def __init__(self, max_sessions: int, ttl_s: float, clock: Callable[[], float] = time.monotonic,
                 on_close: Callable[[Session, str], None] | None = None):
        self.max_sessions, self.ttl_s, self.clock = max_sessions, ttl_s, clock
        self._on_close = on_close or (lambda s, why: None)
        self._sessions: dict[str, Session] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()  # session id -> why it was closed
        self._ended: OrderedDict[str, StepRecord] = OrderedDict()  # closed session id -> the step that ended its episode
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def open(self, env_name: str, env: BaseEnv, applied: int = 0) -> Session:
        """Add a session for an env that has been reset (restored with ``applied`` actions); TooManySessionsError (429) when full."""
        self.sweep()
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                raise TooManySessionsError(
                    "session", f"max_sessions ({self.max_sessions}) are open: close finished sessions "
                    f"(/close) or start the server with a larger --option max_sessions=N", None)
            session = Session(id=uuid.uuid4().hex, env_name=env_name, env=env, last_used=self.clock(), applied=applied)
            self._sessions[session.id] = session
            return session

    def get(self, session_id: str) -> Session:
        """The open session, marked as used now; NotFoundError (404, field ``session``) otherwise."""
        self.sweep()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                why = self._gone.get(session_id)
                message = f"session was closed ({why})" if why else "unknown session"
                raise NotFoundError("session", message, session_id)
            session.last_used = self.clock()
            return session

    def touch(self, session: Session) -> None:
        with self._lock:
            session.last_used = self.clock()

    def close(self, session_id: str, why: str = "closed by /close") -> bool:
        """Close the session if it is open; True if it was. Never raises for unknown ids."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
            if session is None:
                return False
            self._remember(session, why)
        self._finish(session, why)
        return True

    def sweep(self) -> int:
        """Close sessions idle for more than ttl_s; returns how many."""
        now = self.clock()
        expired = []
        with self._lock:
            for sid, session in list(self._sessions.items()):
                if now - session.last_used > self.ttl_s and session.lock.acquire(blocking=False):
                    try:
                        del self._sessions[sid]
                        self._remember(session, f"idle for more than session_ttl_s={self.ttl_s:g} s")
                        expired.append(session)
                    finally:
                        session.lock.release()
        for session in expired:
            self._finish(session, "expired")
        return len(expired)

    def close_all(self, why: str = "server shutting down") -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
            for s in sessions:
                self._remember(s, why)
        for session in sessions:
            self._finish(session, why)

    def ended_step(self, session_id: str) -> StepRecord | None:
        """The step that ended the episode of a closed session, if it ended and is still remembered."""
        with self._lock:
            return self._ended.get(session_id)

    def _remember(self, session: Session, why: str) -> None:
        self._gone[session.id] = why
        while len(self._gone) > _TOMBSTONES:
            self._gone.popitem(last=False)
        if session.done and session.last is not None:
            self._ended[session.id] = session.last
            while len(self._ended) > _TOMBSTONES:
                self._ended.popitem(last=False)

    def _finish(self, session: Session, why: str) -> None:
        with session.lock:  # wait for a step in progress
            session.closed = True
            try:
                session.env.close()
            except Exception:  # an env's cleanup bug must not fail /close
                log.exception("env %s: close failed", session.env_name)
        self._on_close(session, why)
