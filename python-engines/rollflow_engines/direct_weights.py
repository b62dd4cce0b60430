"""Direct trainer -> inference weight transfer: the parts both ends share (docs/gpu-weight-transfer.md).

NEVER RUN ON A GPU. The NCCL path has not run anywhere: this machine has no GPU. What has run is the
pure logic below (unit tests on CPU) and one broadcast of a small state dict over torch.distributed's
gloo backend between two CPU processes (tests/test_direct_weights.py); NCCL on CUDA is the same calls
on another backend, untested.

What is pure (no torch at import):
- the **manifest**: one entry per tensor (name, dtype, shape, byte count, sha256 of its bytes), the
  policy version and the model, with a digest over all of it. The sender broadcasts it before any
  tensor, so a receiver can refuse a transfer that does not fit its model before it allocates anything,
  and verify every tensor after it arrives;
- the **plan**: the order the tensors travel in (the manifest's order, grouped into buckets of at most
  ``bucket_bytes``, a larger tensor alone);
- the **fallback decision**: after a transfer, which servers hold the new version and which must load
  the export instead (the export is still written every sync: it is the durable record).

What needs torch.distributed (imported lazily, by the functions that need it): ``require_backend`` and
``init_transfer_group``. ``nccl`` needs torch with NCCL and a CUDA device and is refused with an error
naming what is missing otherwise; ``gloo`` runs on CPU and is what the CPU test uses.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

MANIFEST_FORMAT = "rollflow-direct-weights/1"
# Dtypes a manifest may name: torch's names without the "torch." prefix.
DTYPES = frozenset({"float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool"})
BACKENDS = ("nccl", "gloo")


class DirectTransferUnavailable(RuntimeError):
    """The direct transfer cannot work in this process: the message names what is missing."""


class ManifestError(ValueError):
    """A manifest that is malformed or does not fit the receiver's model: the message names the tensor."""


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    sha256: str

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape), "nbytes": self.nbytes, "sha256": self.sha256}


