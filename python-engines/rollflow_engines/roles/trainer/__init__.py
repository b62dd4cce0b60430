"""The trainer role: /train_step, /logprobs, /save, /load, /export_weights, /metrics.

Config → setup → serve:

    python -m rollflow_engines serve --role trainer --backend sim|torch|megatron --port P \\
        [--option learning_rate=1e-5 --option micro_batch_size=4 --option export_dir=/runs/x/weights …]

Wire types and the logprob convention: contracts.py. Endpoint semantics
(concurrency, exactly-once steps, atomic writes): api.py. Algorithms:
rollflow_engines.algorithms.
"""
from __future__ import annotations

import importlib.util
from typing import Literal

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...edge import MiB, max_request_bytes_field
from ...liveness import stall_after_field
from ...models.policy_options import DTYPE_NAMES, PolicyModelOptions, option_error
from .schedule import LR_SCHEDULER_TYPES

MEGATRON_MISSING = ("the megatron backend needs Megatron-Core and Megatron-Bridge on a CUDA machine "
                    "(pip install megatron-core megatron-bridge); they are not installed here")


def megatron_available() -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("megatron.core", "megatron.bridge"))
    except ModuleNotFoundError:  # find_spec imports the parent package "megatron"
        return False


class MegatronOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tensor_model_parallel_size: int = Field(default=1, ge=1, description="Megatron tensor parallel size.")
    pipeline_model_parallel_size: int = Field(default=1, ge=1, description="Megatron pipeline parallel size.")
    bf16: bool = Field(default=True, description="Train in bfloat16 with fp32 master weights.")


