"""The swe env's snapshots in the object store (snapshot_dir an s3:// ref), against a real versitygw: the manifest is
an object under the prefix, each blob ``<prefix>/blobs/<sha256>``; a fresh env restores from them; a blob whose
content does not match its name is snapshot_corrupt even when the store's own checksum holds; the sweep removes
only blobs no snapshot names."""
import uuid
import zlib

import pytest

from rollflow_engines.envs import snapshots
from rollflow_engines.envs.swe import workspace_manifest
from rollflow_engines.envs.swe.env import SweEnv
from rollflow_engines.errors import RequestError
from rollflow_engines.objects import list_objects, write_object

from .helpers import bash, config


@pytest.fixture
def bucket(object_store):
    """Snapshots in a fresh prefix of the session's store for this test (the envs' conftest puts them back after)."""
    prefix = object_store.ref(f"swe-snapshots-{uuid.uuid4().hex[:8]}")
    snapshots.configure(prefix)
    snapshots._blobs_put.clear()  # what another test's store held is not this one's
    return prefix


def test_a_fresh_env_restores_a_swe_episode_from_the_bucket(built, bucket, monkeypatch):
    monkeypatch.setattr(workspace_manifest, "CARRIED_MAX_BYTES", 0)  # the contents as blobs, as a large change's
    envs = []
    try:
        for _ in range(2):
            envs.append(SweEnv())
            envs[-1].reset(0, config(built, "tally__tally-2"))
        first, second = envs
        first.step(bash("echo one > a.txt"))
        saved = first.step(bash("echo two > b.txt && rm README.md")).info["snapshot"]
        blobs = list_objects(f"{bucket}/{snapshots.BLOBS}/")
        assert len(blobs) == 2 and f"{bucket}/{saved}" in list_objects(f"{bucket}/")
        second.restore(snapshots.load(saved))
        assert (second.ws.path / "a.txt").read_text() == "one\n" and not (second.ws.path / "README.md").exists()

        write_object(blobs[0], zlib.compress(b"not what the name says"))  # the store's sha256 metadata matches: only ours fails
        third = SweEnv()
        envs.append(third)
        third.reset(0, config(built, "tally__tally-2"))
        with pytest.raises(RequestError) as damaged:
            third.restore(snapshots.load(saved))
        assert damaged.value.code == snapshots.CORRUPT

        first.step("<submit/>")
        first.close()  # its snapshot goes; no snapshot names its blobs now
        assert snapshots.reap_blobs(0) == 2 and list_objects(f"{bucket}/{snapshots.BLOBS}/") == []
    finally:
        for e in envs:
            e.close()


def test_a_command_that_changes_nothing_costs_no_round_trip_to_the_bucket(built, bucket, monkeypatch):
    env = SweEnv()
    try:
        env.reset(0, config(built, "tally__tally-2"))
        saved = env.step(bash("echo one > a.txt")).info["snapshot"]
        calls = []
        for name in ("write_object", "delete_object", "read_object"):
            real = getattr(snapshots, name)
            monkeypatch.setattr(snapshots, name, lambda *a, _real=real, _name=name, **k: (calls.append(_name), _real(*a, **k))[1])
        reference = env.step(bash("cat a.txt && ls")).info["snapshot"]
        assert snapshots.stored_id(reference) == saved and calls == []
        changed = env.step(bash("echo two > b.txt")).info["snapshot"]
        assert "+" not in changed and "write_object" in calls
    finally:
        env.close()
