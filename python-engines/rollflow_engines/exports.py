"""The export manifest: what the trainer's /export_weights writes beside the weights, and what
an inference server checks before it loads them.

``rollflow_export.json`` records the trainer backend that wrote the weights, the model they
belong to, its vocabulary size, its LoRA settings (null: the export is the whole model; else it
is an adapter, models/lora.py) and the policy version; an export to the object store also lists
every other file with its size and sha256 (``files``), which a server that pulls it checks
(roles/inference/weights_cache.py). An inference server refuses a path
that is not such a directory, or whose weights belong to another model, before it changes
anything: it keeps serving the weights it has.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import ConflictError, NotFoundError, RequestError
from .models.names import split_name

EXPORT_MANIFEST = "rollflow_export.json"
EXPORT_FILES = "files"  # {relative path: {"size": bytes, "sha256": hex}}, as a trainer state's meta file lists them
# Trainer backends that export Hugging Face directories (safetensors + config + tokenizer).
HF_EXPORTERS = frozenset({"torch", "megatron"})


def listed_path_inside(name: str) -> bool:
    """A path a manifest (or a trainer state's meta file) lists stays inside its directory: relative, no "..". A pull
    writes each listed file there, so a listed "../x" must never reach the disk."""
    parts = PurePosixPath(name).parts
    return bool(parts) and not name.startswith("/") and ".." not in parts


def write_export_manifest(directory: Path, description: dict[str, Any], version: int,
                          files: dict[str, dict[str, Any]] | None = None) -> None:
    """``description``: the trainer backend's describe() (backend, model, vocab_size, ...); ``files``: the export's
    other files (EXPORT_FILES), listed only by an export that goes to the object store."""
    listed = {EXPORT_FILES: files} if files is not None else {}
    (directory / EXPORT_MANIFEST).write_text(json.dumps({**description, "version": version, **listed}, indent=1))


def read_export_manifest(path: str) -> tuple[Path, dict[str, Any]]:
    """The export directory at ``path`` and its manifest; a 404 or 400 naming ``path`` otherwise."""
    directory = Path(path)
    if not directory.exists():
        raise NotFoundError("path", f"{path} does not exist", path)
    if not directory.is_dir():
        raise RequestError("path", f"{path} is a file; expected a directory written by the trainer's /export_weights", path)
    manifest = directory / EXPORT_MANIFEST
    try:
        data = json.loads(manifest.read_text())
    except FileNotFoundError:
        raise RequestError("path", f"{path} has no {EXPORT_MANIFEST}; expected a directory written by the trainer's "
                           "/export_weights", path) from None
    except (OSError, ValueError) as e:
        raise RequestError("path", f"{manifest} is not readable JSON: {e}", path) from e
    if not isinstance(data, dict):
        raise RequestError("path", f"{manifest} holds a {type(data).__name__}; expected an object", path)
    return directory, data


@dataclass(frozen=True)
class ServedModel:
    """What an inference server serves, as far as an export must match it."""

    backend: str
    loads_exports_of: frozenset[str]  # trainer backends whose exports this backend can load
    model: str | None  # None: the backend serves no named model (sim)
    vocab_size: int | None  # None: not known before loading
    lora: dict[str, Any] | None = None  # LoraSpec.describe() of a server that applies adapters; None: it loads whole models


def tiny_architecture(model: str | None) -> str | None:
    """The preset of a ``tiny:<preset>[+warm:<name>]`` model (a warm start keeps its preset's shapes); None for a path."""
    return split_name(model)[0] if model and model.startswith("tiny:") else None


def check_export_fits(path: str, manifest: dict[str, Any], served: ServedModel) -> None:
    """A 409 naming ``path`` if the manifest's backend, model or vocabulary differs from ``served``."""
    exported_by = manifest.get("backend")
    if exported_by not in served.loads_exports_of:
        raise ConflictError("path", f"the weights were exported by the {exported_by!r} trainer backend; a {served.backend} "
                            f"inference server loads exports of {', '.join(sorted(served.loads_exports_of))}", path)
    model = manifest.get("model")
    # Only tiny presets are compared: a path names where a model lives, which differs between hosts
    # (the vocabulary and, on torch, every tensor's shape are checked whatever the names).
    ours, theirs = tiny_architecture(served.model), tiny_architecture(model)
    if ours and theirs and ours != theirs:
        raise ConflictError("path", f"the weights are of model {model!r}; this server serves {served.model!r}", path)
    check_lora_fits(path, manifest.get("lora"), served.lora)
    vocab = manifest.get("vocab_size")
    if vocab is not None and served.vocab_size is not None and vocab != served.vocab_size:
        raise ConflictError("path", f"the weights have a vocabulary of {vocab} tokens; this server's model has "
                            f"{served.vocab_size}", path)


def check_lora_fits(path: str, exported: dict[str, Any] | None, served: dict[str, Any] | None) -> None:
    """A 409 naming ``path`` unless an adapter goes to a server with the same LoRA settings and base
    weights, and a whole model to a server without LoRA."""
    if exported == served:
        return
    if served is None:
        raise ConflictError("path", f"the export is a LoRA adapter (r={exported.get('r')}); this server loads whole models "
                            "(start it with the trainer's lora_rank to apply adapters)", path)
    if exported is None:
        raise ConflictError("path", f"the export is a whole model; this server applies LoRA adapters (r={served['r']}) to its "
                            "base weights and loads nothing else", path)
    if not isinstance(exported, dict):
        raise ConflictError("path", f"the manifest's lora is a {type(exported).__name__}; expected an object", path)
    differ = [f"{k} {exported.get(k)!r} (this server: {served[k]!r})" for k in served if exported.get(k) != served[k]]
    raise ConflictError("path", "the adapter was trained for other LoRA settings or base weights: " + ("; ".join(differ) or repr(exported)), path)
