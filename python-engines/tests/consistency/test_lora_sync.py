"""The weight sync of a LoRA run: the trainer exports its adapter alone, the inference server
(same base model, same LoRA settings) applies it, and then generates with the trainer's policy:
its logprobs equal the trainer's /logprobs and differ from the base model's. Its base weights
never change, so a second sync does not stack on the first, and an older adapter loaded again
gives back exactly the older policy."""
import httpx
import pytest
import torch
from safetensors.torch import load_file

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.models import load_model

from test_train_infer_consistency import TOLERANCE, assert_close, client_for, recompute

pytestmark = pytest.mark.anyio
MODEL = {"model": "tiny:default", "model_seed": 5, "lora_rank": 4}
PROMPT = [4, 23, 60, 28, 7, 5]


async def greedy(inference: httpx.AsyncClient) -> list[dict]:
    """A fixed sequence per policy: greedy tokens (their logprobs reported at T = 1)."""
    r = await inference.post("/v1/completions", json={"prompt": PROMPT, "max_tokens": 10, "temperature": 0, "ignore_eos": True})
    assert r.status_code == 200, r.text
    return r.json()["choices"]


async def sync(trainer: httpx.AsyncClient, inference: httpx.AsyncClient, version: int, path: str | None = None) -> str:
    if path is None:
        r = await trainer.post("/export_weights", json={"version": version})
        assert r.status_code == 200, r.text
        path = r.json()["path"]
    assert (await inference.post("/pause", json={"mode": "abort"})).status_code == 200
    r = await inference.post("/update_weights", json={"path": path, "version": version})
    assert r.status_code == 200, r.text
    assert (await inference.post("/resume", json={})).status_code == 200
    return path


def base_logprobs(choices: list[dict]) -> list[list[float]]:
    model, _ = load_model("tiny:default", 5)
    out = []
    for c in choices:
        ids = torch.tensor([PROMPT + c["token_ids"]])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0, len(PROMPT) - 1:-1].float(), dim=-1)
        out.append(logp.gather(-1, ids[0, len(PROMPT):, None]).squeeze(-1).tolist())
    return out


async def test_an_adapter_sync_gives_the_server_the_trainers_policy_and_never_accumulates(tmp_path):
    inference_app = create_app(ServeConfig(role="inference", backend="torch", options=MODEL))
    trainer_app = create_app(ServeConfig(role="trainer", backend="torch",
                                         options={**MODEL, "export_dir": str(tmp_path), "learning_rate": 5e-2}))
    engine = inference_app.state.inference_engine
    served_base = {n: p.detach().clone() for n, p in engine.model.named_parameters() if "lora_" not in n}
    async with inference_app.router.lifespan_context(inference_app), trainer_app.router.lifespan_context(trainer_app):
        async with client_for(inference_app) as inference, client_for(trainer_app) as trainer:
            exports, policies = [], []
            for step in (0, 1):
                r = await inference.post("/v1/completions", json={"prompt": PROMPT, "max_tokens": 8, "temperature": 1.0, "seed": step, "n": 4, "ignore_eos": True})
                batch = [{"uid": f"{step}-{i}", "group_id": "g", "prompt_ids": PROMPT, "response_ids": c["token_ids"],
                          "old_logprobs": c["logprobs"], "reward": float(i % 2)} for i, c in enumerate(r.json()["choices"])]
                r = await trainer.post("/train_step", json={"step": step, "batch": batch, "pg_variant": "ppo", "adv_estimator": "grpo"})
                assert r.status_code == 200, r.text
                exports.append(await sync(trainer, inference, step + 1))

                # The export holds the adapter's tensors and nothing else.
                tensors = sorted(p.name for p in (tmp_path / f"v{step + 1}").glob("*.safetensors"))
                assert tensors == ["adapter_model.safetensors"]
                names = load_file(tmp_path / f"v{step + 1}" / "adapter_model.safetensors")
                assert names and all(".lora_A." in k or ".lora_B." in k for k in names)

                choices = await greedy(inference)
                assert_close(choices, await recompute(trainer, PROMPT, choices, 1.0))
                worst = max(abs(a - b) for c, base in zip(choices, base_logprobs(choices)) for a, b in zip(c["logprobs"], base))
                assert worst > 1e-3, "the served policy is still the base model's"
                assert all(torch.equal(served_base[n], p) for n, p in engine.model.named_parameters() if "lora_" not in n)
                policies.append(choices)

            # The first adapter again: the server is back at the first policy exactly (nothing stacked).
            await sync(trainer, inference, 3, exports[0])
            again = await greedy(inference)
            assert [c["token_ids"] for c in again] == [c["token_ids"] for c in policies[0]]
            for a, b in zip(again, policies[0]):
                assert a["logprobs"] == pytest.approx(b["logprobs"], abs=TOLERANCE / 100)
