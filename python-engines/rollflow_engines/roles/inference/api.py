"""HTTP endpoints of the inference role. They talk to an InferenceEngine only,
never to a particular backend."""
from __future__ import annotations

import time
import uuid

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST

from ...errors import RequestError
from .contracts import (
    AssistantMessage, ChatCompletionChoice, ChatCompletionRequest, ChatCompletionResponse, ChatContinuationRequest,
    ChatContinuationResponse, CompletionChoice,
    CompletionRequest, CompletionResponse, EngineState, PauseRequest, PauseResponse, SamplingFields,
    UpdateWeightsRequest, UpdateWeightsResponse, Usage, VersionSpan,
)
from .engine import Generation, InferenceEngine, SamplingParams
from .options import Options


def sampling_params(req: SamplingFields, options: Options) -> SamplingParams:
    if req.max_tokens > options.max_tokens_cap:
        raise RequestError("max_tokens", f"{req.max_tokens} is above this server's max_tokens_cap of {options.max_tokens_cap}",
                           req.max_tokens)
    if req.n > options.max_n:
        raise RequestError("n", f"{req.n} is above this server's max_n of {options.max_n}", req.n)
    return SamplingParams(
        max_tokens=req.max_tokens, temperature=req.temperature, top_p=req.top_p, seed=req.seed,
        stop_token_ids=frozenset(req.stop_token_ids), ignore_eos=req.ignore_eos,
        sim_response_length=req.sim_response_length,
    )


def _spans(g: Generation) -> list[VersionSpan]:
    return [VersionSpan(version=v, start=s, end=e) for v, s, e in g.version_spans]


def _usage(prompt: list[int], gens: list[Generation]) -> Usage:
    completion = sum(len(g.token_ids) for g in gens)
    return Usage(prompt_tokens=len(prompt), completion_tokens=completion, total_tokens=len(prompt) + completion)


def register_routes(app: FastAPI, engine: InferenceEngine, options: Options) -> None:
    async def run(prompt: list[int], req: SamplingFields) -> list[Generation]:
        params = sampling_params(req, options)
        engine.check_request(prompt, params)
        engine.metrics.prompt_tokens.inc(len(prompt))
        return await engine.generate(prompt, params, req.n)

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest) -> CompletionResponse:
        gens = await run(req.prompt, req)
        return CompletionResponse(
            id=f"cmpl-{uuid.uuid4().hex}", created=int(time.time()), model=req.model or engine.model_name,
            choices=[CompletionChoice(index=g.index, token_ids=g.token_ids, logprobs=g.logprobs,
                                      finish_reason=g.finish_reason, version_spans=_spans(g),
                                      text=engine.decode(g.token_ids)) for g in gens],
            usage=_usage(req.prompt, gens),
        )

    @app.post("/v1/chat/completions")
    async def chat_completions(req: ChatCompletionRequest) -> ChatCompletionResponse:
        prompt = engine.chat_prompt([m.model_dump() for m in req.messages])
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
