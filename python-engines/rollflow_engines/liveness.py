"""Liveness from progress, not from a timer: what /health reports and what a supervisor acts on.

A server is *live* when its event loop answers and its work moves. Three
signals, all cheap:

- ``inflight``: requests being served (every path but /health and /metrics),
  counted by an ASGI middleware;
- ``progress``: requests completed plus the counters the role watches
  (tokens generated, micro-batches trained);
- ``loop_lag_ms``: how late a 0.5 s timer on the event loop fires.

The server is *stalled* when work is in flight and ``progress`` has not moved
for ``stall_after_s`` (unless the role excuses it: a paused inference server
holds requests by design), or when a piece of work that declared its own bound
(an env step: its env's ``step_timeout_s``) runs past it by ``OVERDUE_MARGIN_S``. /health then answers 503, the inference stream
stops its keep-alives (so the client's idle cut fires), and under systemd the
watchdog is no longer fed. A SIGSTOPped server or a blocked event loop
answers nothing at all, which a probe with a timeout sees the same way.

A timer alone would not do: a deadlocked backend thread leaves the event loop
free to answer health checks and send keep-alives forever.

The server has *failed* when something it cannot serve without has died (the
inference scheduler loop): /health answers 503 at once, with the cause, rather
than only once a request has waited ``stall_after_s`` for tokens that will
never come.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from asyncio import sleep  # bound at import: tests that patch asyncio.sleep to count a backend's sleeps do not see these
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from pydantic import Field
from starlette.types import ASGIApp, Receive, Scope, Send

UNWATCHED_PATHS = frozenset({"/health", "/metrics"})
LAG_TICK_S = 0.5
WATCHDOG_EVERY_S = 5.0
# Past its own bound, work is overdue only after this much more (a loaded machine's slack).
OVERDUE_MARGIN_S = 30.0


def stall_after_field(default: float) -> Any:
    """The ``stall_after_s`` option, with the role's own default."""
    return Field(default=default, gt=0, le=86_400, description="Work in flight with no progress for this long makes the server stalled: "
                                                               "/health answers 503 and a supervisor replaces the process.")


async def deadlock(what: str) -> NoReturn:
    """A sim backend's modelled deadlock (its ``deadlock_after_steps`` options): says once what hangs, then waits for
    ever, leaving the event loop free to answer, as a backend stuck in a lock or a dead collective does. Cancellable."""
    at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")  # in the line itself: the hang bound is measured from it
    logging.getLogger(__name__).warning("sim deadlock: %s at %s; the server goes on answering, and /health reports the stall after stall_after_s", what, at)
    await asyncio.Event().wait()
    raise AssertionError("unreachable: nothing sets the event")