class Options(PolicyModelOptions):
    """Settings of a trainer server (``--option key=value``); optimizer names follow the run config's training_args,
    model loading (dtype, lora_*) the run config's model_args (models/policy_options.py)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["sim", "torch", "megatron"] = Field(default="sim", description="Implementation; passed from --backend.")
    model: str = Field(default="tiny:default", description="Hugging Face model directory, or tiny:<preset> (built from code).")
    model_seed: int = Field(default=0, ge=0, description="Seed of a tiny:<preset> model's initial weights.")
    model_cache_dir: str | None = Field(default=None, description="Where tiny models are built; default .cache/models.")
    seed: int = Field(default=0, ge=0, description="Seed of the trainer's own randomness (saved and restored with checkpoints).")
    learning_rate: float = Field(default=1e-6, gt=0, description="AdamW learning rate.")
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW weight decay.")
    adam_beta1: float = Field(default=0.9, ge=0, lt=1, description="AdamW beta1.")
    adam_beta2: float = Field(default=0.999, ge=0, lt=1, description="AdamW beta2.")
    adam_eps: float = Field(default=1e-8, gt=0, description="AdamW epsilon.")
    max_grad_norm: float = Field(default=1.0, gt=0, description="Clip the global gradient norm to this before each optimizer step.")
    lr_scheduler_type: Literal[LR_SCHEDULER_TYPES] = Field(default="constant", description="Learning-rate schedule over train steps (transformers' names): constant, constant_with_warmup, linear or cosine decay to 0 at lr_total_steps.")
    warmup_steps: int = Field(default=0, ge=0, description="Train steps of linear warmup from 0 to learning_rate (not with constant: use constant_with_warmup).")
    lr_total_steps: int | None = Field(default=None, ge=1, description="Train steps the linear and cosine schedules decay over (the run's max_steps).")
    micro_batch_size: int = Field(default=1, ge=1, description="Samples per forward/backward pass (per_device_train_batch_size).")
    gradient_accumulation_steps: int | None = Field(default=None, ge=1, description="Micro-batches per optimizer step; null: one optimizer step per epoch over the whole batch.")
    padding_side: Literal["right", "left"] = Field(default="right", description="Where micro-batches are padded; logprobs do not depend on it.")
    torch_threads: int | None = Field(default=None, ge=1, description="torch intra-op threads; default torch's choice.")
    export_dir: str = Field(default="trainer_exports", description="Where /export_weights writes v<version>/ directories: a local "
                            "directory, or s3://<bucket>/<prefix> for inference servers on other hosts (each file of an export "
                            "becomes the object <prefix>/v<version>/<file>, its manifest last; docs/object-store.md).")
    export_scratch_dir: str | None = Field(default=None, description="With an s3:// export_dir: where an export is written "
                                           "before its upload (then removed); default <system temp dir>/rollflow-exports.")
    state_scratch_dir: str | None = Field(default=None, description="Where a trainer state or checkpoint whose /save or /load "
                                          "path is an s3:// ref is written before its upload, or fetched before it loads (then "
                                          "removed); default <system temp dir>/rollflow-states (store_states.py).")
    step_log: str | None = Field(default=None, description="A JSON-lines file the trainer appends one fsynced line to per train step it applies, and per reset, load and save (step_log.py); none: no log.")
    # Inline batches (a run sends batch_ref, a file path) and /logprobs sequences are large.
    max_request_bytes: int = max_request_bytes_field(256 * MiB)
    # A micro-batch is progress; a save or export of a large model completes within it too.
    stall_after_s: float = stall_after_field(90.0)
    sim_seconds_per_sample: float = Field(default=0.0, ge=0, description="sim: train time per sample (μ_train), in seconds.")
    sim_deadlock_after_steps: int | None = Field(
        default=None, ge=0, description="sim: models a deadlocked backend, to exercise stall detection: after this many train "
                                        "steps since the server started, a step never finishes, while the server goes on "
                                        "answering (its /health reports the stall once stall_after_s passes). None: never.")
    megatron: MegatronOptions = Field(default_factory=MegatronOptions, description="megatron backend only.")

    @model_validator(mode="after")
    def _schedule_complete(self):
        # A setting the schedule would not use is refused, never ignored.
        if self.lr_scheduler_type == "constant" and self.warmup_steps > 0:
            raise ValueError(f"warmup_steps {self.warmup_steps} needs a schedule with warmup; lr_scheduler_type constant has none (use constant_with_warmup)")
        if self.lr_scheduler_type in ("linear", "cosine") and self.lr_total_steps is None:
            raise ValueError(f"lr_scheduler_type {self.lr_scheduler_type} decays over lr_total_steps, which is unset")
        return self

    @field_validator("export_dir")
    @classmethod
    def _export_ref_well_formed(cls, export_dir: str) -> str:
        if export_dir.startswith("s3://"):
            from .store_exports import store_prefix

            store_prefix(export_dir)  # ObjectRefError is a ValueError: the option's error names the expected form
        return export_dir

    @field_validator("backend")
    @classmethod
    def _megatron_installed(cls, backend: str) -> str:
        # Checked with the config, so `--backend megatron` without it exits 2 before binding a port.
        if backend == "megatron" and not megatron_available():
            raise ValueError(MEGATRON_MISSING)
        return backend

    @model_validator(mode="after")
    def _model_options_fit_the_backend(self) -> "Options":
        if self.lora_rank and self.backend != "torch":
            raise option_error(Options, "lora_rank", self.lora_rank, f"LoRA adapters are trained by the torch backend only, "
                               f"not {self.backend} (set lora_rank 0, or backend torch)")
        if self.backend == "megatron" and "dtype" in self.model_fields_set:
            raise option_error(Options, "dtype", self.dtype, "the megatron backend sets its precision with megatron.bf16, not dtype")
        if self.backend != "torch" and "device" in self.model_fields_set:
            where = "it places the model by its parallel settings" if self.backend == "megatron" else "the sim backend loads no model"
            raise option_error(Options, "device", self.device, f"only the torch backend takes device ({where})")
        if self.export_scratch_dir is not None and not self.export_dir.startswith("s3://"):
            raise option_error(Options, "export_scratch_dir", self.export_scratch_dir, f"only an export to the object store "
                               f"(export_dir s3://…) is written through a scratch directory; export_dir {self.export_dir!r} is local")
        for key in ("sim_seconds_per_sample", "sim_deadlock_after_steps"):
            if self.backend != "sim" and key in self.model_fields_set:
                raise option_error(Options, key, getattr(self, key), f"a setting of the sim backend's model of training; backend {self.backend} trains for real")
        if self.backend == "torch" and DTYPE_NAMES[self.dtype] == "float16":
            # No loss scaling and fp16 AdamW states: gradients underflow and updates round to zero (on CPU or GPU).
            raise option_error(Options, "dtype", self.dtype, f"dtype {self.dtype!r}: the torch trainer does not train in float16 "
                               "on CPU or GPU (no loss scaling); use bf16 or fp32")
        return self


def make_backend(backend: str, options: Options):
    if backend == "sim":
        from .sim import SimTrainer

        return SimTrainer(options)
    if backend == "torch":
        from .torch_backend import TorchTrainer

        return TorchTrainer(options)
    if not megatron_available():
        raise RuntimeError(MEGATRON_MISSING)
    from .megatron_backend import MegatronTrainer

    return MegatronTrainer(options)


def register(app: FastAPI, backend: str, options: Options) -> None:
    from .api import TrainerServer, register_endpoints

    server = TrainerServer(lambda: make_backend(backend, options), options.export_dir, options.step_log, options.export_scratch_dir,
                           options.state_scratch_dir)
    app.state.liveness.watch_counter(lambda: server.backend.micro_batches)  # server.backend: /reset replaces it
    register_endpoints(app, server)
