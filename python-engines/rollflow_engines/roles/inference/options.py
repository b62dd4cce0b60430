"""Settings of the inference role (``options:`` in the server config, or ``--option key=value``)."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ...edge import MiB, max_request_bytes_field
from ...liveness import stall_after_field
from ...models.policy_options import PolicyModelOptions, option_error
from .swe_escape import SweEscapeOptions
from .swe_oracle_options import SweOracleOptions


class SimLength(BaseModel):
    """Natural response length of the sim backend (before max_tokens cuts it).

    fixed: exactly round(mean); normal: round(N(mean, std)); lognormal: a
    log-normal with mean ``mean`` and log-space std ``sigma``. Always >= 1.
    ``sigma_prompt`` > 0 multiplies every response to a prompt by one factor
    drawn from the prompt's tokens (log-normal with mean 1): hard prompts
    answer long, whichever request or sampling seed asks them.
    """

    model_config = ConfigDict(extra="forbid")

    dist: Literal["fixed", "normal", "lognormal"] = "fixed"
    mean: float = Field(default=128, gt=0, description="Mean length in tokens (the length itself for fixed).")
    std: float = Field(default=32, ge=0, description="normal: standard deviation in tokens.")
    sigma: float = Field(default=0.5, ge=0, description="lognormal: standard deviation of log(length).")
    sigma_prompt: float = Field(default=0.0, ge=0, description="Log-space std of a per-prompt length factor (0: none).")


class SimOptions(BaseModel):
    """The sim backend's latency model: a decode step over a batch of b sequences
    takes ``c0 + c1*b`` seconds plus ``prefill_per_token`` seconds per prompt
    token of sequences that joined the batch at that step; all scaled by
    ``time_scale``. With every latency 0 the server runs as fast as it can."""

    model_config = ConfigDict(extra="forbid")

    vocab_size: int = Field(default=32000, ge=16, description="Synthetic token ids are drawn from [0, vocab_size).")
    eos_token_id: int = Field(default=2, ge=0, description="Emitted as a response's last token when it ends naturally.")
    length: SimLength = Field(default_factory=SimLength)
    c0: float = Field(default=0.0, ge=0, description="Seconds per decode step.")
    c1: float = Field(default=0.0, ge=0, description="Extra seconds per decode step per running sequence.")
    prefill_per_token: float = Field(default=0.0, ge=0, description="Seconds per prompt token when a sequence joins.")
    time_scale: float = Field(default=1.0, ge=0, description="Multiplies every sim latency; 0 = no waiting at all.")
    deadlock_after_steps: int | None = Field(
        default=None, ge=0, description="Models a deadlocked backend, to exercise stall detection: after this many decode steps "
                                        "since the server started, a step never returns, while the server goes on answering "
                                        "(its /health reports the stall once stall_after_s passes). None: never.")
    policy: Annotated[SweOracleOptions | SweEscapeOptions, Field(discriminator="kind")] | None = Field(
        default=None, description="A scripted policy instead of random tokens: swe_oracle answers SWE-lite episodes with valid actions "
                                  "(swe_oracle.py), and swe episodes with their gold patch when given instances (swe_gold.py); swe_escape sends sandbox-escape attempts (swe_escape.py).")

    @model_validator(mode="after")
    def _eos_in_vocab(self) -> "SimOptions":
        if self.eos_token_id >= self.vocab_size:
            raise ValueError(f"eos_token_id {self.eos_token_id} must be below vocab_size {self.vocab_size}")
        return self


class Options(PolicyModelOptions):
    """Settings of an inference server; dtype and lora_* (models/policy_options.py) must equal the trainer's LoRA settings
    for it to apply the trainer's adapters."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["sim", "torch", "vllm"] = "sim"
    seed: int = Field(default=0, description="Server seed: sim outputs and unseeded torch sampling derive from it.")
    max_batch: int = Field(default=64, ge=1, description="Sequences decoded together; more wait for a free slot.")
    max_tokens_cap: int = Field(default=4096, ge=1, description="Largest max_tokens a request may ask for.")
    max_n: int = Field(default=64, ge=1, description="Largest n (samples per request).")
    # A prompt of a million token ids is about 8 MB of JSON.
    max_request_bytes: int = max_request_bytes_field(16 * MiB)
    # Each generated token is progress; a paused server's held requests are not stalled.
    stall_after_s: float = stall_after_field(30.0)
    model: str = Field(default="tiny:default", description="torch/vllm: tiny:<preset> or a local Hugging Face model dir.")
    model_seed: int = Field(default=0, description="Seed of a tiny:<preset> model's weights.")
    served_model_name: str | None = Field(default=None, description="Name echoed in responses; defaults to model (sim: 'sim').")
    torch_threads: int | None = Field(default=None, ge=1, description="torch: intra-op threads (default: torch's choice).")
    weights_cache_dir: str = Field(default="weights_cache", description="Where /update_weights pulls an export it is given as an "
                                   "s3:// ref (verified, then loaded like a local export); it keeps the served export and the "
                                   "last one pulled. One per server: two servers sharing one remove each other's exports.")
    batch_invariant: bool = Field(default=False, description="torch: a forward pass per sequence, so its logits, tokens and logprobs are the same "
                                                              "bits whatever else is in the batch (exactly-once runs, docs/exactly-once.md); "
                                                              "slower: no batching.")
    kv_cache: bool = Field(default=False, description="torch: keep each running sequence's key/value cache between decode steps, so a step "
                                                      "feeds it one new token instead of its whole prompt and reply (O(1) work a token, "
                                                      "not O(length): 10-16x the tokens/s at 2,000-token prompts). A forward pass per sequence, "
                                                      "so short sequences in a batch are slower with it (0.59x at 16 tokens). Incremental "
                                                      "passes round differently from a whole one, so a continuation after a cut draws the "
                                                      "uncut tokens only up to that rounding (docs/exactly-once.md). Dropped at each "
                                                      "weight update.")
    sim: SimOptions = Field(default_factory=SimOptions)
    vllm: dict[str, Any] = Field(default_factory=dict, description="vllm: extra AsyncEngineArgs (gpu_memory_utilization, ...).")

    # Checked before the port is bound, so a missing vllm or a bad model is a
    # clean exit 2 naming the option instead of a traceback at startup.
    @field_validator("backend")
    @classmethod
    def _backend_installed(cls, backend: str) -> str:
        if backend == "vllm" and importlib.util.find_spec("vllm") is None:
            raise ValueError("backend vllm needs the vllm package, which is not installed here "
                             "(pip install vllm, on a machine with a CUDA GPU); use backend sim or torch")
        return backend

    @model_validator(mode="after")
    def _model_options_fit_the_backend(self) -> "Options":
        if self.backend != "torch":
            if self.lora_rank:
                raise option_error(Options, "lora_rank", self.lora_rank, f"only the torch backend applies LoRA adapters, not {self.backend}")
            if "dtype" in self.model_fields_set:
                where = "set vllm.dtype" if self.backend == "vllm" else "the sim backend loads no model"
                raise option_error(Options, "dtype", self.dtype, f"only the torch backend takes dtype ({where})")
            if self.kv_cache:
                where = "vllm keeps its own paged cache" if self.backend == "vllm" else "the sim backend runs no model"
                raise option_error(Options, "kv_cache", self.kv_cache, f"only the torch backend takes kv_cache ({where})")
            if "device" in self.model_fields_set:
                where = "vllm places the model itself" if self.backend == "vllm" else "the sim backend loads no model"
                raise option_error(Options, "device", self.device, f"only the torch backend takes device ({where})")
        return self

    @field_validator("model")
    @classmethod
    def _model_exists(cls, model: str, info: ValidationInfo) -> str:
        backend = info.data.get("backend")
        if backend in ("torch", "vllm") and model.startswith("tiny:"):
            from ...models.loading import check_tiny_name

            check_tiny_name(model)
        elif backend == "torch" and not Path(model).is_dir():  # vllm may fetch hub ids itself
            raise ValueError("not a local directory (models are not downloaded here; use tiny:<preset> or a path)")
        return model
