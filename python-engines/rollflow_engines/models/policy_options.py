"""How the policy model is loaded, shared by the trainer's and the inference server's torch backends:
its dtype, the device it lives on and its LoRA adapter (``model_args`` of the run config, with ROLL's names).

The two servers must agree on the LoRA settings, or the inference server could not apply the
trainer's adapters; rollflow derives both from ``actor_train.model_args``.
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

# ROLL's names (fp32, bf16, fp16) and verl's / torch's (float32, bfloat16, float16) for the same three dtypes.
DTYPE_NAMES = {"fp32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16",
               "fp16": "float16", "float16": "float16"}
DtypeName = Literal["fp32", "bf16", "fp16", "float32", "bfloat16", "float16"]


def torch_dtype(name: str):
    import torch

    return getattr(torch, DTYPE_NAMES[name])


def option_error(model: type[BaseModel], key: str, given, message: str) -> ValidationError:
    """A validation error located at ``key``, for a model validator that checks one field against another
    (so a checker reports it at that key, not at the options as a whole)."""
    error = PydanticCustomError("value_error", "Value error, {message}", {"message": message})
    return ValidationError.from_exception_data(model.__name__, [InitErrorDetails(type=error, loc=(key,), input=given)])


class PolicyModelOptions(BaseModel):
    """Fields of a torch backend's Options that say how the policy model is loaded."""

    dtype: DtypeName = Field(default="fp32", description="Parameter dtype the model is loaded in: fp32, bf16 or fp16 "
                                                         "(also float32, bfloat16, float16).")
    device: str = Field(default="cpu", description="torch device the model, its tensors and (trainer) its optimizer state live on: "
                                                    "cpu, cuda or cuda:<index>; cuda needs a CUDA build of torch and a visible GPU. "
                                                    "Sampling draws stay on the CPU, so a seed draws the same tokens for the same logits.")
    lora_rank: int = Field(default=0, ge=0, description="LoRA rank r; 0 fine-tunes every weight.")
    lora_alpha: float | None = Field(default=None, gt=0, description="LoRA scale α (the update is scaled by α/r); default 2·lora_rank, as ROLL.")
    lora_target: str | list[str] | None = Field(
        default=None, description="Modules LoRA adapts: names separated by commas or a list (matched as name suffixes), a regex "
                                  "(if it holds any of * $ | ( ), or all / all-linear (every linear layer but the output layer; the default).")

    @field_validator("device")
    @classmethod
    def _device_exists(cls, value: str) -> str:
        # Checked with the config, so a GPU asked for on a machine without one is a clean exit 2, not a traceback at load.
        if not re.fullmatch(r"cpu|cuda(:[0-9]+)?", value):
            raise ValueError(f"device {value!r}: expected cpu, cuda or cuda:<index>")
        if value != "cpu":
            import torch

            if not torch.cuda.is_available():
                raise ValueError(f"device {value!r}: torch sees no CUDA device on this machine "
                                 f"(torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'}); use device cpu")
            index = int(value.partition(":")[2] or 0)
            if index >= torch.cuda.device_count():
                raise ValueError(f"device {value!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
        return value

    @field_validator("lora_alpha", "lora_target")
    @classmethod
    def _needs_a_rank(cls, value, info: ValidationInfo):
        # Without a rank these would be accepted and then ignored.
        if value is not None and not info.data.get("lora_rank"):
            raise ValueError(f"{info.field_name} is set but lora_rank is 0 (full fine-tuning); set lora_rank > 0 to train a LoRA adapter")
        return value
