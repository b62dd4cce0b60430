"""The env role as a real server process: the verifier workers start under `python -m rollflow_engines serve`."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

CHILD_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def wait_for_health(url: str, proc: subprocess.Popen, deadline_s: float = 60) -> dict:
    # Readiness poll with a deadline, not a timing assertion.
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "server exited"
        try:
            return httpx.get(url, timeout=2).json()
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


def test_env_server_resets_steps_and_verifies(free_port):
    base = f"http://127.0.0.1:{free_port}"
    with subprocess.Popen(
        [sys.executable, "-m", "rollflow_engines", "serve", "--role", "env", "--port", str(free_port),
         "--option", "reward_timeout_s=60", "--option", "domains.code=exact_match"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=CHILD_ENV,
    ) as proc:
        try:
            assert wait_for_health(f"{base}/health", proc)["role"] == "env"
            body = httpx.post(f"{base}/reset", json={"env": "arithmetic", "seed": 4, "config": {"ops": ["+"]}}, timeout=30).json()
            a, _, b = body["info"]["question"].split()
            step = httpx.post(f"{base}/step", json={"session": body["session"], "action": str(int(a) + int(b))}, timeout=30).json()
            assert step["reward"] == 1.0 and step["done"] is True
            r = httpx.post(f"{base}/reward", json={"domain": "math", "response": "\\boxed{\\frac{2}{4}}", "reference": "0.5"}, timeout=120)
            assert r.json()["reward"] == 1.0, r.text
            r = httpx.post(f"{base}/reward", json={"domain": "code", "response": "ok", "reference": "ok"}, timeout=30)
            assert r.json()["reward"] == 1.0
        finally:
            proc.terminate()
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
