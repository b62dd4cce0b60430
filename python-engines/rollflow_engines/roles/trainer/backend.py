"""The interface every trainer backend implements, and what they share.

A backend owns the weights, the optimizer and the policy ``version`` (train
steps applied). The HTTP layer (api.py) serialises calls; a backend only has
to do the work and call ``commit`` in the same uninterruptible stretch that
changed the weights, so the version never disagrees with the weights even if
the request is cancelled.
"""
from __future__ import annotations

import asyncio
import math
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from .batch import PreparedBatch
from .contracts import TokenSequence, TrainStepRequest, TrainStepResponse

T = TypeVar("T")


@dataclass
class RecordedStep:
    """The last train step, kept to answer a retried call without training twice."""

    fingerprint: str
    response: TrainStepResponse

    def to_json(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "response": self.response.model_dump(mode="json")}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RecordedStep":
        return cls(data["fingerprint"], TrainStepResponse.model_validate(data["response"]))


class TrainerBackend(ABC):
    """One implementation of the trainer role (sim, torch, megatron)."""

    name: str = "?"

    def __init__(self, options: Any):
        self.options = options
        self.version = 0
        self.last_step: RecordedStep | None = None
        self.vocab_size: int | None = None  # None: token ids are not checked against a vocabulary
        self.micro_batches = 0  # forward/backward passes done: the progress liveness.py watches mid-step
        self.on_commit: list[Callable[[TrainStepResponse, PreparedBatch], None]] = []
        self._commit_lock = threading.Lock()

    # ---- what each backend implements

    @abstractmethod
    async def train_step(self, req: TrainStepRequest, batch: PreparedBatch) -> TrainStepResponse:
        """Train on ``batch``; ends with ``return self.commit(req, batch, metrics)``."""

    @abstractmethod
    async def logprobs(self, sequences: list[TokenSequence], temperature: float) -> list[list[float]]:
        """Per-token logprobs of each response under the current weights (see contracts.py)."""

    @abstractmethod
    async def save_state(self, directory: Path) -> None:
        """Write weights, optimizer and RNG state into the empty ``directory``."""

    @abstractmethod
    async def load_state(self, directory: Path, version: int, last_step: RecordedStep | None) -> None:
        """Restore what ``save_state`` wrote, then set ``version`` and ``last_step`` in the same
        uninterruptible stretch; RequestError(field "path") before changing anything if it does not fit."""

    @abstractmethod
    async def export_weights(self, directory: Path) -> None:
        """Write a from_pretrained-loadable model (safetensors) + tokenizer into the empty ``directory``."""

    async def export_hf(self, directory: Path, adapter_directory: Path) -> None:
        """The policy for a checkpoint's HF export: a from_pretrained-loadable model + tokenizer in the empty
        ``directory``. A backend that trains an adapter merges it into a copy there and writes the adapter
        itself to ``adapter_directory`` (which does not exist yet); by default the export of a weight sync."""
        await self.export_weights(directory)

    def describe(self) -> dict[str, Any]:
        """What a checkpoint or export records about the model it came from (an inference server
        checks an export's backend, model and vocab_size before loading it)."""
        return {"backend": self.name, "vocab_size": self.vocab_size}

    # ---- shared

    def commit(self, req: TrainStepRequest, batch: PreparedBatch, metrics: dict[str, float]) -> TrainStepResponse:
        """Advance the version and record the step; call it right after the weights changed."""
        with self._commit_lock:
            # A NaN metric (e.g. from absurd rewards) must not lose the step: drop it and count it.
            finite = {k: float(v) for k, v in metrics.items() if math.isfinite(v)}
            if len(finite) < len(metrics):
                finite["nonfinite_metrics"] = float(len(metrics) - len(finite))
            response = TrainStepResponse(step=req.step, version=req.step + 1, metrics=finite)
            self.version = req.step + 1
            self.last_step = RecordedStep(batch.fingerprint, response.model_copy(update={"replayed": True}))
            for observer in self.on_commit:
                observer(response, batch)
            return response


async def run_in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` off the event loop. A thread cannot be interrupted, so if the
    caller is cancelled this still waits for ``fn`` to finish before re-raising:
    whoever holds the trainer's lock keeps it until the weights stop changing."""
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result


class MetricAverager:
    """Weighted mean of per-micro-batch metrics (weights: the loss aggregation's)."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.weights: dict[str, float] = {}

    def add(self, metrics: dict[str, Any], weight: float) -> None:
        for k, v in metrics.items():
            self.sums[k] = self.sums.get(k, 0.0) + float(v) * weight
            self.weights[k] = self.weights.get(k, 0.0) + weight

    def means(self) -> dict[str, float]:
        return {k: self.sums[k] / self.weights[k] for k in self.sums if self.weights[k] > 0}
