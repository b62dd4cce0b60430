"""The entry point, run as a real process: config errors exit 2, a good config serves /health."""
import signal
import subprocess
import sys
import time

import httpx
import os
from pathlib import Path
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import load_config

# Child processes find the package the way rollflow's own launcher does.
CHILD_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def test_health_reports_role_and_backend():
    client = TestClient(create_app(load_config(None, {"role": "trainer"})))
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert (body["role"], body["backend"]) == ("trainer", "sim")


def test_bad_config_exits_2_before_serving():
    proc = subprocess.run(
        [sys.executable, "-m", "rollflow_engines", "serve", "--role", "env", "--backend", "vllm"],
        capture_output=True, text=True, timeout=60, env=CHILD_ENV,
    )
    assert proc.returncode == 2
    assert "backend: got 'vllm'; expected one of python" in proc.stderr


def wait_for_health(url: str, proc: subprocess.Popen, deadline_s: float = 60) -> dict:
    # Readiness poll with a deadline, not a timing assertion: the loop ends as
    # soon as the server answers, however slow the machine.
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "server exited"
        try:
            return httpx.get(url, timeout=2).json()
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


def test_serve_answers_health_and_stops_on_sigterm(free_port):
    with subprocess.Popen(
        [sys.executable, "-m", "rollflow_engines", "serve", "--role", "inference", "--port", str(free_port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=CHILD_ENV,
    ) as proc:
        try:
            body = wait_for_health(f"http://127.0.0.1:{free_port}/health", proc)
            assert body["role"] == "inference" and body["pid"] == proc.pid
        finally:
            proc.terminate()
        # uvicorn shuts down gracefully, then re-raises the signal it caught.
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
