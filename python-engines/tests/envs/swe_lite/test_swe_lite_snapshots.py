"""Durable episode state: after each step that runs a command, swe_lite saves a snapshot (the files and its
counters) and names it in info.snapshot. A fresh env, on any server sharing the snapshot directory, restores it,
is sent the actions after it again (edits, views, unreadable replies: none runs a command) and continues without
running any command again."""
from pathlib import Path

import pytest

from rollflow_engines.envs import snapshots
from rollflow_engines.envs.swe_lite.env import SweLiteConfig, SweLiteEnv
from rollflow_engines.envs.swe_lite.tasks import generate_task
from rollflow_engines.errors import NotFoundError

CONFIG = SweLiteConfig(task="t1-000")
APPEND = "<bash>echo ran >> runs.log</bash>"
FIX = "<replace path=\"scale_lib/core.py\"><old>range(1, n)</old><new>range(1, n + 1)</new></replace>"
CORE = generate_task("t1-000").files["scale_lib/core.py"]


@pytest.fixture
def envs():
    made: list[SweLiteEnv] = []

    def make() -> SweLiteEnv:
        made.append(SweLiteEnv())
        return made[-1]
    yield make
    for e in made:
        e.close()


def test_a_restored_episode_continues_where_it_was_without_running_anything_again(envs, tmp_path):
    first = envs()
    first.reset(0, CONFIG)
    assert "snapshot" not in first.step("<view>README</view>").info  # a view changes nothing: no snapshot
    saved = first.step(APPEND).info["snapshot"]
    # After the snapshot: an invalid action saves nothing and names no snapshot, so a client that loses the session
    # sends it again after the restore (had it named the last one, the client would count it as held, and the
    # restored episode would be a turn and an invalid action short).
    assert "snapshot" not in first.step("not an action").info
    # An edit is the server's own write, exact from the workspace before it: it saves nothing either, and is sent again.
    edited = first.step(FIX)
    assert edited.observation == "Replaced 1 occurrence in scale_lib/core.py." and "snapshot" not in edited.info
    assert snapshots.load(saved)["files"]["scale_lib/core.py"] == CORE  # the stored snapshot is the one before the edit

    second = envs()  # another server's env: the same seed and config, then the snapshot
    second.reset(0, CONFIG)
    second.restore(snapshots.load(saved))
    assert (second.ws.path / "runs.log").read_text() == "ran\n"  # the command's effect, not a second run of it
    assert second.info()["turn"] == 2
    second.step("not an action")  # what the client sends again: the actions after the snapshot's step
    assert second.step(FIX).observation == edited.observation
    assert second.info() == first.info()
    assert {p: (second.ws.path / p).read_text() for p in ("runs.log", "scale_lib/core.py")} == \
        {p: (first.ws.path / p).read_text() for p in ("runs.log", "scale_lib/core.py")}
    assert "range(1, n + 1)" in (second.ws.path / "scale_lib/core.py").read_text()
    assert second.step(APPEND).info["turn"] == 5
    assert (second.ws.path / "runs.log").read_text() == "ran\nran\n"


def test_after_a_command_whose_snapshot_failed_the_next_step_saves_one_so_no_restore_runs_it_again(envs, monkeypatch):
    first = envs()
    first.reset(0, CONFIG)
    first.step(APPEND)
    save = snapshots.save

    def refused(value):
        monkeypatch.setattr(snapshots, "save", save)  # the store is back for the next step
        raise snapshots.SnapshotNotSaved("the store is down")
    monkeypatch.setattr(snapshots, "save", refused)
    assert "snapshot" not in first.step(APPEND).info  # answered: the command ran, its snapshot did not land
    saved = first.step("not an action").info["snapshot"]  # runs no command, but saves what the last one left

    second = envs()
    second.reset(0, CONFIG)
    second.restore(snapshots.load(saved))  # holds all three actions: the client sends none again
    assert (second.ws.path / "runs.log").read_text() == "ran\nran\n" and second.info() == first.info()
    assert "snapshot" not in first.step("not an action").info  # saved: back to commands only


def test_each_snapshot_replaces_the_last_and_a_finished_episode_leaves_none(envs, tmp_path):
    env = envs()
    env.reset(0, CONFIG)
    one = env.step(APPEND).info["snapshot"]
    two = env.step(APPEND).info["snapshot"]
    assert one != two and not (tmp_path / "snapshots" / one).exists() and (tmp_path / "snapshots" / two).exists()
    env.step("<submit/>")
    env.close()
    assert list((tmp_path / "snapshots").iterdir()) == []


