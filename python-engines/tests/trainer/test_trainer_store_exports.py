"""/export_weights with export_dir an s3:// ref, against a real versitygw: each file of the export becomes an object
under <prefix>/v<N>/, the manifest last and listing every file's sha256; the scratch is removed; a retry of the same
export uploads nothing; a store that cannot be reached is a 503."""
import json
import uuid

import pytest

from rollflow_engines.config import load_config
from rollflow_engines.exports import EXPORT_MANIFEST
from rollflow_engines.objects import list_objects, read_object

from .helpers import client, group_batch, ok, torch_client


@pytest.fixture
def prefix(object_store) -> str:
    """A fresh key prefix in the session's store, so tests share no export."""
    return object_store.ref(f"weights/{uuid.uuid4().hex[:8]}")


def test_a_torch_export_is_an_object_per_file_with_the_manifest_listing_them(model_cache, object_store, prefix, tmp_path):
    scratch = tmp_path / "scratch"
    c = torch_client(model_cache, export_dir=prefix, export_scratch_dir=str(scratch))
    ok(c.post("/train_step", json={"step": 0, "batch": group_batch()}))
    assert ok(c.post("/export_weights", json={"version": 1})) == {"path": f"{prefix}/v1", "version": 1}
    manifest = json.loads(read_object(f"{prefix}/v1/{EXPORT_MANIFEST}"))
    assert (manifest["backend"], manifest["version"]) == ("torch", 1)
    assert "model.safetensors" in manifest["files"]
    assert sorted(list_objects(f"{prefix}/v1/")) == sorted([f"{prefix}/v1/{name}" for name in manifest["files"]] + [f"{prefix}/v1/{EXPORT_MANIFEST}"])
    for name, listed in manifest["files"].items():
        body = read_object(f"{prefix}/v1/{name}")  # verified against its own sha256 metadata
        assert len(body) == listed["size"]
    assert list(scratch.iterdir()) == [], "the local scratch is removed after the upload"


def test_a_retried_export_uploads_nothing_and_answers_the_same(object_store, prefix):
    c = client(export_dir=prefix)
    first = ok(c.post("/export_weights", json={"version": 0}))
    key = f"{prefix.removeprefix('s3://rollflow/')}/v0/{EXPORT_MANIFEST}"
    before = object_store.file_of(key).stat()
    assert ok(c.post("/export_weights", json={"version": 0})) == first
    after = object_store.file_of(key).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "the manifest object was not rewritten"


def test_an_unreachable_store_is_a_503_naming_it_and_leaves_no_scratch(unreachable_object_store, tmp_path):
    scratch = tmp_path / "scratch"
    c = client(export_dir="s3://rollflow/weights/t", export_scratch_dir=str(scratch))
    r = c.post("/export_weights", json={"version": 0})
    assert r.status_code == 503, r.text
    [problem] = r.json()["problems"]
    assert problem["field"] == "version" and f"object store at {unreachable_object_store}" in problem["message"]
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("options, words", [
    (["export_dir=s3://Not_A_Bucket/w"], "is not an object ref: expected s3://<bucket>/<key>"),
    (["export_dir=s3://rollflow"], "is not an object ref"),
    (["export_scratch_dir=/tmp/x"], "only an export to the object store (export_dir s3://…) is written through a scratch directory"),
])
def test_a_malformed_export_ref_or_an_unused_scratch_dir_is_refused_at_start(options, words):
    with pytest.raises(Exception, match="export_") as refused:
        load_config(None, {"role": "trainer", "backend": "sim"}, options)
    assert words in str(refused.value)


def test_a_differing_re_export_cut_short_leaves_no_manifest_and_its_retry_completes(model_cache, object_store, prefix, monkeypatch):
    from rollflow_engines.objects import ObjectNotFoundError, ObjectStoreError
    from rollflow_engines.roles.trainer import store_exports

    c = torch_client(model_cache, export_dir=prefix)
    ok(c.post("/train_step", json={"step": 0, "batch": group_batch()}))
    ok(c.post("/export_weights", json={"version": 1}))
    first = read_object(f"{prefix}/v1/{EXPORT_MANIFEST}")
    # A new run on this trainer: version 1 again, other weights. Its upload dies at the first file.
    ok(c.post("/reset", json={}))
    flipped = [{**s, "reward": 1.0 - s["reward"]} for s in group_batch(prefix="other-")]  # the other response is the good one
    ok(c.post("/train_step", json={"step": 0, "batch": flipped}))

    def unreachable(ref, path, sha256=None):
        raise ObjectStoreError(f"object store failed writing {ref}")

    upload = store_exports.write_object_from_file
    monkeypatch.setattr(store_exports, "write_object_from_file", unreachable)
    assert c.post("/export_weights", json={"version": 1}).status_code == 503
    with pytest.raises(ObjectNotFoundError):  # the old manifest went first: no export stands over mixed files
        read_object(f"{prefix}/v1/{EXPORT_MANIFEST}")
    monkeypatch.setattr(store_exports, "write_object_from_file", upload)
    ok(c.post("/export_weights", json={"version": 1}))
    second = json.loads(read_object(f"{prefix}/v1/{EXPORT_MANIFEST}"))
    assert second["files"]["model.safetensors"] != json.loads(first)["files"]["model.safetensors"]
