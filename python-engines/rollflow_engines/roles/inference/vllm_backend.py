"""The vllm backend: vLLM's AsyncLLM (v1 engine) behind the same endpoints.

NOT RUN HERE: written against vLLM's public API as of its v1 engine
(``AsyncLLM.generate / abort / pause_generation(mode=...) / resume_generation /
collective_rpc``) but never executed, since this machine has no GPU and no
vllm. Treat it as a starting point to verify on a GPU host.

vLLM does its own continuous batching, so this class does not use the
step-wise scheduler; it maps our protocol onto vLLM's:
- pause abort/keep/wait -> ``pause_generation(mode=...)``; while paused, new
  requests wait here before they reach vLLM;
- update_weights -> ``collective_rpc("update_config", ...)`` pointing the model
  config at the new directory, then ``collective_rpc("reload_weights")``;
- version_spans: tokens arrive as deltas (RequestOutputKind.DELTA) and are
  credited to the version loaded when they arrive; a delta in flight across
  a "keep" pause can be credited to the old version.
Known gap: vLLM reports logprobs of the raw logits (temperature 1) by default
(``logprobs_mode="raw_logprobs"``); contracts.py's convention differs when
temperature is neither 0 nor 1.
"""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ...errors import ConflictError, RequestError
from ...exports import HF_EXPORTERS, ServedModel
from ...models import resolve_model_path
from ...models.chat import hf_chat_continuation, hf_chat_prompt
from .engine import Delta, Generation, InferenceEngine, SamplingParams, derive_seed, hf_decode
from .metrics import InferenceMetrics
from .options import Options


