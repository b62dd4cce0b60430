"""Train/infer consistency: for the same weights, the logprobs the inference
server returns while generating equal the trainer's recomputed logprobs (the
behaviour policy π_old that PPO's ratio divides by). Checked before training,
and again after a real train step, export and update_weights, which is the
weight-sync path a run takes. Both servers use the same convention: the
logprob under softmax(logits / temperature), before top-p.

Tolerance: 2e-4 absolute. Both sides run float32 on CPU, but inference pads
left and batches a step at a time while the trainer pads right, so matmul
reduction orders differ; the largest difference observed here is 4.8e-7."""
import httpx
import pytest

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig

TOLERANCE = 2e-4
pytestmark = pytest.mark.anyio


def client_for(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://engine", timeout=120)


async def generate(inference: httpx.AsyncClient, prompt: list[int], temperature: float) -> dict:
    r = await inference.post("/v1/completions", json={"prompt": prompt, "max_tokens": 12, "temperature": temperature, "seed": 3, "n": 3, "ignore_eos": True})
    assert r.status_code == 200, r.text
    return r.json()


async def recompute(trainer: httpx.AsyncClient, prompt: list[int], choices: list[dict], temperature: float) -> list[list[float]]:
    r = await trainer.post("/logprobs", json={"sequences": [{"prompt_ids": prompt, "response_ids": c["token_ids"]} for c in choices], "temperature": temperature})
    assert r.status_code == 200, r.text
    return r.json()["logprobs"]


def assert_close(generated: list[dict], recomputed: list[list[float]]) -> None:
    for choice, theirs in zip(generated, recomputed, strict=True):
        assert len(choice["logprobs"]) == len(theirs)
        worst = max(abs(a - b) for a, b in zip(choice["logprobs"], theirs))
        assert worst < TOLERANCE, f"logprob mismatch {worst:.2e}"


@pytest.mark.parametrize("temperature", [1.0, 0.7])
async def test_generation_logprobs_equal_trainer_logprobs_before_and_after_a_weight_sync(tmp_path, temperature):
    model = {"model": "tiny:default", "model_seed": 5}
    inference_app = create_app(ServeConfig(role="inference", backend="torch", options=model))
    trainer_app = create_app(ServeConfig(role="trainer", backend="torch", options={**model, "export_dir": str(tmp_path), "learning_rate": 1e-2}))
    prompt = [4, 23, 60, 28, 7, 5]
    async with inference_app.router.lifespan_context(inference_app), trainer_app.router.lifespan_context(trainer_app):
        async with client_for(inference_app) as inference, client_for(trainer_app) as trainer:
            before = await generate(inference, prompt, temperature)
            assert_close(before["choices"], await recompute(trainer, prompt, before["choices"], temperature))

            # one real train step on those samples, then the run's weight sync: export -> pause -> update -> resume
            batch = [{"uid": f"u{i}", "group_id": "g", "prompt_ids": prompt, "response_ids": c["token_ids"],
                      "old_logprobs": c["logprobs"], "reward": float(i)} for i, c in enumerate(before["choices"])]
            step = await trainer.post("/train_step", json={"step": 0, "batch": batch, "pg_variant": "ppo", "adv_estimator": "grpo", "temperature": temperature})
            assert step.status_code == 200, step.text
            exported = (await trainer.post("/export_weights", json={"version": 1})).json()
            assert (await inference.post("/pause", json={"mode": "abort"})).status_code == 200
            assert (await inference.post("/update_weights", json=exported)).status_code == 200
            assert (await inference.post("/resume", json={})).status_code == 200

            after = await generate(inference, prompt, temperature)
            assert all(span["version"] == 1 for c in after["choices"] for span in c["version_spans"])
            assert_close(after["choices"], await recompute(trainer, prompt, after["choices"], temperature))
            # the step changed the policy: the same tokens are now scored differently
            rescored = await recompute(trainer, prompt, before["choices"], temperature)
            assert max(abs(a - b) for c, r in zip(before["choices"], rescored) for a, b in zip(c["logprobs"], r)) > 1e-3
