"""The step-wise scheduler that the sim and torch backends share.

One asyncio task (the scheduler loop) owns the running batch. Each iteration it
admits waiting sequences up to ``max_batch``, then runs one decode step for the
whole batch: every running sequence gets exactly one token. Sequences join and
leave only between steps, so a long request never blocks a short one
(continuous batching), and pause/abort/update_weights act between steps: they
take ``_step_lock``, which the loop holds for the duration of a step.

Pause modes:
- abort: running sequences finish at once with their partial tokens and
  finish_reason "abort";
- keep: running sequences stay in the batch, frozen, and continue after resume;
- wait: running sequences keep stepping until they finish; /pause returns then.
In every mode nothing new is admitted until /resume: a request that arrives
while paused (or was queued behind a full batch) waits and then runs on
whatever weights are loaded at resume.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from ...errors import ConflictError
from .engine import Delta, Generation, InferenceEngine, SamplingParams, Seq, spans_between
from .metrics import InferenceMetrics

log = logging.getLogger(__name__)


class SteppedEngine(InferenceEngine):
    """The scheduler loop; subclasses supply one decode step and weight loading."""

    eos_token_ids: frozenset[int] = frozenset()

    def __init__(self, max_batch: int, metrics: InferenceMetrics):
        self.max_batch = max_batch
        self.metrics = metrics
        self.version = 0
        self.pause_mode: str | None = None
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self._wake = asyncio.Event()
        self._changed = asyncio.Condition()
        self._step_lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        # Awaited before each step, outside the step lock: lets tests hold the
        # loop at an exact token count without sleeping.
        self.step_hook: Callable[[list[Seq]], Awaitable[None]] | None = None
        metrics.bind(self)

    # --- backend hooks -------------------------------------------------

    def _admit(self, seq: Seq) -> None:
        """Per-sequence backend state, set when a sequence joins the batch."""

    @abstractmethod
    async def _step(self, batch: list[Seq]) -> list[tuple[int, float]]:
        """One decode step: a (token id, logprob) for every sequence of ``batch``, in order."""

    @abstractmethod
    async def _load_weights(self, path: Path) -> None:
        """Loads new weights; called between steps with the step lock held."""

    # --- lifecycle -----------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=f"inference-{self.backend_name}-scheduler")
            self._task.add_done_callback(self._loop_ended)

    def _loop_ended(self, task: asyncio.Task[None]) -> None:
        """The loop only ends by stop()'s cancel; any other end leaves a server that answers but serves nothing, so
        it is logged now, with its cause, and /health reports it (liveness.fail_when) for a supervisor to replace."""
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        self.failure = f"the scheduler loop died: {type(error).__name__}: {error}"
        log.error("%s; no request will be served until the server is restarted", self.failure, exc_info=error)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():  # a loop that died was reported by _loop_ended
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for seq in [*self.running, *self.waiting]:
            self._finish(seq, "abort")
        self.running, self.waiting = [], deque()

    # --- requests ------------------------------------------------------

    async def _enqueue(self, prompt: list[int], params: SamplingParams, n: int, progress: asyncio.Event | None = None) -> list[Seq]:
        await self.start()  # normally done by the lifespan; harmless when it was
        stop_ids = params.stop_token_ids if params.ignore_eos else params.stop_token_ids | self.eos_token_ids
        seqs = [Seq(prompt, params, i, stop_ids, progress) for i in range(n)]
        self.waiting.extend(seqs)
        self._wake.set()
        return seqs

    def _cancel(self, seqs: list[Seq]) -> None:
        for s in seqs:
            s.cancelled = True
        self._wake.set()

    async def generate(self, prompt: list[int], params: SamplingParams, n: int) -> list[Generation]:
        seqs = await self._enqueue(prompt, params, n)
        try:
            if n == 1:
                await seqs[0].future
            else:
                await asyncio.gather(*(s.future for s in seqs))
        except asyncio.CancelledError:
            # The client went away: drop its sequences at the next step boundary.
            self._cancel(seqs)
            raise
        return [s.result() for s in seqs]

    async def generate_stream(self, prompt: list[int], params: SamplingParams, n: int) -> AsyncIterator[list[Delta]]:
        progress = asyncio.Event()
        seqs = await self._enqueue(prompt, params, n, progress)
        sent = [0] * n
        open_ = set(range(n))
        try:
            while open_:
                await progress.wait()
                progress.clear()
                # Whatever accumulated since the last wake-up goes out as one delta per choice,
                # so a slow reader gets fewer, larger chunks instead of falling behind.
                deltas: list[Delta] = []
                for i in sorted(open_):
                    seq = seqs[i]
                    if seq.future.done() and seq.future.exception() is not None:
                        raise seq.future.exception()  # type: ignore[misc]
                    finished = seq.future.done()
                    end = len(seq.tokens)
                    if end == sent[i] and not finished:
                        continue
                    deltas.append(Delta(i, seq.tokens[sent[i]:end], seq.logprobs[sent[i]:end],
                                        spans_between(seq.spans, sent[i], end), seq.finish_reason if finished else None))
                    sent[i] = end
                    if finished:
                        open_.discard(i)
                if deltas:
                    yield deltas
        finally:
            if open_:  # the client went away (or the step failed): drop the rest at the next step boundary
                self._cancel(seqs)

    async def pause(self, mode: str) -> tuple[int, int]:
        self.pause_mode = mode
        self.pause_settled = False
        self._wake.set()
        await self._notify()
        aborted = 0
        if mode == "abort":
            async with self._step_lock:
                victims, self.running = self.running, []
                for seq in victims:
                    self._finish(seq, "abort")
                aborted = len(victims)
            await self._notify()
        elif mode == "keep":
            async with self._step_lock:
                pass  # returns once no step is in flight: the batch is frozen
        else:
            async with self._changed:
                await self._changed.wait_for(lambda: not self.running or self.pause_mode != "wait")
        self.pause_settled = True
        return aborted, len(self.running) if self.pause_mode == "keep" else 0

    async def resume(self) -> None:
        self.pause_mode = None
        self.pause_settled = False
        self._wake.set()
        await self._notify()

    async def update_weights(self, path: str, version: int) -> None:
        if self.pause_mode is None:
            raise ConflictError("state", "update_weights needs a paused server: POST /pause first", "running", "not_paused")
        p = await self.fetch_weights(path)
        async with self._step_lock:
            await self._load_weights(p)
            self.version = version
        self.weights_loaded(p)

    def state(self) -> dict[str, Any]:
        return {
            "backend": self.backend_name, "model": self.model_name, "version": self.version,
            "paused": self.pause_mode is not None, "pause_mode": self.pause_mode,
            "running": len(self.running), "waiting": len(self.waiting), "max_batch": self.max_batch,
        }

    # --- the scheduler loop -------------------------------------------

    async def _loop(self) -> None:
        while True:
            self._drop_cancelled()
            if self.pause_mode is None:
                while self.waiting and len(self.running) < self.max_batch:
                    seq = self.waiting.popleft()
                    if seq.cancelled:
                        continue
                    try:
                        self._admit(seq)
                    except Exception as e:  # a backend bug on this request: fail it, keep serving the others
                        log.exception("could not admit a sequence")
                        self._fail([seq], e)
                        continue
                    self.running.append(seq)
            if not self.running or self.pause_mode in ("abort", "keep"):
                self._wake.clear()
                await self._wake.wait()
                continue
            if self.step_hook is not None:
                await self.step_hook(self.running)
            async with self._step_lock:
                # A pause may have arrived while we waited for the lock or the hook.
                if self.pause_mode in ("abort", "keep") or not self.running:
                    continue
                batch = list(self.running)
                try:
                    outputs = await self._step(batch)
                except Exception as e:  # a backend bug: fail these requests, keep serving
                    log.exception("decode step failed")
                    self._fail(batch, e)
                    self.running = [s for s in self.running if s not in batch]
                    continue
                self._record(batch, outputs)
            await self._notify()
            # A step with no latency never yields by itself; let HTTP handlers in.
            await asyncio.sleep(0)

    def _record(self, batch: list[Seq], outputs: list[tuple[int, float]]) -> None:
        version = self.version
        finished = False
        for seq, (token, logprob) in zip(batch, outputs):
            seq.append(token, logprob, version)
            if token in seq.stop_ids:
                self._finish(seq, "stop")
                finished = True
            elif len(seq.tokens) >= seq.params.max_tokens:
                self._finish(seq, "length")
                finished = True
        self.metrics.tokens_generated.inc(len(batch))
        if finished:
            self.running = [s for s in self.running if s.finish_reason is None]

    @staticmethod
    def _fail(seqs: list[Seq], error: Exception) -> None:
        for seq in seqs:
            if not seq.future.done():
                seq.future.set_exception(error)
                if seq.progress is not None:
                    seq.progress.set()

    def _finish(self, seq: Seq, reason: str) -> None:
        seq.finish_reason = reason
        if seq.progress is not None:
            seq.progress.set()
        if not seq.future.done():
            seq.future.set_result(None)
            self.metrics.requests.labels(finish_reason=reason).inc()

    def _drop_cancelled(self) -> None:
        if any(s.cancelled for s in self.running):
            self.running = [s for s in self.running if not s.cancelled]
        if any(s.cancelled for s in self.waiting):
            self.waiting = deque(s for s in self.waiting if not s.cancelled)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()
