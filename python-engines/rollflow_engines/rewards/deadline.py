"""Run sandboxed verifiers in server threads under a deadline that is enforced, not only advised.

A sandboxed verifier (code_exec) is given ``reward_timeout_s`` and keeps to it on its own; but a thread
cannot be killed, and one that does not return (a read that blocks, a sandbox teardown that hangs, a bug)
would hold its request open and its thread busy, and each retry of that reply another, until every
sandboxed reward of the server waits. So each call runs in a scope that records the workspaces it opens
(``sandbox.settings.on_open``), and a timer stops it at ``limit_s + GRACE_S`` from the moment it started
running (time queued behind other calls is not the reply's):

1. its workspaces are removed: that kills its sandboxes' processes and frees their uids; a ``run`` in
   progress raises SandboxError, so the thread returns too; a workspace opened later is removed at once;
2. only then does the request answer, with ``DeadlineExceeded`` (the env role scores it 0 with
   ``info.timeout``): a retry never runs beside the processes of the call it replaces.

A SandboxError (or any error) that the call raises once it has been stopped is the consequence of the
stop, hence the reply's timeout, never the infrastructure's failure; one raised before the deadline is
passed through (a 503).
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..errors import RequestError
from ..sandbox import SandboxError, Workspace
from ..sandbox.settings import on_open

log = logging.getLogger(__name__)

# Past its time limit a verifier is given this long to return on its own (code_exec checks its deadline
# between tests and cuts each test's wall clock to what is left, then tears the sandbox down) before it is stopped.
GRACE_S = 1.0


def default_threads() -> int:
    """As many threads as asyncio.to_thread's default pool, where sandboxed verifiers used to run."""
    return min(32, (os.cpu_count() or 1) + 4)


class DeadlineExceeded(Exception):
    """The call had not returned by its deadline; it was stopped (its workspaces removed)."""


class _Call:
    """One verifier call's workspaces, and whether it was stopped. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workspaces: list[Workspace] = []
        self.stopped = False

    def opened(self, workspace: Workspace) -> None:
        with self._lock:
            if not self.stopped:
                self._workspaces.append(workspace)
                return
        raise SandboxError("the verification was stopped at its deadline")  # SandboxSettings.open removes it

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            workspaces, self._workspaces = self._workspaces, []
        for workspace in workspaces:
            try:
                workspace.remove()
            except Exception as e:  # processes that survive SIGKILL: the machine's trouble, the reply still timed out
                log.error("could not remove %s of a verification stopped at its deadline: %s", workspace, e)


class DeadlineRunner:
    """Runs ``fn(*args, limit_s)`` in one of ``threads`` server threads; see the module's docstring."""

    def __init__(self, threads: int, grace_s: float = GRACE_S):
        self.grace_s = grace_s
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="rollflow-sandboxed")
        self._lock = threading.Lock()
        self.stops = 0  # calls stopped at their deadline (tests read it)

    async def run(self, fn: Callable[..., Any], args: tuple, limit_s: float) -> Any:
        """``fn(*args, limit_s)``'s result or exception; DeadlineExceeded once it is stopped."""
        loop = asyncio.get_running_loop()
        call = _Call()
        stopped: asyncio.Future = loop.create_future()

        def answer_stopped() -> None:  # on the event loop
            if not stopped.done():
                stopped.set_result(None)

        def stop() -> None:  # on the timer's thread
            call.stop()
            with self._lock:
                self.stops += 1
            try:
                loop.call_soon_threadsafe(answer_stopped)
            except RuntimeError:  # the loop closed (the server stopped): nobody waits for the answer
                pass

        work = loop.run_in_executor(self._pool, self._call, call, stop, fn, args, limit_s)
        work.add_done_callback(_retrieve)  # its late exception, after a stop, is no one's to read
        await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():
            raise DeadlineExceeded(f"verification took longer than reward_timeout_s={limit_s:g} s; it was stopped")
        try:
            return work.result()
        except RequestError:
            raise  # a malformed request is never the stop's doing
        except Exception as e:
            if call.stopped:
                await stopped  # the stop is still removing workspaces: answer once they are gone
                raise DeadlineExceeded(f"verification took longer than reward_timeout_s={limit_s:g} s; it was stopped") from e
            raise

    def _call(self, call: _Call, stop: Callable[[], None], fn: Callable[..., Any], args: tuple, limit_s: float) -> Any:
        timer = threading.Timer(limit_s + self.grace_s, stop)  # counts from here: queueing is not the reply's time
        timer.daemon = True
        token = on_open.set(call.opened)
        timer.start()
        try:
            return fn(*args, limit_s)
        finally:
            timer.cancel()
            on_open.reset(token)

    def close(self) -> None:
        """Queued calls are dropped; running ones end at their deadline (their workspaces also go with the janitor)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def _retrieve(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()
