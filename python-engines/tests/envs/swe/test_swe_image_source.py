"""Source kind image (envs/swe/images.py) on the inflection sample built into podman images (image_sample.py): the
gold patch resolves and no edit does not, the sandbox's system and interpreter are the image's, an episode lost
with its server resumes from its snapshot over the image's repository; a missing image or engine is a 503 naming it,
a bad source key a 400. The red team runs on an image too (test_swe_attacks.py's ``inflection-image`` target).
Where podman cannot run, every test here is skipped with podman's own words as the reason (shown as skipped)."""
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.envs.swe.env import SweConfig
from rollflow_engines.errors import UnavailableError

from .helpers import apply_patch, bash, play_config
from .sample_tasks import ROWS

FIRST = ROWS[0]["instance_id"]


@pytest.mark.parametrize("row", ROWS, ids=[r["instance_id"] for r in ROWS])
def test_the_gold_patch_resolves_through_the_image_and_no_edit_does_not(inflection_images, row):
    config = inflection_images[row["instance_id"]]
    assert play_config(config, ["<submit/>"])[-1].reward == 0.0
    end = play_config(config, [apply_patch(row["patch"]), "<submit/>"])[-1]
    assert end.reward == 1.0 and end.info["success"], end


def test_the_sandbox_runs_on_the_image_s_system_and_interpreter(inflection_images):
    probe = ("python -c 'import sys; print(sys.executable, sys.version_info[:2])'; cat /etc/debian_version; ls /; "
             "touch /usr/x /opt/env/x 2>&1; echo edit >> README.rst && echo wrote")
    out = play_config(inflection_images[FIRST], [bash(probe)])[-1].observation
    assert "/opt/env/bin/python (3, 11)" in out and "testbed" not in out, out  # the image's repository is not bound
    assert "work" not in out.split() and "Read-only file system" in out and "wrote" in out, out  # the host's /work is not there


def test_an_episode_lost_with_its_server_resumes_over_the_image_s_repository(inflection_images, tmp_path):
    good = {**inflection_images[FIRST], "ids": [FIRST]}

    def server(name: str) -> TestClient:
        options = {"snapshot_dir": str(tmp_path / "snapshots"), "sandbox_root": str(tmp_path / name)}
        return TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False)
    with server("a") as a:
        session = a.post("/reset", json={"env": "swe", "seed": 0, "config": good}).json()["session"]
        saved = a.post("/step", json={"session": session, "index": 0, "action": apply_patch(ROWS[0]["patch"])}).json()["info"]["snapshot"]
    with server("b") as b:
        resumed = b.post("/reset", json={"env": "swe", "seed": 0, "config": good, "restore": saved, "index": 1})
        assert resumed.status_code == 200 and resumed.json()["info"]["turn"] == 1, resumed.text
        end = b.post("/step", json={"session": resumed.json()["session"], "index": 1, "action": "<submit/>"}).json()
        assert end["reward"] == 1.0 and end["info"]["success"], end


def test_a_missing_image_engine_or_cache_is_a_503_and_a_bad_key_a_400(inflection_images, tmp_path):
    good = inflection_images[FIRST]
    options = {"snapshot_dir": str(tmp_path / "snapshots"), "sandbox_root": str(tmp_path / "sandboxes")}

    def reset(**source) -> object:
        return server.post("/reset", json={"env": "swe", "seed": 0, "config": {**good, "source": {**good["source"], **source}}})
    with TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False) as server:
        missing = reset(image="localhost/rollflow-swe-test/none:{instance_id}")
        assert missing.status_code == 503 and "localhost/rollflow-swe-test/none:pypi__inflection-" in missing.text, missing.text
        assert "image not known" in missing.text, missing.text  # podman's own words
        no_engine = reset(engine="docker")  # the docker CLI without a daemon, or no docker at all: either way the engine's words
        assert no_engine.status_code == 503 and "docker" in no_engine.text, no_engine.text
        no_cache = reset(cache_dir="/proc/rollflow-cannot-write")
        assert no_cache.status_code == 503 and "could not unpack image" in no_cache.text, no_cache.text
        no_repo = reset(repo_dir="/nowhere")
        assert no_repo.status_code == 503 and "has no directory /nowhere" in no_repo.text, no_repo.text
        for source, field in (({"repo_path": "x"}, "config.source.repo_path"), ({"python": "opt/env/bin/python"}, "config.source.python"),
                              ({"image": "x:{name}"}, "config.source.image"), ({"kind": "tarball"}, "config.source.kind"),
                              ({"cache_max_gb": 0}, "config.source.cache_max_gb")):
            bad = reset(**source)
            assert bad.status_code == 400 and bad.json()["problems"][0]["field"] == field, (source, bad.text)
        sandboxes = tmp_path / "sandboxes"
        assert not sandboxes.exists() or not any(p for owner in sandboxes.iterdir() for p in owner.iterdir())


@pytest.fixture
def docker_through_podman():
    """The docker CLI, talking to podman's Docker-compatible API (``podman system service``) on a socket of its own:
    the only Docker API this machine kind can serve (no dockerd runs here). Its DOCKER_HOST, for the test to set."""
    if shutil.which("docker") is None:
        pytest.skip(reason="no docker CLI on PATH")
    where = Path(tempfile.mkdtemp(prefix="rf-docker-"))  # a short path: a unix socket's is at most 107 bytes
    socket = where / "podman.sock"
    service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{socket}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60  # only against a hang: the socket is there once podman listens
        while not socket.is_socket() and service.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if not socket.is_socket():
            service.kill()  # still running without its socket after the deadline: its words once it is gone
            err = service.communicate(timeout=30)[1].decode()[-500:]
            pytest.skip(reason=f"podman system service gave no socket (exit {service.returncode}): {err}")
        yield f"unix://{socket}"
    finally:
        service.terminate()
        service.wait(timeout=30)
        service.stderr.close()
        shutil.rmtree(where, ignore_errors=True)


def test_engine_docker_unpacks_and_resolves_through_the_docker_cli(inflection_images, docker_through_podman, tmp_path, monkeypatch):
    given = inflection_images[FIRST]
    config = {**given, "source": {**given["source"], "engine": "docker", "cache_dir": str(tmp_path / "cache")}}
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    with pytest.raises(UnavailableError, match="docker image inspect"):  # no daemon: the server's failure (a 503), no episode
        play_config(config, ["<submit/>"])
    monkeypatch.setenv("DOCKER_HOST", docker_through_podman)
    assert play_config(config, ["<submit/>"])[-1].reward == 0.0
    end = play_config(config, [apply_patch(ROWS[0]["patch"]), "<submit/>"])[-1]
    assert end.reward == 1.0 and end.info["success"], end
    assert [p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")], "nothing unpacked by docker"


def test_a_source_without_kind_is_still_local():
    config = SweConfig.model_validate({"instances": "x.jsonl", "source": {"repo_path": "r", "python": "p"}})
    assert config.source.kind == "local"
