"""The receiving end of the direct weight transfer: an inference server's process joins the transfer
group and takes version N from the trainer's rank 0 (docs/gpu-weight-transfer.md; the wire is described
in roles/trainer/direct_weights.py).

NEVER RUN ON A GPU; the gloo path has run on CPU in tests/test_direct_weights.py. Not wired to an
endpoint yet. What it returns is the state dict, verified; loading it into the served model is the
backend's (torch: load_state_dict; vLLM: the worker's load_weights through collective_rpc, see the doc).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...direct_weights import (
    ManifestError, Outcome, WeightManifest, check_manifest_fits, mismatched_tensors, plan_buckets, require_backend,
    tensor_sha256,
)
from ..trainer.direct_weights import DEFAULT_BUCKET_BYTES


@dataclass
class Received:
    """What a receiver ends with: its outcome (``ok``: ``tensors`` hold the manifest's version, verified),
    the manifest (None if it never arrived), the state dict, and why when not ``ok``."""

    outcome: Outcome
    manifest: WeightManifest | None
    tensors: dict[str, Any]
    reason: str = ""


def receive_weights(expected: dict[str, tuple[str, tuple[int, ...]]], *, backend: str, served_model: str | None = None,
                    group: Any = None, device: Any = None, bucket_bytes: int = DEFAULT_BUCKET_BYTES,
                    verify: bool = True) -> Received:
    """Take part in one transfer as a receiver. ``expected`` maps each tensor name of the served model to
    (dtype, shape); a manifest that does not match it is refused before any tensor moves (and so is the
    transfer for every rank, see the all-reduce). ``verify``: hash every received tensor against the
    manifest (a CPU copy of each). An exception from torch.distributed (a peer died, a timeout) propagates:
    the caller reports ``failed`` and the group must be rebuilt."""
    dist = require_backend(backend)
    import torch

    device = torch.device(device or ("cuda" if backend == "nccl" else "cpu"))
    length = torch.zeros(1, dtype=torch.int64, device=device)
    dist.broadcast(length, src=0, group=group)
    raw = torch.empty(int(length.item()), dtype=torch.uint8, device=device)
    dist.broadcast(raw, src=0, group=group)
    manifest: WeightManifest | None = None
    reason = ""
    try:
        manifest = WeightManifest.from_bytes(raw.cpu().numpy().tobytes())
        check_manifest_fits(manifest, expected, served_model)
    except ManifestError as e:
        reason = str(e)
    accepted = torch.tensor([0 if reason else 1], dtype=torch.int64, device=device)
    dist.all_reduce(accepted, op=dist.ReduceOp.MIN, group=group)
    if reason or int(accepted.item()) != 1:
        return Received("refused", manifest, {}, reason or "another receiver refused the manifest")
    assert manifest is not None
    entries = {e.name: e for e in manifest.entries}
    tensors: dict[str, Any] = {}
    for bucket in plan_buckets(manifest, bucket_bytes):
        packed = torch.empty(sum(entries[n].nbytes for n in bucket), dtype=torch.uint8, device=device)
        dist.broadcast(packed, src=0, group=group)
        offset = 0
        for n in bucket:
            e = entries[n]
            chunk = packed[offset:offset + e.nbytes]
            # clone: a fresh, aligned buffer (a tensor's offset in the bucket need not suit its dtype's size)
            tensors[n] = chunk.clone().view(getattr(torch, e.dtype)).reshape(e.shape)
            offset += e.nbytes
    if verify:
        bad = mismatched_tensors(manifest, {n: tensor_sha256(t) for n, t in tensors.items()})
        if bad:
            return Received("checksum_mismatch", manifest, {}, f"{len(bad)} tensors differ from the manifest, first {bad[0]}")
    return Received("ok", manifest, tensors)
