"""Wire types of the inference role; contracts/inference/*.json holds one fixture per type.

The shapes follow OpenAI's completions API, with token ids instead of text:
callers (src/gpu-bridge) never re-tokenize, so a response carries every token
id it produced, one logprob per token, and which weight version produced which
tokens (``version_spans``).

Logprob convention (the trainer recomputes with the same one): the logprob of
the sampled token under softmax(logits / temperature), taken before top-p
truncation; temperature 0 (greedy) uses temperature 1 for the logprob.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Strict so that JSON true/false or "5" never pass as token ids.
TokenId = Annotated[int, Field(strict=True, ge=0)]
FinishReason = Literal["stop", "length", "abort"]
PauseMode = Literal["abort", "keep", "wait"]


class _Wire(BaseModel):
    # Unknown fields are rejected with their name, so a typo is a 400, not a silent default.
    model_config = ConfigDict(extra="forbid")


def _text_for_non_finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else {"non_finite_number": str(value)}
    if isinstance(value, list):
        return [_text_for_non_finite(v) for v in value] if any(isinstance(v, (float, list, dict)) for v in value) else value
    if isinstance(value, dict):
        return {k: _text_for_non_finite(v) for k, v in value.items()}
    return value


class _Request(_Wire):
    # Python's json module reads NaN and Infinity (and 1e999 as Infinity). JSON cannot
    # carry them back, so the 400 that echoes the bad value would itself fail to
    # serialize. They are swapped for a small object that no field accepts, so the
    # 400 names the field and shows {"non_finite_number": "nan"}; "inf" given as
    # text is refused by allow_inf_nan.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _non_finite_as_text(cls, data: Any) -> Any:
        return _text_for_non_finite(data)


class SamplingFields(_Request):
    """Sampling settings shared by /v1/completions and /v1/chat/completions."""

    model: str | None = Field(default=None, description="Ignored for routing; echoed back in the response.")
    max_tokens: int = Field(default=16, ge=1, description="Tokens to generate at most; capped by the server's max_tokens_cap.")
    temperature: float = Field(default=1.0, ge=0, description="0 = greedy.")
    top_p: float = Field(default=1.0, gt=0, le=1)
    top_k: int = Field(default=-1, ge=-1, description="Sample among the k most likely tokens only (before top_p); -1: all. 0 keeps none and is refused.")

    @field_validator("top_k")
    @classmethod
    def _top_k(cls, v: int) -> int:
        if v == 0:
            raise ValueError("top_k 0 keeps no token; -1 disables top-k")
        return v
    seed: int | None = Field(default=None, description="Sample i of the request uses a generator derived from (seed, i).")
    logprobs: int | bool | None = Field(default=None, description="Accepted for OpenAI compatibility; one logprob per token is always returned.")
    stop_token_ids: list[TokenId] = Field(default_factory=list, description="Generation stops after emitting one of these (it is included).")
    ignore_eos: bool = Field(default=False, description="Do not stop at the model's end-of-sequence token.")
    n: int = Field(default=1, ge=1, description="Samples of the same prompt; one choice each.")
    sim_response_length: int | None = Field(default=None, ge=1, description="sim backend only: this response's natural length.")
    stream: bool = Field(default=False, description="Answer with server-sent events: one chunk per batch of new tokens, then [DONE].")
    min_version: int | None = Field(default=None, ge=0, description="Refuse (409, code version_behind) if the loaded weights are older.")


class CompletionRequest(SamplingFields):
    """POST /v1/completions."""

    prompt: list[TokenId] = Field(min_length=1, description="Prompt as token ids.")


class VersionSpan(_Wire):
    """Tokens [start, end) of a completion were produced by weight version ``version``."""

    version: int
    start: int = Field(ge=0)
    end: int = Field(ge=0)


class Usage(_Wire):
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)


class CompletionChoice(_Wire):
    index: int = Field(ge=0)
    token_ids: list[int]
    logprobs: list[float] = Field(description="One per token of token_ids.")
    finish_reason: FinishReason
    version_spans: list[VersionSpan]
    text: str | None = Field(default=None, description="Decoded token_ids (torch, vllm); null for sim.")


class CompletionResponse(_Wire):
    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage


class ChatMessage(_Wire):
    role: str = Field(min_length=1)
    content: str


class ChatCompletionRequest(SamplingFields):
    """POST /v1/chat/completions: the server applies the chat template."""

    messages: list[ChatMessage] = Field(min_length=1)


class AssistantMessage(_Wire):
    role: Literal["assistant"] = "assistant"
    content: str | None = Field(description="Decoded completion (torch, vllm); null for sim.")


class ChatCompletionChoice(_Wire):
    index: int = Field(ge=0)
    message: AssistantMessage
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    version_spans: list[VersionSpan]


class ChatCompletionResponse(_Wire):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    prompt_token_ids: list[int] = Field(description="The templated prompt exactly as the model saw it.")
    choices: list[ChatCompletionChoice]
    usage: Usage


class CompletionChunkChoice(_Wire):
    """What one choice added since its previous chunk; version_spans are positions within the whole choice."""

    index: int = Field(ge=0)
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason | None = Field(description="Set on the choice's last chunk.")
    version_spans: list[VersionSpan]
    text: str | None = Field(default=None, description="Decoded text added by these tokens (torch, vllm); null for sim.")


class CompletionChunk(_Wire):
    """One server-sent event of a streamed /v1/completions."""

    id: str
    object: Literal["text_completion.chunk"] = "text_completion.chunk"
    created: int
    model: str
    choices: list[CompletionChunkChoice]


class ChatDelta(_Wire):
    role: Literal["assistant"] = "assistant"
    content: str | None


class ChatCompletionChunkChoice(_Wire):
    index: int = Field(ge=0)
    delta: ChatDelta
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason | None
    version_spans: list[VersionSpan]


class ChatCompletionChunk(_Wire):
    """One server-sent event of a streamed /v1/chat/completions; the first carries prompt_token_ids and no choices."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    prompt_token_ids: list[int] | None = Field(default=None, description="Only on the first chunk.")
    choices: list[ChatCompletionChunkChoice]


