"""Trainer states with /save and /load ``path`` an s3:// ref, against a real versitygw: each file an object under the
ref, the meta file last listing them; a trainer with another scratch directory (another host: the store is all they
share) loads it back; a damaged or missing object is ``checkpoint_corrupt`` and an older state still loads (the
fallback recovery takes, src/activities/trainer-recovery.ts); a save cut short is finished by its retry; objects this
trainer never wrote are not replaced; a store that cannot be reached is a 503."""
import json
import uuid

import pytest

from rollflow_engines.objects import ObjectStoreError, delete_object, list_objects, read_object, write_object
from rollflow_engines.roles.trainer import store_states
from rollflow_engines.roles.trainer.store_states import UPLOADING

from .helpers import client, corrupt, group_batch, logprobs, ok, problem_field, torch_client, trained

META = "rollflow_checkpoint.json"


@pytest.fixture
def states(object_store) -> str:
    """A fresh key prefix in the session's store, so tests share no state."""
    return object_store.ref(f"run-{uuid.uuid4().hex[:8]}/trainer-state")


def key_of(ref: str) -> str:
    return ref.removeprefix("s3://rollflow/")


def test_a_state_is_an_object_per_file_with_the_meta_last_and_another_trainer_loads_it(states, tmp_path):
    ref = f"{states}/v2"
    saved = ok(trained(2, state_scratch_dir=str(tmp_path / "a")).post("/save", json={"path": ref}))
    assert saved == {"path": ref, "version": 2}
    meta = json.loads(read_object(f"{ref}/{META}"))
    assert sorted(list_objects(f"{ref}/")) == sorted([f"{ref}/{META}"] + [f"{ref}/{name}" for name in meta["files"]])
    assert set(meta["files"]) == {"sim_state.json"} and meta["version"] == 2
    assert list((tmp_path / "a").iterdir()) == [], "the scratch is removed after the upload"
    # Another trainer, sharing nothing but the store.
    other = client(state_scratch_dir=str(tmp_path / "b"))
    assert ok(other.post("/load", json={"path": ref + "/"})) == {"path": ref, "version": 2}
    assert ok(other.get("/status"))["version"] == 2
    assert list((tmp_path / "b").iterdir()) == [], "the fetched state is removed once loaded"


def test_a_torch_state_round_trips_through_the_store_with_the_same_weights(model_cache, states, tmp_path):
    """Weights, optimizer and RNG: the trainer that loads it scores as the one that saved it, and trains on alike."""
    ref = f"{states}/v1"
    a = torch_client(model_cache, state_scratch_dir=str(tmp_path / "a"))
    ok(a.post("/train_step", json={"step": 0, "batch": group_batch()}))
    ok(a.post("/save", json={"path": ref, "export_hf": True}))
    assert f"{ref}/hf/model.safetensors" in list_objects(f"{ref}/hf/"), "a checkpoint's Hugging Face directory is objects too"
    b = torch_client(model_cache, state_scratch_dir=str(tmp_path / "b"))
    sequences = [{"prompt_ids": s["prompt_ids"], "response_ids": s["response_ids"]} for s in group_batch()]
    assert logprobs(b, sequences) != logprobs(a, sequences)  # b is at its launch weights
    assert ok(b.post("/load", json={"path": ref}))["version"] == 1
    assert logprobs(b, sequences) == logprobs(a, sequences)
    next_batch = {"step": 1, "batch": group_batch(prefix="n")}
    ok(a.post("/train_step", json=next_batch))
    ok(b.post("/train_step", json=next_batch))
    assert logprobs(b, sequences) == logprobs(a, sequences), "the optimizer state came along: the next step moves both alike"