def test_a_missing_snapshot_is_a_404_naming_restore_and_another_tasks_is_refused(envs):
    with pytest.raises(NotFoundError, match="no snapshot"):
        snapshots.load("0" * 32)
    with pytest.raises(NotFoundError):
        snapshots.load("../../etc/passwd")
    env = envs()
    env.reset(0, CONFIG)
    saved = env.step(APPEND).info["snapshot"]
    other = envs()
    other.reset(0, SweLiteConfig(task="t2-000"))
    with pytest.raises(ValueError, match="not of this episode"):
        other.restore(snapshots.load(saved))


def test_over_http_a_lost_session_resumes_on_another_server_from_its_snapshot(tmp_path):
    """Two env servers sharing a snapshot directory: the first one's episode continues on the second
    (reset with restore); an env that saves no snapshots, or an unknown id, is a named 4xx."""
    from fastapi.testclient import TestClient

    from rollflow_engines.app import create_app
    from rollflow_engines.config import ServeConfig

    options = {"snapshot_dir": str(tmp_path / "shared"), "sandbox_root": str(tmp_path / "sandboxes")}
    def server():
        return TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False)
    request = {"env": "swe_lite", "seed": 0, "config": {"task": "t1-000"}}
    with server() as a:
        session = a.post("/reset", json=request).json()["session"]
        saved = a.post("/step", json={"session": session, "index": 0, "action": APPEND}).json()["info"]["snapshot"]
    with server() as b:  # the first server is gone with its session and workspace
        resumed = b.post("/reset", json={**request, "restore": saved, "index": 1})
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["info"]["turn"] == 1
        out = b.post("/step", json={"session": resumed.json()["session"], "index": 1, "action": "<bash>cat runs.log</bash>"}).json()
        assert out["observation"] == "[exit 0]\nran\n" and out["info"]["turn"] == 2
        gone = b.post("/reset", json={**request, "restore": "0" * 32})
        no_snapshots = b.post("/reset", json={"env": "arithmetic", "seed": 0, "restore": saved})
    assert gone.status_code == 404 and gone.json()["problems"][0]["field"] == "restore"
    assert no_snapshots.status_code == 400 and no_snapshots.json()["problems"][0]["field"] == "restore"


def test_the_janitor_removes_snapshots_nobody_resumed_for_snapshot_max_age_s_and_counts_them(tmp_path):
    import os
    import time

    from fastapi.testclient import TestClient

    from rollflow_engines.app import create_app
    from rollflow_engines.config import ServeConfig

    shared = tmp_path / "shared"
    shared.mkdir()
    abandoned, recent, half_written = shared / ("a" * 32), shared / ("b" * 32), shared / ".c.part"
    for f in (abandoned, recent, half_written):
        f.write_bytes(b"x")
    two_hours_ago = time.time() - 7200
    for f in (abandoned, half_written):
        os.utime(f, (two_hours_ago, two_hours_ago))
    options = {"snapshot_dir": str(shared), "sandbox_root": str(tmp_path / "sandboxes"), "snapshot_max_age_s": 3600}
    with TestClient(create_app(ServeConfig(role="env", options=options))) as server:  # the first sweep runs at start
        assert sorted(shared.iterdir()) == [recent]
        assert "rollflow_env_snapshots_reaped_total 2.0" in server.get("/metrics").text


def test_a_command_that_changes_no_file_writes_nothing_and_its_reference_restores_its_counters(envs, tmp_path):
    first = envs()
    first.reset(0, CONFIG)
    saved = first.step(APPEND).info["snapshot"]
    reference = first.step("<bash>cat runs.log && ls -R</bash>").info["snapshot"]
    assert snapshots.stored_id(reference) == saved and [p.name for p in (tmp_path / "snapshots").iterdir()] == [saved]
    second = envs()
    second.reset(0, CONFIG)
    second.restore(snapshots.load(reference))
    assert second.info() == first.info() and second.info()["turn"] == 2
    assert (second.ws.path / "runs.log").read_text() == "ran\n"
    first.step("<submit/>")
    first.close()  # finished: the snapshot its reference named goes too
    assert list((tmp_path / "snapshots").iterdir()) == []
