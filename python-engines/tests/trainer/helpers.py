"""Builders shared by the trainer tests."""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import load_config


def make_app(backend: str = "sim", **options) -> FastAPI:
    flags = [f"{k}={v}" for k, v in options.items()]
    return create_app(load_config(None, {"role": "trainer", "backend": backend}, flags))


def client(backend: str = "sim", **options) -> TestClient:
    return TestClient(make_app(backend, **options))


def torch_client(model_cache, **options) -> TestClient:
    defaults = {"model_cache_dir": str(model_cache), "learning_rate": 1e-2, "micro_batch_size": 4}
    return client("torch", **{**defaults, **options})


def sample(uid: str, group: str = "g0", prompt=(1, 10, 11), response=(12, 13), old=None, reward: float = 0.0, **extra) -> dict:
    response = list(response)
    return {"uid": uid, "group_id": group, "prompt_ids": list(prompt), "response_ids": response,
            "old_logprobs": list(old) if old is not None else [-1.0] * len(response), "reward": reward, **extra}


def group_batch(groups: int = 2, size: int = 2, prefix: str = "") -> list[dict]:
    """``groups`` prompt groups of ``size`` responses; in each group the first response has reward 1, the rest 0."""
    out = []
    for g in range(groups):
        for i in range(size):
            prompt = [1, 20 + g, 30 + g, 40]
            response = [50 + i, 60 + g + i, 70 + i, 2][: 2 + (g + i) % 3]
            out.append(sample(f"{prefix}g{g}-s{i}", f"g{g}", prompt, response, reward=1.0 if i == 0 else 0.0))
    return out


def ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def problem_field(response) -> str:
    return response.json()["problems"][0]["field"]


def logprobs(c, sequences, temperature: float = 1.0) -> list[list[float]]:
    return ok(c.post("/logprobs", json={"sequences": sequences, "temperature": temperature}))["logprobs"]


def on_policy(c, batch: list[dict]) -> list[dict]:
    """The batch with old_logprobs from the trainer's current weights, as a synchronous rollout would have them."""
    current = logprobs(c, [{"prompt_ids": s["prompt_ids"], "response_ids": s["response_ids"]} for s in batch])
    return [{**s, "old_logprobs": lp} for s, lp in zip(batch, current)]


def trained(steps: int = 2, **options) -> TestClient:
    """A sim trainer (or the backend in options) after `steps` train steps of distinct samples."""
    c = client(**options)
    for s in range(steps):
        ok(c.post("/train_step", json={"step": s, "batch": group_batch(prefix=f"s{s}")}))
    return c


def corrupt(response, *words: str) -> str:
    """Asserts a 400 checkpoint_corrupt on field path whose message holds `words`; returns the message."""
    assert response.status_code == 400 and problem_field(response) == "path", response.text
    body = response.json()
    assert body["code"] == "checkpoint_corrupt", body
    for w in words:
        assert w in body["error"], body
    return body["error"]
