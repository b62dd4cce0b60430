"""HTTP endpoints of the inference role. They talk to an InferenceEngine only,
never to a particular backend."""
from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel

from ...errors import ConflictError, RequestError
from .contracts import (
    AssistantMessage, ChatCompletionChoice, ChatCompletionChunk, ChatCompletionChunkChoice, ChatCompletionRequest,
    ChatCompletionResponse, ChatContinuationRequest, ChatContinuationResponse, ChatDelta, CompletionChoice,
    CompletionChunk, CompletionChunkChoice, CompletionRequest, CompletionResponse, EngineState, PauseRequest,
    PauseResponse, Problem, SamplingFields, UpdateWeightsRequest, UpdateWeightsResponse, Usage, VersionBehind,
    VersionSpan,
)
from .engine import Delta, Generation, InferenceEngine, SamplingParams
from .options import Options

log = logging.getLogger(__name__)


class VersionBehindError(ConflictError):
    """A generation asked for newer weights (min_version) than this server has loaded, e.g. after a restart."""

    def __init__(self, version: int, min_version: int):
        super().__init__("min_version", f"this server has weights version {version} loaded, older than the {min_version} asked for",
                         min_version)
        self.version, self.min_version = version, min_version


def sampling_params(req: SamplingFields, options: Options) -> SamplingParams:
    if req.max_tokens > options.max_tokens_cap:
        raise RequestError("max_tokens", f"{req.max_tokens} is above this server's max_tokens_cap of {options.max_tokens_cap}",
                           req.max_tokens)
    if req.n > options.max_n:
        raise RequestError("n", f"{req.n} is above this server's max_n of {options.max_n}", req.n)
    return SamplingParams(
        max_tokens=req.max_tokens, temperature=req.temperature, top_p=req.top_p, top_k=req.top_k, seed=req.seed,
        stop_token_ids=frozenset(req.stop_token_ids), ignore_eos=req.ignore_eos,
        sim_response_length=req.sim_response_length,
    )


def _spans(g: Generation) -> list[VersionSpan]:
    return [VersionSpan(version=v, start=s, end=e) for v, s, e in g.version_spans]


def _delta_spans(d: Delta) -> list[VersionSpan]:
    return [VersionSpan(version=v, start=s, end=e) for v, s, e in d.version_spans]


class _TextDeltas:
    """Decoded text each delta adds: the decode of all tokens so far minus what was already sent,
    so multi-token characters come out whole (None when the backend has no tokenizer)."""

    def __init__(self, decode: Callable[[list[int]], str | None], n: int):
        self.decode = decode
        self.tokens: list[list[int]] = [[] for _ in range(n)]
        self.sent = [""] * n

    def add(self, d: Delta) -> str | None:
        self.tokens[d.index].extend(d.token_ids)
        text = self.decode(self.tokens[d.index])
        if text is None:
            return None
        added, self.sent[d.index] = text[len(self.sent[d.index]):], text
        return added


# While no token comes (a paused server holds the request, a long prefill), a stream sends this comment
# this often, so a client tells a quiet server from a hung one (the bridge's STREAM_IDLE_TIMEOUT_MS).
SSE_KEEPALIVE_S = 5.0
KEEPALIVE = b": keep-alive\n\n"


async def _sse(chunks: AsyncIterator[BaseModel], stalled: Callable[[], bool]) -> AsyncIterator[bytes]:
    """The chunks as server-sent events, with keep-alives while waiting, but none while the server is stalled
    (liveness.py): a deadlocked backend then goes quiet, and the client's idle cut fails the call over."""
    events = aiter(chunks)
    pending: asyncio.Future[BaseModel] | None = None
    try:
        while True:
            # The next chunk is awaited in its own task, so waiting for it can time out without cancelling it.
            pending = asyncio.ensure_future(anext(events))
            while not (await asyncio.wait({pending}, timeout=SSE_KEEPALIVE_S))[0]:
                if not stalled():
                    yield KEEPALIVE
            try:
                chunk = pending.result()
            except StopAsyncIteration:
                break
            yield f"data: {chunk.model_dump_json()}\n\n".encode()
    except Exception as e:  # a backend failure after the response started: say so, then end the stream
        log.exception("streamed generation failed")
        yield f"event: error\ndata: {json.dumps({'error': str(e)})}\n\n".encode()
        return
    finally:  # the client went away mid-wait: stop the generation too
        if pending is not None and not pending.done():
            pending.cancel()
    yield b"data: [DONE]\n\n"


def _usage(prompt: list[int], gens: list[Generation]) -> Usage:
    completion = sum(len(g.token_ids) for g in gens)
    return Usage(prompt_tokens=len(prompt), completion_tokens=completion, total_tokens=len(prompt) + completion)


