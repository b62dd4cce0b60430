"""The sending end of the direct weight transfer: the trainer's rank 0 broadcasts version N to the
inference servers over the transfer's process group (docs/gpu-weight-transfer.md).

NEVER RUN ON A GPU; the gloo path has run on CPU in tests/test_direct_weights.py. Not wired to an
endpoint yet: nothing in the trainer's server calls it (the doc says what will).

The wire, all collectives on the transfer group, rank 0 the source:
1. the manifest's length (one int64), then its bytes (uint8): rollflow_engines/direct_weights.py;
2. an all-reduce (MIN) of each rank's acceptance (1 or 0): every receiver checks the manifest against its
   model first; if any refuses, every rank stops here, so no rank is left waiting in a broadcast;
3. one broadcast per bucket of plan_buckets: the bucket's tensors packed as bytes, in manifest order.
"""
from __future__ import annotations

from typing import Any

from ...direct_weights import WeightManifest, build_manifest, plan_buckets, require_backend

DEFAULT_BUCKET_BYTES = 512 << 20


def send_weights(named_tensors: dict[str, Any], version: int, model: str | None, *, backend: str, group: Any = None,
                 device: Any = None, bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> tuple[WeightManifest, bool]:
    """Broadcast ``named_tensors`` (the HF-named state dict the export would write) as ``version`` from rank 0.
    Returns the manifest and whether every receiver accepted it (False: nothing but the manifest moved)."""
    dist = require_backend(backend)
    import torch

    if dist.get_rank(group) != 0:
        raise RuntimeError(f"send_weights runs on rank 0 of the transfer group; this is rank {dist.get_rank(group)}")
    device = torch.device(device or ("cuda" if backend == "nccl" else "cpu"))
    manifest = build_manifest(named_tensors, version, model)
    data = manifest.to_bytes()
    dist.broadcast(torch.tensor([len(data)], dtype=torch.int64, device=device), src=0, group=group)
    dist.broadcast(torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device), src=0, group=group)
    accepted = torch.ones(1, dtype=torch.int64, device=device)
    dist.all_reduce(accepted, op=dist.ReduceOp.MIN, group=group)
    if int(accepted.item()) != 1:
        return manifest, False
    for bucket in plan_buckets(manifest, bucket_bytes):
        packed = torch.cat([named_tensors[n].detach().to(device).contiguous().reshape(-1).view(torch.uint8) for n in bucket])
        dist.broadcast(packed, src=0, group=group)
    return manifest, True
