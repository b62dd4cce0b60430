"""What exactly-once runs need of the torch backend (docs/exactly-once.md): a continuation draws
what the uncut generation would have, and with batch_invariant a sequence's tokens and logprobs
are the same bits whatever else shares its decode steps."""
import pytest

from rollflow_engines.roles.inference.engine import SamplingParams, Seq

from .helpers import serve

pytestmark = pytest.mark.anyio

PROMPT = [10, 11, 12]


async def complete(client, **body) -> dict:
    r = await client.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("cut", [1, 5, 11])
async def test_a_continuation_with_the_same_seed_draws_the_uncut_tokens(cut):
    # A generation cut after `cut` tokens (an abort, a lost server, a retried activity) goes on as the
    # prompt plus those tokens, with the same seed: each draw is keyed on its absolute position.
    request = {"max_tokens": 12, "temperature": 1.0, "seed": 42, "ignore_eos": True}
    async with serve("torch", batch_invariant=True) as (client, _):
        whole = (await complete(client, prompt=PROMPT, **request))["choices"][0]
        head = whole["token_ids"][:cut]
        rest = (await complete(client, prompt=PROMPT + head, **{**request, "max_tokens": 12 - cut}))["choices"][0]
    assert head + rest["token_ids"] == whole["token_ids"]
    assert whole["logprobs"][:cut] + rest["logprobs"] == whole["logprobs"]  # bit for bit, not approximately


async def test_batch_invariant_gives_each_sequence_the_bits_it_has_alone():
    # Rows of similar lengths share one forward pass (one width group): batched, their logits may differ from their own pass
    # in the last bits (test_inference_widths.py allows 1e-5); a forward pass per sequence makes them equal. Whether a
    # shared pass does differ depends on the CPU's kernels and threads, so the control counts the passes instead.
    prompts = [list(range(10, 18)), list(range(20, 30)), list(range(30, 37)), list(range(40, 52)), list(range(60, 69))]
    params = SamplingParams(max_tokens=4, temperature=1.0, seed=7)

    async def steps(batch_invariant: bool):
        async with serve("torch", batch_invariant=batch_invariant) as (_, engine):
            def fresh() -> list[Seq]:
                seqs = [Seq(p, params, i, frozenset()) for i, p in enumerate(prompts)]
                for s in seqs:
                    engine._admit(s)
                return seqs

            passes, forward = [], engine._last_logits
            engine._last_logits = lambda rows: passes.append(len(rows)) or forward(rows)
            together = engine._forward_and_sample(fresh(), prompts)
            shared = list(passes)
            alone = [engine._forward_and_sample([s], [p])[0] for s, p in zip(fresh(), prompts)]
            return together, alone, shared

    together, alone, shared = await steps(batch_invariant=True)
    assert together == alone
    assert shared == [1] * len(prompts)  # a pass per sequence
    _, _, shared = await steps(batch_invariant=False)
    assert max(shared) > 1  # what the option removes: without it similar rows share a pass (and may get other bits)
