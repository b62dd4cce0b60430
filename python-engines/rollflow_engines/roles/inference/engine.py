"""The engine interface every inference backend implements, with the request and result types it speaks.

The step-wise scheduler that the sim and torch backends share is stepped.py; the chat-template
continuation the Hugging Face backends share is models/chat.py.
"""
from __future__ import annotations

import asyncio
import hashlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConflictError
from ...exports import ServedModel, check_export_fits, read_export_manifest
from ...objects import is_object_ref
from .metrics import InferenceMetrics
from .weights_cache import WeightsCache


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
    weights_cache: WeightsCache | None = None  # where s3:// exports are pulled (build_engine gives every engine one)
    # Set by pause() once the pause has taken effect (aborted, frozen or drained), cleared by resume(): see holds_by_design.
    pause_settled: bool = False
    # Why the engine can no longer serve (its scheduler died), or None: /health reports it (liveness.fail_when).
    failure: str | None = None

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

    def holds_by_design(self) -> bool:
        """True while requests wait without tokens because the server holds them by design, so /health does not call it
        stalled: paused, and the pause has taken effect. A pause still waiting (for the step in flight to end, for the
        batch to drain) is not a hold: if that step never returns, the server is hung, and excusing it would keep a
        useless server alive for good."""
        return self.pause_settled and bool(self.state()["paused"])

    def check_weights(self, path: str) -> Path:
        """The export directory at ``path``, if its manifest fits the served model; else an error naming ``path``.
        An s3:// ref is pulled into the weights cache first (weights_cache.py), so this blocks: call it in a thread."""
        if is_object_ref(path):
            if self.weights_cache is None:
                raise ConflictError("path", "this engine has no weights cache to pull an s3:// export into", path)
            return self.weights_cache.pull(path, lambda manifest: check_export_fits(path, manifest, self.served))
        directory, manifest = read_export_manifest(path)
        check_export_fits(path, manifest, self.served)
        return directory

    async def fetch_weights(self, path: str) -> Path:
        """check_weights off the event loop, for a paused server; refused (retry later) if it was resumed meanwhile
        (a pull takes a while), since weights load only between a pause and a resume."""
        directory = await asyncio.to_thread(self.check_weights, path)
        if not self.state()["paused"]:
            raise ConflictError("state", "the server was resumed while the weights were fetched: POST /pause, then update again",
                                "running", "not_paused")
        return directory

    def weights_loaded(self, directory: Path) -> None:
        """The server now serves ``directory``: the cache keeps it while the next export is pulled."""
        if self.weights_cache is not None:
            self.weights_cache.loaded(directory)


def hf_decode(tokenizer, token_ids: list[int], metrics: InferenceMetrics) -> str:
    """Text of ``token_ids`` (torch, vllm backends). Hugging Face tokenizers decode bytes that are not
    UTF-8 (a byte-level token sequence cut inside a character) as U+FFFD rather than fail; each
    one is counted, so a model that emits broken text shows in the metrics, not as a crash."""
    text = tokenizer.decode(token_ids, skip_special_tokens=True)
    metrics.replacement_chars.inc(text.count("\ufffd"))
    return text