class Liveness:
    def __init__(self, stall_after_s: float, clock: Callable[[], float] = time.monotonic):
        self.stall_after_s = stall_after_s
        self._clock = clock
        self.inflight = 0
        self.completed = 0
        self.loop_lag_ms = 0.0
        self.loop_ticks = 0
        self._moved_at = clock()
        self._excuses: list[Callable[[], bool]] = []
        self._failures: list[Callable[[], str | None]] = []
        self._counters: list[Callable[[], float]] = []
        self._counted = 0.0
        self._deadlines: dict[int, float] = {}
        self._tokens = itertools.count()
        self._deadlines_lock = threading.Lock()  # env steps run in worker threads

    def watch_counter(self, read: Callable[[], float]) -> None:
        """``read()`` only grows, and grows as work advances (read when asked, so the hot path pays nothing)."""
        self._counters.append(read)

    def _moved(self) -> None:
        self._moved_at = self._clock()

    def _read_counters(self) -> None:
        counted = sum(read() for read in self._counters)
        if counted != self._counted:
            self._counted = counted
            self._moved()

    @property
    def progress(self) -> float:
        return self.completed + self._counted

    def excuse_while(self, waiting_by_design: Callable[[], bool]) -> None:
        """While ``waiting_by_design()`` is true, work in flight without progress is not a stall."""
        self._excuses.append(waiting_by_design)

    def fail_when(self, failure: Callable[[], str | None]) -> None:
        """``failure()`` says why the server can no longer work (None while it can); read when asked."""
        self._failures.append(failure)

    def failed(self) -> str | None:
        return next((why for why in (read() for read in self._failures) if why is not None), None)

    def problem(self) -> str | None:
        """What /health reports as wrong, or None when the server is live."""
        if (why := self.failed()) is not None:
            return f"failed: {why}"
        if self.stalled():
            return f"stalled: work in flight has not moved for {self.stall_after_s:g} s (stall_after_s)"
        return None

    def started(self) -> None:
        if self.inflight == 0:
            self._moved()  # idle time before this request is not a stall of it
        self.inflight += 1

    def finished(self) -> None:
        self.inflight -= 1
        self.completed += 1
        self._moved()

    def idle_s(self) -> float:
        self._read_counters()
        return self._clock() - self._moved_at

    @contextmanager
    def bounded(self, seconds: float) -> Iterator[None]:
        """Work that should end within ``seconds``: past that and OVERDUE_MARGIN_S it makes the server stalled."""
        token = next(self._tokens)
        with self._deadlines_lock:
            self._deadlines[token] = self._clock() + seconds + OVERDUE_MARGIN_S
        try:
            yield
        finally:
            with self._deadlines_lock:
                del self._deadlines[token]

    def overdue(self) -> int:
        now = self._clock()
        with self._deadlines_lock:
            return sum(1 for deadline in self._deadlines.values() if deadline < now)

    def stalled(self) -> bool:
        if self.overdue():
            return True
        if self.inflight == 0 or self.idle_s() < self.stall_after_s:
            return False
        if any(excused() for excused in self._excuses):
            self._moved()  # the wait by design restarts the stall clock
            return False
        return True

    def report(self) -> dict:
        return {"inflight": self.inflight, "completed": self.completed, "progress": self.progress,
                "idle_s": round(self.idle_s(), 3), "loop_lag_ms": round(self.loop_lag_ms, 1), "loop_ticks": self.loop_ticks, "overdue": self.overdue(), "stall_after_s": self.stall_after_s}

    async def watch_loop(self) -> None:
        """Measures event-loop lag, and feeds the systemd watchdog while the server is not stalled."""
        notify = SystemdNotifier.from_env()
        last_feed = 0.0
        while True:
            before = time.monotonic()
            await sleep(LAG_TICK_S)
            self.loop_lag_ms = max(0.0, (time.monotonic() - before - LAG_TICK_S) * 1000)
            self.loop_ticks += 1
            if last_feed == 0.0:
                notify.send("READY=1")  # a tick after the app's start-up, so the port is serving
            if time.monotonic() - last_feed >= WATCHDOG_EVERY_S and self.problem() is None:
                notify.send("WATCHDOG=1")
                last_feed = time.monotonic()


class LivenessMiddleware:
    """ASGI middleware counting the requests in flight; a completed request is progress."""

    def __init__(self, app: ASGIApp, liveness: Liveness):
        self.app = app
        self.liveness = liveness

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in UNWATCHED_PATHS:
            await self.app(scope, receive, send)
            return
        self.liveness.started()
        try:
            await self.app(scope, receive, send)
        finally:
            self.liveness.finished()


class SystemdNotifier:
    """sd_notify(3) over $NOTIFY_SOCKET (a unix datagram socket); does nothing outside systemd."""

    def __init__(self, address: str | None):
        self.address = "\0" + address[1:] if address and address.startswith("@") else address

    @classmethod
    def from_env(cls) -> "SystemdNotifier":
        return cls(os.environ.get("NOTIFY_SOCKET"))

    def send(self, message: str) -> None:
        if not self.address:
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            try:
                s.sendto(message.encode(), self.address)
            except OSError:
                pass  # systemd gone or restarting: the next beat tries again