@pytest.mark.parametrize("damage, words", [
    ("flip", ["sim_state.json is corrupt", "sha256"]),
    ("missing", ["sim_state.json is missing"]),
    ("meta flip", [f"{META} is corrupt"]),
    ("no meta", ["not a complete trainer state", "upload did not finish"]),
])
def test_a_damaged_newest_state_is_checkpoint_corrupt_and_the_older_one_still_loads(object_store, states, damage, words, tmp_path):
    ok(trained(2).post("/save", json={"path": f"{states}/v2"}))
    ok(trained(4).post("/save", json={"path": f"{states}/v4"}))
    newest = f"{states}/v4"
    if damage == "flip":  # a byte flipped in the object's file on the server's disk
        flip_middle_byte(object_store.file_of(key_of(f"{newest}/sim_state.json")))
    elif damage == "missing":
        delete_object(f"{newest}/sim_state.json")
    elif damage == "meta flip":
        flip_middle_byte(object_store.file_of(key_of(f"{newest}/{META}")))
    else:
        delete_object(f"{newest}/{META}")
    fresh = client(state_scratch_dir=str(tmp_path / "scratch"))
    corrupt(fresh.post("/load", json={"path": newest}), newest, *words)
    assert ok(fresh.get("/status"))["version"] == 0, "nothing changed"
    assert ok(fresh.post("/load", json={"path": f"{states}/v2"}))["version"] == 2
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_ref_with_nothing_under_it_is_a_404_and_a_malformed_ref_a_400(states):
    c = client()
    missing = c.post("/load", json={"path": f"{states}/v9"})
    assert missing.status_code == 404 and "the store has no object under it" in missing.json()["error"], missing.text
    malformed = c.post("/load", json={"path": "s3://Not_A_Bucket/x"})
    assert malformed.status_code == 400 and "expected s3://<bucket>/<key>" in malformed.json()["error"], malformed.text


def test_a_saved_state_replaced_leaves_only_the_new_files(states):
    ref = f"{states}/v0"
    c = client()
    ok(c.post("/save", json={"path": ref}))
    write_object(f"{ref}/left-over.bin", b"from the old state")  # a file the new state does not have
    first = json.loads(read_object(f"{ref}/{META}"))
    ok(c.post("/reset", json={}))
    ok(c.post("/save", json={"path": ref}))
    assert sorted(list_objects(f"{ref}/")) == [f"{ref}/{META}", f"{ref}/sim_state.json"]
    assert json.loads(read_object(f"{ref}/{META}"))["lineage"] != first["lineage"]


def test_a_save_cut_short_is_no_state_and_its_retry_completes(states, monkeypatch):
    ref = f"{states}/v2"
    c = trained(2)

    def unreachable(ref, path):
        raise ObjectStoreError(f"object store failed writing {ref}")

    upload = store_states.write_object_from_file
    monkeypatch.setattr(store_states, "write_object_from_file", unreachable)
    r = c.post("/save", json={"path": ref})
    assert r.status_code == 503 and problem_field(r) == "path", r.text
    assert list_objects(f"{ref}/") == [f"{ref}/{UPLOADING}"], "no meta: not a state; the marker says whose it is"
    monkeypatch.setattr(store_states, "write_object_from_file", upload)
    assert ok(c.post("/save", json={"path": ref}))["version"] == 2
    assert sorted(list_objects(f"{ref}/")) == [f"{ref}/{META}", f"{ref}/sim_state.json"]


def test_objects_the_trainer_never_wrote_are_not_replaced(object_store):
    prefix = object_store.ref(f"samples-{uuid.uuid4().hex[:8]}")
    write_object(f"{prefix}/u1.json", b"{}")
    r = client().post("/save", json={"path": prefix})
    assert r.status_code == 409 and problem_field(r) == "path", r.text
    assert "not a state this trainer wrote; not replacing it" in r.json()["error"]
    assert list_objects(f"{prefix}/") == [f"{prefix}/u1.json"]


def test_an_unreachable_store_is_a_503_naming_it_and_leaves_no_scratch(unreachable_object_store, tmp_path):
    c = client(state_scratch_dir=str(tmp_path / "scratch"))
    for call in ("/save", "/load"):
        r = c.post(call, json={"path": "s3://rollflow/run/trainer-state/v0"})
        assert r.status_code == 503 and problem_field(r) == "path", r.text
        assert f"object store at {unreachable_object_store}" in r.json()["error"]
    assert list((tmp_path / "scratch").iterdir()) == []


def flip_middle_byte(file) -> None:
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    file.write_bytes(bytes(data))
