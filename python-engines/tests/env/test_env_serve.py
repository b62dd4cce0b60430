"""The env role as a real server process: the verifier workers start under `python -m rollflow_engines serve`."""
import httpx


def test_env_server_resets_steps_and_verifies(serve_engine):
    served = serve_engine("--role", "env", "--option", "reward_timeout_s=60", "--option", "domains.code=exact_match")
    base = served.base
    assert served.health["role"] == "env"
    body = httpx.post(f"{base}/reset", json={"env": "arithmetic", "seed": 4, "config": {"ops": ["+"]}}, timeout=30).json()
    a, _, b = body["info"]["question"].split()
    step = httpx.post(f"{base}/step", json={"session": body["session"], "index": 0, "action": str(int(a) + int(b))}, timeout=30).json()
    assert step["reward"] == 1.0 and step["done"] is True
    r = httpx.post(f"{base}/reward", json={"domain": "math", "response": "\\boxed{\\frac{2}{4}}", "reference": "0.5"}, timeout=120)
    assert r.json()["reward"] == 1.0, r.text
    r = httpx.post(f"{base}/reward", json={"domain": "code", "response": "ok", "reference": "ok"}, timeout=30)
    assert r.json()["reward"] == 1.0