class VllmEngine(InferenceEngine):
    backend_name = "vllm"

    def __init__(self, options: Options, metrics: InferenceMetrics):
        from vllm.engine.arg_utils import AsyncEngineArgs  # guarded: Options refuses vllm when it is missing

        self.options = options
        self.metrics = metrics
        self.max_batch = options.max_batch
        model = str(resolve_model_path(options.model, options.model_seed)) if options.model.startswith("tiny:") else options.model
        self.model_name = options.served_model_name or options.model
        # The vocabulary is vLLM's to know once loaded; the manifest's backend and model are still checked.
        self.served = ServedModel(self.backend_name, HF_EXPORTERS, options.model, vocab_size=None)
        self.engine_args = AsyncEngineArgs(model=model, seed=options.seed, max_num_seqs=options.max_batch, **options.vllm)
        self.llm: Any = None
        self.tokenizer: Any = None
        self.version = 0
        self.pause_mode: str | None = None
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._running: dict[str, int] = {}  # request id -> tokens so far
        self._waiting = 0
        metrics.bind(self)

    async def start(self) -> None:
        from vllm.v1.engine.async_llm import AsyncLLM

        if self.llm is None:
            self.llm = AsyncLLM.from_engine_args(self.engine_args)
            self.tokenizer = self.llm.get_tokenizer()

    async def stop(self) -> None:
        if self.llm is not None:
            self.llm.shutdown()
            self.llm = None

    def check_request(self, prompt: list[int], params: SamplingParams) -> None:
        if params.sim_response_length is not None:
            raise RequestError("sim_response_length", "only the sim backend honours it", params.sim_response_length)
        # vLLM validates ids and context length itself; its errors surface from generate().

    def chat_prompt(self, messages: list[dict[str, str]]) -> list[int]:
        return hf_chat_prompt(self.tokenizer, messages)

    def chat_continuation(self, history: list[dict[str, str]], messages: list[dict[str, str]]) -> list[int]:
        return hf_chat_continuation(self.tokenizer, history, messages)

    def decode(self, token_ids: list[int]) -> str | None:
        return hf_decode(self.tokenizer, token_ids, self.metrics)

    async def generate(self, prompt: list[int], params: SamplingParams, n: int) -> list[Generation]:
        gens = [Generation(i, [], [], "abort", []) for i in range(n)]
        async for deltas in self.generate_stream(prompt, params, n):
            for d in deltas:
                g = gens[d.index]
                g.token_ids.extend(d.token_ids)
                g.logprobs.extend(d.logprobs)
                for v, start, end in d.version_spans:
                    if g.version_spans and g.version_spans[-1][0] == v and g.version_spans[-1][2] == start:
                        g.version_spans[-1] = (v, g.version_spans[-1][1], end)
                    else:
                        g.version_spans.append((v, start, end))
                if d.finish_reason is not None:
                    g.finish_reason = d.finish_reason
        return gens

    async def generate_stream(self, prompt: list[int], params: SamplingParams, n: int) -> AsyncIterator[list[Delta]]:
        self._waiting += n
        try:
            await self._resumed.wait()  # requests arriving while paused run after /resume
        finally:
            self._waiting -= n
        # One vLLM request per choice; their deltas meet in one queue (None marks a choice's end).
        queue: asyncio.Queue[Delta | BaseException | None] = asyncio.Queue()

        async def pump(index: int) -> None:
            try:
                async for delta in self._one(prompt, params, index):
                    queue.put_nowait(delta)
                queue.put_nowait(None)
            except BaseException as e:  # noqa: BLE001 - handed to the reader, which re-raises it
                queue.put_nowait(e)

        tasks = [asyncio.create_task(pump(i)) for i in range(n)]
        try:
            open_ = n
            while open_:
                batch = [await queue.get()]
                while not queue.empty():
                    batch.append(queue.get_nowait())
                for item in batch:
                    if isinstance(item, BaseException):
                        raise item
                open_ -= sum(1 for item in batch if item is None)
                deltas = [item for item in batch if isinstance(item, Delta)]
                if deltas:
                    yield deltas
        finally:
            for t in tasks:
                t.cancel()  # vLLM aborts a request whose generator is closed

    async def _one(self, prompt: list[int], params: SamplingParams, index: int) -> AsyncIterator[Delta]:
        from vllm import SamplingParams as VllmSamplingParams
        from vllm import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        sp = VllmSamplingParams(
            n=1, max_tokens=params.max_tokens, temperature=params.temperature, top_p=params.top_p,
            top_k=params.top_k,
            seed=None if params.seed is None else derive_seed(params.seed, index) % (2**31),
            logprobs=0, stop_token_ids=sorted(params.stop_token_ids), ignore_eos=params.ignore_eos,
            output_kind=RequestOutputKind.DELTA,
        )
        request_id = f"rf-{uuid.uuid4().hex}"
        produced = 0
        finish: str | None = None
        self._running[request_id] = 0
        try:
            async for out in self.llm.generate(TokensPrompt(prompt_token_ids=prompt), sp, request_id):
                completion = out.outputs[0]
                version = self.version
                tokens = [int(t) for t in completion.token_ids]
                logprobs = []
                for k, token in enumerate(tokens):
                    entry = completion.logprobs[k] if completion.logprobs else None
                    logprobs.append(float(entry[token].logprob) if entry and token in entry else 0.0)
                self.metrics.tokens_generated.inc(len(tokens))
                if out.finished:
                    finish = completion.finish_reason if completion.finish_reason in ("stop", "length") else "abort"
                spans = [(version, produced, produced + len(tokens))] if tokens else []
                produced += len(tokens)
                yield Delta(index, tokens, logprobs, spans, finish if out.finished else None)
        finally:
            self._running.pop(request_id, None)
        if finish is None:  # vLLM ended the stream without a finished output (e.g. aborted by a pause)
            finish = "abort"
            yield Delta(index, [], [], [], finish)
        self.metrics.requests.labels(finish_reason=finish).inc()

    async def pause(self, mode: str) -> tuple[int, int]:
        self.pause_mode = mode
        self.pause_settled = False
        self._resumed.clear()
        in_flight = len(self._running)
        await self.llm.pause_generation(mode=mode)
        self.pause_settled = True
        return (in_flight if mode == "abort" else 0), (len(self._running) if mode == "keep" else 0)

    async def resume(self) -> None:
        await self.llm.resume_generation()
        self.pause_mode = None
        self.pause_settled = False
        self._resumed.set()

    async def update_weights(self, path: str, version: int) -> None:
        if self.pause_mode is None:
            raise ConflictError("state", "update_weights needs a paused server: POST /pause first", "running", "not_paused")
        p: Path = await self.fetch_weights(path)
        await self.llm.collective_rpc("update_config", args=({"model_config": {"model": str(p)}},))
        await self.llm.collective_rpc("reload_weights")
        self.version = version
        self.weights_loaded(p)

    def state(self) -> dict[str, Any]:
        return {
            "backend": self.backend_name, "model": self.model_name, "version": self.version,
            "paused": self.pause_mode is not None, "pause_mode": self.pause_mode,
            "running": len(self._running), "waiting": self._waiting, "max_batch": self.max_batch,
        }
