"""Helpers for the inference-role tests: an app with its lifespan running (so the
scheduler loop is real), an ASGI client, and ways to wait on engine state
with a deadline instead of sleeping."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.exports import write_export_manifest
from rollflow_engines.roles.inference.engine import Seq
from rollflow_engines.roles.inference.stepped import SteppedEngine


@asynccontextmanager
async def serve(backend: str, **options: Any) -> AsyncIterator[tuple[httpx.AsyncClient, SteppedEngine]]:
    app = create_app(ServeConfig(role="inference", backend=backend, options=options))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://inference", timeout=60) as client:
            yield client, app.state.inference_engine


async def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Polls ``predicate`` until it holds; the deadline only guards against a hang."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


class Gate:
    """Holds the scheduler loop before the first step at which ``predicate(batch)`` holds,
    until ``open()``: the test then acts at an exact token count."""

    def __init__(self, engine: SteppedEngine, predicate: Callable[[list[Seq]], bool]):
        self.predicate = predicate
        self.reached = asyncio.Event()
        self._open = asyncio.Event()
        engine.step_hook = self._hook

    async def _hook(self, batch: list[Seq]) -> None:
        if not self._open.is_set() and self.predicate(batch):
            self.reached.set()
            await self._open.wait()

    async def wait_reached(self, timeout_s: float = 60.0) -> None:
        await asyncio.wait_for(self.reached.wait(), timeout_s)

    def open(self) -> None:
        self._open.set()


def tokens_of(batch: list[Seq], n: int) -> bool:
    """Gate predicate: the first running sequence has ``n`` tokens."""
    return bool(batch) and len(batch[0].tokens) >= n


# Per backend: options for a long, deterministic generation that only max_tokens ends.
LONG = {"sim": {"sim_response_length": 10_000}, "torch": {"ignore_eos": True, "temperature": 0}}


# The trainer backend whose exports each inference backend loads in these tests.
TRAINER_FOR = {"sim": "sim", "torch": "torch", "vllm": "torch"}


def as_export(directory: Path, server: str, **fields: Any) -> Path:
    """``directory`` (created if missing) with the manifest /export_weights writes, as the trainer paired with
    an inference server of backend ``server`` would write it (model tiny:default); ``fields`` override its entries."""
    directory.mkdir(parents=True, exist_ok=True)
    trainer = TRAINER_FOR[server]
    description = {"backend": trainer, **({} if trainer == "sim" else {"model": "tiny:default"}), **fields}
    write_export_manifest(directory, description, version=1)
    return directory