def register_routes(app: FastAPI, engine: InferenceEngine, options: Options) -> None:
    @app.exception_handler(VersionBehindError)
    async def _version_behind(_: Request, exc: VersionBehindError) -> JSONResponse:
        body = VersionBehind(error=str(exc), version=exc.version, min_version=exc.min_version,
                             problems=[Problem(field=exc.field, message=exc.message, given=exc.given)])
        return JSONResponse(status_code=exc.status_code, content=jsonable_encoder(body))

    def admit(prompt: list[int], req: SamplingFields) -> SamplingParams:
        params = sampling_params(req, options)
        engine.check_request(prompt, params)
        # Checked on arrival: a server's version only changes by update_weights (which needs a pause) or a restart
        # (which ends this connection), so a request admitted here never runs on weights older than it asked for.
        version = engine.state()["version"]
        if req.min_version is not None and version < req.min_version:
            raise VersionBehindError(version, req.min_version)
        engine.metrics.prompt_tokens.inc(len(prompt))
        return params

    async def run(prompt: list[int], req: SamplingFields) -> list[Generation]:
        return await engine.generate(prompt, admit(prompt, req), req.n)

    def stream(prompt: list[int], req: SamplingFields, chunk_of: Callable[[list[Delta], _TextDeltas], BaseModel],
               first: BaseModel | None = None) -> StreamingResponse:
        params = admit(prompt, req)  # errors before the stream starts are ordinary 4xx answers

        async def chunks() -> AsyncIterator[BaseModel]:
            if first is not None:
                yield first
            texts = _TextDeltas(engine.decode, req.n)
            async for deltas in engine.generate_stream(prompt, params, req.n):
                yield chunk_of(deltas, texts)

        return StreamingResponse(_sse(chunks(), app.state.liveness.stalled), media_type="text/event-stream")

    @app.post("/v1/completions", response_model=None)
    async def completions(req: CompletionRequest) -> CompletionResponse | StreamingResponse:
        if req.stream:
            cid, created, model = f"cmpl-{uuid.uuid4().hex}", int(time.time()), req.model or engine.model_name
            return stream(req.prompt, req, lambda deltas, texts: CompletionChunk(
                id=cid, created=created, model=model,
                choices=[CompletionChunkChoice(index=d.index, token_ids=d.token_ids, logprobs=d.logprobs,
                                               finish_reason=d.finish_reason, version_spans=_delta_spans(d),
                                               text=texts.add(d)) for d in deltas]))
        gens = await run(req.prompt, req)
        return CompletionResponse(
            id=f"cmpl-{uuid.uuid4().hex}", created=int(time.time()), model=req.model or engine.model_name,
            choices=[CompletionChoice(index=g.index, token_ids=g.token_ids, logprobs=g.logprobs,
                                      finish_reason=g.finish_reason, version_spans=_spans(g),
                                      text=engine.decode(g.token_ids)) for g in gens],
            usage=_usage(req.prompt, gens),
        )

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(req: ChatCompletionRequest) -> ChatCompletionResponse | StreamingResponse:
        prompt = engine.chat_prompt([m.model_dump() for m in req.messages])
        if req.stream:
            cid, created, model = f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), req.model or engine.model_name
            # The prompt goes first, before any token: a caller cut off later still knows what to continue from.
            first = ChatCompletionChunk(id=cid, created=created, model=model, prompt_token_ids=prompt, choices=[])
            return stream(prompt, req, lambda deltas, texts: ChatCompletionChunk(
                id=cid, created=created, model=model,
                choices=[ChatCompletionChunkChoice(index=d.index, delta=ChatDelta(content=texts.add(d)), token_ids=d.token_ids,
                                                   logprobs=d.logprobs, finish_reason=d.finish_reason,
                                                   version_spans=_delta_spans(d)) for d in deltas]), first)
        gens = await run(prompt, req)
        return ChatCompletionResponse(
            id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()), model=req.model or engine.model_name,
            prompt_token_ids=prompt,
            choices=[ChatCompletionChoice(index=g.index, message=AssistantMessage(content=engine.decode(g.token_ids)),
                                          token_ids=g.token_ids, logprobs=g.logprobs, finish_reason=g.finish_reason,
                                          version_spans=_spans(g)) for g in gens],
            usage=_usage(prompt, gens),
        )

    @app.post("/v1/chat/continuation")
    async def chat_continuation(req: ChatContinuationRequest) -> ChatContinuationResponse:
        ids = engine.chat_continuation([m.model_dump() for m in req.history], [m.model_dump() for m in req.messages])
        return ChatContinuationResponse(token_ids=ids)

    @app.post("/pause")
    async def pause(req: PauseRequest) -> PauseResponse:
        aborted, frozen = await engine.pause(req.mode)
        return PauseResponse(mode=req.mode, aborted=aborted, frozen=frozen, version=engine.state()["version"])

    @app.post("/resume")
    async def resume() -> EngineState:
        await engine.resume()
        return EngineState(**engine.state())

    @app.post("/update_weights")
    async def update_weights(req: UpdateWeightsRequest) -> UpdateWeightsResponse:
        previous = engine.state()["version"]
        started = time.perf_counter()
        await engine.update_weights(req.path, req.version)
        return UpdateWeightsResponse(version=req.version, previous_version=previous,
                                     load_seconds=round(time.perf_counter() - started, 6))

    @app.get("/state")
    async def state() -> EngineState:
        return EngineState(**engine.state())

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(engine.metrics.render(), media_type=CONTENT_TYPE_LATEST)
