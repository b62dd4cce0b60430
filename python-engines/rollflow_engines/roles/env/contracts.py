"""Wire types of the env role; contracts/env/*.json holds one fixture per type.

Requests are strict (no type coercion, unknown fields are errors, reported
as 400s naming the field); ``info`` objects are open JSON whose keys each env
or verifier documents. Seeds are limited to 2**53 - 1 so TypeScript numbers
carry them exactly.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...envs.base import EnvLossPolicy

MAX_SAFE_INTEGER = 2**53 - 1
MAX_TEXT = 1_000_000  # characters of one action, response or reference


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResetRequest(_Request):
    env: str = Field(min_length=1, description="A registered env name, e.g. frozen_lake or arithmetic.")
    seed: int = Field(ge=0, le=MAX_SAFE_INTEGER, description="The episode is a pure function of (env, seed, config).")
    config: dict[str, Any] = Field(default_factory=dict, description="Env settings, validated by the env; unknown keys are errors.")
    restore: str | None = Field(default=None, min_length=1, description="A snapshot id from an earlier step's info.snapshot: the episode continues from it (404 when it is gone, 400 snapshot_corrupt when its bytes are damaged).")
    index: int = Field(default=0, ge=0, le=MAX_SAFE_INTEGER, description="With restore: how many of the episode's actions the snapshot holds, "
                       "so the session's first /step carries this index. 0 (the default) without restore.")


class ChatMessage(_Response):
    role: str = Field(min_length=1)
    content: str


class ResetResponse(_Response):
    session: str = Field(description="Id to pass to /step and /close.")
    observation: str
    # Absent, not null, when the env sends none: clients older than the field refuse keys they do not know.
    messages: list[ChatMessage] | None = Field(default=None, exclude_if=lambda v: v is None, description=
                                               "The first turn's chat messages, sent to the model in place of one user message of "
                                               "observation (BaseEnv.first_messages; e.g. swe_lite's tools with actions: tool_calls).")
    info: dict[str, Any] = Field(default_factory=dict)
    on_env_loss: EnvLossPolicy = Field(description="The env's declared on_env_loss (BaseEnv.on_env_loss): what a client does when this server loses the session.")
    step_timeout_s: float = Field(description="Longest one /step of this session runs by the env's own limits (BaseEnv.step_timeout_s): a client "
                                  "waits longer than this for an answer before it retries.")


class StepRequest(_Request):
    session: str = Field(min_length=1)
    index: int = Field(ge=0, le=MAX_SAFE_INTEGER, description="How many actions the session applied before this one (0 for the first): "
                       "each index is applied once, a retry of the last one gets its recorded response (steps.py).")
    action: str = Field(max_length=MAX_TEXT, description="The model's raw reply; unreadable text is an invalid action, not an error.")


class StepResponse(_Response):
    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = Field(default_factory=dict, description="Always has invalid_action, turn and success.")


class CloseRequest(_Request):
    session: str = Field(min_length=1)


class CloseResponse(_Response):
    closed: Literal[True] = True


class RewardRequest(_Request):
    domain: str = Field(min_length=1, description="The sample's domain tag; picks the verifier from the server's domains option.")
    prompt: str = Field(default="", max_length=MAX_TEXT)
    response: str = Field(max_length=MAX_TEXT)
    reference: str = Field(max_length=MAX_TEXT)
    verifier: str | None = Field(default=None, min_length=1, description="Use this verifier instead of the domain's.")
    config: dict[str, Any] = Field(default_factory=dict, description="Verifier settings, validated by the verifier.")


class RewardResponse(_Response):
    reward: float
    info: dict[str, Any] = Field(default_factory=dict, description="Always has verifier and timeout.")


CONTRACT_MODELS: dict[str, type[BaseModel]] = {
    m.__name__: m
    for m in (ResetRequest, ResetResponse, StepRequest, StepResponse, CloseRequest, CloseResponse, RewardRequest, RewardResponse)
}
