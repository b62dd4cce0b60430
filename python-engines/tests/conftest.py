import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

# Child processes find the package the way rollflow's own launcher does.
ENGINE_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
SERVE = [sys.executable, "-m", "rollflow_engines", "serve"]


@pytest.fixture
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def serve_cli():
    """Runs `python -m rollflow_engines serve ARGS` to completion (for start-up errors, which must exit before serving)."""
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=120, env=ENGINE_ENV)
    return run


@dataclass
class Served:
    base: str
    health: dict
    proc: subprocess.Popen


@pytest.fixture
def serve_engine(free_port):
    """Starts `python -m rollflow_engines serve ARGS --port <free port>` as a real process and waits until
    /health answers (a readiness poll with a deadline, not a timing assertion). On teardown it sends SIGTERM
    and checks a clean exit: uvicorn shuts down gracefully, then re-raises the signal it caught."""
    started: list[subprocess.Popen] = []

    def start(*args: str) -> Served:
        proc = subprocess.Popen([*SERVE, *args, "--port", str(free_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENGINE_ENV)
        started.append(proc)
        base = f"http://127.0.0.1:{free_port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else "server exited"
            try:
                return Served(base, httpx.get(f"{base}/health", timeout=2).json(), proc)
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"{base} never answered"
                time.sleep(0.1)

    yield start
    for proc in started:
        proc.terminate()
        code = proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
        assert code in (0, -signal.SIGTERM)