class Problem(_Wire):
    field: str
    message: str
    given: Any = None


class VersionBehind(_Wire):
    """The 409 body of a generation refused because the loaded weights are older than its min_version."""

    error: str
    code: Literal["version_behind"] = "version_behind"
    version: int = Field(description="The version loaded now.")
    min_version: int
    problems: list[Problem]


class ChatContinuationRequest(_Request):
    """POST /v1/chat/continuation: the token ids that follow an assistant turn already generated.

    Multi-turn rollouts keep token ids end to end: the caller holds the exact ids
    of the conversation so far and asks only for the ids of what comes next
    (the end of the assistant turn, the env's new messages, the next assistant
    header). Earlier turns are never re-tokenized."""

    history: list[ChatMessage] = Field(min_length=2, description="The conversation so far, ending with the assistant turn just generated.")
    messages: list[ChatMessage] = Field(min_length=1, description="The new turns (e.g. the env's observation as a user message).")


class ChatContinuationResponse(_Wire):
    token_ids: list[int] = Field(description="Ids to append after the assistant turn's generated ids; ends with the next assistant header.")


class PauseRequest(_Request):
    """POST /pause. abort: stop in-flight requests now (they return partial tokens, finish_reason "abort");
    keep: freeze them until /resume; wait: admit nothing new and return once in-flight requests finish."""

    mode: PauseMode


class PauseResponse(_Wire):
    mode: PauseMode
    aborted: int = Field(ge=0, description="Requests stopped with finish_reason abort by this call.")
    frozen: int = Field(ge=0, description="Requests held mid-generation (keep) when this call returned.")
    version: int


class UpdateWeightsRequest(_Request):
    """POST /update_weights, only while paused."""

    path: str = Field(min_length=1, description="A directory the trainer's /export_weights wrote (*.safetensors and its manifest), or "
                                                "its s3://<bucket>/<prefix>/v<N> ref in the object store, pulled into weights_cache_dir.")
    version: int = Field(ge=0, description="Weight version reported in version_spans from now on.")


class UpdateWeightsResponse(_Wire):
    version: int
    previous_version: int
    load_seconds: float = Field(ge=0)


class EngineState(_Wire):
    """GET /state, and the answer to /resume."""

    backend: str
    model: str
    version: int
    paused: bool
    pause_mode: PauseMode | None
    running: int = Field(ge=0, description="Sequences (one per choice) in the running batch.")
    waiting: int = Field(ge=0, description="Sequences accepted but not yet running (batch full or paused).")
    max_batch: int = Field(ge=1)


CONTRACT_MODELS: dict[str, type[BaseModel]] = {
    m.__name__: m
    for m in (
        CompletionRequest, CompletionResponse, ChatCompletionRequest, ChatCompletionResponse,
        CompletionChunk, ChatCompletionChunk, VersionBehind, ChatContinuationRequest, ChatContinuationResponse,
        PauseRequest, PauseResponse, UpdateWeightsRequest, UpdateWeightsResponse, EngineState,
    )
}
