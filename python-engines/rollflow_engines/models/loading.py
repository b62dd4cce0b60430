"""From a model name to files and weights: ``tiny:<preset>`` (built from code, tiny.py),
``tiny:<preset>+warm:<name>`` (after a warm-start, warmstart.py) or a local Hugging Face model directory.
No model is ever downloaded.
"""
from __future__ import annotations

import os
from pathlib import Path

from .names import split_name
from .tiny import CHAT_TEMPLATE, TINY_PRESETS, default_cache_dir, load_pretrained, tiny_model_dir
from .warmstart import WARM_STARTS, resolve_warm_path


def check_tiny_name(name: str) -> None:
    """ValueError unless ``name`` is ``tiny:<preset>`` or ``tiny:<preset>+warm:<warm-start>`` with known parts."""
    preset, warm = split_name(name)
    if preset not in TINY_PRESETS:
        raise ValueError(f"unknown tiny preset; expected one of {', '.join(f'tiny:{p}' for p in TINY_PRESETS)}")
    if warm is not None and warm not in WARM_STARTS:
        raise ValueError(f"unknown warm-start {warm!r}; expected tiny:{preset}+warm:<one of {', '.join(WARM_STARTS)}>")


def resolve_model_path(name_or_path: str, seed: int = 0, cache_dir: str | os.PathLike | None = None, log=None) -> Path:
    """``tiny:<preset>`` -> a built model directory (built on first use); ``tiny:<preset>+warm:<name>``
    -> that model after warm-start ``<name>``; anything else is a local directory."""
    if name_or_path.startswith("tiny:") and "+warm:" in name_or_path:
        preset, warm = split_name(name_or_path)
        return resolve_warm_path(preset, warm or "", seed, cache_dir or default_cache_dir(), log)
    if name_or_path.startswith("tiny:"):
        return tiny_model_dir(name_or_path.removeprefix("tiny:"), seed, cache_dir)
    path = Path(name_or_path)
    if not path.is_dir():
        raise FileNotFoundError(f"model {name_or_path!r}: not a directory (models are not downloaded here; use tiny:<preset> or a local path)")
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"model {name_or_path!r}: no config.json there; expected a Hugging Face model directory "
                                "(config.json, safetensors weights, tokenizer files), as save_pretrained writes it")
    return path


def load_model(name_or_path: str, seed: int = 0, cache_dir: str | os.PathLike | None = None, dtype: str = "fp32",
               device: str = "cpu"):
    """(model, tokenizer) on ``device`` with parameters in ``dtype`` (policy_options.DTYPE_NAMES), from local files only."""
    model, tokenizer = load_pretrained(resolve_model_path(name_or_path, seed, cache_dir), dtype, device)
    if name_or_path.startswith("tiny:"):
        # A tiny model's template is code, like its tokenizer: one built (and cached) before the template rendered
        # tools gets today's, which renders every conversation without tools exactly as the old one did.
        tokenizer.chat_template = CHAT_TEMPLATE
    return model, tokenizer
