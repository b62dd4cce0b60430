"""The sim backend: response shape, determinism, length distributions, metrics."""
import math
import re

import pytest

from .helpers import as_export, serve

pytestmark = pytest.mark.anyio


async def complete(client, **body) -> dict:
    r = await client.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()


async def test_completion_shape_usage_and_spans():
    async with serve("sim", sim={"length": {"dist": "fixed", "mean": 6}}) as (client, _):
        body = await complete(client, prompt=[11, 12, 13], max_tokens=20, n=2, model="policy")
    assert body["object"] == "text_completion" and body["model"] == "policy" and body["id"].startswith("cmpl-")
    assert [c["index"] for c in body["choices"]] == [0, 1]
    for choice in body["choices"]:
        assert len(choice["token_ids"]) == len(choice["logprobs"]) == 6
        assert all(lp < 0 for lp in choice["logprobs"])
        assert choice["finish_reason"] == "stop" and choice["token_ids"][-1] == 2  # the sim's eos
        assert choice["version_spans"] == [{"version": 0, "start": 0, "end": 6}]
        assert choice["text"] is None
    assert body["choices"][0]["token_ids"] != body["choices"][1]["token_ids"]  # samples differ
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 12, "total_tokens": 15}


async def test_same_seeds_repeat_exactly_across_servers():
    request = {"prompt": [1, 2, 3], "max_tokens": 50, "seed": 7, "n": 3}
    async with serve("sim", seed=5, sim={"length": {"dist": "normal", "mean": 20, "std": 8}}) as (a, _):
        first = await complete(a, **request)
        other_seed = await complete(a, **{**request, "seed": 8})
    async with serve("sim", seed=5, sim={"length": {"dist": "normal", "mean": 20, "std": 8}}) as (b, _):
        again = await complete(b, **request)
    async with serve("sim", seed=6, sim={"length": {"dist": "normal", "mean": 20, "std": 8}}) as (c, _):
        other_server = await complete(c, **request)

    def outputs(body):
        return [(ch["token_ids"], ch["logprobs"], ch["finish_reason"]) for ch in body["choices"]]

    assert outputs(first) == outputs(again)
    assert outputs(first) != outputs(other_seed)
    assert outputs(first) != outputs(other_server)


async def test_unseeded_requests_derive_from_the_prompt():
    async with serve("sim") as (client, _):
        a = await complete(client, prompt=[4, 5, 6], max_tokens=10)
        b = await complete(client, prompt=[4, 5, 6], max_tokens=10)
        c = await complete(client, prompt=[4, 5, 7], max_tokens=10)
    assert a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"]
    assert a["choices"][0]["token_ids"] != c["choices"][0]["token_ids"]


async def test_max_tokens_cuts_a_response_with_finish_reason_length():
    async with serve("sim", sim={"length": {"dist": "fixed", "mean": 30}}) as (client, _):
        body = await complete(client, prompt=[1], max_tokens=4)
        override = await complete(client, prompt=[1], max_tokens=40, sim_response_length=3)
    assert (len(body["choices"][0]["token_ids"]), body["choices"][0]["finish_reason"]) == (4, "length")
    assert 2 not in body["choices"][0]["token_ids"]
    assert (len(override["choices"][0]["token_ids"]), override["choices"][0]["finish_reason"]) == (3, "stop")


@pytest.mark.parametrize("length, mean, spread", [
    ({"dist": "normal", "mean": 40, "std": 10}, 40, 10),
    ({"dist": "lognormal", "mean": 40, "sigma": 0.5}, 40, 40 * math.sqrt(math.exp(0.25) - 1)),
])
async def test_length_distributions_have_their_mean_and_spread(length, mean, spread):
    async with serve("sim", max_n=400, sim={"length": length}) as (client, _):
        body = await complete(client, prompt=[9], max_tokens=1000, n=400, seed=1)
    lengths = [len(c["token_ids"]) for c in body["choices"]]
    sample_mean = sum(lengths) / len(lengths)
    sample_std = math.sqrt(sum((x - sample_mean) ** 2 for x in lengths) / (len(lengths) - 1))
    # 400 draws: the mean is within ~4 standard errors; the spread within 30%.
    assert abs(sample_mean - mean) < 4 * spread / math.sqrt(len(lengths))
    assert 0.7 * spread < sample_std < 1.3 * spread
    assert all(c["finish_reason"] == "stop" for c in body["choices"])


async def test_sigma_prompt_gives_each_prompt_one_length_factor_whatever_the_seed():
    length = {"dist": "lognormal", "mean": 100, "sigma": 0.1, "sigma_prompt": 1.0}
    async with serve("sim", max_n=64, sim={"length": length}) as (client, _):
        mean_length = {}
        for prompt in ([1], [2], [3], [4]):
            one_request = await complete(client, prompt=prompt, max_tokens=4000, n=32, seed=1)
            separate = [await complete(client, prompt=prompt, max_tokens=4000, seed=100 + i) for i in range(32)]
            lengths = [len(c["token_ids"]) for c in one_request["choices"]] + [len(b["choices"][0]["token_ids"]) for b in separate]
            # within a prompt only the per-sample sigma 0.1 varies the length (64 draws stay within about ±30%)
            assert max(lengths) / min(lengths) < 2
            mean_length[prompt[0]] = sum(lengths) / len(lengths)
    # across prompts: factors with log-space std 1 spread the means far apart
    assert max(mean_length.values()) / min(mean_length.values()) > 2


