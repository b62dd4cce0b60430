"""The torch backend on the tiny model: decoding, the logprob convention, sampling
controls and weight updates."""
import pytest
import torch

from rollflow_engines.models import build_tiny_model, load_model

from .helpers import as_export, serve

pytestmark = pytest.mark.anyio


async def complete(client, **body) -> dict:
    r = await client.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def greedy(body: dict) -> tuple[list[int], list[float]]:
    choice = body["choices"][0]
    return choice["token_ids"], choice["logprobs"]


async def test_completion_decodes_text_and_chat_uses_the_tokenizer_template():
    model, tokenizer = load_model("tiny:default", 0)
    messages = [{"role": "user", "content": "12+7="}]
    async with serve("torch") as (client, _):
        body = await complete(client, prompt=tokenizer.encode("3+4=", add_special_tokens=False), max_tokens=6, ignore_eos=True)
        r = await client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 5, "seed": 1})
    choice = body["choices"][0]
    assert body["model"] == "tiny:default"
    assert choice["text"] == tokenizer.decode(choice["token_ids"], skip_special_tokens=True)
    assert r.status_code == 200, r.text
    chat = r.json()
    expected = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)["input_ids"]
    assert chat["prompt_token_ids"] == list(expected)
    assert chat["choices"][0]["message"]["content"] == tokenizer.decode(chat["choices"][0]["token_ids"], skip_special_tokens=True)


async def test_seeded_sampling_repeats_and_samples_differ():
    request = {"prompt": [10, 11, 12], "max_tokens": 12, "temperature": 1.0, "seed": 42, "n": 3, "ignore_eos": True}
    async with serve("torch") as (client, _):
        a = await complete(client, **request)
        b = await complete(client, **request)
        c = await complete(client, **{**request, "seed": 43})
    tokens = [ch["token_ids"] for ch in a["choices"]]
    assert tokens == [ch["token_ids"] for ch in b["choices"]]
    assert [ch["logprobs"] for ch in a["choices"]] == [ch["logprobs"] for ch in b["choices"]]
    assert tokens != [ch["token_ids"] for ch in c["choices"]]
    assert len({tuple(t) for t in tokens}) == 3


@pytest.mark.parametrize("temperature, top_p", [(0.0, 1.0), (0.7, 0.9), (1.3, 1.0)])
async def test_logprobs_are_softmax_of_logits_over_temperature_before_top_p(temperature, top_p):
    prompt = [20, 21, 22, 23]
    async with serve("torch") as (client, _):
        body = await complete(client, prompt=prompt, max_tokens=8, temperature=temperature, top_p=top_p, seed=5, ignore_eos=True)
    tokens, logprobs = greedy(body)
    model, _ = load_model("tiny:default", 0)
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([prompt + tokens])).logits[0]
    t = temperature or 1.0
    expected = [float(torch.log_softmax(logits[len(prompt) - 1 + i] / t, -1)[tok]) for i, tok in enumerate(tokens)]
    assert logprobs == pytest.approx(expected, abs=1e-4)
    if temperature == 0:
        assert tokens == [int(torch.argmax(logits[len(prompt) - 1 + i])) for i in range(len(tokens))]


async def test_a_tiny_nucleus_samples_the_greedy_token():
    async with serve("torch") as (client, _):
        greedy_body = await complete(client, prompt=[30, 31], max_tokens=10, temperature=0, ignore_eos=True)
        nucleus = await complete(client, prompt=[30, 31], max_tokens=10, temperature=1.0, top_p=1e-6, seed=9, ignore_eos=True)
    assert greedy(nucleus)[0] == greedy(greedy_body)[0]


async def test_stop_token_ids_end_the_response_with_the_stop_token():
    async with serve("torch") as (client, engine):
        body = await complete(client, prompt=[1, 2], max_tokens=10, temperature=0, stop_token_ids=list(range(engine.vocab_size)))
    assert body["choices"][0]["finish_reason"] == "stop" and len(body["choices"][0]["token_ids"]) == 1


