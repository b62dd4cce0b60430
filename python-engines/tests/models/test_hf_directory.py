"""Any local Hugging Face causal-LM directory serves both torch engines, and a checkpoint gives the
trained policy back as one. The model here is not the tiny Llama: a Qwen2-architecture model and a
byte-level BPE tokenizer trained on a corpus made in code, both saved with save_pretrained (nothing
is downloaded)."""
from pathlib import Path

import pytest
import torch

from inference.helpers import serve
from trainer.helpers import client, ok
from models.hf_build import CHAT_TEMPLATE, build_qwen2_bpe

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory) -> Path:
    return build_qwen2_bpe(tmp_path_factory.mktemp("qwen2-bpe"))


async def test_both_engines_serve_it_and_agree_and_a_checkpoint_exports_it_back(hf_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(hf_dir)
    assert type(tokenizer.backend_tokenizer.model).__name__ == "BPE"
    messages = [{"role": "user", "content": "What is 12 plus 7?"}]
    async with serve("torch", model=str(hf_dir)) as (inference, _):
        r = await inference.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 12, "seed": 3, "ignore_eos": True})
    assert r.status_code == 200, r.text
    body = r.json()
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
    assert body["prompt_token_ids"] == prompt  # the model's own chat template, through its BPE tokenizer
    choice = body["choices"][0]
    assert choice["message"]["content"] == tokenizer.decode(choice["token_ids"], skip_special_tokens=True)

    trainer = client("torch", model=str(hf_dir), learning_rate=1e-2, micro_batch_size=2, export_dir=str(tmp_path / "exports"))
    sequence = {"prompt_ids": prompt, "response_ids": choice["token_ids"]}
    scored = ok(trainer.post("/logprobs", json={"sequences": [sequence]}))["logprobs"][0]
    assert scored == pytest.approx(choice["logprobs"], abs=1e-4)  # trainer and inference server compute the same π

    batch = [{"uid": f"s{i}", "group_id": "g", **sequence, "old_logprobs": choice["logprobs"], "reward": float(i)} for i in range(2)]
    ok(trainer.post("/train_step", json={"step": 0, "batch": batch}))
    trained = ok(trainer.post("/logprobs", json={"sequences": [sequence]}))["logprobs"][0]
    assert trained != pytest.approx(scored, abs=1e-6)

    checkpoint = tmp_path / "checkpoint"
    ok(trainer.post("/save", json={"path": str(checkpoint), "version": 1, "export_hf": True}))
    exported = AutoModelForCausalLM.from_pretrained(checkpoint / "hf", local_files_only=True)
    again = AutoTokenizer.from_pretrained(checkpoint / "hf", local_files_only=True)
    assert again.chat_template == CHAT_TEMPLATE and again.encode("What is 3 plus 4?") == tokenizer.encode("What is 3 plus 4?")
    ids = torch.tensor([prompt + choice["token_ids"]])
    with torch.no_grad():
        logp = torch.log_softmax(exported(input_ids=ids).logits[0, len(prompt) - 1:-1].float(), -1)
    mine = logp.gather(-1, torch.tensor(choice["token_ids"])[:, None]).squeeze(-1).tolist()
    assert mine == pytest.approx(trained, abs=1e-4)  # the exported directory is the trained policy
    ok(trainer.post("/save", json={"path": str(tmp_path / "state-only"), "version": 1}))
    assert not (tmp_path / "state-only" / "hf").exists()  # recovery saves stay small


def test_a_directory_that_is_not_a_model_is_a_clear_error(tmp_path):
    from rollflow_engines.models import load_model

    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_model(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json there; expected a Hugging Face model directory"):
        load_model(str(tmp_path / "empty"))
