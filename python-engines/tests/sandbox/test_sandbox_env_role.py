"""The env role's sandbox options: the janitor sweeps at start, periodically and at shutdown."""
import fcntl
import json
import logging
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ConfigError, ServeConfig, load_config
from rollflow_engines.sandbox import current

from .helpers import wait_for


def orphan(root: Path, owner: str = "dead-server") -> Path:
    """A workspace whose process is gone: its lock file exists and nobody holds it."""
    record = root / owner / "0123456789abcdef"
    (record / "workspace").mkdir(parents=True)
    (record / "lock").write_text(json.dumps({"uid": None}))
    return record


def env_app(root: Path, **options):
    return create_app(ServeConfig(role="env", options={"sandbox_root": str(root), **options}))


def test_the_janitor_reaps_at_start_and_periodically_and_the_settings_reach_the_process(root):
    first = orphan(root)
    app = env_app(root, sandbox_max_age_s=2)  # sweeps every 0.5 s
    assert not first.exists()
    assert current().root == root and current().mode == "bwrap" and current().max_age_s == 2
    with TestClient(app) as client:
        later = orphan(root, "another-dead-server")
        wait_for(lambda: not later.exists(), "the periodic sweep removed the orphan")
        metrics = client.get("/metrics").text
        assert "rollflow_env_sandbox_workspaces_reaped_total 2.0" in metrics


def test_shutdown_removes_the_workspaces_the_server_still_holds(root):
    with TestClient(env_app(root)):
        ws = current().open(files={"f": "x"})
        held = ws.record
        assert held.exists()
    assert not held.exists()


def test_another_servers_held_workspace_survives_this_servers_janitor(root):
    record = orphan(root, "live-server")
    fd = os.open(record / "lock", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with TestClient(env_app(root, sandbox_max_age_s=3600)):
            pass
        assert record.exists()
    finally:
        os.close(fd)


def test_sandbox_none_is_accepted_and_warned_about(root, caplog):
    caplog.set_level(logging.WARNING)
    with TestClient(env_app(root, sandbox="none")):
        assert current().mode == "none"
    assert any("UNSANDBOXED" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("flag, problem", [
    ("sandbox=docker", "options.sandbox"),
    ("sandbox_max_age_s=0", "options.sandbox_max_age_s"),
])
def test_bad_sandbox_options_are_named(flag, problem):
    with pytest.raises(ConfigError, match=problem):
        load_config(None, {"role": "env"}, [flag])


def test_an_env_server_that_cannot_sandbox_refuses_to_start_naming_what_is_missing(tmp_path):
    """Without bwrap on PATH the server exits before serving, rather than answering 503 to every sandboxed request."""
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("setpriv", "prlimit", "sh"):  # everything the sandbox needs but bwrap
        (bin_dir / tool).symlink_to(f"/usr/bin/{tool}" if os.path.exists(f"/usr/bin/{tool}") else f"/bin/{tool}")
    env = {**os.environ, "PATH": str(bin_dir), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "rollflow_engines", "serve", "--role", "env", "--port", "1",
                           "--option", f"sandbox_root={tmp_path / 'sb'}"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 3, done.stderr
    assert "the sandbox cannot run on this machine: 'bwrap' was not found on PATH: install the Debian package bubblewrap" in done.stderr


def test_the_workspace_caps_are_env_options_that_reach_every_workspace(root):
    with TestClient(env_app(root, sandbox_disk_mb=8, sandbox_max_inodes=64)):
        assert (current().disk_mb, current().max_inodes) == (8, 64)
        with current().open() as ws:
            r = ws.run("i=0; while [ $i -lt 200 ]; do touch f$i 2>/dev/null || break; i=$((i+1)); done; echo made $i; rm -f f*; head -c 20000000 /dev/zero > big")
            made = int(r.stdout.split()[1])
            assert 0 < made < 64, r  # the inode cap, less what the workspace itself holds
            assert (ws.path / "big").stat().st_size <= 8 << 20 and "No space left on device" in r.stderr, r


@pytest.mark.parametrize("option, value", [("sandbox_disk_mb", 0), ("sandbox_max_inodes", 8)])
def test_workspace_caps_out_of_range_are_named(root, option, value):
    with pytest.raises(Exception, match=option):
        env_app(root, **{option: value})
