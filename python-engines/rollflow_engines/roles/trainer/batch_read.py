"""Reading a train step's samples: inline, or from a file or an object in the store (``batch_ref``), each
checked against the request, with the batch's fingerprint.

Every problem with the input is a RequestError naming the field (``batch[3].old_logprobs``,
``batch_ref``, ``batch_ref[7].reward``), never a 500.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath

from pydantic import TypeAdapter, ValidationError

from ...errors import NotFoundError, RequestError, UnavailableError
from ...objects import CorruptObjectError, ObjectNotFoundError, ObjectRefError, ObjectStoreError, is_object_ref, read_object
from .contracts import Sample, TrainStepRequest

_SAMPLE = TypeAdapter(Sample)


def read_batch_ref(ref: str) -> list[Sample]:
    """Samples from a .jsonl (one Sample a line) or .json (an array, or {"samples": [...]}) file or object
    (s3://<bucket>/<key>); both are read by the same rules."""
    text = _object_text(ref) if is_object_ref(ref) else _file_text(ref)
    return _parse_samples(text, ref)


def _file_text(ref: str) -> str:
    path = Path(ref)
    if not path.is_file():
        raise NotFoundError("batch_ref", f"no such file: {ref}", ref)
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise RequestError("batch_ref", f"cannot read {ref}: {e}", ref) from e


def _object_text(ref: str) -> str:
    try:
        return read_object(ref).decode()
    except ObjectNotFoundError as e:
        raise NotFoundError("batch_ref", str(e), ref) from e
    except (ObjectRefError, CorruptObjectError) as e:
        raise RequestError("batch_ref", str(e), ref) from e
    except UnicodeDecodeError as e:
        raise RequestError("batch_ref", f"cannot read {ref}: {e}", ref) from e
    except ObjectStoreError as e:  # the store's trouble, not the request's: a 503 the caller retries
        raise UnavailableError("batch_ref", str(e), ref) from e


def _parse_samples(text: str, ref: str) -> list[Sample]:
    if PurePosixPath(ref).suffix == ".jsonl":
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        raw = []
        for n, line in lines:
            try:
                raw.append(json.loads(line, parse_constant=str))
            except json.JSONDecodeError as e:
                raise RequestError("batch_ref", f"{ref} line {n} is not JSON: {e.msg}", ref) from e
    else:
        try:
            raw = json.loads(text, parse_constant=str)  # NaN stays text: rejected, and errors stay JSON
        except json.JSONDecodeError as e:
            raise RequestError("batch_ref", f"{ref} is not JSON ({e.msg}); name JSONL files *.jsonl", ref) from e
        if isinstance(raw, dict) and isinstance(raw.get("samples"), list):
            raw = raw["samples"]
        if not isinstance(raw, list):
            raise RequestError("batch_ref", f"{ref}: expected a JSON array of samples or {{\"samples\": [...]}}", ref)
    samples = []
    for i, item in enumerate(raw):
        try:
            samples.append(_SAMPLE.validate_python(item))
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise RequestError(f"batch_ref[{i}]" + (f".{where}" if where else ""), err["msg"], err.get("input")) from e
    return samples


def resolve_samples(req: TrainStepRequest) -> tuple[list[Sample], str]:
    """The request's samples and the field name that errors about them should use."""
    if req.batch is not None and req.batch_ref is not None:
        raise RequestError("batch_ref", "give either batch or batch_ref, not both")
    if req.batch is None and req.batch_ref is None:
        raise RequestError("batch", "missing: give batch (inline samples) or batch_ref (a file of samples)")
    if req.batch is not None:
        return req.batch, "batch"
    return read_batch_ref(req.batch_ref or ""), "batch_ref"


def check_samples(samples: list[Sample], field: str, vocab_size: int | None) -> None:
    """Lengths agree, token ids fit the vocabulary, uids are unique, some token counts in the loss."""
    if not samples:
        raise RequestError(field, "empty batch: expected at least one sample", [])
    seen: set[str] = set()
    for i, s in enumerate(samples):
        n = len(s.response_ids)
        for name in ("old_logprobs", "loss_mask", "versions"):
            values = getattr(s, name)
            if values is not None and len(values) != n:
                raise RequestError(f"{field}[{i}].{name}", f"has {len(values)} entries; response_ids has {n}", len(values))
        for span_i, span in enumerate(s.version_spans or []):
            if not span.start <= span.end <= n:
                raise RequestError(f"{field}[{i}].version_spans[{span_i}]", f"expected 0 <= start <= end <= {n}", span.model_dump())
        if vocab_size is not None:
            for name in ("prompt_ids", "response_ids"):
                ids = getattr(s, name)
                if max(ids) >= vocab_size:
                    bad = next(t for t in ids if t >= vocab_size)
                    raise RequestError(f"{field}[{i}].{name}", f"token id {bad} is outside the vocabulary (size {vocab_size})", bad)
        if s.uid in seen:
            raise RequestError(f"{field}[{i}].uid", f"uid {s.uid!r} appears twice in the batch", s.uid)
        seen.add(s.uid)
    if not any(s.loss_mask is None or any(s.loss_mask) for s in samples):
        raise RequestError(field, "no response token has loss_mask 1: nothing to train on")


def batch_fingerprint(samples: list[Sample]) -> str:
    """Identifies a batch by its uids, to recognise a retried train step."""
    return hashlib.sha256("\n".join(s.uid for s in samples).encode()).hexdigest()