@dataclass(frozen=True)
class WeightManifest:
    """What the sender broadcasts first: the version, the model, and every tensor in the order it travels."""

    version: int
    model: str | None
    entries: tuple[TensorEntry, ...]

    def body(self) -> dict[str, Any]:
        return {"format": MANIFEST_FORMAT, "version": self.version, "model": self.model,
                "tensors": [e.describe() for e in self.entries]}

    def digest(self) -> str:
        """sha256 of the canonical JSON of the body: equal digests, equal manifests (and so equal tensor bytes)."""
        return hashlib.sha256(json.dumps(self.body(), sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    def total_bytes(self) -> int:
        return sum(e.nbytes for e in self.entries)

    def to_bytes(self) -> bytes:
        return json.dumps({**self.body(), "digest": self.digest()}, sort_keys=True, separators=(",", ":")).encode()

    @staticmethod
    def from_bytes(data: bytes) -> WeightManifest:
        """Parse and check a received manifest: its format, every entry's fields, and its digest."""
        try:
            raw = json.loads(data.decode())
        except (UnicodeDecodeError, ValueError) as e:
            raise ManifestError(f"the manifest is not JSON: {e}") from e
        if not isinstance(raw, dict) or raw.get("format") != MANIFEST_FORMAT:
            raise ManifestError(f"the manifest's format is {raw.get('format') if isinstance(raw, dict) else raw!r}; "
                                f"expected {MANIFEST_FORMAT!r}")
        version = raw.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ManifestError(f"the manifest's version is {version!r}; expected an integer >= 0")
        tensors = raw.get("tensors")
        if not isinstance(tensors, list):
            raise ManifestError("the manifest has no list of tensors")
        manifest = WeightManifest(version, raw.get("model"), tuple(_entry(t) for t in tensors))
        names = [e.name for e in manifest.entries]
        if len(set(names)) != len(names):
            raise ManifestError("the manifest names a tensor twice: " + ", ".join(sorted({n for n in names if names.count(n) > 1})))
        if raw.get("digest") != manifest.digest():
            raise ManifestError(f"the manifest's digest {raw.get('digest')!r} is not that of its content ({manifest.digest()})")
        return manifest


def _entry(raw: Any) -> TensorEntry:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise ManifestError(f"a manifest entry has no name: {raw!r}"[:200])
    name = raw["name"]
    dtype, shape, nbytes, sha = raw.get("dtype"), raw.get("shape"), raw.get("nbytes"), raw.get("sha256")
    if dtype not in DTYPES:
        raise ManifestError(f"tensor {name}: dtype {dtype!r} is not one of {', '.join(sorted(DTYPES))}")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ManifestError(f"tensor {name}: shape {shape!r} is not a list of sizes >= 0")
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise ManifestError(f"tensor {name}: nbytes {nbytes!r} is not an integer >= 0")
    if not isinstance(sha, str) or len(sha) != 64:
        raise ManifestError(f"tensor {name}: sha256 {sha!r} is not 64 hex digits")
    return TensorEntry(name, dtype, tuple(shape), nbytes, sha)


def check_manifest_fits(manifest: WeightManifest, expected: dict[str, tuple[str, tuple[int, ...]]],
                        served_model: str | None = None) -> None:
    """Refuse (ManifestError) a manifest whose tensors are not exactly the receiver's: ``expected`` maps each
    of its tensor names to (dtype, shape). Called before any tensor is received, so a refusal changes nothing."""
    problems: list[str] = []
    if served_model is not None and manifest.model is not None and manifest.model != served_model:
        problems.append(f"the weights are of model {manifest.model!r}; this server serves {served_model!r}")
    sent = {e.name: e for e in manifest.entries}
    missing = sorted(set(expected) - set(sent))
    extra = sorted(set(sent) - set(expected))
    if missing:
        problems.append(f"{len(missing)} tensors of this model are not sent, first {missing[0]}")
    if extra:
        problems.append(f"{len(extra)} tensors sent are not in this model, first {extra[0]}")
    for name in sorted(set(sent) & set(expected)):
        dtype, shape = expected[name]
        e = sent[name]
        if (e.dtype, e.shape) != (dtype, tuple(shape)):
            problems.append(f"tensor {name} is {e.dtype}{list(e.shape)}; this server's is {dtype}{list(shape)}")
    if problems:
        raise ManifestError("; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""))


def plan_buckets(manifest: WeightManifest, bucket_bytes: int) -> list[list[str]]:
    """The order of the transfer: the manifest's tensors, in its order, grouped into buckets of at most
    ``bucket_bytes`` (one broadcast each once packed); a tensor larger than a bucket travels alone."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes is {bucket_bytes}; expected > 0")
    buckets: list[list[str]] = []
    current: list[str] = []
    size = 0
    for e in manifest.entries:
        if current and size + e.nbytes > bucket_bytes:
            buckets.append(current)
            current, size = [], 0
        current.append(e.name)
        size += e.nbytes
    if current:
        buckets.append(current)
    return buckets


def mismatched_tensors(manifest: WeightManifest, received_sha256: dict[str, str]) -> list[str]:
    """The names whose received bytes do not hash to the manifest's sha256 (or that never arrived), in order."""
    return [e.name for e in manifest.entries if received_sha256.get(e.name) != e.sha256]


Outcome = Literal["ok", "checksum_mismatch", "refused", "failed"]


@dataclass(frozen=True)
class SyncDecision:
    """After a direct transfer of ``version``: who holds it, who must load the export, and whether the
    process group must be built again before the next direct transfer."""

    version: int
    loaded: tuple[str, ...]
    load_export: tuple[str, ...]
    rebuild_group: bool


def decide_after_transfer(version: int, outcomes: dict[str, Outcome]) -> SyncDecision:
    """A server whose transfer was not ``ok`` keeps its old weights and takes the export path for the same
    version (the export is written every sync). A ``failed`` transfer (a peer died, a timeout, an NCCL error)
    leaves the NCCL communicator unusable for everyone, so the group is rebuilt before the next direct
    transfer; a refusal or a checksum mismatch is decided locally and leaves the group intact."""
    unknown = {o for o in outcomes.values()} - {"ok", "checksum_mismatch", "refused", "failed"}
    if unknown:
        raise ValueError(f"unknown transfer outcomes: {sorted(unknown)}")
    loaded = tuple(sorted(s for s, o in outcomes.items() if o == "ok"))
    fallback = tuple(sorted(s for s, o in outcomes.items() if o != "ok"))
    return SyncDecision(version, loaded, fallback, any(o == "failed" for o in outcomes.values()))


# --- the parts that need torch (imported here, lazily) -------------------------------------------------

def require_backend(backend: str) -> Any:
    """torch.distributed, once ``backend`` can work in this process; DirectTransferUnavailable naming what is
    missing otherwise. ``nccl`` needs torch built with NCCL and a CUDA device; ``gloo`` (CPU) needs torch."""
    if backend not in BACKENDS:
        raise DirectTransferUnavailable(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        raise DirectTransferUnavailable(f"the direct weight transfer needs torch, which does not import here: {e}") from e
    if not dist.is_available():
        raise DirectTransferUnavailable("this torch was built without torch.distributed")
    if backend == "nccl":
        if not dist.is_nccl_available():
            raise DirectTransferUnavailable("this torch was built without NCCL (torch.distributed.is_nccl_available() is False)")
        if not torch.cuda.is_available():
            raise DirectTransferUnavailable("the nccl backend needs a CUDA device; torch.cuda.is_available() is False here")
    elif not dist.is_gloo_available():
        raise DirectTransferUnavailable("this torch was built without gloo (torch.distributed.is_gloo_available() is False)")
    return dist


def init_transfer_group(backend: str, master_address: str, master_port: int, rank: int, world_size: int,
                        timeout_s: float = 300.0) -> Any:
    """Join the transfer's process group: rank 0 is the trainer (and hosts the TCP store), ranks 1.. the
    inference servers' receiving processes. Built once at run start and reused for every sync; the default
    group of this process is this group (the engines run no other torch.distributed job)."""
    import datetime

    dist = require_backend(backend)
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside a group of {world_size}")
    timeout = datetime.timedelta(seconds=timeout_s)
    store = dist.TCPStore(master_address, master_port, world_size, is_master=rank == 0, timeout=timeout)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=timeout)
    return dist.group.WORLD


def torch_dtype_name(tensor: Any) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def tensor_sha256(tensor: Any) -> str:
    """sha256 of a tensor's bytes (copied to the CPU: O(bytes), the cost of exact verification)."""
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    return hashlib.sha256(flat.cpu().view(torch.uint8).numpy().tobytes()).hexdigest()


def build_manifest(named_tensors: dict[str, Any], version: int, model: str | None) -> WeightManifest:
    """The manifest of ``named_tensors`` in their given order (the sender's state dict order)."""
    return WeightManifest(version, model, tuple(
        TensorEntry(name, torch_dtype_name(t), tuple(t.shape), t.numel() * t.element_size(), tensor_sha256(t))
        for name, t in named_tensors.items()))
