"""The engine interface every inference backend implements, and the step-wise
scheduler that the sim and torch backends share.

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
import hashlib
import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConflictError
from ...exports import ServedModel, check_export_fits, read_export_manifest
from .metrics import InferenceMetrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1  # -1: no top-k truncation
    seed: int | None = None
    stop_token_ids: frozenset[int] = frozenset()
    ignore_eos: bool = False
    sim_response_length: int | None = None


@dataclass
class Generation:
    """One finished sample: what a choice in the response is built from."""

    index: int
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    version_spans: list[tuple[int, int, int]]  # (version, start, end), end exclusive


@dataclass
class Delta:
    """What one choice added since the last delta of a stream; ``finish_reason`` is set on its last."""

    index: int
    token_ids: list[int]
    logprobs: list[float]
    version_spans: list[tuple[int, int, int]]  # positions within the whole choice, clipped to this delta
    finish_reason: str | None


def spans_between(spans: list[list[int]] | list[tuple[int, int, int]], start: int, end: int) -> list[tuple[int, int, int]]:
    """The version spans of tokens [start, end) of a choice."""
    return [(v, max(s, start), min(e, end)) for v, s, e in spans if s < end and e > start]


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts; stable across processes and Python versions (unlike hash())."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


class Seq:
    """One sample being generated; ``state`` belongs to the backend (rng, torch.Generator, ...)."""

    __slots__ = ("prompt", "params", "index", "stop_ids", "tokens", "logprobs", "spans", "future",
                 "finish_reason", "state", "prefilled", "cancelled", "progress")

    def __init__(self, prompt: list[int], params: SamplingParams, index: int, stop_ids: frozenset[int],
                 progress: asyncio.Event | None = None):
        self.prompt, self.params, self.index, self.stop_ids = prompt, params, index, stop_ids
        # Set on every token and at the end: a streaming request waits on it.
        self.progress = progress
        self.tokens: list[int] = []
        self.logprobs: list[float] = []
        self.spans: list[list[int]] = []  # [version, start, end]
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.finish_reason: str | None = None
        self.state: Any = None
        self.prefilled = False
        self.cancelled = False

    def append(self, token: int, logprob: float, version: int) -> None:
        pos = len(self.tokens)
        self.tokens.append(token)
        self.logprobs.append(logprob)
        if self.spans and self.spans[-1][0] == version:
            self.spans[-1][2] = pos + 1
        else:
            self.spans.append([version, pos, pos + 1])
        if self.progress is not None:
            self.progress.set()

    def result(self) -> Generation:
        return Generation(self.index, self.tokens, self.logprobs, self.finish_reason or "abort",
                          [(v, s, e) for v, s, e in self.spans])


class InferenceEngine(ABC):
    """What the HTTP layer needs from a backend; endpoints never look at the backend's name."""

    backend_name: str
    model_name: str
    max_batch: int
    metrics: InferenceMetrics
    served: ServedModel  # what exported weights must match to be loaded

    async def start(self) -> None:
        """Starts background work; called from the app's lifespan."""

    async def stop(self) -> None:
        """Ends background work; pending requests return with finish_reason abort."""

    @abstractmethod
    def check_request(self, prompt: list[int], params: SamplingParams) -> None:
        """Raises RequestError (naming the field) if this backend cannot serve the request."""

    @abstractmethod
    def chat_prompt(self, messages: list[dict[str, str]]) -> list[int]:
        """Token ids of the chat-templated conversation, ending with the assistant turn's header."""

    @abstractmethod
    def chat_continuation(self, history: list[dict[str, str]], messages: list[dict[str, str]]) -> list[int]:
        """Token ids that follow the generated last turn of ``history``: its end, ``messages``, the next assistant header."""

    @abstractmethod
    def decode(self, token_ids: list[int]) -> str | None:
        """Text of a completion, or None when the backend has no tokenizer."""

    @abstractmethod
    async def generate(self, prompt: list[int], params: SamplingParams, n: int) -> list[Generation]: ...

    @abstractmethod
    def generate_stream(self, prompt: list[int], params: SamplingParams, n: int) -> AsyncIterator[list[Delta]]:
        """The same generation as ``generate``, yielding what each choice added as it is produced.
        Deltas of one choice arrive in order; closing the iterator early cancels the request."""

    @abstractmethod
    async def pause(self, mode: str) -> tuple[int, int]:
        """Returns (aborted, frozen) sequence counts."""

    @abstractmethod
    async def resume(self) -> None: ...

    @abstractmethod
    async def update_weights(self, path: str, version: int) -> None: ...

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """The fields of contracts.EngineState."""

    def check_weights(self, path: str) -> Path:
        """The export directory at ``path``, if its manifest fits the served model; else an error naming ``path``."""
        directory, manifest = read_export_manifest(path)
        check_export_fits(path, manifest, self.served)
        return directory


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

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
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
        return aborted, len(self.running) if self.pause_mode == "keep" else 0

    async def resume(self) -> None:
        self.pause_mode = None
        self._wake.set()
        await self._notify()

    async def update_weights(self, path: str, version: int) -> None:
        if self.pause_mode is None:
            raise ConflictError("state", "update_weights needs a paused server: POST /pause first", "running", "not_paused")
        p = self.check_weights(path)
        async with self._step_lock:
            await self._load_weights(p)
            self.version = version

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
                    if not seq.cancelled:
                        self._admit(seq)
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
                    for seq in batch:
                        if not seq.future.done():
                            seq.future.set_exception(e)
                            if seq.progress is not None:
                                seq.progress.set()
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


def hf_decode(tokenizer, token_ids: list[int], metrics: InferenceMetrics) -> str:
    """Text of ``token_ids`` (torch, vllm backends). Hugging Face tokenizers decode bytes that are not
    UTF-8 (a byte-level token sequence cut inside a character) as U+FFFD rather than fail; each
    one is counted, so a model that emits broken text shows in the metrics, not as a crash."""
    text = tokenizer.decode(token_ids, skip_special_tokens=True)
    metrics.replacement_chars.inc(text.count("\ufffd"))
    return text


def hf_chat_continuation(tokenizer, history: list[dict[str, str]], messages: list[dict[str, str]]) -> list[int]:
    """Chat-template continuation for Hugging Face tokenizers (torch, vllm backends).

    Renders the conversation up to the last assistant turn's content, and the
    whole conversation with the new messages and a generation prompt; the ids of
    the text between the two are the continuation. Templates that rewrite
    earlier turns (so the first text is not a prefix of the second) are refused:
    their multi-turn token ids cannot be kept end to end.
    """
    from ...errors import RequestError

    if history[-1]["role"] != "assistant":
        raise RequestError("history", "must end with the assistant turn just generated")
    try:
        head = tokenizer.apply_chat_template(history[:-1], add_generation_prompt=True, tokenize=False) + history[-1]["content"]
        full = tokenizer.apply_chat_template(history + messages, add_generation_prompt=True, tokenize=False)
    except Exception as e:  # a template may reject a conversation (e.g. role order)
        raise RequestError("messages", f"chat template failed: {e}") from e
    if not full.startswith(head):
        raise RequestError("history", "this chat template re-renders earlier turns, so continuation tokens cannot be isolated")
    return [int(t) for t in tokenizer.encode(full[len(head):], add_special_tokens=False)]
