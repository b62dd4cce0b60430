"""Run a function on untrusted input in a worker process, with a hard timeout.

math-verify can take unbounded time (and memory) on adversarial input, e.g.
``\\boxed{9^{9^{9^{9}}}}``; its own timeouts use ``signal.alarm`` and only
work in the main thread. So verification runs here instead: each of
``workers`` threads drives one long-lived worker process, sends it a call,
and waits at most ``timeout_s`` for the answer. A worker that overruns is
killed and replaced (on the next call), so one pathological response costs
one process, never the server. ``concurrent.futures.ProcessPoolExecutor``
cannot do this: it cannot stop one running call without breaking the whole
pool.

Callers await ``run``; calls beyond ``workers`` wait their turn in the
thread pool's queue, and the timeout counts from when a worker takes the
call, so a busy server does not turn slow-but-correct answers into timeouts.

Workers are started with ``spawn`` (a fresh interpreter importing the
modules in ``preload`` before it reports ready, about half a second), as
direct children of the server, so that on Linux the kernel kills them when
the server dies (parent-death signal) even while they are stuck inside one
long C call; ``forkserver`` would make them children of the fork server,
which outlives a killed server for as long as its children run. A watchdog
thread covers other platforms, and ``memory_mb`` caps each worker's address
space so runaway big-integer arithmetic fails with MemoryError instead of
swapping the machine.
"""
from __future__ import annotations

import asyncio
import importlib
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable


class IsolationTimeout(Exception):
    """The call did not finish within its timeout; its worker was killed."""


class IsolationError(Exception):
    """The call raised in the worker, or the worker died or could not start; the message says which."""


def _die_with_parent(parent: int) -> None:
    try:  # Linux: the kernel kills us when the (thread of the) process that started us exits.
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:  # pragma: no cover - non-Linux
        pass

    def watch() -> None:  # also covers a parent that died before prctl ran
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _worker_main(conn: Any, parent: int, memory_mb: int | None, preload: tuple[str, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the server stops us
    _die_with_parent(parent)
    if memory_mb:
        try:
            import resource

            limit = memory_mb * 1024 * 1024
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
        except (ImportError, ValueError, OSError):  # pragma: no cover - no rlimits here
            pass
    for name in preload:
        importlib.import_module(name)
    conn.send(("ready", None))
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[str, Any] = ("ok", fn(*args))
        except MemoryError:
            reply = ("error", f"MemoryError: the call needed more memory than allowed (reward_memory_mb={memory_mb})")
        except BaseException as e:  # noqa: BLE001 - everything goes back to the caller
            reply = ("error", f"{type(e).__name__}: {e}")
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return


class _Worker:
    def __init__(self, ctx: Any, memory_mb: int | None, preload: tuple[str, ...], startup_timeout_s: float):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, os.getpid(), memory_mb, preload), name="rollflow-verifier", daemon=True)
        self.proc.start()
        child.close()
        try:
            ready = self.conn.poll(startup_timeout_s) and self.conn.recv() == ("ready", None)
        except (EOFError, OSError):
            ready = False
        if not ready:
            self.kill()
            raise IsolationError(f"verifier worker failed to start within {startup_timeout_s} s")

    def kill(self, close_conn: bool = True) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)
        if close_conn:  # only the thread that owns the worker closes its pipe
            self.conn.close()


class IsolatedRunner:
    def __init__(self, workers: int = 2, memory_mb: int | None = None, preload: tuple[str, ...] = (),
                 startup_timeout_s: float = 120.0):
        self._ctx = multiprocessing.get_context("spawn")
        self._memory_mb, self._preload, self._startup_timeout_s = memory_mb, tuple(preload), startup_timeout_s
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rollflow-verifier")
        self._local = threading.local()
        self._workers: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = False

    async def run(self, fn: Callable[..., Any], args: tuple, timeout_s: float) -> Any:
        """``fn(*args)`` in a worker process; IsolationTimeout after ``timeout_s`` s of running, IsolationError if it raised or its worker died.

        ``fn`` and ``args`` must pickle (a module-level function is sent by name)."""
        if self._closed:
            raise IsolationError("the verifier pool is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._call, fn, args, timeout_s)

    def _call(self, fn: Callable[..., Any], args: tuple, timeout_s: float) -> Any:
        worker: _Worker | None = getattr(self._local, "worker", None)
        if worker is None or not worker.proc.is_alive():
            if worker is not None:
                self._discard(worker)
            worker = self._local.worker = _Worker(self._ctx, self._memory_mb, self._preload, self._startup_timeout_s)
            with self._lock:
                closed = self._closed
                if not closed:
                    self._workers.add(worker)
            if closed:
                self._discard(worker)
                raise IsolationError("the verifier pool is closed")
        try:
            worker.conn.send((fn, args))
            if not worker.conn.poll(timeout_s):
                self._discard(worker)
                raise IsolationTimeout(f"no answer within {timeout_s} s")
            status, value = worker.conn.recv()
        except (EOFError, OSError, BrokenPipeError) as e:
            code = worker.proc.exitcode
            self._discard(worker)
            raise IsolationError(f"verifier worker died (exit code {code})") from e
        if status != "ok":
            raise IsolationError(value)
        return value

    def _discard(self, worker: _Worker) -> None:
        if getattr(self._local, "worker", None) is worker:
            self._local.worker = None
        with self._lock:
            self._workers.discard(worker)
        worker.kill()

    def close(self) -> None:
        """Kill every worker; calls after this raise IsolationError. Idempotent."""
        with self._lock:
            self._closed = True
            workers, self._workers = list(self._workers), set()
        for worker in workers:
            worker.kill(close_conn=False)  # a thread still waiting on it sees EOF and reports the death
        self._threads.shutdown(wait=False, cancel_futures=True)

    @property
    def alive_workers(self) -> int:
        with self._lock:
            return sum(w.proc.is_alive() for w in self._workers)
