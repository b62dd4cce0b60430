"""Causal-LM sequences as tensors: prompt + response pairs padded into a micro-batch, and the per-token
logprobs, entropies and hidden states of the response tokens gathered from a forward pass.

Shared by the trainer (every train step) and the warm-start (its supervised loss), so it sits with the
models, below both.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


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


def _response_log_softmax(logits: Tensor, mb: MicroBatch, temperature: float) -> Tensor:
    """[B, T, V] log softmax(logits / temperature) at each response token's logit position, in float32."""
    index = mb.response_index
    picked = logits.gather(1, index[..., None].expand(-1, -1, logits.shape[-1]))
    return torch.log_softmax(picked.float() / effective_temperature(temperature), dim=-1)


def response_logprobs(logits: Tensor, mb: MicroBatch, temperature: float) -> Tensor:
    """[B, T]: log softmax(logits[b, p] / temperature)[input_ids[b, p + 1]] for each response
    token's logit position p, in float32; 0 beyond each response's end.

    Only the response positions go through the softmax, so memory is B·T·V, not B·L·V.
    """
    return response_logprobs_and_entropy(logits, mb, temperature, entropy=False)[0]


def response_logprobs_and_entropy(logits: Tensor, mb: MicroBatch, temperature: float,
                                  entropy: bool = True) -> tuple[Tensor, Tensor | None]:
    """``response_logprobs`` and, from the same softmax, the entropy H = −Σ_v p_v log p_v of
    each response position's next-token distribution ([B, T]; 0 beyond each response's end)."""
    log_p = _response_log_softmax(logits, mb, temperature)
    targets = mb.input_ids.gather(1, mb.response_index + 1)
    inside = mb.response_mask > 0
    logp = log_p.gather(-1, targets[..., None]).squeeze(-1)
    logp = torch.where(inside, logp, torch.zeros_like(logp))
    if not entropy:
        return logp, None
    h = -(log_p.exp() * log_p).sum(-1)
    return logp, torch.where(inside, h, torch.zeros_like(h))


def response_hidden(hidden: Tensor, mb: MicroBatch) -> Tensor:
    """[B, T, H]: the hidden state at each response token's logit position, i.e. of the state
    s_t = (prompt, y_<t) in which y_t is chosen; the value head reads V(s_t) from it."""
    index = mb.response_index
    return hidden.gather(1, index[..., None].expand(-1, -1, hidden.shape[-1]))