async def test_stop_token_ids_and_ignore_eos():
    async with serve("sim", sim={"vocab_size": 16, "length": {"dist": "fixed", "mean": 5}}) as (client, _):
        stopped = await complete(client, prompt=[1], max_tokens=200, stop_token_ids=[9], sim_response_length=200, seed=3)
        no_eos = await complete(client, prompt=[1], max_tokens=12, ignore_eos=True, seed=3)
    tokens = stopped["choices"][0]["token_ids"]
    assert stopped["choices"][0]["finish_reason"] == "stop"
    assert tokens[-1] == 9 and 9 not in tokens[:-1]
    assert all(0 <= t < 16 for t in tokens)
    assert (len(no_eos["choices"][0]["token_ids"]), no_eos["choices"][0]["finish_reason"]) == (12, "length")


async def test_chat_completion_returns_the_prompt_tokens():
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}]
    async with serve("sim") as (client, engine):
        r = await client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 5, "n": 2})
        assert r.status_code == 200, r.text
        body = r.json()
        again = (await client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 5, "n": 2})).json()
    assert body["object"] == "chat.completion"
    assert body["prompt_token_ids"] == engine.chat_prompt(messages) == again["prompt_token_ids"]
    assert [c["token_ids"] for c in body["choices"]] == [c["token_ids"] for c in again["choices"]]
    for c in body["choices"]:
        assert c["message"] == {"role": "assistant", "content": None}
        assert len(c["token_ids"]) == len(c["logprobs"]) == 5
    assert body["usage"]["prompt_tokens"] == len(body["prompt_token_ids"])


def metric(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert match, f"{name} not in /metrics"
    return float(match.group(1))


async def test_state_and_metrics_follow_requests_pauses_and_versions(tmp_path):
    async with serve("sim", sim={"length": {"dist": "fixed", "mean": 4}}) as (client, _):
        await complete(client, prompt=[1, 2], max_tokens=3, n=2)
        await complete(client, prompt=[1, 2], max_tokens=10)
        text = (await client.get("/metrics")).text
        assert metric(text, "rollflow_inference_tokens_generated_total") == 10
        assert metric(text, 'rollflow_inference_requests_total{finish_reason="length"}') == 2
        assert metric(text, 'rollflow_inference_requests_total{finish_reason="stop"}') == 1
        assert metric(text, "rollflow_inference_prompt_tokens_total") == 4
        assert metric(text, "rollflow_inference_paused") == 0
        assert metric(text, "rollflow_inference_running_requests") == 0

        assert (await client.post("/pause", json={"mode": "abort"})).json() == {"mode": "abort", "aborted": 0, "frozen": 0, "version": 0}
        r = await client.post("/update_weights", json={"path": str(as_export(tmp_path, "sim")), "version": 4})
        assert r.status_code == 200 and r.json()["version"] == 4 and r.json()["previous_version"] == 0
        state = (await client.get("/state")).json()
        assert state == {"backend": "sim", "model": "sim", "version": 4, "paused": True, "pause_mode": "abort",
                         "running": 0, "waiting": 0, "max_batch": 64}
        text = (await client.get("/metrics")).text
        assert metric(text, "rollflow_inference_paused") == 1
        assert metric(text, "rollflow_inference_weight_version") == 4
        resumed = (await client.post("/resume")).json()
        assert (resumed["paused"], resumed["pause_mode"], resumed["version"]) == (False, None, 4)
        body = await complete(client, prompt=[3], max_tokens=2)
        assert body["choices"][0]["version_spans"] == [{"version": 4, "start": 0, "end": 2}]


async def test_the_latency_model_charges_each_step_for_batch_and_prefill(monkeypatch):
    from rollflow_engines.roles.inference import sim

    sleeps: list[float] = []
    real_sleep = sim.asyncio.sleep

    async def record(seconds: float) -> None:
        sleeps.append(seconds)
        await real_sleep(0)

    options = {"c0": 0.02, "c1": 0.005, "prefill_per_token": 0.001, "time_scale": 2.0, "length": {"dist": "fixed", "mean": 3}}
    async with serve("sim", sim=options) as (client, engine):
        assert engine.step_seconds(4, 10) == pytest.approx((0.02 + 0.005 * 4 + 0.001 * 10) * 2.0)
        monkeypatch.setattr(sim, "monotonic", lambda: 1000.0)  # the step's own compute takes no time
        monkeypatch.setattr(sim.asyncio, "sleep", record)
        await complete(client, prompt=[1, 2, 3, 4, 5], max_tokens=10)
        monkeypatch.setattr(sim.asyncio, "sleep", real_sleep)
    # Three steps of one sequence, the first with its 5-token prefill.
    expected = [engine.step_seconds(1, 5), engine.step_seconds(1, 0), engine.step_seconds(1, 0)]
    assert [x for x in sleeps if x > 0] == pytest.approx(expected)
