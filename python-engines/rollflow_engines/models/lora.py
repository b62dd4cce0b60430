"""LoRA adapters through peft, for the torch trainer and the torch inference server.

The trainer wraps its model with ``get_peft_model``: the base weights are frozen and only the
adapter's ``lora_A``/``lora_B`` matrices train. It exports the adapter alone for a weight sync
(peft's ``save_pretrained``: adapter_config.json + adapter_model.safetensors); the inference
server, started with the same base model and LoRA settings, wraps its model the same way and
replaces its adapter tensors with the exported ones (``set_peft_model_state_dict``). Nothing is
ever merged into the served base weights, so they cannot drift, however many syncs come.

``LoraSpec.describe()`` goes into the export manifest; a server refuses an adapter whose rank,
alpha, target modules or base weights (a fingerprint of the model files) differ from its own.
"""
from __future__ import annotations

import copy
import hashlib
import json
import struct
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RequestError

ADAPTER_WEIGHTS = "adapter_model.safetensors"
REGEX_CHARS = "*$|("  # ROLL reads a lora_target holding any of these as one regex


def parse_target(value: str | list[str] | None) -> str | tuple[str, ...]:
    """ROLL's lora_target: all / all-linear -> peft's "all-linear"; a regex stays a string; "q_proj,v_proj" -> names."""
    if value is None or value in ("all", "all-linear"):
        return "all-linear"
    if isinstance(value, str):
        if any(c in value for c in REGEX_CHARS):
            return value
        value = value.split(",")
    names = tuple(sorted({v.strip() for v in value if v.strip()}))
    if not names:
        raise ValueError("lora_target names no module")
    return names


def base_fingerprint(model_dir: Path) -> str:
    """A short hash of a model directory's base weights: every tensor's name, dtype, shape and first
    64 bytes, read from the safetensors headers (no tensor is loaded, so it costs a few reads).
    Two servers that loaded the same files agree on it whatever dtype they cast to."""
    digest = hashlib.blake2b(digest_size=8)
    for file in sorted(model_dir.glob("*.safetensors")):
        with file.open("rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(header_len))
            for name in sorted(k for k in header if k != "__metadata__"):
                info = header[name]
                start, end = info["data_offsets"]
                f.seek(8 + header_len + start)
                digest.update(f"{name}|{info['dtype']}|{info['shape']}|".encode())
                digest.update(f.read(min(64, end - start)))
    return digest.hexdigest()


@dataclass(frozen=True)
class LoraSpec:
    """One LoRA setting: rank r, scale α, the modules adapted, and the base weights it applies to."""

    rank: int
    alpha: float
    target: str | tuple[str, ...]
    base: str

    @classmethod
    def from_options(cls, options: Any, model_dir: Path) -> "LoraSpec | None":
        """None for full fine-tuning (lora_rank 0); ValueError naming lora_target if it names nothing."""
        if not options.lora_rank:
            return None
        alpha = options.lora_alpha if options.lora_alpha is not None else 2.0 * options.lora_rank
        return cls(options.lora_rank, float(alpha), parse_target(options.lora_target), base_fingerprint(model_dir))

    @property
    def target_modules(self) -> str | list[str]:
        """The target as peft's target_modules takes it (and a JSON manifest holds it): a string or a list."""
        return self.target if isinstance(self.target, str) else list(self.target)

    def describe(self) -> dict[str, Any]:
        return {"r": self.rank, "lora_alpha": self.alpha, "target_modules": self.target_modules, "base": self.base}

    def peft_config(self):
        from peft import LoraConfig

        return LoraConfig(r=self.rank, lora_alpha=self.alpha, target_modules=self.target_modules, lora_dropout=0.0,
                          bias="none", task_type="CAUSAL_LM")


def wrap(model, spec: LoraSpec, seed: int):
    """``model`` with a LoRA adapter (lora_B = 0, so it computes what the base does); only the adapter trains.
    lora_A's random init is drawn from ``seed`` alone, so a rebuilt trainer starts from the same adapter."""
    import torch
    from peft import get_peft_model

    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        torch.manual_seed(seed)
        # peft 0.21 reads transformers' deprecated is_gradient_checkpointing; nothing for us to change.
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        try:
            wrapped = get_peft_model(model, spec.peft_config())
        except ValueError as e:  # peft: "Target modules {...} not found in the base model"
            raise ValueError(f"lora_target {spec.target!r} fits no module of this model: {e}") from e
    wrapped.eval()
    return wrapped


def adapter_state(model) -> dict:
    """The adapter's tensors, named as peft's save_pretrained writes them."""
    from peft import get_peft_model_state_dict

    return get_peft_model_state_dict(model)


def load_adapter(model, directory: Path) -> None:
    """Replaces ``model``'s adapter tensors with ``directory``'s (written by the trainer's export);
    every check runs before any tensor changes. Errors name ``path``."""
    from peft import set_peft_model_state_dict
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    file = directory / ADAPTER_WEIGHTS
    if not file.is_file():
        raise RequestError("path", f"{directory} holds no {ADAPTER_WEIGHTS}; this server applies LoRA adapters "
                           "(the trainer's export of a LoRA run)", str(directory))
    try:
        incoming = load_file(file)
    except (SafetensorError, OSError) as e:
        raise RequestError("path", f"cannot read the adapter: {e}", str(directory)) from e
    current = adapter_state(model)
    if set(incoming) != set(current):
        odd = sorted(set(incoming) ^ set(current))
        raise RequestError("path", f"the adapter does not fit this server's LoRA modules; first mismatch: {odd[0]}", str(directory))
    for name, tensor in incoming.items():
        if tensor.shape != current[name].shape:
            raise RequestError("path", f"adapter tensor {name} has shape {list(tensor.shape)}, this server's is "
                               f"{list(current[name].shape)} (another lora_rank?)", str(directory))
    set_peft_model_state_dict(model, incoming)


def merged_copy(model):
    """The trained policy as a plain model: a copy with the adapter merged into its weights.
    The original keeps its separate base and adapter (merging in place would train on drifted bases)."""
    return copy.deepcopy(model).merge_and_unload()
