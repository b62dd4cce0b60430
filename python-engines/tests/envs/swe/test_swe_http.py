"""The swe env over the env role's HTTP API: a solved episode, a config error as a 400 naming the key, a
missing prepared environment as a 503 (the server's failure, never a 0), a dataset error as a 400, and a restore
from a snapshot that is not there as a 404 naming ``restore`` (the client replays from the start)."""
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig

from .helpers import apply_patch
from .project import source


def test_the_swe_env_over_http(built, tmp_path):
    options = {"snapshot_dir": str(tmp_path / "snapshots"), "sandbox_root": str(tmp_path / "sandboxes")}
    good = {"instances": str(built.instances_path), "source": source(built), "ids": ["tally__tally-2"]}
    with TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False) as server:
        reset = server.post("/reset", json={"env": "swe", "seed": 0, "config": good})
        assert reset.status_code == 200 and reset.json()["on_env_loss"] == "replay", reset.text
        session = reset.json()["session"]
        actions = [apply_patch(built.row("tally__tally-2")["patch"]), "<submit/>"]
        steps = [server.post("/step", json={"session": session, "index": i, "action": a}).json() for i, a in enumerate(actions)]
        saved = steps[0]["info"]["snapshot"]  # the command may have changed the workspace: saved
        assert steps[-1]["reward"] == 1.0 and steps[-1]["info"]["success"]
        assert server.post("/close", json={"session": session}).status_code == 200
        assert not (tmp_path / "snapshots" / saved).exists()  # a finished episode's snapshot goes with it

        bad_kind = server.post("/reset", json={"env": "swe", "seed": 0, "config": {**good, "source": {**good["source"], "kind": "tarball"}}})
        assert bad_kind.status_code == 400 and bad_kind.json()["problems"][0]["field"] == "config.source.kind", bad_kind.text
        no_python = server.post("/reset", json={"env": "swe", "seed": 0, "config": {**good, "source": {**good["source"], "python": "/nope/bin/python"}}})
        assert no_python.status_code == 503 and "no interpreter at /nope/bin/python" in no_python.text, no_python.text
        no_file = server.post("/reset", json={"env": "swe", "seed": 0, "config": {**good, "instances": str(tmp_path / "missing.jsonl")}})
        assert no_file.status_code == 400 and "config.instances" in no_file.text, no_file.text
        restore = server.post("/reset", json={"env": "swe", "seed": 0, "config": good, "index": 1, "restore": "snap-1"})
        assert restore.status_code == 404 and restore.json()["problems"][0]["field"] == "restore", restore.text
        assert not any(p for owner in (tmp_path / "sandboxes").iterdir() for p in owner.iterdir())


def test_a_second_server_sharing_snapshot_dir_resumes_a_swe_episode_the_first_lost(built, tmp_path):
    """What the bridge does after an env loss (on_env_loss replay, src/envs/python-env.ts): reset with ``restore`` and
    ``index`` on another server, then only the actions after the snapshot."""
    good = {"instances": str(built.instances_path), "source": source(built), "ids": ["tally__tally-2"]}

    def server(name: str) -> TestClient:
        options = {"snapshot_dir": str(tmp_path / "snapshots"), "sandbox_root": str(tmp_path / name)}
        return TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False)
    with server("a") as a:
        session = a.post("/reset", json={"env": "swe", "seed": 0, "config": good}).json()["session"]
        fix = apply_patch(built.row("tally__tally-2")["patch"])
        assert resumable(a) == 0, "no snapshot before the first command"
        saved = a.post("/step", json={"session": session, "index": 0, "action": fix}).json()["info"]["snapshot"]
        assert resumable(a) == 1
    with server("b") as b:  # the first server is gone with its session and workspace
        resumed = b.post("/reset", json={"env": "swe", "seed": 0, "config": good, "restore": saved, "index": 1})
        assert resumed.status_code == 200 and resumed.json()["info"]["turn"] == 1, resumed.text
        assert resumable(b) == 1
        end = b.post("/step", json={"session": resumed.json()["session"], "index": 1, "action": "<submit/>"}).json()
        assert end["reward"] == 1.0 and end["info"]["success"], end
        assert resumable(b) == 0, "an ended episode is nothing to resume"


def resumable(server: TestClient) -> float:
    """The server's gauge of open episodes with a saved snapshot (what a run test waits for before losing the server)."""
    lines = [l for l in server.get("/metrics").text.splitlines() if l.startswith('rollflow_env_sessions_resumable{env="swe"}')]
    return float(lines[0].split()[-1]) if lines else 0.0  # a labelled gauge has no sample before its label is first set
