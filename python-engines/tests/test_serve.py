"""The entry point, run as a real process: config errors exit 2, a good config serves /health."""
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import load_config


def test_health_reports_role_and_backend():
    client = TestClient(create_app(load_config(None, {"role": "trainer"})))
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert (body["role"], body["backend"]) == ("trainer", "sim")


def test_bad_config_exits_2_before_serving(serve_cli):
    proc = serve_cli("--role", "env", "--backend", "vllm")
    assert proc.returncode == 2
    assert "backend: got 'vllm'; expected one of python" in proc.stderr


def test_serve_answers_health_and_stops_on_sigterm(serve_engine):
    served = serve_engine("--role", "inference")
    assert served.health["role"] == "inference" and served.health["pid"] == served.proc.pid
