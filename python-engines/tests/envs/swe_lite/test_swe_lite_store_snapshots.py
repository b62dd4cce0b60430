"""Episode snapshots in the object store (snapshot_dir an s3:// ref), against a real versitygw: an env server that
shares nothing with the one that saved a snapshot but the bucket (its own sandbox root and temp dirs; the first one
gone) resumes the episode from it; an unknown id is still a 404 naming ``restore``; a damaged object is refused by its
checksum as ``snapshot_corrupt``; the janitor reaps by age only the snapshots under the prefix; a snapshot that cannot
be written leaves the step answered without one, the last one still restorable."""
import os
import time
import uuid

import pytest
from fastapi.testclient import TestClient

from rollflow_engines import objects
from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig, load_config
from rollflow_engines.envs import snapshots
from rollflow_engines.objects import list_objects, write_object

APPEND = "<bash>echo ran >> runs.log</bash>"
REQUEST = {"env": "swe_lite", "seed": 0, "config": {"task": "t1-000"}}


@pytest.fixture
def shared(object_store) -> str:
    """A fresh prefix in the session's store, so tests share no snapshot."""
    return object_store.ref(f"env-snapshots-{uuid.uuid4().hex[:8]}")


def server(snapshot_dir: str, root, **options) -> TestClient:
    """An env server whose only local directory is ``root`` (its sandboxes)."""
    settings = {"snapshot_dir": snapshot_dir, "sandbox_root": str(root / "sandboxes"), **options}
    return TestClient(create_app(ServeConfig(role="env", options=settings)), raise_server_exceptions=False)


def flip_middle_byte(file) -> None:
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    file.write_bytes(bytes(data))


def test_a_server_sharing_only_the_bucket_resumes_an_episode_another_saved(object_store, shared, tmp_path):
    with server(shared, tmp_path / "a") as a:
        session = a.post("/reset", json=REQUEST).json()["session"]
        saved = a.post("/step", json={"session": session, "index": 0, "action": APPEND}).json()["info"]["snapshot"]
    assert list_objects(f"{shared}/") == [f"{shared}/{saved}"]
    with server(shared + "/", tmp_path / "b") as b:  # the first server is gone with its session and workspace
        resumed = b.post("/reset", json={**REQUEST, "restore": saved, "index": 1})
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["info"]["turn"] == 1
        out = b.post("/step", json={"session": resumed.json()["session"], "index": 1, "action": "<bash>cat runs.log</bash>"}).json()
        assert out["observation"] == "[exit 0]\nran\n" and out["info"]["turn"] == 2  # the command's effect, not a second run
        gone = b.post("/reset", json={**REQUEST, "restore": "0" * 32})
    assert gone.status_code == 404 and gone.json()["problems"][0]["field"] == "restore", gone.text


def test_each_snapshot_replaces_the_last_in_the_bucket_and_a_finished_episode_leaves_none(shared, tmp_path):
    with server(shared, tmp_path) as s:
        session = s.post("/reset", json=REQUEST).json()["session"]
        one = s.post("/step", json={"session": session, "index": 0, "action": APPEND}).json()["info"]["snapshot"]
        two = s.post("/step", json={"session": session, "index": 1, "action": APPEND}).json()["info"]["snapshot"]
        assert one != two and list_objects(f"{shared}/") == [f"{shared}/{two}"]
        assert s.post("/step", json={"session": session, "index": 2, "action": "<submit/>"}).json()["done"] is True
        s.post("/close", json={"session": session})
    assert list_objects(f"{shared}/") == []


def test_a_damaged_snapshot_object_is_refused_by_its_checksum(object_store, shared, tmp_path):
    with server(shared, tmp_path) as s:
        session = s.post("/reset", json=REQUEST).json()["session"]
        saved = s.post("/step", json={"session": session, "index": 0, "action": APPEND}).json()["info"]["snapshot"]
        flip_middle_byte(object_store.file_of(f"{shared.removeprefix('s3://rollflow/')}/{saved}"))
        refused = s.post("/reset", json={**REQUEST, "restore": saved, "index": 1})
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["code"] == "snapshot_corrupt" and body["problems"][0]["field"] == "restore"
    assert f"{shared}/{saved} is corrupt" in body["error"] and "not restoring it" in body["error"]


def test_a_damaged_snapshot_file_is_refused_the_same_way(tmp_path):
    snapshots.configure(tmp_path / "dir")
    saved = snapshots.save({"task": "t", "files": {}})
    flip_middle_byte(tmp_path / "dir" / saved)
    with pytest.raises(Exception, match="is damaged, not restoring it") as refused:
        snapshots.load(saved)
    assert getattr(refused.value, "code", None) == "snapshot_corrupt"


def test_the_janitor_reaps_snapshots_in_the_bucket_by_age_and_leaves_other_objects(object_store, shared, tmp_path):
    abandoned, recent, foreign = f"{shared}/{'a' * 32}", f"{shared}/{'b' * 32}", f"{shared}/notes.txt"
    for ref in (abandoned, recent, foreign):
        write_object(ref, b"x")
    two_hours_ago = time.time() - 7200
    for ref in (abandoned, foreign):  # versitygw reports its file's mtime as the object's LastModified
        os.utime(object_store.file_of(ref.removeprefix("s3://rollflow/")), (two_hours_ago, two_hours_ago))
    with server(shared, tmp_path, snapshot_max_age_s=3600) as s:  # the first sweep runs at start
        assert sorted(list_objects(f"{shared}/")) == sorted([recent, foreign])
        assert "rollflow_env_snapshots_reaped_total 1.0" in s.get("/metrics").text


def test_a_snapshot_the_store_cannot_take_leaves_the_step_answered_and_the_last_one_restorable(object_store, shared, tmp_path, monkeypatch, free_port):
    with server(shared, tmp_path) as s:
        session = s.post("/reset", json=REQUEST).json()["session"]
        saved = s.post("/step", json={"session": session, "index": 0, "action": APPEND}).json()["info"]["snapshot"]
        aws_config = os.environ["AWS_CONFIG_FILE"]
        unreachable = tmp_path / "aws-config"
        unreachable.write_text(f"[default]\nregion = us-east-1\nendpoint_url = http://127.0.0.1:{free_port}\n")
        monkeypatch.setenv("AWS_CONFIG_FILE", str(unreachable))
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
        objects.reset_client()
        step = s.post("/step", json={"session": session, "index": 1, "action": APPEND})
        assert step.status_code == 200, step.text
        assert "snapshot" not in step.json()["info"] and step.json()["info"]["turn"] == 2
        monkeypatch.setenv("AWS_CONFIG_FILE", aws_config)
        objects.reset_client()
        assert list_objects(f"{shared}/") == [f"{shared}/{saved}"], "the last snapshot the client was told of is kept"
        resumed = s.post("/reset", json={**REQUEST, "restore": saved, "index": 1})
        assert resumed.status_code == 200 and resumed.json()["info"]["turn"] == 1, resumed.text


@pytest.mark.parametrize("ref", ["s3://Not_A_Bucket/x", "s3://rollflow"])
def test_a_malformed_snapshot_ref_is_refused_at_start(ref):
    with pytest.raises(Exception, match="snapshot_dir") as refused:
        load_config(None, {"role": "env"}, [f"snapshot_dir={ref}"])
    assert "is not an object ref: expected s3://<bucket>/<key>" in str(refused.value)