async def test_update_weights_changes_the_distribution_and_reloading_restores_it(tmp_path):
    other = as_export(build_tiny_model("default", 1, tmp_path / "seed1"), "torch")
    same = as_export(build_tiny_model("default", 0, tmp_path / "seed0"), "torch")
    request = {"prompt": [40, 41, 42], "max_tokens": 10, "temperature": 0, "ignore_eos": True}
    sampled = {**request, "temperature": 1.0, "seed": 4, "n": 4}

    async def outputs(client) -> tuple[dict, dict]:
        return await complete(client, **request), await complete(client, **sampled)

    async with serve("torch") as (client, _):
        before = await outputs(client)
        assert (await client.post("/pause", json={"mode": "abort"})).status_code == 200
        assert (await client.post("/update_weights", json={"path": str(other), "version": 1})).status_code == 200
        await client.post("/resume")
        after = await outputs(client)
        await client.post("/pause", json={"mode": "wait"})
        assert (await client.post("/update_weights", json={"path": str(same), "version": 2})).status_code == 200
        await client.post("/resume")
        restored = await outputs(client)
    # Greedy logprobs move, and the same seeded samples come out differently.
    assert greedy(after[0])[1] != greedy(before[0])[1]
    assert [c["token_ids"] for c in after[1]["choices"]] != [c["token_ids"] for c in before[1]["choices"]]
    assert after[0]["choices"][0]["version_spans"] == [{"version": 1, "start": 0, "end": 10}]
    # Loading the original weights again gives the original answers exactly.
    assert greedy(restored[0]) == greedy(before[0])
    assert restored[1]["choices"] == [{**c, "version_spans": [{"version": 2, "start": 0, "end": 10}]} for c in before[1]["choices"]]


async def test_weights_that_do_not_fit_are_refused_and_the_model_keeps_serving(tmp_path):
    small = as_export(build_tiny_model("small", 0, tmp_path / "small"), "torch", model="tiny:small")
    # Exported as tiny:default (the name fits), but the tensors are tiny:small's.
    misnamed = as_export(build_tiny_model("small", 0, tmp_path / "misnamed"), "torch")
    no_tensors = as_export(tmp_path / "no-tensors", "torch")
    corrupt = as_export(tmp_path / "corrupt", "torch")
    (corrupt / "model.safetensors").write_bytes(b"not a safetensors file")
    request = {"prompt": [5, 6], "max_tokens": 5, "temperature": 0, "ignore_eos": True}
    async with serve("torch") as (client, engine):
        before = await complete(client, **request)
        await client.post("/pause", json={"mode": "keep"})
        for path, status in [(tmp_path / "missing", 404), (no_tensors, 400), (corrupt, 400), (small, 409), (misnamed, 400)]:
            r = await client.post("/update_weights", json={"path": str(path), "version": 9})
            assert r.status_code == status, r.text
            assert r.json()["problems"][0]["field"] == "path"
        assert engine.state()["version"] == 0
        await client.post("/resume")
        after = await complete(client, **request)
    assert greedy(after) == greedy(before)


async def test_prompt_plus_max_tokens_beyond_the_context_is_refused():
    async with serve("torch") as (client, _):
        r = await client.post("/v1/completions", json={"prompt": [5] * 500, "max_tokens": 20})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "max_tokens"


async def test_top_k_one_at_temperature_one_is_the_greedy_reply_and_top_k_zero_is_refused():
    prompt = [20, 21, 22, 23]
    async with serve("torch") as (client, _):
        greedy_body = await complete(client, prompt=prompt, max_tokens=10, temperature=0.0, ignore_eos=True)
        top1 = [await complete(client, prompt=prompt, max_tokens=10, temperature=1.0, top_k=1, seed=s, ignore_eos=True) for s in (1, 2)]
        free = await complete(client, prompt=prompt, max_tokens=10, temperature=1.0, seed=1, ignore_eos=True)
        refused = await client.post("/v1/completions", json={"prompt": prompt, "max_tokens": 2, "top_k": 0})
    expected = greedy_body["choices"][0]["token_ids"]
    assert [b["choices"][0]["token_ids"] for b in top1] == [expected, expected]
    assert free["choices"][0]["token_ids"] != expected  # without top_k, temperature 1 samples
    # The logprobs stay those of softmax(logits / T) before truncation: below 0, not the truncated 0.
    assert all(lp < 0 for lp in top1[0]["choices"][0]["logprobs"])
    assert refused.status_code == 400 and "top_k" in refused.text
