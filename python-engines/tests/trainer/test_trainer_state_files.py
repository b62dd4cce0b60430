"""Trainer states on disk: checksums verified before any weight changes (a bad state is ``checkpoint_corrupt``),
stale scratch directories of a killed trainer removed, and a full disk a 507 ``disk_full`` naming the path with
nothing half-written left: on a real 1 MiB tmpfs where this process may mount one (root), else skipped; the
same paths also run with an injected ENOSPC so they never go untested."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from rollflow_engines.durable import is_disk_full
from rollflow_engines.roles.trainer import state_files

from .helpers import client, corrupt, group_batch, ok, torch_client, trained

META = "rollflow_checkpoint.json"


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ---- checksums

def test_a_saved_state_lists_every_file_with_size_and_sha256_and_loads(tmp_path):
    ok(trained().post("/save", json={"path": str(tmp_path / "v2")}))
    files = json.loads((tmp_path / "v2" / META).read_text())["files"]
    assert set(files) == {"sim_state.json"}  # every file but the meta itself
    assert files["sim_state.json"]["size"] == (tmp_path / "v2" / "sim_state.json").stat().st_size
    assert len(files["sim_state.json"]["sha256"]) == 64
    assert ok(client().post("/load", json={"path": str(tmp_path / "v2")}))["version"] == 2


@pytest.mark.parametrize("damage, words", [
    (lambda d: (d / "sim_state.json").write_text('{"seed": 7}'), ["sim_state.json", "does not match its checksum"]),
    (lambda d: (d / "sim_state.json").unlink(), ["sim_state.json", "is missing"]),
    (lambda d: (d / META).write_text('{"backend": "sim", "vers'), ["no readable"]),
    (lambda d: (d / META).write_text(json.dumps({k: v for k, v in json.loads((d / META).read_text()).items() if k != "files"})),
     ["lists no checksums"]),
])
def test_a_damaged_state_is_refused_as_corrupt_and_changes_nothing(tmp_path, damage, words):
    ok(trained().post("/save", json={"path": str(tmp_path / "v2")}))
    damage(tmp_path / "v2")
    c = trained(1)  # at version 1: a load that went through would move it to 2
    corrupt(c.post("/load", json={"path": str(tmp_path / "v2")}), *words)
    assert ok(c.get("/status"))["version"] == 1


def test_a_torch_state_with_a_flipped_byte_is_refused_before_any_weight_changes(model_cache, tmp_path):
    a = torch_client(model_cache)
    ok(a.post("/train_step", json={"step": 0, "batch": group_batch()}))
    ok(a.post("/save", json={"path": str(tmp_path / "v1")}))
    state = tmp_path / "v1" / "trainer_state.pt"
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one bit-flip deep inside the tensors: torch.load itself would not notice
    state.write_bytes(bytes(data))
    b = torch_client(model_cache)
    seq = [{"prompt_ids": [1, 10, 11], "response_ids": [12, 13]}]
    before = ok(b.post("/logprobs", json={"sequences": seq}))
    corrupt(b.post("/load", json={"path": str(tmp_path / "v1")}), "trainer_state.pt", "does not match its checksum")
    assert ok(b.post("/logprobs", json={"sequences": seq})) == before


# ---- stale scratch directories

def test_a_save_removes_the_scratch_a_killed_trainer_left_and_keeps_everything_else(tmp_path):
    gone, alive = dead_pid(), os.getppid()
    stale = [f".v3.tmp-{gone}-0123abcd", f".v6.old-{gone}-89abcdef", f".v2.tmp-{os.getpid()}-deadbeef"]
    kept = [f".v3.tmp-{alive}-0123abcd", ".v3.tmp-notmine", "v3", "notes.txt"]
    for name in stale + kept:
        (tmp_path / name).mkdir() if not name.endswith(".txt") else (tmp_path / name).write_text("x")
    ok(trained().post("/save", json={"path": str(tmp_path / "v2")}))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(kept + ["v2"])


def test_a_starting_trainer_removes_stale_scratch_in_its_export_dir(tmp_path):
    (tmp_path / f".v4.tmp-{dead_pid()}-0123abcd").mkdir()
    (tmp_path / "v3").mkdir()
    client(export_dir=str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["v3"]


# ---- a full disk

@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (needs root; skipped where it cannot be mounted)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root?); the injected-ENOSPC tests cover the same paths")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk, leave: int = 0):
    """Fills the disk but ``leave`` bytes; returns the filler to delete."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def disk_full(response, path) -> None:
    assert response.status_code == 507, response.text
    body = response.json()
    assert body["code"] == "disk_full" and "disk full" in body["error"] and str(path) in body["error"], body


def test_a_save_to_a_full_disk_is_disk_full_leaves_nothing_and_succeeds_once_space_is_freed(small_disk):
    c = trained()
    filler = fill(small_disk)
    disk_full(c.post("/save", json={"path": str(small_disk / "v2")}), small_disk / "v2")
    assert [p.name for p in small_disk.iterdir()] == ["filler"]  # no state, no scratch
    filler.unlink()
    assert ok(c.post("/save", json={"path": str(small_disk / "v2")}))["version"] == 2  # the retry succeeds
    assert ok(client().post("/load", json={"path": str(small_disk / "v2")}))["version"] == 2


def test_a_torch_state_or_export_larger_than_the_disk_is_disk_full_and_leaves_nothing(model_cache, small_disk):
    c = torch_client(model_cache, export_dir=str(small_disk / "weights"))
    (small_disk / "weights").mkdir()
    fill(small_disk, leave=64 * 1024)  # room for a start: each write fails midway (the tiny model's state is larger)
    disk_full(c.post("/save", json={"path": str(small_disk / "v0")}), small_disk / "v0")
    disk_full(c.post("/export_weights", json={"version": 0}), small_disk / "weights" / "v0")
    assert sorted(p.name for p in small_disk.rglob("*")) == ["filler", "weights"]


@pytest.mark.parametrize("where", ["save", "export_weights"])
def test_an_injected_enospc_is_disk_full_and_leaves_nothing(tmp_path, monkeypatch, where):
    def no_space(*_):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(state_files, "file_sha256" if where == "save" else "fsync_tree", no_space)
    c = trained(export_dir=str(tmp_path / "weights"))
    if where == "save":
        disk_full(c.post("/save", json={"path": str(tmp_path / "v2")}), tmp_path / "v2")
        assert list(tmp_path.iterdir()) == []
    else:
        disk_full(c.post("/export_weights", json={"version": 2}), tmp_path / "weights" / "v2")
        assert list((tmp_path / "weights").iterdir()) == []


def test_is_disk_full_sees_enospc_and_the_errors_that_wrap_or_quote_it():
    enospc = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    wrapped = RuntimeError("torch's writer failed")
    wrapped.__cause__ = enospc
    assert [is_disk_full(e) for e in (enospc, OSError(errno.EDQUOT, "quota"), wrapped,
                                      Exception("I/O error: No space left on device (os error 28)"),
                                      OSError(errno.EACCES, "denied"), RuntimeError("other"))] == [True, True, True, True, False, False]
