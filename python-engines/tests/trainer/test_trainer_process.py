"""`python -m rollflow_engines serve --role trainer` as a real process."""
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .helpers import group_batch

CHILD_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def test_sim_trainer_serves_train_step_over_http(free_port, tmp_path):
    cmd = [sys.executable, "-m", "rollflow_engines", "serve", "--role", "trainer", "--backend", "sim",
           "--port", str(free_port), "--option", f"export_dir={tmp_path}", "--option", "sim_seconds_per_sample=0.001"]
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=CHILD_ENV) as proc:
        try:
            base = f"http://127.0.0.1:{free_port}"
            deadline = time.monotonic() + 60
            while True:  # readiness poll with a deadline, not a timing assertion
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else "server exited"
                try:
                    assert httpx.get(f"{base}/health", timeout=2).json()["role"] == "trainer"
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "trainer never answered"
                    time.sleep(0.1)
            step = httpx.post(f"{base}/train_step", json={"step": 0, "batch": group_batch()}, timeout=30)
            assert step.status_code == 200 and step.json()["version"] == 1
            export = httpx.post(f"{base}/export_weights", json={"version": 1}, timeout=30).json()
            assert Path(export["path"]).is_dir()
            assert "rollflow_trainer_steps_total 1.0" in httpx.get(f"{base}/metrics", timeout=5).text
        finally:
            proc.terminate()
        proc.wait(timeout=30)
