"""From a train-step request to tensors: read and check the samples, compute
advantages, pad micro-batches, and gather per-token logprobs.

Every problem with the input is a RequestError naming the field
(``batch[3].old_logprobs``, ``batch_ref``, ``batch_ref[7].reward``), never a 500.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import torch
from pydantic import TypeAdapter, ValidationError
from torch import Tensor

from ...algorithms import ADVANTAGE_ESTIMATORS, REWARD_NORMS, AdvantageParams, LossParams
from ...errors import NotFoundError, RequestError
from .contracts import Sample, TrainStepRequest

_SAMPLE = TypeAdapter(Sample)


# ---- reading a batch

def read_batch_ref(ref: str) -> list[Sample]:
    """Samples from a .jsonl file (one Sample a line) or a .json file (an array, or {"samples": [...]})."""
    path = Path(ref)
    if not path.is_file():
        raise NotFoundError("batch_ref", f"no such file: {ref}", ref)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise RequestError("batch_ref", f"cannot read {ref}: {e}", ref) from e
    if path.suffix == ".jsonl":
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


# ---- advantages and the per-step plan

@dataclass
class PreparedBatch:
    """Everything a backend needs, computed once per train step (before any epoch)."""

    samples: list[Sample]
    rewards: Tensor  # [N] raw rewards
    advantages: Tensor  # [N] sequence-level advantages
    loss_params: LossParams
    fingerprint: str

    @property
    def tokens(self) -> int:
        return sum(len(s.response_ids) for s in self.samples)

    @property
    def loss_tokens(self) -> int:
        return sum(len(s.response_ids) if s.loss_mask is None else sum(s.loss_mask) for s in self.samples)


def prepare_batch(samples: list[Sample], req: TrainStepRequest) -> PreparedBatch:
    rewards = torch.tensor([s.reward for s in samples], dtype=torch.float32)
    group_ids = [s.group_id for s in samples]
    params = AdvantageParams(eps=req.adv_eps, std_normalize=req.adv_std_normalize, baseline=req.adv_baseline)
    normalised = REWARD_NORMS[req.reward_norm](rewards, group_ids, params)
    advantages = ADVANTAGE_ESTIMATORS[req.adv_estimator](normalised, group_ids, params)
    loss_params = LossParams(
        clip_low=req.pg_clip_low if req.pg_clip_low is not None else req.pg_clip,
        clip_high=req.pg_clip_high if req.pg_clip_high is not None else req.pg_clip,
        dual_clip=req.dual_clip,
        loss_agg_mode=req.loss_agg_mode,
    )
    return PreparedBatch(samples, rewards, advantages, loss_params, batch_fingerprint(samples))


def batch_metrics(batch: PreparedBatch, version: int) -> dict[str, float]:
    """Metrics that depend on the batch only: rewards, advantages, sizes, staleness."""
    r, a = batch.rewards, batch.advantages
    lengths = torch.tensor([float(len(s.response_ids)) for s in batch.samples])
    out = {
        "samples": float(len(batch.samples)),
        "tokens": float(batch.tokens),
        "actor/loss_tokens": float(batch.loss_tokens),
        "rewards/mean": r.mean().item(), "rewards/std": _std(r), "rewards/max": r.max().item(), "rewards/min": r.min().item(),
        "advantages/mean": a.mean().item(), "advantages/std": _std(a), "advantages/max": a.max().item(), "advantages/min": a.min().item(),
        "response_length/mean": lengths.mean().item(), "response_length/max": lengths.max().item(),
    }
    # Staleness = trained-on version − oldest version that generated a token of the sample.
    oldest = [min(s.versions) if s.versions else min(sp.version for sp in s.version_spans) if s.version_spans else None
              for s in batch.samples]
    known = [version - v for v in oldest if v is not None]
    if known:
        out["staleness/mean"] = sum(known) / len(known)
        out["staleness/max"] = float(max(known))
    return out


def _std(t: Tensor) -> float:
    return t.std().item() if t.numel() > 1 else 0.0


# ---- padding and logprob gathering

@dataclass
class MicroBatch:
    input_ids: Tensor  # [B, L]
    attention_mask: Tensor  # [B, L] 1 = real token
    position_ids: Tensor  # [B, L] 0-based positions of real tokens, whatever the padding side
    response_index: Tensor  # [B, T] index into the shifted logprobs [B, L-1] of each response token
    response_mask: Tensor  # [B, T] 1.0 where t < len(response)


def pad_sequences(pairs: list[tuple[list[int], list[int]]], pad_id: int, padding_side: str = "right",
                  min_length: int = 0) -> MicroBatch:
    """prompt + response of each pair, padded on ``padding_side`` to the longest (at least ``min_length``).

    Position ids count real tokens only, so a left-padded sequence gets the
    same positions (0, 1, …) as the unpadded one and RoPE sees no offset.
    """
    lengths = [len(p) + len(r) for p, r in pairs]
    seq_len, resp_len = max(max(lengths), min_length), max(len(r) for _, r in pairs)
    b = len(pairs)
    input_ids = torch.full((b, seq_len), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((b, seq_len), dtype=torch.long)
    response_index = torch.zeros((b, resp_len), dtype=torch.long)
    response_mask = torch.zeros((b, resp_len), dtype=torch.float32)
    for i, (prompt, response) in enumerate(pairs):
        offset = seq_len - lengths[i] if padding_side == "left" else 0
        input_ids[i, offset:offset + lengths[i]] = torch.tensor(prompt + response, dtype=torch.long)
        attention_mask[i, offset:offset + lengths[i]] = 1
        # The logit predicting sequence token j sits at position j − 1. Slots past the
        # response's end point at its first position too, so they never read a padding position.
        first = offset + len(prompt) - 1
        response_index[i, :] = first
        response_index[i, :len(response)] = torch.arange(first, first + len(response))
        response_mask[i, :len(response)] = 1.0
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    return MicroBatch(input_ids, attention_mask, position_ids, response_index, response_mask)


def effective_temperature(temperature: float) -> float:
    """Greedy sampling (temperature 0) reports logprobs under temperature 1, as the inference role does."""
    return temperature if temperature > 0 else 1.0


def response_logprobs(logits: Tensor, mb: MicroBatch, temperature: float) -> Tensor:
    """[B, T]: log softmax(logits[b, p] / temperature)[input_ids[b, p + 1]] for each response
    token's logit position p, in float32; 0 beyond each response's end.

    Only the response positions go through the softmax, so memory is B·T·V, not B·L·V.
    """
    index = mb.response_index
    picked = logits.gather(1, index[..., None].expand(-1, -1, logits.shape[-1]))
    targets = mb.input_ids.gather(1, index + 1)
    logp = torch.log_softmax(picked.float() / effective_temperature(temperature), dim=-1).gather(-1, targets[..., None]).squeeze(-1)
    return torch.where(mb.response_mask > 0, logp, torch.zeros_like(logp))


def per_token(samples: list[Sample], values: list[list[float]] | None, width: int) -> Tensor:
    """[B, width] float tensor of per-response-token lists, zero-padded."""
    out = torch.zeros((len(samples), width), dtype=torch.float32)
    for i, row in enumerate(values or []):
        out[i, :len(row)] = torch.tensor(row, dtype=torch.float32)
    return out


def loss_mask_of(samples: list[Sample], width: int) -> Tensor:
    return per_token(samples, [[float(m) for m in s.loss_mask] if s.loss_mask is not None else [1.0] * len(s.response_ids)
                               for s in samples], width)
