"""The swe env over the env role's HTTP API: a solved episode, a config error as a 400 naming the key, a
missing prepared environment as a 503 (the server's failure, never a 0), and a dataset error as a 400."""
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
        assert steps[-1]["reward"] == 1.0 and steps[-1]["info"]["success"] and "snapshot" not in steps[-1]["info"]
        assert server.post("/close", json={"session": session}).status_code == 200

        bad_kind = server.post("/reset", json={"env": "swe", "seed": 0, "config": {**good, "source": {**good["source"], "kind": "image"}}})
        assert bad_kind.status_code == 400 and bad_kind.json()["problems"][0]["field"] == "config.source.kind", bad_kind.text
        no_python = server.post("/reset", json={"env": "swe", "seed": 0, "config": {**good, "source": {**good["source"], "python": "/nope/bin/python"}}})
        assert no_python.status_code == 503 and "no interpreter at /nope/bin/python" in no_python.text, no_python.text
        no_file = server.post("/reset", json={"env": "swe", "seed": 0, "config": {**good, "instances": str(tmp_path / "missing.jsonl")}})
        assert no_file.status_code == 400 and "config.instances" in no_file.text, no_file.text
        restore = server.post("/reset", json={"env": "swe", "seed": 0, "config": good, "index": 1, "restore": "snap-1"})
        assert restore.status_code == 400 and restore.json()["problems"][0]["field"] == "restore", restore.text  # no snapshots: replayed
        assert not any(p for owner in (tmp_path / "sandboxes").iterdir() for p in owner.iterdir())
