"""The direct weight transfer (docs/gpu-weight-transfer.md): its pure parts, and one real run of the wire over
torch.distributed's gloo backend between two CPU processes. NCCL on CUDA has never run."""
import json
import subprocess
import sys
import textwrap

import pytest

from rollflow_engines.direct_weights import (
    DirectTransferUnavailable, ManifestError, TensorEntry, WeightManifest, check_manifest_fits, decide_after_transfer,
    mismatched_tensors, plan_buckets, require_backend,
)

SHA = "0" * 64


def manifest(*sizes: int, version: int = 3) -> WeightManifest:
    return WeightManifest(version, "tiny:qwen2-small", tuple(
        TensorEntry(f"t{i}", "float32", (n // 4,), n, f"{i:064x}") for i, n in enumerate(sizes)))


def test_manifest_round_trips_and_its_digest_covers_every_field():
    m = manifest(8, 16)
    assert WeightManifest.from_bytes(m.to_bytes()) == m
    assert m.total_bytes() == 24
    other = WeightManifest(m.version, m.model, (m.entries[0], TensorEntry("t1", "float32", (4,), 16, SHA)))
    assert other.digest() != m.digest()
    assert WeightManifest(4, m.model, m.entries).digest() != m.digest()


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(digest="f" * 64), "digest"),
    (lambda d: d.update(version=-1), "version"),
    (lambda d: d.update(format="other/1"), "format"),
    (lambda d: d["tensors"][0].update(dtype="complex64"), "tensor t0: dtype"),
    (lambda d: d["tensors"][0].update(shape=[2, -1]), "tensor t0: shape"),
    (lambda d: d["tensors"][1].update(name="t0"), "twice"),
])
def test_a_malformed_or_altered_manifest_is_refused_naming_why(edit, message):
    raw = json.loads(manifest(8, 16).to_bytes())
    edit(raw)
    with pytest.raises(ManifestError, match=message):
        WeightManifest.from_bytes(json.dumps(raw).encode())
    with pytest.raises(ManifestError, match="not JSON"):
        WeightManifest.from_bytes(b"\xff")


def test_a_manifest_must_match_the_served_model_exactly():
    m = manifest(8, 16)
    check_manifest_fits(m, {"t0": ("float32", (2,)), "t1": ("float32", (4,))}, "tiny:qwen2-small")
    with pytest.raises(ManifestError, match=r"tensor t1 is float32\[4\]; this server's is bfloat16\[4\]"):
        check_manifest_fits(m, {"t0": ("float32", (2,)), "t1": ("bfloat16", (4,))})
    with pytest.raises(ManifestError, match="1 tensors of this model are not sent, first t2.*1 tensors sent are not in"):
        check_manifest_fits(m, {"t0": ("float32", (2,)), "t2": ("float32", (4,))})
    with pytest.raises(ManifestError, match="this server serves 'tiny:other'"):
        check_manifest_fits(m, {"t0": ("float32", (2,)), "t1": ("float32", (4,))}, "tiny:other")


def test_the_plan_keeps_manifest_order_in_buckets_and_a_large_tensor_alone():
    m = manifest(4, 4, 12, 4, 4, 4)
    assert plan_buckets(m, 8) == [["t0", "t1"], ["t2"], ["t3", "t4"], ["t5"]]
    assert plan_buckets(m, 1 << 20) == [[e.name for e in m.entries]]
    with pytest.raises(ValueError):
        plan_buckets(m, 0)


def test_mismatches_name_altered_and_missing_tensors():
    m = manifest(8, 16)
    assert mismatched_tensors(m, {"t0": m.entries[0].sha256, "t1": m.entries[1].sha256}) == []
    assert mismatched_tensors(m, {"t0": "f" * 64}) == ["t0", "t1"]


def test_the_fallback_decision():
    d = decide_after_transfer(5, {"a": "ok", "b": "checksum_mismatch", "c": "refused"})
    assert (d.loaded, d.load_export, d.rebuild_group) == (("a",), ("b", "c"), False)
    d = decide_after_transfer(5, {"a": "ok", "b": "failed"})
    assert (d.loaded, d.load_export, d.rebuild_group) == (("a",), ("b",), True)
    with pytest.raises(ValueError, match="unknown"):
        decide_after_transfer(5, {"a": "maybe"})


def test_backends_are_refused_naming_what_is_missing():
    with pytest.raises(DirectTransferUnavailable, match="expected one of nccl, gloo"):
        require_backend("mpi")
    import torch
    if not torch.cuda.is_available():
        with pytest.raises(DirectTransferUnavailable, match="needs a CUDA device|built without NCCL"):
            require_backend("nccl")


CHILD = textwrap.dedent("""
    import json, sys, torch
    from rollflow_engines import direct_weights as dw
    from rollflow_engines.roles.trainer import direct_weights as tx
    from rollflow_engines.roles.inference.direct_weights import receive_weights
    rank, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dw.init_transfer_group("gloo", "127.0.0.1", port, rank, 2, timeout_s=60)
    g = torch.Generator().manual_seed(0)
    weights = {"embed": torch.randn(7, 5, generator=g).to(torch.bfloat16), "mask": torch.tensor([True, False, True]),
               "big": torch.randn(300, generator=g), "step": torch.tensor([3], dtype=torch.int64),
               "norm": torch.randn(5, generator=g)}
    expected = {n: (dw.torch_dtype_name(t), tuple(t.shape)) for n, t in weights.items()}
    results = []
    if rank == 0:
        results.append(tx.send_weights(weights, 7, "tiny:x", backend="gloo", bucket_bytes=256)[1])
        results.append(tx.send_weights(weights, 8, "tiny:x", backend="gloo", bucket_bytes=256)[1])
        honest = tx.build_manifest  # round 3: a manifest that does not describe the bytes sent
        tx.build_manifest = lambda t, v, m: honest({**t, "norm": t["norm"] + 1}, v, m)
        results.append(tx.send_weights(weights, 9, "tiny:x", backend="gloo", bucket_bytes=256)[1])
    else:
        r = receive_weights(expected, backend="gloo", served_model="tiny:x", bucket_bytes=256)
        same = r.outcome == "ok" and all(torch.equal(r.tensors[n], t) for n, t in weights.items())
        results.append([r.outcome, r.manifest.version, same, list(r.tensors) == list(weights)])
        r = receive_weights({**expected, "norm": ("float32", (6,))}, backend="gloo", bucket_bytes=256)
        results.append([r.outcome, r.reason])
        r = receive_weights(expected, backend="gloo", bucket_bytes=256)
        results.append([r.outcome, r.reason])
    json.dump(results, open(out, "w"))
    # Leave together: a rank that exits while the other still talks to its store or its gloo pair aborts
    # ("terminate called without an active exception").
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
""")


def test_a_transfer_over_gloo_between_two_processes(tmp_path, free_port, engine_env):
    """Real torch.distributed (gloo, CPU), two processes: a transfer that arrives bit-exact in 3 buckets and over
    mixed dtypes, one refused by the receiver's shapes (both ranks stop after the manifest), and one whose
    manifest does not describe the bytes (checksum_mismatch)."""
    port = free_port
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    procs = [subprocess.Popen([sys.executable, str(script), str(rank), str(port), str(tmp_path / f"{rank}.json")],
                              env=engine_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for rank in (0, 1)]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out.decode()[-3000:]
    sent = json.loads((tmp_path / "0.json").read_text())
    got = json.loads((tmp_path / "1.json").read_text())
    assert sent == [True, False, True]
    assert got[0] == ["ok", 7, True, True]
    assert got[1][0] == "refused" and "tensor norm is float32[5]; this server's is float32[6]" in got[1][1]
    assert got[2] == ["checksum_mismatch", "1 tensors differ from the manifest, first norm"]
