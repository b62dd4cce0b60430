"""The inference server as a real process: options errors exit 2, a sim server answers over TCP."""
import httpx
import pytest


@pytest.mark.skipif(__import__("importlib").util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_backend_without_vllm_exits_2_naming_it(serve_cli):
    proc = serve_cli("--role", "inference", "--backend", "vllm", "--port", "1")
    assert proc.returncode == 2
    assert "vllm" in proc.stderr and "not installed" in proc.stderr


@pytest.mark.parametrize("args, words", [
    (["--option", "max_batch=0"], "options.max_batch"),
    (["--option", "sim.length.dist=uniform"], "options.sim.length.dist"),
    (["--option", "speed=9"], "options.speed"),
    (["--backend", "torch", "--option", "model=tiny:huge"], "unknown tiny preset"),
    (["--backend", "torch", "--option", "model=/no/such/model"], "not a local directory"),
])
def test_bad_options_exit_2_before_serving(serve_cli, args, words):
    proc = serve_cli("--role", "inference", "--port", "1", *args)
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr


def test_sim_server_serves_completions_and_metrics_over_tcp(serve_engine):
    base = serve_engine("--role", "inference", "--backend", "sim", "--option", "sim.length.mean=5", "--log-level", "warning").base
    body = httpx.post(f"{base}/v1/completions", json={"prompt": [1, 2], "max_tokens": 9}, timeout=30).json()
    assert len(body["choices"][0]["token_ids"]) == 5
    metrics = httpx.get(f"{base}/metrics", timeout=10).text
    assert "rollflow_inference_tokens_generated_total 5.0" in metrics
