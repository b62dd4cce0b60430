"""/train_step with batch_ref an object in the store (s3://…), on the sim backend against a real versitygw: read by
the same rules as a batch file, refused with the same problem shapes."""
import json

from rollflow_engines.objects import write_object

from .helpers import client, group_batch, ok

# As the run writes a batch (src/store putLines under batchKey): one sample per line, each line ending in \n.
BATCH_KEY = "run-1/batches/step-000000.jsonl"


def jsonl(samples: list[dict]) -> bytes:
    return "".join(f"{json.dumps(s)}\n" for s in samples).encode()


def without_timing(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k != "timing/train_s"}


def test_a_batch_in_the_store_trains_as_the_same_batch_inline(object_store):
    batch = group_batch()
    write_object(object_store.ref(BATCH_KEY), jsonl(batch))
    inline = ok(client().post("/train_step", json={"step": 0, "batch": batch}))
    by_ref = ok(client().post("/train_step", json={"step": 0, "batch_ref": object_store.ref(BATCH_KEY)}))
    assert without_timing(by_ref["metrics"]) == without_timing(inline["metrics"])
    assert by_ref["version"] == inline["version"] == 1


def test_a_missing_batch_object_is_the_same_404_as_a_missing_file(object_store, tmp_path):
    missing_file, missing_object = str(tmp_path / "step-000000.jsonl"), object_store.ref("run-1/batches/nothing.jsonl")
    by_file = client().post("/train_step", json={"step": 0, "batch_ref": missing_file})
    by_object = client().post("/train_step", json={"step": 0, "batch_ref": missing_object})
    assert by_file.status_code == by_object.status_code == 404
    assert by_file.json().keys() == by_object.json().keys()
    [problem] = by_object.json()["problems"]
    assert (problem["field"], problem["given"]) == ("batch_ref", missing_object)
    assert problem["message"].startswith(f"no such object: {missing_object}")


def test_a_corrupt_batch_object_is_refused_naming_the_digests(object_store):
    write_object(object_store.ref(BATCH_KEY), jsonl(group_batch()))
    file = object_store.file_of(BATCH_KEY)
    file.write_bytes(file.read_bytes().replace(b'"reward": 1.0', b'"reward": 9.0', 1))  # a wrong score, same length
    r = client().post("/train_step", json={"step": 0, "batch_ref": object_store.ref(BATCH_KEY)})
    assert r.status_code == 400, r.text
    [problem] = r.json()["problems"]
    assert problem["field"] == "batch_ref" and "is corrupt: its body has sha256" in problem["message"]


def test_a_malformed_batch_object_names_the_sample_field_as_a_file_would(object_store):
    write_object(object_store.ref(BATCH_KEY), jsonl([*group_batch(1, 1), {**group_batch(1, 1, prefix="x")[0], "reward": "high"}]))
    r = client().post("/train_step", json={"step": 0, "batch_ref": object_store.ref(BATCH_KEY)})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "batch_ref[1].reward", r.text


def test_an_unreachable_store_is_a_503_naming_its_endpoint(unreachable_object_store):
    r = client().post("/train_step", json={"step": 0, "batch_ref": "s3://rollflow/" + BATCH_KEY})
    assert r.status_code == 503, r.text
    assert f"object store at {unreachable_object_store}" in r.json()["problems"][0]["message"]
