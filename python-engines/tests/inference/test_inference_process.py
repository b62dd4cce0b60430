"""The inference server as a real process: options errors exit 2, a sim server answers over TCP."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

CHILD_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def run_serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rollflow_engines", "serve", "--role", "inference", *args],
                          capture_output=True, text=True, timeout=120, env=CHILD_ENV)


@pytest.mark.skipif(__import__("importlib").util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_backend_without_vllm_exits_2_naming_it():
    proc = run_serve("--backend", "vllm", "--port", "1")
    assert proc.returncode == 2
    assert "vllm" in proc.stderr and "not installed" in proc.stderr


@pytest.mark.parametrize("args, words", [
    (["--option", "max_batch=0"], "options.max_batch"),
    (["--option", "sim.length.dist=uniform"], "options.sim.length.dist"),
    (["--option", "speed=9"], "options.speed"),
    (["--backend", "torch", "--option", "model=tiny:huge"], "unknown tiny preset"),
    (["--backend", "torch", "--option", "model=/no/such/model"], "not a local directory"),
])
def test_bad_options_exit_2_before_serving(args, words):
    proc = run_serve("--port", "1", *args)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr


def test_sim_server_serves_completions_and_metrics_over_tcp(free_port):
    base = f"http://127.0.0.1:{free_port}"
    with subprocess.Popen(
        [sys.executable, "-m", "rollflow_engines", "serve", "--role", "inference", "--backend", "sim",
         "--port", str(free_port), "--option", "sim.length.mean=5", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=CHILD_ENV,
    ) as proc:
        try:
            deadline = time.monotonic() + 60  # readiness poll, not a timing assertion
            while True:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else "server exited"
                try:
                    httpx.get(f"{base}/health", timeout=2)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "server never answered"
                    time.sleep(0.1)
            body = httpx.post(f"{base}/v1/completions", json={"prompt": [1, 2], "max_tokens": 9}, timeout=30).json()
            assert len(body["choices"][0]["token_ids"]) == 5
            metrics = httpx.get(f"{base}/metrics", timeout=10).text
            assert "rollflow_inference_tokens_generated_total 5.0" in metrics
        finally:
            proc.terminate()
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
