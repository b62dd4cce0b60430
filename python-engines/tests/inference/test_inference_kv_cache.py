"""The torch backend's kv_cache option: the same tokens as recomputing every sequence at every step, for a fraction
of the model's work, with the caches dropped when the weights change under a frozen generation."""
import asyncio

import pytest
from pydantic import ValidationError

from rollflow_engines.models import build_tiny_model
from rollflow_engines.roles.inference.options import Options

from .helpers import Gate, as_export, serve, tokens_of

pytestmark = pytest.mark.anyio

PROMPTS = [[5, 6, 7], list(range(20, 45)), [9]]


async def complete(client, **body) -> dict:
    r = await client.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def counting_fed_tokens(engine) -> list[int]:
    """Wraps the model so each forward pass records how many token ids it was fed."""
    fed, forward = [], engine.model.forward

    def counted(*args, **kwargs):
        fed.append(int(kwargs["input_ids"].numel()))
        return forward(*args, **kwargs)

    engine.model.forward = counted
    return fed


async def test_cached_decoding_gives_the_recomputed_tokens_for_a_fraction_of_the_fed_tokens():
    async def generate(kv_cache: bool):
        async with serve("torch", kv_cache=kv_cache, batch_invariant=True) as (client, engine):
            fed = counting_fed_tokens(engine)
            bodies = await asyncio.gather(*(complete(client, prompt=p, max_tokens=12, temperature=1.0, seed=3, n=2, ignore_eos=True) for p in PROMPTS),
                                          complete(client, prompt=PROMPTS[1], max_tokens=12, temperature=0, ignore_eos=True))
        return [c for b in bodies for c in b["choices"]], sum(fed)

    cached, cached_fed = await generate(kv_cache=True)
    recomputed, recomputed_fed = await generate(kv_cache=False)
    assert [c["token_ids"] for c in cached] == [c["token_ids"] for c in recomputed]
    for a, b in zip(cached, recomputed):  # incremental passes round differently from whole ones, in the last bits only
        assert a["logprobs"] == pytest.approx(b["logprobs"], abs=1e-4)
    # Each sequence is fed its prompt once, then one token a step: 2×(3+11) + 2×(25+11) + 2×(1+11) + (25+11).
    assert cached_fed == 2 * 14 + 2 * 36 + 2 * 12 + 36
    assert recomputed_fed > 5 * cached_fed


async def test_a_weight_update_under_a_frozen_generation_drops_its_cache(tmp_path):
    # Frozen after 6 tokens (pause keep), new weights, resumed: from token 6 on the cached engine must compute what an
    # engine without a cache computes, the whole sequence under the new weights, not the old weights' keys and values.
    other = as_export(build_tiny_model("default", 1, tmp_path / "seed1"), "torch")
    request = {"prompt": [9, 10, 11, 12], "max_tokens": 16, "temperature": 0, "ignore_eos": True}

    async def frozen_then_updated(kv_cache: bool) -> dict:
        async with serve("torch", kv_cache=kv_cache) as (client, engine):
            gate = Gate(engine, lambda batch: tokens_of(batch, 6))
            task = asyncio.create_task(complete(client, **request))
            await gate.wait_reached()
            assert (await client.post("/pause", json={"mode": "keep"})).status_code == 200
            gate.open()
            assert (await client.post("/update_weights", json={"path": str(other), "version": 1})).status_code == 200
            await client.post("/resume")
            return (await task)["choices"][0]

    cached, recomputed = await frozen_then_updated(True), await frozen_then_updated(False)
    assert cached["version_spans"] == [{"version": 0, "start": 0, "end": 6}, {"version": 1, "start": 6, "end": 16}]
    assert cached["token_ids"] == recomputed["token_ids"]
    assert cached["logprobs"] == pytest.approx(recomputed["logprobs"], abs=1e-4)


@pytest.mark.parametrize("backend", ["sim", "vllm"])
def test_kv_cache_belongs_to_the_torch_backend(backend, monkeypatch):
    if backend == "vllm":
        monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: object())  # as if installed: the option is what is refused
    with pytest.raises(ValidationError, match="(?s)kv_cache.*only the torch backend takes kv_cache"):
        Options(backend=backend, kv_cache=True)
